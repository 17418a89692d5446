package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/term"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/live"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Request is one command to run in a new sandbox. The zero value of every
// optional field works.
type Request struct {
	// Policy says what the command may do. Required; Run validates it.
	Policy *policy.Policy
	// Argv is the command; Argv[0] is looked up in the command's PATH when
	// it holds no slash. Required.
	Argv []string
	// Env is the command's environment before moat filters credentials out
	// of it. If nil, the caller's environment.
	Env []string
	// Stdin, Stdout and Stderr are passed to the command as they are (no
	// copying), except that a terminal stdin gets the command a
	// pseudo-terminal of its own, which moat relays. If nil, /dev/null.
	Stdin, Stdout, Stderr *os.File
	// StateDir is moat's state directory (journal, caches, quarantine). If
	// empty, DefaultStateDir().
	StateDir string
	// Logger receives debug logs. If nil, nothing is logged.
	Logger *slog.Logger
	// OnViolation, if set, is called for every violation as it happens.
	OnViolation func(policy.Violation)
	// Ask, if set, is consulted by the proxy for destinations on neither
	// network list (unless the allow list is strict); it must honour its
	// context, which times out (the destination is then refused). If nil,
	// such destinations are refused.
	Ask func(ctx context.Context, host string, port int) (bool, error)
	// Updates, if set, carries network-list updates while the command runs.
	// They never widen the lists past what the policy's managed settings
	// allow; one that cannot apply is reported on UpdateErrors (if set).
	Updates      <-chan policy.Network
	UpdateErrors func(error)
	// Signals, if set, carries signals for the command (the CLI forwards
	// its own); SIGWINCH resizes the command's terminal. If nil, the
	// command gets no signal but the kill at the end.
	Signals <-chan os.Signal
	// Trace, if set, is told each phase of the launch (MOAT_TRACE=1).
	Trace func(phase string)
	// OnTerminal, if set, receives the command's pty master (the command
	// gets a pty when any of Stdin, Stdout and Stderr is a terminal, on
	// those; term.New relays it) in place of the runtime's
	// relay: the caller relays and owns the file, and SIGWINCH on Signals
	// does nothing. moatd hands the master to its client, so that the
	// daemon never writes to a client's terminal (a client that does not
	// read its terminal would hold a daemon thread in write(2)).
	OnTerminal func(master *os.File)
	// As, if set, runs the sandbox as that user (enforce.Launch.As): for a
	// root supervisor serving an unprivileged client (moatd's POST /v1/run).
	// Env is then required (the client's; never the supervisor's own).
	As *enforce.Identity
	// Enforcer, if set, is a long-lived supervisor's enforcer (NewEnforcer:
	// moatd's), which keeps what runs can share. If nil, the run gets an
	// enforcer of its own.
	Enforcer *Enforcer
}

// Result says how the command ended.
type Result struct {
	// ExitCode is the command's exit status, or 128+N when signal N ended
	// it, or 124 when the policy's timeout ended it.
	ExitCode int
	// Signal ended the command, if not 0.
	Signal syscall.Signal
	// TimedOut is set when the policy's timeout ended the process tree.
	TimedOut bool
	// Violations are the refusals of the run, in order, as a report
	// (policy.Summarize: repeated paths grouped, a successful command's
	// nscd probe left out); OnViolation sees each refusal as it happens.
	Violations []policy.Violation
	// Skipped are protections this run did not provide (best effort).
	Skipped []enforce.Skip
	// Warnings are what the user should know about this run (a check that
	// could not cover everything, say).
	Warnings []string
	// Mode is how much of the sandbox was built.
	Mode enforce.Mode
}

// ErrUnsupported is returned where moat has no sandbox (a platform or a
// build without one).
var ErrUnsupported = enforce.ErrUnsupported

// Prewarm does, on a goroutine of its own, the one-time probes of a
// process's first Run (Go's check that pidfds work, which forks a child;
// Landlock's ABI), so that they overlap what the caller does before it
// calls Run instead of delaying the sandbox's start. A program that starts
// for one command (moat run) calls it first thing; a long-lived one need
// not.
func Prewarm() { go platformPrewarm() }

