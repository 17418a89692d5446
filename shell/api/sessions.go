package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/api/client"
	"github.com/moat-sandbox/moat/shell/sandbox"
)

// session is one API session: a gated shell on a session sandbox, and the
// background commands whose results the API holds for their reader.
type session struct {
	id      string
	owner   int // the owner's uid in daemon mode; -1 otherwise
	gate    sandbox.Gate
	mode    string
	created time.Time
	sh      *sandbox.Shell
	// slots has one token per command held (MaxCommandsPerSession).
	slots chan struct{}

	mu     sync.Mutex
	bg     map[string]*bgCommand
	nextID int

	closeOnce sync.Once
	closed    chan struct{} // closed when the session is
	closeErr  error

	// srv counts the daemon's slots the session holds (held, guarded by
	// mu: its own and its commands'); its close gives back what its
	// commands still hold, whose slots are then never given back one by
	// one (gone).
	srv  *Server
	held int
	gone bool
}

// bgCommand is a command started in the background. Its waiter goroutine
// collects its result from the shell (which then forgets it) and keeps it
// here until a client reads or kills it.
type bgCommand struct {
	done chan struct{}
	res  shell.Result
	err  error
}

// createSession opens a session (POST /v1/sessions): the server's policy
// with the request's extra writable paths, the request's gate if it is not
// looser than the server's.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var req client.SessionRequest
	if err := decodeBody(w, r, s.cfg.MaxRequestBytes, &req, true); err != nil {
		return err
	}
	owner := s.owner(r)
	var (
		cfg sandbox.Config
		err error
	)
	if s.cfg.Daemon != nil {
		cfg, _, err = s.daemonSessionConfig(r, req)
	} else {
		cfg, err = s.sessionConfig(req)
	}
	if err != nil {
		return err
	}
	if err := s.reserve(owner, true); err != nil {
		return err
	}
	// The session's descriptors in the daemon, its commands' as they
	// come (runCommand); all given back when it closes.
	var sh *sandbox.Shell
	oerr := s.takeSlots(owner, sessionSlots, "a new session")
	if oerr == nil {
		// The session outlives the request: its context must not end it.
		if sh, oerr = sandbox.Open(context.Background(), cfg); oerr != nil {
			s.giveSlots(owner, sessionSlots)
			oerr = fmt.Errorf("opening the session's sandbox: %w", oerr)
		}
	}
	s.mu.Lock()
	s.pending--
	if s.openingOf[owner]--; s.openingOf[owner] <= 0 {
		delete(s.openingOf, owner)
	}
	if oerr == nil && s.closed {
		s.mu.Unlock()
		sh.Close()
		s.giveSlots(owner, sessionSlots)
		return errorf(http.StatusServiceUnavailable, "", "the server is shutting down")
	}
	if oerr != nil {
		s.mu.Unlock()
		return oerr
	}
	ss := &session{id: "s" + randomHex(8), owner: owner, gate: cfg.Gate, mode: cfg.Mode, created: time.Now().UTC(), sh: sh,
		slots: make(chan struct{}, s.cfg.MaxCommandsPerSession), bg: map[string]*bgCommand{}, closed: make(chan struct{}),
		srv: s, held: sessionSlots}
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	s.log.Debug("session opened", "session", ss.id, "gate", ss.gate, "mode", ss.mode)
	writeJSON(w, http.StatusCreated, ss.describe())
	return nil
}

// reserve counts a session about to be opened (or a POST /v1/run command)
// against MaxSessions, and a session against the owner's limit (daemon).
func (s *Server) reserve(owner int, session bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errorf(http.StatusServiceUnavailable, "", "the server is shutting down")
	}
	if len(s.sessions)+s.pending >= s.cfg.MaxSessions {
		return errorf(http.StatusTooManyRequests, "", "%d sessions are open, the most this server allows: close one first", s.cfg.MaxSessions)
	}
	if d := s.cfg.Daemon; d != nil {
		n := 0
		if session {
			n = s.openingOf[owner]
		}
		for _, ss := range s.sessions {
			if ss.owner == owner {
				n++
			}
		}
		if n >= d.MaxSessionsPerUser {
			return errorf(http.StatusTooManyRequests, "", "you have %d sessions open, the most the daemon allows a user: close one first", d.MaxSessionsPerUser)
		}
	}
	s.pending++
	if session {
		s.openingOf[owner]++
	}
	return nil
}

