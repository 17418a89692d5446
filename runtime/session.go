package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/term"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/live"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// SessionRequest opens a session: one sandbox in which many commands run,
// one after the other or at the same time. The namespaces, the filesystem
// and the proxy are set up once; each command is a new process tree,
// confined as a single command is, with its own exit, violations, timeout
// and kill.
type SessionRequest struct {
	// Policy says what every command may do. Required.
	Policy *policy.Policy
	// Env is the commands' base environment (before moat filters
	// credentials out). If nil, the caller's environment.
	Env []string
	// StateDir is moat's state directory. If empty, DefaultStateDir().
	StateDir string
	// Logger receives debug logs. If nil, nothing is logged.
	Logger *slog.Logger
	// OnViolation, if set, is called for every violation of any command.
	OnViolation func(policy.Violation)
	// Ask is Request.Ask, for the whole session.
	Ask func(ctx context.Context, host string, port int) (bool, error)
	// Updates and UpdateErrors are Request's, for the whole session.
	Updates      <-chan policy.Network
	UpdateErrors func(error)
	// IdleTimeout closes the session when no command has run for that
	// long (0: never).
	IdleTimeout time.Duration
	// Trace, if set, is told each phase of the session's launch.
	Trace func(phase string)
	// As, if set, runs the sandbox as that user (enforce.Launch.As): for a
	// root supervisor serving an unprivileged client (moatd).
	As *enforce.Identity
	// Enforcer is Request.Enforcer, for the session.
	Enforcer *Enforcer
}

// Command is one command of a session.
type Command struct {
	// Argv is the command (Argv[0] looked up in PATH without a slash).
	Argv []string
	// Env is its environment before filtering. If nil, the session's.
	Env []string
	// Dir is its working directory. If empty, the policy's.
	Dir string
	// Stdin, Stdout and Stderr are its descriptors (no terminal relay in a
	// session: Start refuses a terminal). If nil, /dev/null.
	Stdin, Stdout, Stderr *os.File
	// FD3, if set, is the command's descriptor 3 (a side channel).
	FD3 *os.File
	// Timeout ends the command's process tree (0: the policy's timeout,
	// or none).
	Timeout time.Duration
	// OnViolation, if set, receives this command's violations.
	OnViolation func(policy.Violation)
}

// Session is an open session sandbox. It is safe for concurrent use.
type Session struct {
	req   SessionRequest
	pol   *policy.Policy
	log   *slog.Logger
	since time.Time
	// missing are the denyRead paths that did not exist when the sandbox
	// was made (recordHidden).
	missing []string
	// present are the denyRead paths that existed then, and which file
	// each was (recordHidden).
	present []hiddenFile
	null    *os.File
	proxy   *proxy
	sess    enforce.Session
	mode    enforce.Mode

	announce *os.File
	us       userState // the user's other state directories
	skipped  []enforce.Skip

	mu       sync.Mutex
	running  int
	active   map[*Running]struct{} // the commands running now
	idle     *time.Timer
	closed   bool
	closeErr error
	warnings []string
	done     chan struct{}
	stop     chan struct{}
}

// ErrSessionClosed is returned for a command started after Close.
var ErrSessionClosed = errors.New("the session is closed")

// NewSession opens a session sandbox. With best effort, a host that refuses
// a part of the sandbox gets the rest, as with Run; Skipped says what.
func NewSession(ctx context.Context, req SessionRequest) (*Session, error) {
	if req.Policy == nil {
		return nil, errors.New("runtime: no policy")
	}
	if err := req.Policy.Validate(); err != nil {
		return nil, err
	}
	s := &Session{req: req, pol: req.Policy, log: req.Logger, since: time.Now(), done: make(chan struct{}), stop: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.req.StateDir == "" {
		s.req.StateDir = DefaultStateDir()
	}
	if s.req.Env == nil {
		s.req.Env = os.Environ()
	}
	if err := prepareStateDir(s.req.StateDir); err != nil {
		return nil, err
	}
	us, err := prepareUserState(s.req.StateDir, req.As)
	if err != nil {
		return nil, err
	}
	s.us, s.pol = us, us.hiding(s.pol)
	var warn string
	if s.pol, warn = withToolCache(s.pol, s.log, req.As, envLookup(s.req.Env)); warn != "" {
		s.warnings = append(s.warnings, warn)
	}
	// Before the sandbox is planned: a path made in between is hidden
	// and still refuses the session's commands (fail closed).
	if s.missing, s.present, err = recordHidden(s.pol, req.As); err != nil {
		return nil, err
	}
	if s.null, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
		return nil, err
	}
	if s.proxy, err = newProxy(s.pol, req.As, req.Ask, s.fromSandbox, s.log); err != nil {
		s.null.Close()
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		s.proxy.close()
		s.null.Close()
		withdraw(s.announce)
		return nil, err
	}
	if req.Updates != nil {
		go s.applyUpdates()
	}
	s.missing = outsideRoots(s.missing, s.sess.Footprint())
	go s.watchLate()
	go func() {
		<-s.sess.Done()
		s.Close()
	}()
	s.mu.Lock()
	s.touch()
	s.mu.Unlock()
	return s, nil
}

