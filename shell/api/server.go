// Package api is moat's local API: HTTP and JSON over a unix socket (moat
// serve), for agent hosts that drive sessions from another process. A
// session is a sandbox.Shell: every command runs in a sandbox, gated by
// moat's decisions; no route runs anything on the host.
//
// Routes (docs/API.md, docs/openapi.yaml):
//
//	GET    /v1/health
//	GET    /v1/policy
//	POST   /v1/decide
//	POST   /v1/sessions
//	GET    /v1/sessions
//	GET    /v1/sessions/{session}
//	DELETE /v1/sessions/{session}
//	POST   /v1/sessions/{session}/commands   (NDJSON stream, ?stream=false, or background)
//	GET    /v1/sessions/{session}/commands/{command}
//	DELETE /v1/sessions/{session}/commands/{command}
//
// Who may connect: Serve answers only peers of the server's own user (their
// credentials read from the socket) in the server's own user and mount
// namespaces, confined as the server is, so a command in one of the
// server's sandboxes cannot drive it; on Linux every request but
// GET /v1/health and POST /v1/cli/hello must also show the server's proof
// (client.ProofHeader), which a process confined by Landlock, invisible in
// /proc, cannot read (moatd asks for none).
// The wire types are in package client.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/user"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/permissions"
	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell/api/client"
	"github.com/moat-sandbox/moat/shell/sandbox"
)

// Defaults of the limits of a Config.
const (
	DefaultMaxSessions           = 64
	DefaultMaxCommandsPerSession = 32
	DefaultMaxRequestBytes       = 1 << 20
)

// Config configures a Server. Every field but Policy has a working zero
// value.
type Config struct {
	// Policy is what every session's sandbox enforces and what the
	// decisions read; a session may only add existing writable paths to
	// it. Required; not changed.
	Policy *policy.Policy
	// Notes are shown by GET /v1/policy (what moat policy prints as
	// notes).
	Notes []string
	// Gate is a session's gate when it asks for none, and the loosest it
	// may ask for (strict < deny < off). Empty: strict.
	Gate sandbox.Gate
	// MaxSessions bounds the open sessions (429 past it).
	MaxSessions int
	// MaxCommandsPerSession bounds the commands a session holds at once:
	// running, and finished in the background but not read (429 past it).
	MaxCommandsPerSession int
	// MaxRequestBytes bounds a request's body (413 past it).
	MaxRequestBytes int64
	// Env is the sessions' environment before the policy filters it; nil
	// is this process's.
	Env []string
	// StateDir is moat's state directory (sandbox.Config.StateDir).
	StateDir string
	// Hide are paths every session's policy denies reading: the API's
	// own socket, so that a sandboxed command does not even see it.
	Hide []string
	// Logger receives debug logs. If nil, nothing is logged.
	Logger *slog.Logger
	// Daemon, if set, serves every user that can reach the socket, each
	// with its own policy and sessions, sandboxes run as that user
	// (moatd: the server runs as root). Policy is then unused.
	Daemon *Daemon
	// CLIRun, if set, serves POST /v1/cli/run: it runs moat run's
	// command line for a caller that shares this process's state and
	// returns moat run's exit status (moat serve sets it; nil: 404).
	CLIRun func(ctx context.Context, inv CLIInvocation) int
	// CLICheck, if set, says why a POST /v1/cli/run command line must stay
	// in the caller's process (409), before the run is taken.
	CLICheck func(args []string, cwd string, env []string) error
	// Enforcer, if set, is the enforcer of every session and run
	// (runtime.Request.Enforcer): moatd makes one for its life and closes
	// it after Shutdown. If nil, each gets one of its own.
	Enforcer *runtime.Enforcer
}

