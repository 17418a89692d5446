package api

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/shell/api/client"
)

// POST /v1/cli/run is `moat run` handed over by moat's C client before its
// Go runtime starts (MOAT_SERVER, linux/nsinit/fastrun.c): the whole
// command line, resolved and run by Config.CLIRun exactly as `moat run`
// would in the caller, whose descriptors 0-2 come over the connection. The
// server takes it only when nothing of the caller's process that moat
// reads differs from its own (sameProcess); otherwise it answers 409 and
// the caller runs moat itself. A caller cannot widen anything this way:
// it is the server's own user in the server's namespaces (checkPeer),
// which could run moat with any command line itself, and the check below
// refuses a caller more confined than the server (no_new_privs, a
// seccomp filter, another LSM label or cgroup), whose confinement the
// server's commands would not inherit.

// MaxCLIRuns bounds the moat runs (POST /v1/cli/run) a server runs at once.
const MaxCLIRuns = 256

// CLIInvocation is what Config.CLIRun runs: moat run's arguments in the
// caller's working directory and environment, on its descriptors.
type CLIInvocation struct {
	Args  []string
	Cwd   string
	Env   []string
	Stdio [3]*os.File
	// Signals are the signals the caller received, to forward.
	Signals <-chan os.Signal
	// Hide are paths the run's policy must deny reading (Config.Hide:
	// the server's socket).
	Hide []string
	// Start is when the server began to read the request.
	Start time.Time
}

// cliHello answers POST /v1/cli/hello, which moat's client sends before
// POST /v1/cli/run: the nonce in the name of the caller's memfd
// ("moat-run-proof-NONCE" in /proc/PID/fd of the caller), which only a
// process that may inspect the caller can read. The client sends its
// request, with its environment, only to a server that said it back: a
// process confined by Landlock that got to serve the socket cannot. The
// hello needs no proof of the caller's (POST /v1/cli/run does): it tells
// a caller only the name of its own memfd, and the client sends it before
// it has checked who serves the socket, so it carries nothing.
func (s *Server) cliHello(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.CLIRun == nil || s.cfg.Daemon != nil {
		return errorf(http.StatusNotFound, "", "POST /v1/cli/hello is served by moat serve only (not by moatd)")
	}
	pr, _ := r.Context().Value(peerKey{}).(peerResult)
	nonce, err := callerProof(pr.proc)
	if err != nil {
		return errorf(http.StatusBadRequest, "", "%v", err)
	}
	writeJSON(w, http.StatusOK, struct {
		Proof string `json:"proof"`
	}{nonce})
	return nil
}