func (s *Session) start(ctx context.Context) error {
	enf, ok := s.req.Enforcer.enforcer().(enforce.SessionEnforcer)
	if !ok {
		return &enforce.UnsupportedFeatureError{Feature: "session sandboxes on " + goos(), Need: "moat has them on Linux"}
	}
	sess, mode, skipped, err := startTiers(s.pol, s.log, tierStart[enforce.Session]{
		start: func(mode enforce.Mode) (enforce.Session, error) {
			return enf.StartSession(ctx, &enforce.Launch{Policy: s.pol, Env: s.req.Env, Stdio: [3]*os.File{s.null, s.null, s.null}, StateDir: s.req.StateDir,
				Mode: mode, Proxy: s.proxy, Report: s.fromSandbox, Log: s.log, Planned: s.planned, Trace: s.req.Trace, As: s.req.As})
		},
		discard: func(sess enforce.Session) { _ = sess.Close() },
		stepDown: func() {
			withdraw(s.announce)
			s.announce = nil
		},
		alwaysReady: true,
	})
	s.skipped = append(s.skipped, skipped...)
	if err != nil {
		return err
	}
	if mode == enforce.NoNamespaces {
		// (A run's enforcer reports what this tier leaves out with its
		// exit; a session's commands have no such report.)
		s.skipped = append(s.skipped, enforce.Skip{Protection: enforce.ProtectionNamespaces, Reason: "this system refuses user namespaces: the session shares the host's namespaces (Landlock, seccomp)"})
	}
	s.sess, s.mode = sess, mode
	return nil
}

func (s *Session) planned(fp enforce.Footprint) error {
	if len(fp.WritableRoots) == 0 {
		return nil
	}
	f, err := announce(s.req.StateDir, s.us, live.Writer{Since: enforce.Since(s.since), Roots: fp.WritableRoots, ReadOnly: fp.ReadOnlyPaths, As: announcedUID(s.req.As), AsGroups: announcedGroups(s.req.As)})
	if err != nil {
		return err
	}
	withdraw(s.announce)
	s.announce = f
	return nil
}

func (s *Session) violation(v policy.Violation) {
	if s.req.OnViolation != nil {
		s.req.OnViolation(v)
	}
}

// fromSandbox takes a refusal the sandbox as a whole saw (the proxy, the
// eBPF filter, the cgroups), which names no command: it goes to every
// command running at that moment (exactly the one that made it when only
// one runs; the proxy's and eBPF's events carry no command), then to the
// session's OnViolation. When several run, the line says so: a background
// task's refused request was reported, unqualified, in the result of a
// foreground `sleep` that ran beside it, as if that command had made it
// (attack pass 79, TestSessionSandboxViolationSaysWhoMayHaveMadeIt).
func (s *Session) fromSandbox(v policy.Violation) {
	s.mu.Lock()
	rs := make([]*Running, 0, len(s.active))
	for r := range s.active {
		rs = append(rs, r)
	}
	s.mu.Unlock()
	if len(rs) > 1 {
		v.Rule = sharedRule(v.Rule, len(rs))
	}
	for _, r := range rs {
		r.record(v)
	}
	s.violation(v)
}