// Server answers the API's routes. Use it through Serve, which checks who
// connects; ServeHTTP refuses requests that did not come through Serve.
type Server struct {
	cfg     Config
	engine  *permissions.Engine
	mux     *http.ServeMux
	log     *slog.Logger
	version string

	mu       sync.Mutex
	sessions map[string]*session
	pending  int // sessions being opened and POST /v1/run commands
	// openingOf counts sessions being opened, by owner: a user's requests
	// sent at once are counted against its limit before any is open.
	openingOf map[int]int
	// connsOf counts each uid's connections (daemon), connUID names the
	// uid a counted connection was counted for.
	connsOf map[int]int
	connUID map[net.Conn]int
	refused map[net.Conn]bool // refused peers being answered (daemon)
	closed  bool
	https   []*http.Server

	// runsCtx is the context of every POST /v1/run (their connections are
	// taken over, so the HTTP server does not wait for them): Shutdown and
	// Close cancel it, which kills their commands, and wait for them.
	runsCtx    context.Context
	cancelRuns context.CancelFunc
	runs       sync.WaitGroup
	runsOf     map[int]int // POST /v1/run commands running, by owner (daemon)
	cliRuns    int         // POST /v1/cli/run runs running
}

// route is one pattern of the mux and its handler.
type route struct {
	pattern string
	handle  func(http.ResponseWriter, *http.Request) error
}

// routes is the API: every pattern here is in docs/openapi.yaml (a test
// checks both ways).
func (s *Server) routes() []route {
	return []route{
		{"GET /v1/health", s.health},
		{"GET /v1/policy", s.policy},
		{"POST /v1/decide", s.decide},
		{"POST /v1/sessions", s.createSession},
		{"GET /v1/sessions", s.listSessions},
		{"GET /v1/sessions/{session}", s.getSession},
		{"DELETE /v1/sessions/{session}", s.deleteSession},
		{"GET /v1/sessions/{session}/lifeline", s.holdSession},
		{"POST /v1/sessions/{session}/commands", s.runCommand},
		{"GET /v1/sessions/{session}/commands/{command}", s.readCommand},
		{"DELETE /v1/sessions/{session}/commands/{command}", s.killCommand},
		{"POST /v1/run", s.runAttached},
		{"POST /v1/cli/hello", s.cliHello},
		{"POST /v1/cli/run", s.cliRun},
	}
}

