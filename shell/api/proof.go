package api

import (
	"net/http"

	"github.com/moat-sandbox/moat/shell/api/client"
)

// proofPrefix begins the name of the server's memfd ("/memfd:" + it +
// token).
const proofPrefix = client.ProofMemfdPrefix

// proofExempt says whether a route of moat serve answers without the
// server's proof: GET /v1/health (the status and the version: moat's
// clients probe with it), and POST /v1/cli/hello, which runs nothing and
// tells the caller only the name of a memfd of its own (moat's C client
// sends it before it has read who serves the socket). Every other request,
// one that matches no route included, must show the proof.
func proofExempt(pattern string) bool {
	return pattern == "GET /v1/health" || pattern == "POST /v1/cli/hello"
}

// checkProof says why r does not show this process's proof
// (client.ProofHeader), or nil. Where the proof is not required (not
// Linux), nil.
func checkProof(r *http.Request) *apiError {
	if !proofRequired {
		return nil
	}
	p, err := processProof()
	if err != nil {
		return errorf(http.StatusForbidden, "", "the server has no proof to check requests against (%v): it serves none", err)
	}
	if !p.valid(r.Header.Get(client.ProofHeader)) {
		return errorf(http.StatusForbidden, "", "the request does not show the server's proof (%s: the token in the name of the server's memfd /memfd:%sTOKEN, read from /proc/PID/fd of the server, as moat's clients do): a process that may not inspect the server, such as one confined by Landlock, gets nothing run by it", client.ProofHeader, proofPrefix)
	}
	return nil
}

// RequireProof wraps the handler of another server of this process on a
// unix socket (moat mcp --http unix:, behind PeerChecked): a request that
// does not show the process's proof (client.ProofHeader, as moat serve's
// routes ask for it) is answered 403 and never reaches h. The peer checks
// read /proc, where Landlock leaves no trace: a root process confined by
// Landlock without no_new_privs, or any Landlock-confined process when the
// server itself is under no_new_privs, passed them and had the server run
// commands outside its domain (found by an attack pass). Reading the proof
// needs ptrace read access to this process, which Landlock denies to a
// process outside its domain. An error means the proof could not be made:
// serve nothing then.
func RequireProof(h http.Handler) (http.Handler, error) {
	if !proofRequired {
		return h, nil
	}
	if _, err := processProof(); err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := checkProof(r); e != nil {
			writeError(w, e)
			return
		}
		h.ServeHTTP(w, r)
	}), nil
}
