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
	"sync"

	"golang.org/x/sys/unix"
)

// memfdProof is the token every request of moat serve but GET /v1/health
// and POST /v1/cli/hello must show (client.ProofHeader), and every request
// on moat mcp's unix socket (RequireProof): the name of a memfd this
// process holds open, which only a process that may inspect this one can
// read (readdir and readlink of /proc/PID/fd need ptrace read access). A
// process confined by Landlock may not inspect a process outside its
// domain, and nothing in /proc shows that it is confined (root needs no
// no_new_privs to enter a domain, and a server itself under no_new_privs
// looks like a confined caller): this is how the server tells.
//
// It is one token for the process, whatever number of servers it runs:
// what it proves is access to this process, and a client that reads the
// process's descriptors cannot tell two servers' memfds apart.
type memfdProof struct {
	fd    int
	token string
}

// proofRequired: the requests must show the proof (Linux: Landlock).
const proofRequired = true

// processProof is this process's proof, made once and held open for the
// process's life.
var processProof = sync.OnceValues(func() (*memfdProof, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	tok := hex.EncodeToString(b)
	fd, err := unix.MemfdCreate(proofPrefix+tok, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd for the server's proof: %w", err)
	}
	return &memfdProof{fd: fd, token: tok}, nil
})

func (p *memfdProof) valid(got string) bool {
	return p != nil && len(got) == len(p.token) && subtle.ConstantTimeCompare([]byte(got), []byte(p.token)) == 1
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