// New checks cfg and returns a server with no session.
func New(cfg Config) (*Server, error) {
	if d := cfg.Daemon; d != nil {
		if d.PolicyFor == nil || d.CheckWritable == nil || d.CheckDir == nil {
			return nil, errors.New("api: Config.Daemon needs PolicyFor, CheckWritable and CheckDir")
		}
		if d.MaxSessionsPerUser <= 0 {
			d.MaxSessionsPerUser = 16
		}
		if d.IdleTimeout <= 0 {
			d.IdleTimeout = 30 * time.Minute
		}
		conns, perUser := connsFor(nofile())
		if d.MaxConnsPerUser <= 0 {
			d.MaxConnsPerUser = perUser
		}
		if d.MaxConns <= 0 {
			d.MaxConns = conns
		}
	}
	if cfg.Daemon != nil {
		// The namespaces clients must share are read now, while the
		// process that started the daemon is its parent.
		if _, err := hostNamespaces(); err != nil {
			return nil, fmt.Errorf("api: %w", err)
		}
	}
	if cfg.Daemon != nil && cfg.StateDir != "" {
		// What a daemon that was killed left for its users (each run
		// sweeps only its own user's journal).
		if err := runtime.Sweep(cfg.StateDir); err != nil && cfg.Logger != nil {
			cfg.Logger.Debug("sweep", "err", err)
		}
		// And its sessions' saved output (root's files, kept for good).
		if err := sandbox.SweepOutput(cfg.StateDir); err != nil && cfg.Logger != nil {
			cfg.Logger.Warn("saved output of a killed daemon not removed", "err", err)
		}
		// The git audit its killed runs never made, as each client.
		vs, warns := runtime.AuditDeadRuns(cfg.StateDir)
		if cfg.Logger != nil {
			for _, v := range vs {
				cfg.Logger.Warn("a killed run's plant taken out", "path", v.Target, "rule", v.Rule)
			}
			for _, w := range warns {
				cfg.Logger.Warn(w)
			}
		}
	}
	if cfg.Policy == nil && cfg.Daemon == nil {
		return nil, errors.New("api: Config.Policy is nil")
	}
	if cfg.Policy != nil {
		if err := cfg.Policy.Validate(); err != nil {
			return nil, err
		}
	}
	if gateRank(cfg.Gate) < 0 {
		return nil, fmt.Errorf("api: unknown Config.Gate %q (want strict, deny or off)", cfg.Gate)
	}
	if cfg.Gate == "" {
		cfg.Gate = sandbox.GateStrict
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxCommandsPerSession <= 0 {
		cfg.MaxCommandsPerSession = DefaultMaxCommandsPerSession
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	var eng *permissions.Engine
	if cfg.Policy != nil {
		var err error
		if eng, err = permissions.New(cfg.Policy.Permissions, permissions.Options{FollowSymlinks: true, Sandbox: &cfg.Policy.Sandbox}); err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
	}
	s := &Server{cfg: cfg, engine: eng, mux: http.NewServeMux(), log: cfg.Logger, version: version(),
		sessions: map[string]*session{}, runsOf: map[int]int{}, openingOf: map[int]int{},
		connsOf: map[int]int{}, connUID: map[net.Conn]int{}}
	s.runsCtx, s.cancelRuns = context.WithCancel(context.Background())
	if cfg.Daemon == nil && proofRequired {
		// What every request but the health check must show (checkProof):
		// without it the server could serve no one safely.
		if _, err := processProof(); err != nil {
			return nil, fmt.Errorf("api: %w", err)
		}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, rt := range s.routes() {
		s.mux.HandleFunc(rt.pattern, s.adapt(rt.handle))
	}
	return s, nil
}

// gateRank orders the gates from the strictest; -1 for an unknown gate.
func gateRank(g sandbox.Gate) int {
	switch g {
	case "", sandbox.GateStrict:
		return 0
	case sandbox.GateDeny:
		return 1
	case sandbox.GateOff:
		return 2
	}
	return -1
}

// version is the module's version from the build information, with the
// VCS revision when the build has one.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, st := range bi.Settings {
		if st.Key == "vcs.revision" && (v == "" || v == "(devel)") {
			v = "devel+" + st.Value[:min(12, len(st.Value))]
		}
	}
	if v == "" {
		v = "(devel)"
	}
	return v
}

// Serve answers requests on l (a unix socket: see Listen) until Shutdown.
// Each connection's peer is checked once, when it connects: a peer of
// another user, or in another user or mount namespace, gets 403 for every
// request.
func (s *Server) Serve(l net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		// A connection waiting for its next request is closed after
		// this long (the default, none, keeps an idle one for ever);
		// streams and held lifelines are not idle.
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if s.cfg.Daemon != nil {
				// Every connection counts, a refused peer's too (its
				// uid is the kernel's): against its user's bound and
				// the daemon's.
				p, err := checkDaemonPeer(c)
				if err == nil && p.Uid != 0 {
					// A uid no user has (the daemon serves it no request)
					// is refused as such a peer is. (Root is one uid:
					// its own cap bounds it.)
					if _, lerr := user.LookupId(strconv.Itoa(p.Uid)); lerr != nil {
						err = fmt.Errorf("uid %d is not in the user database: %v", p.Uid, lerr)
					}
				}
				if err != nil {
					// A peer the daemon refuses holds little: counted under
					// the kernel's uid, each subordinate id of a user's own
					// user namespace (a uid no user has) was a user of its
					// own, and one user filled the daemon's connections for
					// everyone (found by an attack pass). It gets its 403
					// answer (the request read, so that the client sees
					// why) within two seconds, at most refusedConns of them
					// at once; past that it is closed unanswered.
					if !s.holdRefused(c) {
						refuseConn(c, http.StatusForbidden, err.Error())
						return context.WithValue(ctx, peerKey{}, peerResult{err: err})
					}
					_ = c.SetDeadline(time.Now().Add(2 * time.Second))
					return context.WithValue(ctx, peerKey{}, peerResult{err: err})
				}
				if why := s.countConn(c, p.Uid); why != "" {
					refuseConn(c, http.StatusTooManyRequests, why)
				}
				return context.WithValue(ctx, peerKey{}, peerResult{err: err, peer: p})
			}
			proc, err := checkPeer(c)
			return context.WithValue(ctx, peerKey{}, peerResult{err: err, proc: proc})
		},
		ConnState: s.connState,
		ErrorLog:  slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.https = append(s.https, hs)
	s.mu.Unlock()
	return hs.Serve(l)
}