// checkRequest checks what every session request carries: a gate no looser
// than this server's (what (the server, the daemon) is called in the
// error), a known mode, a timeout that is not negative. It returns the gate.
func (s *Server) checkRequest(req client.SessionRequest, what string) (sandbox.Gate, error) {
	gate := sandbox.Gate(req.Gate)
	if gate == "" {
		gate = s.cfg.Gate
	}
	switch rank := gateRank(gate); {
	case rank < 0:
		return "", errorf(http.StatusBadRequest, "gate", "unknown gate %q (want strict, deny or off)", req.Gate)
	case rank > gateRank(s.cfg.Gate):
		return "", errorf(http.StatusBadRequest, "gate", "gate %q is looser than the %s's (%s)", req.Gate, what, s.cfg.Gate)
	}
	if req.Mode != "" && !policy.ValidMode(req.Mode) {
		return "", errorf(http.StatusBadRequest, "mode", "unknown mode %q (want one of %s)", req.Mode, strings.Join(policy.Modes, ", "))
	}
	if req.TimeoutMS < 0 {
		return "", errorf(http.StatusBadRequest, "timeout_ms", "timeout_ms must not be negative")
	}
	return gate, nil
}

// sessionConfig checks a session request and returns the sandbox's
// configuration.
func (s *Server) sessionConfig(req client.SessionRequest) (sandbox.Config, error) {
	gate, err := s.checkRequest(req, "server")
	if err != nil {
		return sandbox.Config{}, err
	}
	if req.Cwd != "" && filepath.Clean(req.Cwd) != s.cfg.Policy.Cwd {
		return sandbox.Config{}, errorf(http.StatusBadRequest, "cwd", "this server's sessions run in %s (its policy's directory); only the daemon (moat daemon) takes a cwd", s.cfg.Policy.Cwd)
	}
	pol, err := s.sessionPolicy(req.Write)
	if err != nil {
		return sandbox.Config{}, err
	}
	if err := pol.Permissions.CheckMode(req.Mode); err != nil {
		return sandbox.Config{}, errorf(http.StatusBadRequest, "mode", "%v", err)
	}
	return sandbox.Config{Policy: pol, Gate: gate, Mode: req.Mode, Env: s.cfg.Env, StateDir: s.cfg.StateDir,
		Timeout: time.Duration(min(req.TimeoutMS, int64(shell.DefaultMaxTimeout/time.Millisecond))) * time.Millisecond,
		Logger:  s.cfg.Logger, Enforcer: s.cfg.Enforcer}, nil
}

// sessionPolicy is a copy of the server's policy with the extra writable
// paths (which must exist, as moat session --write wants) and the hidden
// paths denied reading.
func (s *Server) sessionPolicy(write []string) (*policy.Policy, error) {
	base := s.cfg.Policy
	pol := *base
	pol.FS.AllowWrite = slices.Clip(base.FS.AllowWrite)
	pol.FS.DenyRead = slices.Clip(base.FS.DenyRead)
	for _, p := range write {
		if p == "" || strings.ContainsRune(p, 0) {
			return nil, errorf(http.StatusBadRequest, "write", "a writable path must be a non-empty path")
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(base.Cwd, p)
		}
		p = filepath.Clean(p)
		if _, err := os.Stat(p); err != nil {
			return nil, errorf(http.StatusBadRequest, "write", "%s: the path must exist (%v)", p, err)
		}
		pol.FS.AllowWrite = append(pol.FS.AllowWrite, policy.PathRule{Path: p, Source: "api: write"})
	}
	for _, p := range s.cfg.Hide {
		pol.FS.DenyRead = append(pol.FS.DenyRead, policy.PathRule{Path: p, Source: "api: the server's socket"})
	}
	return &pol, nil
}

// session returns the session the request's path names.
func (s *Server) session(r *http.Request) (*session, error) {
	id := r.PathValue("session")
	owner := s.owner(r)
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil || ss.owner != owner {
		// Another user's session is answered as one that does not exist.
		return nil, errorf(http.StatusNotFound, "session", "no session %q", id)
	}
	return ss, nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	owner := s.owner(r)
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		if ss.owner == owner {
			all = append(all, ss)
		}
	}
	s.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].created.Before(all[j].created) })
	out := client.SessionList{Sessions: make([]client.Session, 0, len(all))}
	for _, ss := range all {
		out.Sessions = append(out.Sessions, ss.describe())
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.session(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ss.describe())
	return nil
}