// sharedRule is the rule of a refusal seen by the sandbox while n commands
// ran, each of which may have made it.
func sharedRule(rule string, n int) string {
	note := "seen while " + strconv.Itoa(n) + " commands of the session ran: any of them may have made it"
	if rule == "" {
		return note
	}
	return rule + "; " + note
}

func (s *Session) applyUpdates() {
	for {
		select {
		case <-s.stop:
			return
		case u, ok := <-s.req.Updates:
			if !ok {
				return
			}
			if err := s.proxy.update(u, s.sess); err != nil && s.req.UpdateErrors != nil {
				s.req.UpdateErrors(err)
			}
		}
	}
}

// idleCloseHook, if set (by tests), runs between the idle timer's check
// that nothing runs and its close.
var idleCloseHook func()

// touch restarts the idle timer (s.mu held).
func (s *Session) touch() {
	if s.req.IdleTimeout <= 0 || s.closed {
		return
	}
	if s.idle != nil {
		s.idle.Stop()
	}
	if s.running == 0 {
		s.idle = time.AfterFunc(s.req.IdleTimeout, func() {
			// Checked and closed under one hold of the lock: a command
			// started between the two would be killed by a Close meant
			// for an idle session.
			s.mu.Lock()
			if s.running != 0 || s.closed {
				s.mu.Unlock()
				return
			}
			if idleCloseHook != nil {
				idleCloseHook() // tests: a command started meanwhile waits
			}
			s.log.Debug("session idle: closing")
			s.closeHeld()
		})
	}
}

// Mode is how much of the sandbox the session has; Skipped what it left
// out (best effort).
func (s *Session) Mode() enforce.Mode      { return s.mode }
func (s *Session) Skipped() []enforce.Skip { return append([]enforce.Skip(nil), s.skipped...) }

// Done is closed when the session has ended (Close, the idle timeout, or
// its sandbox died).
func (s *Session) Done() <-chan struct{} { return s.done }

// Running is a command started in a session.
type Running struct {
	s        *Session
	proc     enforce.Process
	since    time.Time
	timeout  time.Duration
	waitOnce sync.Once
	res      *Result
	err      error
	cancel   context.CancelFunc

	mu         sync.Mutex
	violations violationSet
	onViol     func(policy.Violation)
	timedOut   bool
}

// Run runs a command in the session and waits for it.
func (s *Session) Run(ctx context.Context, c Command) (*Result, error) {
	r, err := s.Start(ctx, c)
	if err != nil {
		return nil, err
	}
	return r.Wait()
}

// Start starts a command in the session. Cancelling ctx kills it.
func (s *Session) Start(ctx context.Context, c Command) (*Running, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return nil, errors.New("runtime: no command")
	}
	for _, a := range c.Argv {
		if strings.ContainsRune(a, 0) {
			return nil, errors.New("the command line contains a NUL byte")
		}
	}
	// A session gives its commands no pty: a terminal handed in would be
	// the caller's own, which the command could read what is typed from,
	// and change the modes and size of.
	for i, f := range []*os.File{c.Stdin, c.Stdout, c.Stderr, c.FD3} {
		if term.IsTerminal(f) {
			return nil, fmt.Errorf("runtime: a session command's descriptor %d is a terminal: sessions relay no terminal, give it a pipe or a file", i)
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrSessionClosed
	}
	s.running++
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	r := &Running{s: s, since: time.Now(), onViol: c.OnViolation}
	s.mu.Lock()
	if s.active == nil {
		s.active = map[*Running]struct{}{}
	}
	s.active[r] = struct{}{}
	s.mu.Unlock()
	r.timeout = c.Timeout
	if r.timeout == 0 {
		r.timeout = s.pol.Limits.Timeout
	}
	stdio := [3]*os.File{c.Stdin, c.Stdout, c.Stderr}
	for i, f := range stdio {
		if f == nil {
			stdio[i] = s.null
		}
	}
	env := c.Env
	if env == nil {
		env = s.req.Env
	}
	if err := lateSecret(s.missing, s.present, s.req.As); err != nil {
		s.finished(r)
		return nil, err
	}
	proc, err := s.sess.Exec(&enforce.Command{Argv: c.Argv, Env: env, Dir: c.Dir, Stdio: stdio, FD3: c.FD3, Report: r.violation})
	if err != nil {
		s.finished(r)
		return nil, err
	}
	r.proc = proc
	ctx, r.cancel = context.WithCancel(ctx)
	go r.supervise(ctx)
	return r, nil
}