// countConn counts a daemon connection for uid (-1: a peer the kernel
// did not name), or says why it is refused: its user has as many as it
// may, or the daemon has.
func (s *Server) countConn(c net.Conn, uid int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.cfg.Daemon
	switch {
	case len(s.connUID) >= d.MaxConns:
		return fmt.Sprintf("the daemon has %d connections open, the most it allows: try again later", d.MaxConns)
	case uid >= 0 && s.connsOf[uid] >= d.MaxConnsPerUser:
		return fmt.Sprintf("you have %d connections open to the daemon, the most it allows a user: close some first", d.MaxConnsPerUser)
	}
	s.connsOf[uid]++
	s.connUID[c] = uid
	return ""
}

// refusedConns bounds the refused peers a daemon answers at once.
const refusedConns = 64

// holdRefused counts a refused peer's connection while it is answered, or
// reports that as many are already.
func (s *Server) holdRefused(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.refused) >= refusedConns {
		return false
	}
	if s.refused == nil {
		s.refused = map[net.Conn]bool{}
	}
	s.refused[c] = true
	return true
}

// connState uncounts a connection once it is closed or taken over (a
// POST /v1/run's, which its own limit bounds).
func (s *Server) connState(c net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.refused, c)
	uid, ok := s.connUID[c]
	if !ok {
		return
	}
	delete(s.connUID, c)
	if s.connsOf[uid]--; s.connsOf[uid] <= 0 {
		delete(s.connsOf, uid)
	}
}

// refuseConn answers a connection with status (429: over its user's limit;
// 403: a peer the daemon refuses) and closes it, without reading from it. The answer is small and the socket
// new (its buffer empty): the write does not wait, and a deadline makes
// sure of it.
func refuseConn(c net.Conn, status int, why string) {
	body, _ := json.Marshal(client.Error{Message: why})
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n", status, http.StatusText(status), len(body)+1, body)
	c.Close()
}

// Shutdown stops accepting sessions and connections, closes every session
// (killing what runs: the streams of their commands end), then waits for
// the requests under way until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	https := s.https
	s.mu.Unlock()
	// Within ctx: a session whose close hangs (its last git audit in a
	// tree the client filled: a FIFO named as the audit's record held
	// moatd's shutdown for good, attack pass 60) is left to end by itself
	// when the process exits, and every other part still shuts down.
	err := s.closeSessions(ctx)
	err = errors.Join(err, s.endRuns(ctx))
	for _, hs := range https {
		err = errors.Join(err, hs.Shutdown(ctx))
	}
	return err
}

// endRuns kills the commands of POST /v1/run and waits for them.
func (s *Server) endRuns(ctx context.Context) error {
	s.cancelRuns()
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runs still ending: %w", ctx.Err())
	}
}

// Close closes every session and refuses new ones; connections stay
// (Shutdown closes them too).
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	err := s.closeSessions(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(err, s.endRuns(ctx))
}

// closeSession closes one session (a test holds one up).
var closeSession = (*session).close

// closeSessions closes every session at once and waits for them, or until
// ctx ends (an error then; those still closing go on).
func (s *Server) closeSessions(ctx context.Context) error {
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for id, ss := range s.sessions {
		all = append(all, ss)
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	// Each at once: one that is slow to end does not hold the others'
	// sandboxes up.
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, ss := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = closeSession(ss)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return errors.Join(errs...)
	case <-ctx.Done():
		return fmt.Errorf("sessions still closing: %w", ctx.Err())
	}
}