// Run runs the command in a new sandbox and waits for it. A command that
// never ran is an error (*enforce.SetupError, *enforce.ExecError, an
// *enforce.UnsupportedFeatureError); otherwise the Result says how it
// ended. Cancelling ctx kills the process tree.
//
// A program that calls Run must call Reexec first thing in its main: the
// sandbox re-executes the program to clean up after a killed supervisor.
func Run(ctx context.Context, req Request) (*Result, error) {
	r, err := newRun(req)
	if err != nil {
		return nil, err
	}
	defer r.close()
	r.trace("runtime ready")
	// Before the sandbox's mounts (r.planned waits for it; latesecrets.go):
	// a path made or replaced after the look ends the run (fail closed).
	// Its lstats (one a denyRead path, 0.3-0.8 ms) overlap the plan.
	r.recorded = make(chan struct{})
	go func() {
		defer close(r.recorded)
		r.missing, r.present, r.recordErr = recordHidden(r.pol, r.req.As)
	}()
	proc, err := r.start(ctx)
	<-r.recorded
	if err != nil {
		return nil, err
	}
	r.missing = outsideRoots(r.missing, proc.Footprint())
	defer func() {
		if err := proc.Close(); err != nil {
			r.log.Debug("close", "err", err)
		}
		r.trace("closed")
	}()
	exit, timedOut, err := r.supervise(ctx, proc)
	if err != nil {
		// The command may have run before the sandbox failed: what it
		// planted for the user's git goes all the same.
		for _, w := range r.auditGit(proc.Footprint()) {
			r.log.Warn(w)
		}
		return nil, err
	}
	r.trace("waited")
	res := r.finish(proc, exit, timedOut)
	r.trace("audited")
	return res, nil
}

// run is one Run: the request with its defaults, and what the runtime owns
// around the enforcer's process.
type run struct {
	req      Request
	pol      *policy.Policy
	log      *slog.Logger
	since    time.Time
	stdio    [3]*os.File
	ttys     uint32      // which of stdio are terminals (bit i: descriptor i)
	cmdStdio [3]*os.File // stdio with /dev/null for each terminal: the pty takes its place
	opened   []*os.File
	proxy    *proxy
	term     *term.Relay
	announce *os.File
	us       userState // the user's other state directories
	mode     enforce.Mode
	skipped  []enforce.Skip

	cacheWarning string // the tool cache could not be made

	// missing and present are the denyRead paths the sandbox could not
	// hide and those it hides by a mount on the file found at the start
	// (latesecrets.go): a long command would read one the user makes or
	// replaces on the host meanwhile.
	missing   []string
	present   []hiddenFile
	recorded  chan struct{} // closed once missing and present are known
	recordErr error         // they could not be looked at (ends the run)

	mu         sync.Mutex
	violations violationSet
}

func newRun(req Request) (*run, error) {
	if req.Policy == nil {
		return nil, errors.New("runtime: no policy")
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, errors.New("runtime: no command")
	}
	for _, a := range req.Argv {
		if strings.ContainsRune(a, 0) {
			return nil, errors.New("the command line contains a NUL byte")
		}
	}
	if err := req.Policy.Validate(); err != nil {
		return nil, err
	}
	r := &run{req: req, pol: req.Policy, log: req.Logger, since: time.Now()}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.req.StateDir == "" {
		r.req.StateDir = DefaultStateDir()
	}
	if err := prepareStateDir(r.req.StateDir); err != nil {
		return nil, err
	}
	us, err := prepareUserState(r.req.StateDir, req.As)
	if err != nil {
		return nil, err
	}
	r.us, r.pol = us, us.hiding(r.pol)
	getenv := os.Getenv
	if req.As != nil {
		if req.Env == nil {
			return nil, errors.New("runtime: a run for another user (As) needs that user's environment (Env)")
		}
		getenv = envLookup(req.Env)
	}
	r.pol, r.cacheWarning = withToolCache(r.pol, r.log, req.As, getenv)
	r.stdio = [3]*os.File{req.Stdin, req.Stdout, req.Stderr}
	for i, f := range r.stdio {
		if f == nil {
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				r.close()
				return nil, err
			}
			r.opened = append(r.opened, null)
			r.stdio[i] = null
		}
	}
	// The caller's terminal never goes into the sandbox, whichever of
	// descriptors 0-2 it is: each of them gets the command's own pty
	// (launch), and the enforcer is handed /dev/null in its place.
	r.cmdStdio = r.stdio
	if term.Supported {
		r.ttys = term.Mask(r.stdio)
	}
	if r.ttys != 0 {
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			r.close()
			return nil, err
		}
		r.opened = append(r.opened, null)
		for i := range r.cmdStdio {
			if r.ttys&(1<<i) != 0 {
				r.cmdStdio[i] = null
			}
		}
	}
	p, err := newProxy(r.pol, req.As, req.Ask, r.violation, r.log)
	if err != nil {
		r.close()
		return nil, err
	}
	r.proxy = p
	return r, nil
}

