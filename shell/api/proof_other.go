//go:build !linux

package api

import "errors"

// memfdProof: only Linux has Landlock, whose confinement /proc does not
// show; elsewhere the peer's checks are all there is.
type memfdProof struct{}

const proofRequired = false

func processProof() (*memfdProof, error) {
	return nil, errors.New("the server's proof is Linux-only")
}

func (p *memfdProof) valid(string) bool { return false }

func callerProof(*procState) (string, error) {
	return "", errors.New("POST /v1/cli/hello is Linux-only")
}