// supervise kills the command when its context ends or its timeout runs out.
func (r *Running) supervise(ctx context.Context) {
	var timer <-chan time.Time
	if r.timeout > 0 {
		t := time.NewTimer(r.timeout)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		_ = r.proc.Kill()
	case <-timer:
		r.mu.Lock()
		r.timedOut = true
		r.mu.Unlock()
		_ = r.proc.Kill()
	}
}

func (r *Running) violation(v policy.Violation) {
	if r.record(v) {
		r.s.violation(v)
	}
}

// record keeps a violation of this command (each distinct one once) and
// tells the command's OnViolation; false if it was already kept.
func (r *Running) record(v policy.Violation) bool {
	r.mu.Lock()
	isNew := r.violations.add(&v)
	cb := r.onViol
	r.mu.Unlock()
	if isNew && cb != nil {
		cb(v)
	}
	return isNew
}

// Signal delivers a signal to the command (terminal signals to its process
// group too).
func (r *Running) Signal(sig syscall.Signal) error { return r.proc.Signal(sig) }

// Kill ends the command and everything it started.
func (r *Running) Kill() error { return r.proc.Kill() }

// Wait waits for the command and everything it started, then audits what it
// wrote for the user's git. A command that never ran is an error.
func (r *Running) Wait() (*Result, error) {
	r.waitOnce.Do(func() {
		exit, err := r.proc.Wait()
		r.cancel()
		defer r.s.finished(r)
		if err != nil {
			r.err = err
			return
		}
		res := &Result{Mode: r.s.mode, Skipped: append(r.s.Skipped(), exit.Skipped...)}
		r.mu.Lock()
		timedOut := r.timedOut
		r.mu.Unlock()
		if timedOut {
			res.ExitCode, res.TimedOut, res.Signal = 124, true, syscall.SIGKILL
			r.violation(policy.Violation{Kind: policy.ResourceViolation, Op: "timeout", Target: r.timeout.String(), Rule: "the command's timeout: its whole process tree was killed"})
		} else {
			res.ExitCode, res.Signal = exit.Code, exit.Signal
		}
		res.Warnings = auditGit(r.proc.Footprint(), r.since, unsettledSince(r.s.req.StateDir, r.proc.Footprint().WritableRoots, nil), r.s.pol.Home, r.s.req.StateDir, r.s.req.As, userEnv(r.s.req.Env, r.s.req.As), r.violation)
		r.mu.Lock()
		res.Violations = r.violations.report(res.ExitCode == 0 && res.Signal == 0)
		r.mu.Unlock()
		r.res = res
	})
	return r.res, r.err
}

func (s *Session) finished(r *Running) {
	s.mu.Lock()
	delete(s.active, r)
	s.running--
	s.touch()
	s.mu.Unlock()
}

// Close ends every command and the sandbox, audits what the session wrote
// once more (a killed command's writes included), and releases what it made.
// It returns the audit's warnings joined in an error, if any failed.
func (s *Session) Close() error {
	s.mu.Lock()
	return s.closeHeld()
}

// closeHeld is Close, called with s.mu held (it releases it).
func (s *Session) closeHeld() error {
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return s.closeErr
	}
	s.closed = true
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	close(s.stop)
	err := s.sess.Close()
	fp := s.sess.Footprint()
	warn := auditGit(fp, s.since, unsettledSince(s.req.StateDir, fp.WritableRoots, s.announce), s.pol.Home, s.req.StateDir, s.req.As, userEnv(s.req.Env, s.req.As), s.violation)
	s.proxy.close()
	withdraw(s.announce)
	s.null.Close()
	s.mu.Lock()
	s.warnings = append(s.warnings, warn...)
	s.closeErr = err
	s.mu.Unlock()
	close(s.done)
	return err
}

// Warnings are what the session's closing audit could not cover.
func (s *Session) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.warnings...)
}

// envLookup is os.Getenv over env.
func envLookup(env []string) func(string) string {
	return func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
}