func (r *run) trace(phase string) {
	if r.req.Trace != nil {
		r.req.Trace(phase)
	}
}

func (r *run) close() {
	if r.proxy != nil {
		r.proxy.close()
		r.trace("proxy closed")
	}
	withdraw(r.announce)
	r.announce = nil
	for _, f := range r.opened {
		f.Close()
	}
}

// launch is the enforcer's request for this run.
func (r *run) launch(mode enforce.Mode) *enforce.Launch {
	env := r.req.Env
	if env == nil {
		env = os.Environ()
	}
	l := &enforce.Launch{
		Policy: r.pol, Argv: r.req.Argv, Env: env, Stdio: r.cmdStdio, StateDir: r.req.StateDir,
		Mode: mode, Proxy: r.proxy, Report: r.violation, Log: r.log, Planned: r.planned, Trace: r.req.Trace,
		As: r.req.As,
	}
	// Whenever any of descriptors 0-2 is a terminal, the command gets a
	// pty of its own on exactly those (not only when stdin is one: a
	// command with the caller's terminal on stdout could read what the
	// user types from it, and change its modes and size for good). The
	// size is the first terminal's.
	if r.ttys != 0 {
		t := &enforce.Terminal{Mask: r.ttys}
		t.Rows, t.Cols = term.WindowSize(r.stdio)
		l.Terminal = t
		l.OnTerminal = r.attachTerminal
		if r.req.OnTerminal != nil {
			l.OnTerminal = r.req.OnTerminal
		}
	}
	return l
}

// start asks the platform's enforcer for the sandbox, and with best effort
// for less of it when the host refuses a part, saying what was left out.
func (r *run) start(ctx context.Context) (enforce.Process, error) {
	enf := r.req.Enforcer.enforcer()
	if enf == nil {
		return nil, &enforce.UnsupportedFeatureError{Feature: "a sandbox on " + goos(), Need: "moat enforces on Linux (and macOS)"}
	}
	proc, mode, skipped, err := startTiers(r.pol, r.log, tierStart[enforce.Process]{
		start:   func(mode enforce.Mode) (enforce.Process, error) { return enf.Start(ctx, r.launch(mode)) },
		discard: discardProcess,
		stepDown: func() {
			withdraw(r.announce)
			r.announce = nil
		},
	})
	r.skipped = append(r.skipped, skipped...)
	if err != nil {
		return nil, err
	}
	r.mode = mode
	return proc, nil
}

// planned announces what the command can write before it can run.
func (r *run) planned(fp enforce.Footprint) error {
	// Called before the command's sandbox is made: what recordHidden saw
	// is then from before the masks. (A file replaced between a mask and
	// a later look would be recorded as the new file, whose mask the
	// kernel had taken away: never found.)
	<-r.recorded
	if len(fp.WritableRoots) == 0 {
		return nil
	}
	f, err := announce(r.req.StateDir, r.us, live.Writer{Since: enforce.Since(r.since), Roots: fp.WritableRoots, ReadOnly: fp.ReadOnlyPaths, As: announcedUID(r.req.As), AsGroups: announcedGroups(r.req.As)})
	if err != nil {
		return err
	}
	withdraw(r.announce)
	r.announce = f
	return nil
}

// attachTerminal starts relaying the command's pty (the caller's terminal
// goes raw only now, once the sandbox exists, and only when it is stdin).
func (r *run) attachTerminal(master *os.File) {
	r.mu.Lock()
	if r.term == nil {
		r.term = term.New(r.stdio)
	}
	t := r.term
	r.mu.Unlock()
	t.Attach(master)
}

// finishTerminal drains the command's output and restores the caller's
// terminal.
func (r *run) finishTerminal() {
	r.mu.Lock()
	t := r.term
	r.mu.Unlock()
	if t != nil {
		t.Finish()
	}
}

