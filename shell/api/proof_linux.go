//go:build linux

package api

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cliProof is the token POST /v1/cli/run asks for (client.CLIProofHeader):
// the name of a memfd this process holds open, which only a process that
// may inspect this one can read (readdir and readlink of /proc/PID/fd need
// ptrace read access). A process confined by Landlock may not inspect a
// process outside its domain, and nothing in /proc shows that it is
// confined: this is how the server tells.
type cliProof struct {
	fd    int
	token string
}

// proofPrefix begins the memfd's name ("/memfd:" + it + token).
const proofPrefix = "moat-serve-proof-"

func newCLIProof() (*cliProof, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	tok := hex.EncodeToString(b)
	fd, err := unix.MemfdCreate(proofPrefix+tok, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd for the moat run proof: %w", err)
	}
	return &cliProof{fd: fd, token: tok}, nil
}

func (p *cliProof) valid(got string) bool {
	return p != nil && len(got) == len(p.token) && subtle.ConstantTimeCompare([]byte(got), []byte(p.token)) == 1
}

func (p *cliProof) close() {
	if p != nil {
		unix.Close(p.fd)
	}
}

// callerProof is the nonce of the caller's memfd "moat-run-proof-NONCE",
// read from /proc/PID/fd of the process that connected.
func callerProof(peer *procState) (string, error) {
	if peer == nil || peer.pid <= 0 {
		return "", fmt.Errorf("the caller's process is not known to the server")
	}
	dir := "/proc/" + strconv.Itoa(peer.pid) + "/fd"
	es, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("the caller's descriptors: %v", err)
	}
	for _, e := range es {
		l, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		if n, ok := strings.CutPrefix(l, "/memfd:moat-run-proof-"); ok {
			n, _, _ = strings.Cut(n, " ")
			return n, nil
		}
	}
	return "", fmt.Errorf("the caller shows no proof (a memfd moat-run-proof-NONCE)")
}