// deleteSession closes a session: its commands are killed, their
// processes gone, its sandbox ended, before the answer (204).
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("session")
	if !s.endSession(id, s.owner(r), nil) {
		return errorf(http.StatusNotFound, "session", "no session %q", id)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// endSession removes the session id of owner and closes it; if only is
// set, only when it is still that session. It reports whether there was
// one to close.
func (s *Server) endSession(id string, owner int, only *session) bool {
	s.mu.Lock()
	ss := s.sessions[id]
	if ss != nil && (ss.owner != owner || (only != nil && ss != only)) {
		ss = nil // another user's: as if it did not exist
	}
	if ss != nil {
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	if ss == nil {
		return false
	}
	if err := ss.close(); err != nil {
		s.log.Debug("closing a session", "session", id, "err", err)
	}
	s.log.Debug("session closed", "session", id)
	return true
}

// holdSession ties a session to this request's connection (GET
// /v1/sessions/{session}/lifeline): the answer's headers come at once and
// its body when the session ends; when the client goes away first (its
// process killed, even with SIGKILL, closes the connection), the session
// is closed as DELETE closes it. moat session --jsonl holds one, so that a
// killed client leaves no session in moatd.
func (s *Server) holdSession(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.session(r)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	select {
	case <-ss.closed:
		writeBody(w, map[string]string{"status": "closed"})
	case <-r.Context().Done():
		s.endSession(ss.id, ss.owner, ss)
	}
	return nil
}

// describe is the session as the API shows it.
func (ss *session) describe() client.Session {
	out := client.Session{ID: ss.id, Gate: string(ss.gate), Mode: ss.mode, Cwd: ss.sh.Session.Cwd(), Created: ss.created,
		Commands: []client.Command{}}
	if out.Mode == "" {
		out.Mode = "default"
	}
	seen := map[string]bool{}
	for _, t := range ss.sh.Session.Tasks() {
		seen[t.ID] = true
		out.Commands = append(out.Commands, client.Command{ID: t.ID, Command: t.Command, Running: t.Running,
			Backgrounded: t.Backgrounded, ElapsedMS: t.Elapsed.Milliseconds(), OutputBytes: t.OutputBytes})
	}
	// Finished background commands the shell forgot and the API holds.
	ss.mu.Lock()
	for id, bc := range ss.bg {
		select {
		case <-bc.done:
			if !seen[id] {
				out.Commands = append(out.Commands, client.Command{ID: id, Command: bc.res.Command, Backgrounded: bc.res.Backgrounded,
					ElapsedMS: bc.res.Duration.Milliseconds(), OutputBytes: bc.res.OutputBytes})
			}
		default:
		}
	}
	ss.mu.Unlock()
	return out
}

// close kills every command and ends the sandbox.
func (ss *session) close() error {
	ss.closeOnce.Do(func() {
		ss.closeErr = ss.sh.Close()
		close(ss.closed)
		ss.mu.Lock()
		n := ss.held
		ss.held, ss.gone = 0, true
		ss.mu.Unlock()
		if ss.srv != nil {
			ss.srv.giveSlots(ss.owner, n)
		}
	})
	return ss.closeErr
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// daemonSessionConfig is sessionConfig for the daemon: the peer's own
// policy in the cwd it asks for (checked as the peer), narrowed by the
// request (gate, mode), with extra writable paths only where the peer
// itself can write (checked as the peer, and used by their real path);
// the sandbox runs as the peer.
func (s *Server) daemonSessionConfig(r *http.Request, req client.SessionRequest) (sandbox.Config, []string, error) {
	release, err := s.checking(r)
	if err != nil {
		return sandbox.Config{}, nil, err
	}
	defer release()
	id, err := s.peerIdentity(r)
	if err != nil {
		return sandbox.Config{}, nil, err
	}
	cwd, err := s.daemonCwd(id, req.Cwd)
	if err != nil {
		return sandbox.Config{}, nil, err
	}
	base, notes, err := s.daemonPolicy(r.Context(), id, cwd)
	if err != nil {
		return sandbox.Config{}, nil, err
	}
	// The gate: the peer may ask for a stricter one than the daemon's.
	gate, err := s.checkRequest(req, "daemon")
	if err != nil {
		return sandbox.Config{}, nil, err
	}
	pol := *base
	pol.FS.AllowWrite = slices.Clip(base.FS.AllowWrite)
	pol.FS.DenyRead = slices.Clip(base.FS.DenyRead)
	for _, p := range req.Write {
		if p == "" || strings.ContainsRune(p, 0) {
			return sandbox.Config{}, nil, errorf(http.StatusBadRequest, "write", "a writable path must be a non-empty path")
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		real, err := s.cfg.Daemon.CheckWritable(id, filepath.Clean(p))
		if err != nil {
			return sandbox.Config{}, nil, errorf(http.StatusBadRequest, "write", "%v (a client may only add paths its user can write)", err)
		}
		pol.FS.AllowWrite = append(pol.FS.AllowWrite, policy.PathRule{Path: real, Source: "moatd client: write"})
	}
	for _, p := range s.cfg.Hide {
		pol.FS.DenyRead = append(pol.FS.DenyRead, policy.PathRule{Path: p, Source: "moatd: the daemon's socket"})
	}
	if err := pol.Validate(); err != nil {
		return sandbox.Config{}, nil, errorf(http.StatusBadRequest, "", "%v", err)
	}
	if err := pol.Permissions.CheckMode(req.Mode); err != nil {
		return sandbox.Config{}, nil, errorf(http.StatusBadRequest, "mode", "%v", err)
	}
	return sandbox.Config{Policy: &pol, Gate: gate, Mode: req.Mode, Env: s.daemonEnv(id), StateDir: s.cfg.StateDir,
		Timeout:     time.Duration(min(req.TimeoutMS, int64(shell.DefaultMaxTimeout/time.Millisecond))) * time.Millisecond,
		IdleTimeout: s.cfg.Daemon.IdleTimeout, Logger: s.cfg.Logger, As: id, Enforcer: s.cfg.Enforcer}, notes, nil
}