func (s *Server) cliRun(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	if s.cfg.CLIRun == nil || s.cfg.Daemon != nil {
		return errorf(http.StatusNotFound, "", "POST /v1/cli/run is served by moat serve only (not by moatd): run moat yourself")
	}
	// The server's proof (client.ProofHeader) was checked before the
	// route (ServeHTTP): a process that may not inspect the server, such
	// as one confined by Landlock, gets no moat run from it.
	if !strings.EqualFold(r.Header.Get("Upgrade"), client.CLIRunUpgrade) {
		return errorf(http.StatusBadRequest, "", "POST /v1/cli/run passes descriptors over its connection: send it with \"Connection: Upgrade\" and \"Upgrade: %s\"", client.CLIRunUpgrade)
	}
	var req client.CLIRunRequest
	if err := decodeBody(w, r, s.cfg.MaxRequestBytes, &req, false); err != nil {
		return err
	}
	if err := checkCLIRequest(&req); err != nil {
		return err
	}
	pr, _ := r.Context().Value(peerKey{}).(peerResult)
	// The two checks only read (the processes' state; the settings and
	// the paths they name): the command line's runs beside the process
	// comparison, and both must pass.
	var checkErr error
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		if s.cfg.CLICheck != nil {
			checkErr = s.cfg.CLICheck(req.Args, req.Cwd, req.Env)
		}
	}()
	procErr := sameProcess(pr.proc, &req)
	<-checked
	if procErr != nil {
		return errorf(http.StatusConflict, "", "%v", procErr)
	}
	if checkErr != nil {
		return errorf(http.StatusConflict, "args", "%v", checkErr)
	}
	// Runs are counted apart from sessions (a long run must not take a
	// session's place), and bounded.
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return errorf(http.StatusServiceUnavailable, "", "the server is shutting down")
	case s.cliRuns >= MaxCLIRuns:
		s.mu.Unlock()
		return errorf(http.StatusTooManyRequests, "", "%d moat runs are running through this server, the most it takes at once", MaxCLIRuns)
	}
	s.cliRuns++
	s.runs.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cliRuns--
		s.mu.Unlock()
		s.runs.Done()
	}()
	uc, brw, err := upgrade(w, client.CLIRunUpgrade)
	if uc == nil {
		return err
	}
	defer uc.Close()
	end := func(e client.CLIRunEnd) {
		b, _ := json.Marshal(e)
		_, _ = uc.Write(append(b, '\n'))
	}
	stdio, err := receiveStdio(uc)
	if err != nil {
		end(client.CLIRunEnd{ExitCode: 125, Error: err.Error()})
		return nil
	}
	closeStdio := func() {
		for _, f := range stdio {
			f.Close()
		}
	}
	defer closeStdio()
	ctx, cancel := context.WithCancel(s.runsCtx)
	defer cancel()
	sigs := make(chan os.Signal, 16)
	go func() {
		defer cancel() // the connection's end (the client killed) kills the command
		readSignalLines(brw.Reader, sigs)
	}()
	s.log.Debug("cli run", "args", req.Args, "cwd", req.Cwd)
	code := s.cfg.CLIRun(ctx, CLIInvocation{Args: req.Args, Cwd: req.Cwd, Env: req.Env, Stdio: stdio,
		Signals: sigs, Hide: s.cfg.Hide, Start: start})
	// The caller's descriptors are closed before it learns the status:
	// once it exits, a reader of its pipes sees their end, as it would
	// have after moat run in its own process.
	closeStdio()
	e := client.CLIRunEnd{ExitCode: code}
	if s.runsCtx.Err() != nil {
		e = client.CLIRunEnd{ExitCode: 125, Error: "moat serve shut down while the command ran: it was killed"}
	}
	end(e)
	return nil
}

// checkCLIRequest checks the shape of a CLIRunRequest.
func checkCLIRequest(req *client.CLIRunRequest) error {
	for _, a := range req.Args {
		if strings.ContainsRune(a, 0) {
			return errorf(http.StatusBadRequest, "args", "args must not contain a NUL byte")
		}
	}
	if !filepath.IsAbs(req.Cwd) || strings.ContainsRune(req.Cwd, 0) {
		return errorf(http.StatusBadRequest, "cwd", "cwd must be an absolute path")
	}
	if req.Env == nil {
		return errorf(http.StatusBadRequest, "env", "env is required: the caller's whole environment")
	}
	for _, kv := range req.Env {
		if !strings.Contains(kv, "=") || strings.ContainsRune(kv, 0) {
			return errorf(http.StatusBadRequest, "env", "each env entry must be NAME=VALUE without a NUL byte")
		}
	}
	if req.Umask == nil || *req.Umask < 0 || *req.Umask > 0o777 {
		return errorf(http.StatusBadRequest, "umask", "umask is required, 0 to 0777")
	}
	if req.Rlimits == nil {
		return errorf(http.StatusBadRequest, "rlimits", "rlimits is required: [soft, hard] of each resource")
	}
	if req.Gid == nil {
		return errorf(http.StatusBadRequest, "gid", "gid is required")
	}
	return nil
}

// envValue is the value of name in env, and whether it is set.
func envValue(env []string, name string) (string, bool) {
	for _, kv := range env {
		if k, val, _ := strings.Cut(kv, "="); k == name {
			return val, true // the first, as Go's os.Getenv and getenv(3) read it
		}
	}
	return "", false
}