// ServeHTTP checks the connection's peer and routes the request. Requests
// no route takes get a JSON 404 or 405.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pr, ok := r.Context().Value(peerKey{}).(peerResult)
	if !ok {
		writeError(w, errorf(http.StatusForbidden, "", "the connection's peer was not checked (serve with api.Server.Serve)"))
		return
	}
	if pr.err != nil {
		s.log.Debug("peer refused", "err", pr.err)
		w.Header().Set("Connection", "close") // nothing more to say to it
		writeError(w, errorf(http.StatusForbidden, "", "%v", pr.err))
		return
	}
	h, pattern := s.mux.Handler(r)
	if s.cfg.Daemon == nil && !proofExempt(pattern) {
		// The peer's checks read /proc, where Landlock leaves no trace:
		// the proof is what a Landlock-confined caller cannot show.
		if e := checkProof(r); e != nil {
			s.log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "err", e.msg)
			writeError(w, e)
			return
		}
	}
	if s.cfg.Daemon != nil && pattern != "" && pattern != "GET /v1/health" && (pr.peer == nil || pr.peer.Uid == 0) {
		// moatd serves no root caller (root runs moat itself): every
		// route but the health check refuses it, as the handlers that
		// look the peer up do; the list of sessions answered it an
		// empty list, and a session's routes 404 (pass 77).
		_, err := identityOf(pr.peer)
		writeError(w, errorf(http.StatusForbidden, "", "%v", err))
		return
	}
	if r.Method == http.MethodHead && pattern != "" {
		// Go's mux serves HEAD wherever a route serves GET, but the
		// API's GET routes are not all safe to repeat without their
		// body: a read takes the output since the last read, and a
		// finished background command's result is given once (a HEAD
		// collected it, and the client's GET got 404). docs/openapi.yaml
		// lists no HEAD: answer it as any other method the path does
		// not take, with the path's own methods in Allow.
		probe := r.Clone(r.Context())
		probe.Method = noMethod
		h, _ = s.mux.Handler(probe)
		pattern = ""
	}
	if pattern == "" {
		s.noRoute(w, r, h)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// noMethod is a method no route takes: the mux's handler for it is the
// 405 (or 404) of the path, with the methods the path takes in Allow.
const noMethod = "MOAT-NO-METHOD"

// withoutHead drops HEAD from an Allow list of the mux's, which adds it
// to every GET route's: the API answers HEAD 405 (ServeHTTP).
func withoutHead(allow string) string {
	var keep []string
	for _, m := range strings.Split(allow, ",") {
		if m = strings.TrimSpace(m); m != "" && m != http.MethodHead {
			keep = append(keep, m)
		}
	}
	return strings.Join(keep, ", ")
}

// noRoute answers in JSON what the mux would answer in text: 404, or 405
// with the Allow header.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	if v := rec.header.Get("Location"); v != "" {
		w.Header().Set("Location", v)
	}
	allow := withoutHead(rec.header.Get("Allow"))
	if allow != "" {
		w.Header().Set("Allow", allow)
	}
	status := rec.status
	if status == 0 {
		status = http.StatusNotFound
	}
	msg := fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)
	if status == http.StatusMethodNotAllowed {
		msg = fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow)
	}
	writeError(w, errorf(status, "", "%s", msg))
}

// recorder keeps the status and headers a handler writes, and drops the
// body.
type recorder struct {
	header http.Header
	status int
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) { r.WriteHeader(http.StatusOK); return len(b), nil }

// adapt turns a handler that returns an error into an http.HandlerFunc
// that writes the error as JSON (an *apiError with its status, anything
// else as 500).
func (s *Server) adapt(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = errorf(http.StatusInternalServerError, "", "%v", err)
		}
		s.log.Debug("request failed", "method", r.Method, "path", r.URL.Path, "status", ae.status, "err", ae.msg, "field", ae.field)
		writeError(w, ae)
	}
}

// health answers that the server is up, with its version.
func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.version})
	return nil
}