// supervise relays the terminal, forwards signals and updates, enforces the
// timeout and waits.
func (r *run) supervise(ctx context.Context, proc enforce.Process) (*enforce.Exit, bool, error) {
	defer r.finishTerminal()
	done := make(chan struct{})
	defer close(done)
	if r.req.Signals != nil {
		go r.forwardSignals(proc, done)
	}
	if r.req.Updates != nil {
		go r.applyUpdates(proc, done)
	}
	var timer <-chan time.Time
	if d := r.pol.Limits.Timeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	type waited struct {
		exit *enforce.Exit
		err  error
	}
	wc := make(chan waited, 1)
	go func() { e, err := proc.Wait(); wc <- waited{e, err} }()
	if r.recordErr != nil {
		// Without the record a path made later is never found: fail closed.
		_ = proc.Kill()
		<-wc
		return nil, false, r.recordErr
	}
	var late <-chan time.Time
	if len(r.missing) > 0 || len(r.present) > 0 {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		late = t.C
	}
	timedOut := false
	var w waited
	for waiting := true; waiting; {
		waiting = false
		select {
		case w = <-wc:
		case <-late:
			err := lateRunError(r.missing, r.present, r.req.As)
			if err == nil {
				waiting = true
				continue
			}
			_ = proc.Kill() // the whole process tree: it could read the path
			<-wc
			return nil, false, err
		case <-timer:
			timedOut = true
			_ = proc.Kill() // the whole process tree
			w = <-wc
		case <-ctx.Done():
			_ = proc.Kill()
			w = <-wc
		}
	}
	if w.err != nil {
		return nil, false, w.err
	}
	if late != nil {
		// A command that ends within the second after a hidden path is
		// made or replaced on the host has read it before the next look
		// (a loop reading ~/.bash_history copied it into the project when
		// a shell on the host exited, and the run ended with exit 0,
		// unsaid: attack pass 101). One last look makes that run an error
		// too, naming the path; what the command read or wrote is done.
		if err := lateAfterRunError(r.missing, r.present, r.req.As); err != nil {
			return nil, false, err
		}
	}
	return w.exit, timedOut, nil
}

func (r *run) forwardSignals(proc enforce.Process, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case sig, ok := <-r.req.Signals:
			if !ok {
				return
			}
			s, isSys := sig.(syscall.Signal)
			if !isSys {
				continue
			}
			if s == syscall.SIGWINCH {
				r.mu.Lock()
				t := r.term
				r.mu.Unlock()
				if t != nil {
					t.Resize()
				}
				continue
			}
			_ = proc.Signal(s)
		}
	}
}

func (r *run) applyUpdates(proc enforce.Process, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case u, ok := <-r.req.Updates:
			if !ok {
				return
			}
			if err := r.proxy.update(u, proc); err != nil && r.req.UpdateErrors != nil {
				r.req.UpdateErrors(err)
			}
		}
	}
}

// finish turns the exit into the Result, after the git audit.
func (r *run) finish(proc enforce.Process, exit *enforce.Exit, timedOut bool) *Result {
	res := &Result{Mode: r.mode, Skipped: append(append([]enforce.Skip(nil), r.skipped...), exit.Skipped...)}
	switch {
	case timedOut:
		res.ExitCode, res.TimedOut, res.Signal = 124, true, syscall.SIGKILL
		r.violation(policy.Violation{Kind: policy.ResourceViolation, Op: "timeout", Target: r.pol.Limits.Timeout.String(), Rule: "moat.timeout: the whole process tree was killed"})
	default:
		res.ExitCode, res.Signal = exit.Code, exit.Signal
	}
	// The command ran: take out what it planted for the user's git.
	if r.cacheWarning != "" {
		res.Warnings = append(res.Warnings, r.cacheWarning)
	}
	res.Warnings = append(res.Warnings, r.auditGit(proc.Footprint())...)
	r.mu.Lock()
	res.Violations = r.violations.report(res.ExitCode == 0 && res.Signal == 0)
	r.mu.Unlock()
	return res
}

// violation records one refusal (each distinct one once).
func (r *run) violation(v policy.Violation) {
	r.mu.Lock()
	isNew := r.violations.add(&v)
	cb := r.req.OnViolation
	r.mu.Unlock()
	if isNew && cb != nil {
		cb(v)
	}
}

// belowMinimum refuses a best-effort fall back to a tier below the policy's
// minimumTier: the failure that would have caused it, and why moat stops.
func belowMinimum(pol *policy.Policy, next enforce.Mode, cause error) error {
	if policy.TierRank(next.String()) >= policy.TierRank(pol.MinimumTier) {
		return nil
	}
	return &BelowMinimumTierError{Tier: next.String(), Minimum: pol.MinimumTier, Err: cause}
}

// BelowMinimumTierError: the host gives only a tier below moat.minimumTier,
// so moat refuses to run.
type BelowMinimumTierError struct {
	Tier, Minimum string
	Err           error // why the stronger tier failed
}

func (e *BelowMinimumTierError) Error() string {
	return fmt.Sprintf("%v; best effort would run at tier %s, below moat.minimumTier %q: moat refuses to run", e.Err, e.Tier, e.Minimum)
}

func (e *BelowMinimumTierError) Unwrap() error { return e.Err }
