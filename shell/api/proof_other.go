//go:build !linux

package api

import "errors"

// cliProof: POST /v1/cli/run is Linux-only.
type cliProof struct{}

func newCLIProof() (*cliProof, error) { return nil, errors.New("POST /v1/cli/run is Linux-only") }

func (p *cliProof) valid(string) bool { return false }

func (p *cliProof) close() {}

func callerProof(*procState) (string, error) {
	return "", errors.New("POST /v1/cli/hello is Linux-only")
}
