//go:build linux

package linux

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/linux/journal"
	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/linux/seccomp"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Spec is one command to run sandboxed.
type Spec struct {
	// Policy says what the command may do. Required.
	Policy *policy.Policy
	// Argv is the command; Argv[0] is looked up in the command's PATH when
	// it holds no slash. Required.
	Argv []string
	// Env is the command's environment before filtering. If nil, the
	// caller's environment.
	Env []string
	// Stdin, Stdout and Stderr are passed to the command as they are (no
	// copying), except that terminals are replaced by a new pseudo-terminal
	// moat relays. If nil, /dev/null.
	Stdin, Stdout, Stderr *os.File
	// StateDir is moat's state directory (journal, caches). If empty,
	// DefaultStateDir().
	StateDir string
	// Logger receives debug logs. If nil, nothing is logged.
	Logger *slog.Logger
	// OnViolation, if set, is called for every violation as it happens.
	OnViolation func(policy.Violation)
	// Ask, if set, is consulted by the proxy for destinations on neither
	// network list (unless the allow list is strict); it must honour its
	// context, which times out (then the destination is refused). If nil,
	// such destinations are refused.
	Ask func(ctx context.Context, host string, port int) (bool, error)
	// Control, if set, carries network-list updates while the command runs:
	// one complete settings document (srt format) per line. They never widen
	// the lists past what managed settings allow. ControlName names it in
	// messages ("control fd 3").
	Control     io.Reader
	ControlName string
	// NoSignals leaves the caller's signals alone (library use); otherwise
	// SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGUSR1 and SIGUSR2 are
	// forwarded to the command.
	NoSignals bool
}

// Result is how the command ended.
type Result struct {
	// ExitCode is the command's exit status, or 128+N when signal N ended
	// it, or 124 when the timeout ended it.
	ExitCode int
	// Signal ended the command, if not 0.
	Signal syscall.Signal
	// TimedOut is set when the policy's timeout ended the process tree.
	TimedOut bool
	// Violations are the refusals seen during the run.
	Violations []policy.Violation
	// Skipped lists protections best-effort mode could not provide.
	Skipped []string
	// Warnings are things the user should know about this run (a check
	// that could not cover everything, say).
	Warnings []string
}

// SetupError is a failure to build the sandbox: nothing ran.
type SetupError struct {
	Step  string // what stage 2 was doing
	Errno syscall.Errno
	Msg   string
}

func (e *SetupError) Error() string {
	s := "sandbox setup failed: " + e.Msg
	if e.Step != "" && !strings.Contains(e.Msg, e.Step) {
		s += " (" + e.Step + ")"
	}
	if e.Errno != 0 {
		s += ": " + e.Errno.Error()
	}
	return s
}

func (e *SetupError) Unwrap() error {
	if e.Errno != 0 {
		return e.Errno
	}
	return nil
}

// ExecError is a command that could not be executed inside the sandbox.
type ExecError struct {
	Path  string
	Errno syscall.Errno
}

func (e *ExecError) Error() string {
	if e.Errno == unix.ENOENT {
		return e.Path + ": command not found"
	}
	return e.Path + ": cannot execute: " + e.Errno.Error()
}

// ExitCode is 127 for not found, 126 otherwise (as shells do).
func (e *ExecError) ExitCode() int {
	if e.Errno == unix.ENOENT {
		return 127
	}
	return 126
}

// ErrUnsupported is returned where moat cannot build a sandbox at all.
var ErrUnsupported = errors.New("unsupported")

// DefaultStateDir is $XDG_STATE_HOME/moat, or ~/.local/state/moat, or
// /tmp/moat-<uid> when there is no usable home.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "moat")
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		if fi, err := os.Stat(h); err == nil && fi.IsDir() && unix.Access(h, unix.W_OK) == nil {
			return filepath.Join(h, ".local", "state", "moat")
		}
	}
	return fmt.Sprintf("/tmp/moat-%d", os.Geteuid())
}

// Run runs the command in a new sandbox and waits for it. Setup failures are
// *SetupError (nothing ran); a command that cannot be executed is
// *ExecError. Otherwise the Result says how the command ended.
func Run(ctx context.Context, s Spec) (*Result, error) {
	if !nsinit.Linked {
		return nil, fmt.Errorf("%w: this moat was built without cgo, so it has no sandbox stage 2", ErrUnsupported)
	}
	if s.Policy == nil || len(s.Argv) == 0 || s.Argv[0] == "" {
		return nil, errors.New("no policy or no command")
	}
	if err := s.Policy.Validate(); err != nil {
		return nil, err
	}
	for _, a := range s.Argv {
		if strings.ContainsRune(a, 0) {
			return nil, errors.New("the command line contains a NUL byte")
		}
	}
	var skipped []string
	since := auditSince(time.Now())
	if s.StateDir == "" {
		s.StateDir = DefaultStateDir()
	}
	l := &launch{spec: s, log: s.Logger, since: since}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	res, err := l.run(ctx)
	trace("done")
	defer traceFlush()
	// A container that masks /proc refuses a new procfs: with best effort,
	// show the host's /proc instead (the weaker nested mode) and say so.
	var se *SetupError
	if err != nil && errors.As(err, &se) && strings.HasPrefix(se.Step, "procfs on") && s.Policy.BestEffort && !s.Policy.FS.WeakerNested {
		pol := *s.Policy
		pol.FS.WeakerNested = true
		s.Policy = &pol
		journal.Withdraw(l.announced)
		l = &launch{spec: s, log: l.log, since: since}
		res, err = l.run(ctx)
		skipped = append(skipped, "a new /proc for the sandbox (the container refuses it): the host's /proc is visible")
	}
	// No user namespace here: with best effort, run with what needs none.
	if err != nil && errors.Is(err, errNoUserNS) && s.Policy.BestEffort {
		if landlockABI() == 0 {
			return nil, fmt.Errorf("%w, and this kernel has no Landlock either: moat has no way to confine the command", err)
		}
		journal.Withdraw(l.announced)
		l = &launch{spec: s, log: l.log, nons: true, since: since}
		res, err = l.run(ctx)
		if l.fp != nil {
			skipped = append(skipped, noNSSkipped(s.Policy, landlockABI(), l.kf != nil, l.fp.protected)...)
		}
	}
	if res != nil {
		res.Skipped = append(skipped, res.Skipped...)
		// The command ran: take out what it planted for the user's git.
		vs, warns := l.auditGit(since)
		for _, v := range vs {
			l.violation(v)
		}
		res.Violations = append(res.Violations, vs...)
		res.Warnings = append(res.Warnings, warns...)
	}
	journal.Withdraw(l.announced)
	return res, err
}

type launch struct {
	spec Spec
	log  *slog.Logger

	fp      *fsPlan
	jr      *journal.Journal
	plan    *nsinit.Plan
	cmd     *exec.Cmd
	sync    *os.File // supervisor's end of the SEQPACKET socket
	ptyMask uint32

	mu         sync.Mutex
	violations []policy.Violation
	seen       map[string]bool
	exitStatus *unix.WaitStatus
	setupErr   error
	ptyMaster  *os.File
	notifyFD   int
	childPid   int
	net        *network
	kf         *kernelFilter
	// nons: the no-namespace tier (best effort where user namespaces are
	// refused); tmpDir is then the command's own temporary directory.
	nons   bool
	tmpDir string
	// since is when the run began (for the git audit); announced is this
	// run's entry among the live writers.
	since     time.Time
	announced *os.File
	// observed is set when every filesystem write of the command is
	// notified to the observer, which counts them in writes.
	observed atomic.Bool
	writes   atomic.Int64
}

func (l *launch) run(ctx context.Context) (res *Result, err error) {
	trace("run")
	s := l.spec
	pol := s.Policy
	if err := os.MkdirAll(s.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	journalDir := filepath.Join(s.StateDir, "journal")
	if err := journal.SweepDir(journalDir); err != nil {
		l.log.Debug("sweep", "err", err)
	}

	stdio := [3]*os.File{s.Stdin, s.Stdout, s.Stderr}
	for i, f := range stdio {
		if f == nil {
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				return nil, err
			}
			defer null.Close()
			stdio[i] = null
		}
	}
	var term *terminal
	for i, f := range stdio {
		if isTerminal(f) {
			l.ptyMask |= 1 << i
		}
	}
	if l.ptyMask&1 == 0 {
		l.ptyMask = 0 // a pty only when stdin is a terminal
	}

	// Stage 2 starts first and waits for its plan on a pipe: creating the
	// namespaces and exec'ing (about a millisecond) overlaps with planning.
	planR, planW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	defer planR.Close()
	defer planW.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	l.sync = os.NewFile(uintptr(fds[0]), "moat-sync")
	childSync := os.NewFile(uintptr(fds[1]), "moat-sync-child")
	defer l.sync.Close()

	type planned struct {
		plan []byte
		err  error
	}
	var planRes planned
	planDone := make(chan struct{})
	defer func() {
		if l.jr != nil {
			if cerr := l.jr.Close(); cerr != nil {
				l.log.Debug("journal close", "err", cerr)
			}
		}
	}()
	// As root, the sandbox starts in a cgroup of its own that eBPF filters.
	var cgroupFD int = -1
	kfErr := kernelFilterSupported(filepath.Join(s.StateDir, "cache"))
	if pol.Net.Shared && kfErr != nil {
		return nil, fmt.Errorf("moat.shareNetwork runs the command in the host's network namespace, which only eBPF can confine, and eBPF is not available: %w", kfErr)
	}
	if kfErr == nil {
		if l.kf, err = newKernelFilter(); err != nil {
			return nil, err
		}
		defer l.kf.close()
		if clone3Works() {
			cgroupFD = l.kf.group.FD()
		}
	}
	go func() {
		b, err := l.makePlan(journalDir)
		planRes = planned{b, err}
		close(planDone)
	}()
	// The eBPF filter loads while stage 2 starts and mounts; the command
	// waits for it just before exec (fd 5).
	var goW *os.File
	attached := make(chan error, 1)
	extra := []*os.File{planR, childSync}
	if l.kf != nil {
		// fd 6 is the cgroup's lock: init keeps it (and so does the clean-up
		// it runs if moat dies), so a later moat's stale-cgroup sweep never
		// kills a sandbox that is still cleaning up.
		goR, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("pipe: %w", err)
		}
		defer goR.Close()
		defer w.Close()
		goW = w
		lockFD, err := unix.FcntlInt(uintptr(l.kf.group.FD()), unix.F_DUPFD_CLOEXEC, 3) // same open file: same lock
		if err != nil {
			return nil, fmt.Errorf("dup the cgroup lock: %w", err)
		}
		lock := os.NewFile(uintptr(lockFD), "moat-cgroup-lock")
		defer lock.Close()
		extra = append(extra, goR, lock)
		abort := make(chan struct{})
		go func() {
			<-planDone // the network (and its addresses) is part of the plan
			select {
			case <-abort:
				attached <- errors.New("launch abandoned")
				return
			default:
			}
			if planRes.err != nil {
				attached <- planRes.err
				return
			}
			attached <- l.kf.attach(l.net.kernelAllow(), pol.Net.Shared || l.nons, pol.Net.AllowLocalBinding, l.violation)
		}()
		// A launch that fails before it waits for the filter (stage 2 not
		// started: no user namespace, say) stops the attach, or waits for
		// it, before the cgroup goes.
		defer func() {
			if attached != nil {
				close(abort)
				<-attached
			}
		}()
	}

	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{nsinit.Argv0},
		Env:        []string{nsinit.EnvVar + "=1"},
		Stdin:      stdio[0],
		Stdout:     stdio[1],
		Stderr:     stdio[2],
		ExtraFiles: extra,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 cloneFlags(pol),
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
			GidMappingsEnableSetgroups: false,
			AmbientCaps:                []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_SYS_RESOURCE},
			Setsid:                     true,
			UseCgroupFD:                cgroupFD >= 0,
			CgroupFD:                   cgroupFD,
		},
	}
	if l.nons {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, UseCgroupFD: cgroupFD >= 0, CgroupFD: cgroupFD}
	}
	l.cmd = cmd
	startErr := cmd.Start()
	childSync.Close()
	planR.Close()
	trace("stage 2 started")
	<-planDone
	pl := planRes
	if l.tmpDir != "" {
		defer os.RemoveAll(l.tmpDir)
	}
	trace("plan ready")
	if l.net != nil {
		defer l.net.close()
	}
	if startErr != nil {
		if pl.err != nil {
			return nil, pl.err
		}
		var errno syscall.Errno
		if !l.nons && errors.As(startErr, &errno) && (errno == unix.EPERM || errno == unix.EACCES || errno == unix.EINVAL || errno == unix.ENOSPC || errno == unix.EUSERS) {
			return nil, fmt.Errorf("%w (%v): moat runs nothing unconfined; --best-effort runs the command with Landlock and seccomp only, and says what that leaves out", errNoUserNS, startErr)
		}
		return nil, fmt.Errorf("start the sandbox: %w", startErr)
	}
	if pl.err != nil {
		planW.Close() // stage 2 reads an empty plan and exits
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, pl.err
	}
	if l.kf != nil && cgroupFD < 0 {
		// Without clone3 (CLONE_INTO_CGROUP), stage 2 joins the cgroup
		// here, while it still waits for its plan: nothing runs outside.
		if err := l.kf.group.Add(cmd.Process.Pid); err != nil {
			planW.Close()
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("move the sandbox into its cgroup: %w", err)
		}
	}
	if _, err := planW.Write(pl.plan); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("send the plan to stage 2: %w", err)
	}
	planW.Close()
	if goW != nil {
		err := <-attached
		attached = nil
		if err != nil {
			goW.Close() // the command gives up before exec
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, err
		}
		if _, err := goW.Write([]byte{'g'}); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("release the command: %w", err)
		}
		goW.Close()
		trace("eBPF attached")
	}

	// The terminal goes raw only once the sandbox exists.
	if l.ptyMask != 0 {
		term = newTerminal(stdio[0], stdio[1])
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); l.readMessages(term) }()
	ctlCtx, ctlCancel := context.WithCancel(ctx)
	defer ctlCancel()
	if s.Control != nil {
		name := s.ControlName
		if name == "" {
			name = "the control channel"
		}
		stderr := io.Writer(os.Stderr)
		if s.Stderr != nil {
			stderr = s.Stderr
		}
		go l.net.readControl(ctlCtx, s.Control, name, pol, stderr)
	}
	if !s.NoSignals {
		sigs := make(chan os.Signal, 16)
		signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2)
		defer signal.Stop(sigs)
		go l.forwardSignals(sigs, done, term)
	}
	timedOut := false
	var timer <-chan time.Time
	if pol.Limits.Timeout > 0 {
		t := time.NewTimer(pol.Limits.Timeout)
		defer t.Stop()
		timer = t.C
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err = <-waitErr:
		trace("init reaped")
	case <-timer:
		timedOut = true
		_ = cmd.Process.Signal(unix.SIGKILL) // init dies: the kernel kills the whole pid namespace
		err = <-waitErr
	case <-ctx.Done():
		_ = cmd.Process.Signal(unix.SIGKILL)
		err = <-waitErr
	}
	close(done)
	// Every process of the sandbox is gone once init is reaped, so the
	// socket reaches EOF after the last message: read them all first.
	readerDone := make(chan struct{})
	go func() { wg.Wait(); close(readerDone) }()
	select {
	case <-readerDone:
	case <-time.After(2 * time.Second):
		l.sync.Close()
		<-readerDone
	}
	if l.jr != nil {
		l.jr.Unlock() // the sandbox failed before its mounts were in place
	}
	if term != nil {
		term.finish()
	}

	if l.kf != nil {
		l.kf.flush()
	}
	res = &Result{}
	l.mu.Lock()
	setupErr := l.setupErr
	st := l.exitStatus
	l.mu.Unlock()
	if setupErr != nil && st == nil {
		return nil, setupErr
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, fmt.Errorf("wait for the sandbox: %w", err)
	}
	switch {
	case timedOut:
		res.ExitCode, res.TimedOut, res.Signal = 124, true, unix.SIGKILL
		l.violation(policy.Violation{Kind: policy.ResourceViolation, Op: "timeout", Target: pol.Limits.Timeout.String(), Rule: "moat.timeout: the whole process tree was killed"})
	case st != nil && st.Signaled():
		res.Signal = st.Signal()
		res.ExitCode = 128 + int(res.Signal)
	case st != nil:
		res.ExitCode = st.ExitStatus()
	default:
		// init ended without reporting the command: it was killed.
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			res.Signal = ws.Signal()
			res.ExitCode = 128 + int(ws.Signal())
		} else {
			return nil, &SetupError{Msg: "the sandbox's init exited without running the command", Errno: 0}
		}
	}
	if setupErr != nil {
		var xe *ExecError
		if errors.As(setupErr, &xe) {
			return nil, setupErr
		}
		if st != nil && st.Exited() && st.ExitStatus() == 125 {
			return nil, setupErr
		}
	}
	l.mu.Lock()
	res.Violations = append([]policy.Violation(nil), l.violations...)
	l.mu.Unlock()
	return res, nil
}

// makePlan resolves the policy (filesystem, placeholders, seccomp,
// environment, network) and encodes the plan. It runs while stage 2 starts.
func (l *launch) makePlan(journalDir string) ([]byte, error) {
	s := l.spec
	pol := s.Policy
	exe, _ := os.Executable()
	expose := []string{pol.Cwd}
	if exe != "" {
		expose = append(expose, exe) // "moat ssh-proxy" runs inside
	}
	if filepath.IsAbs(s.Argv[0]) {
		expose = append(expose, s.Argv[0])
	}
	pol2 := *pol
	pol2.Protect = append(append([]string(nil), pol.Protect...), s.StateDir)
	if exe != "" {
		pol2.Protect = append(pol2.Protect, exe)
	}
	pol2.Protect = append(pol2.Protect, pol.Sources...)
	// Mount points on the host go through the journal, under its global
	// lock, which is held until the sandbox's mounts are in place: a run
	// that ends meanwhile cannot remove a placeholder this one mounts over.
	if l.nons {
		dir, err := os.MkdirTemp("", "moat-run-")
		if err != nil {
			return nil, fmt.Errorf("the command's temporary directory: %w", err)
		}
		l.tmpDir = dir
	}
	mountPoint := func(path string, ph *placeholder) error {
		if l.jr == nil {
			jr, err := journal.Begin(journalDir)
			if err != nil {
				return err
			}
			l.jr = jr
		}
		if _, err := os.Lstat(path); err == nil {
			_, err := l.jr.Adopt(path)
			return err
		}
		if ph == nil {
			return errVanished
		}
		return l.jr.Create(ph.path, ph.kind, ph.content)
	}
	in := planInput{pol: &pol2, uid: os.Getuid(), gid: os.Getgid(), exposeRO: expose,
		cacheDir: filepath.Join(s.StateDir, "cache"), mountPoint: mountPoint, noMounts: l.nons}
	if l.nons {
		in.mountPoint = nil // nothing is mounted: no placeholders
	}
	fp, err := makeFSPlan(in)
	if err != nil {
		return nil, err
	}
	if l.nons {
		// The run's TMPDIR is writable (a Landlock rule of its own); the
		// view knows it for the violation report.
		fp.view.allowWrite = append(fp.view.allowWrite, rule{path: l.tmpDir, source: "the run's TMPDIR"})
	}
	l.fp = fp
	l.announce(l.since)
	trace("filesystem planned")
	broker := len(pol.Net.AllowUnixSockets) > 0 && !pol.Net.AllowAllUnixSockets
	prog, err := seccompProgram(filepath.Join(s.StateDir, "cache"), seccomp.Options{AllowUnix: pol.Net.AllowAllUnixSockets, UnixBroker: broker, Notify: pol.Violations})
	if err != nil {
		return nil, err
	}
	trace("seccomp ready")
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	env, removed := policy.FilterEnv(env, pol.Env.Allow, pol.Env.Set)
	if len(removed) > 0 {
		l.log.Debug("environment", "removed", strings.Join(removed, ","))
	}
	env = withGitSafeDirs(env, pol.Env.GitSafeDirectories)
	env = fixTmpdir(env, fp.view)
	ns := s
	if l.nons {
		env = mergeEnv(env, []string{"TMPDIR=" + l.tmpDir})
		// No network namespace: the proxy listens on the host's loopback
		// with a per-run credential, and Landlock limits TCP to its ports.
		p := *s.Policy
		p.Net.Shared = true
		ns.Policy = &p
	}
	if l.net, err = newNetwork(ns, l.violation); err != nil {
		return nil, err
	}
	env = mergeEnv(env, l.net.env(exe))
	l.plan = l.buildPlan(prog, env, nil)
	return l.plan.Bytes(), nil
}

// buildPlan encodes everything stage 2 does, in order.
func (l *launch) buildPlan(prog []byte, env []string, _ *terminal) *nsinit.Plan {
	s := l.spec
	p := nsinit.New()
	if l.nons {
		p.Mode(nsinit.ModeNoNS)
	} else {
		p.Hostname("moat")
		if !s.Policy.Net.Shared {
			p.LoUp()
			for _, a := range listenAddrs {
				p.Listen(a.family, a.addr, a.port)
			}
		}
		if l.jr != nil && len(l.jr.Placeholders()) > 0 {
			p.Cleanup([]string{"/proc/self/exe", cleanupArg, filepath.Join(s.StateDir, "journal"), l.jr.ID()})
		}
		l.fp.build(p)
		// No new user namespaces, as a second layer behind seccomp.
		p.Sysctl("/proc/sys/user/max_user_namespaces", "0")
		l.fp.lockdown(p)
	}
	p.NewKeyring()
	p.Cwd(s.Policy.Cwd)
	if l.ptyMask != 0 {
		rows, cols := termSize(s.Stdin)
		p.PTY(l.ptyMask, rows, cols)
	}
	if abi := landlockABI(); abi > 0 {
		fsMask := landlockWriteRights(abi)
		var scoped uint64
		if abi >= 6 {
			scoped = llScopeAbstractUnix | llScopeSignal
		}
		var netMask uint64
		if abi >= 4 && !s.Policy.Net.AllowLocalBinding {
			netMask = llBindTCP // no rule: servers cannot listen (allowLocalBinding)
		}
		var readDirs, readTrees []string
		if l.nons {
			// Without a mount namespace Landlock does the hiding (reads)
			// and the network confinement (TCP to the proxy only).
			readDirs, readTrees = readRules(l.fp.view)
			if len(readDirs) > 0 {
				fsMask |= llReadFile | llReadDir
			}
			if abi >= 4 && l.kf == nil {
				// (With eBPF, the cgroup's programs confine every
				// protocol and report what they refuse; Landlock would
				// refuse TCP first, silently.)
				netMask |= llConnectTCP
			}
		}
		p.LandlockRuleset(abi, fsMask, netMask, scoped)
		writeMask := fsMask &^ (llReadFile | llReadDir)
		for _, t := range l.fp.llTrees {
			p.LandlockPath(t, writeMask, nsinit.LLOptional)
		}
		if l.nons {
			p.LandlockPath(l.tmpDir, writeMask|fsMask&(llReadFile|llReadDir), 0)
			for _, d := range readDirs {
				p.LandlockPath(d, llReadDir, nsinit.LLOptional)
			}
			for _, t := range readTrees {
				p.LandlockPath(t, llReadFile|llReadDir, nsinit.LLOptional)
			}
			if netMask&llConnectTCP != 0 {
				for _, a := range l.net.hostAddrs {
					p.LandlockPort(llConnectTCP, uint64(a.Port()))
				}
			}
		}
		for _, f := range l.fp.llFiles {
			p.LandlockPath(f, writeMask, nsinit.LLOptional)
		}
		devFile := uint64(llWriteFile)
		if abi >= 3 {
			devFile |= llTruncate
		}
		p.LandlockPath("/dev/null", devFile, 0)
		p.LandlockPath("/dev/zero", devFile, 0)
		p.LandlockPath("/dev/full", devFile, 0)
		p.LandlockPath("/dev/tty", devFile, 0)
		p.LandlockPath("/dev/pts", devFile, 0)
		p.LandlockPath("/dev/shm", writeMask, nsinit.LLOptional)
		if !l.nons {
			// (Without namespaces /proc is the host's, and a root
			// command could write its kernel knobs: nothing there.)
			p.LandlockPath("/proc", devFile, 0)
		}
		p.LandlockStdio(devFile)
	}
	flags := uint32(0)
	if s.Policy.Violations || (len(s.Policy.Net.AllowUnixSockets) > 0 && !s.Policy.Net.AllowAllUnixSockets) {
		flags |= nsinit.SeccompListen
	}
	if l.kf != nil {
		p.WaitGo()
	}
	p.Seccomp(prog, flags)
	exflags := uint32(0)
	if !strings.ContainsRune(s.Argv[0], '/') {
		exflags |= nsinit.ExecSearch
	}
	p.Exec(s.Argv[0], s.Argv, env, exflags)
	return p
}

// readMessages handles what stage 2 sends until the socket closes.
func (l *launch) readMessages(term *terminal) {
	buf := make([]byte, nsinit.MsgSize)
	oob := make([]byte, unix.CmsgSpace(4*16))
	fd := int(l.sync.Fd())
	for {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		var fds []int
		if oobn > 0 {
			if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, cm := range cms {
					if r, err := unix.ParseUnixRights(&cm); err == nil {
						fds = append(fds, r...)
					}
				}
			}
		}
		if n < 12 {
			closeAll(fds)
			continue
		}
		typ := binary.NativeEndian.Uint32(buf[0:])
		a := int32(binary.NativeEndian.Uint32(buf[4:]))
		b := int32(binary.NativeEndian.Uint32(buf[8:]))
		text := string(buf[12:n])
		if i := strings.IndexByte(text, 0); i >= 0 {
			text = text[:i]
		}
		switch typ {
		case nsinit.MsgError:
			step := ""
			if a >= 0 && int(a) < len(l.plan.Desc) {
				step = l.plan.Desc[a]
			}
			l.setErr(&SetupError{Step: step, Errno: syscall.Errno(b), Msg: text})
			closeAll(fds)
		case nsinit.MsgExecFail:
			l.setErr(&ExecError{Path: text, Errno: syscall.Errno(b)})
			closeAll(fds)
		case nsinit.MsgExit:
			trace("command exited")
			ws := unix.WaitStatus(a)
			l.mu.Lock()
			l.exitStatus = &ws
			l.mu.Unlock()
			closeAll(fds)
		case nsinit.MsgListen:
			if err := l.net.serve(fds); err != nil {
				l.setErr(&SetupError{Msg: err.Error()})
			}
		case nsinit.MsgMounted:
			trace("mounts done")
			if l.jr != nil {
				l.jr.Unlock()
			}
			closeAll(fds)
		case nsinit.MsgChild:
			trace("init running, command forked")
			l.mu.Lock()
			l.childPid = int(a)
			l.mu.Unlock()
			closeAll(fds)
		case nsinit.MsgPTY:
			if len(fds) != 1 || term == nil {
				closeAll(fds)
				continue
			}
			master := os.NewFile(uintptr(fds[0]), "pty-master")
			l.mu.Lock()
			l.ptyMaster = master
			l.mu.Unlock()
			term.attach(master)
		case nsinit.MsgNotify:
			trace("seccomp loaded, exec")
			if len(fds) != 1 {
				closeAll(fds)
				continue
			}
			o := &observer{fd: fds[0], view: l.fp.view, report: l.violation, unixAllow: l.unixAllow()}
			if l.spec.Policy.Violations {
				o.writes = &l.writes
				l.observed.Store(true)
			}
			go o.serve()
		default:
			closeAll(fds)
		}
	}
}

func (l *launch) setErr(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.setupErr == nil {
		l.setupErr = err
	}
}

// violation records one refusal (each distinct one once).
func (l *launch) violation(v policy.Violation) {
	if v.Time.IsZero() {
		v.Time = time.Now()
	}
	key := string(v.Kind) + "\x00" + v.Op + "\x00" + v.Target
	l.mu.Lock()
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	if l.seen[key] || len(l.violations) >= maxViolations {
		l.mu.Unlock()
		return
	}
	l.seen[key] = true
	l.violations = append(l.violations, v)
	cb := l.spec.OnViolation
	l.mu.Unlock()
	if cb != nil {
		cb(v)
	}
}

const maxViolations = 1000

func (l *launch) forwardSignals(sigs <-chan os.Signal, done <-chan struct{}, term *terminal) {
	for {
		select {
		case <-done:
			return
		case sig := <-sigs:
			if sig == unix.SIGWINCH && term != nil {
				term.resize()
				continue
			}
			if l.cmd.Process != nil {
				_ = l.cmd.Process.Signal(sig)
			}
		}
	}
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// withGitSafeDirs passes safe.directory entries to git through the
// environment (GIT_CONFIG_COUNT/KEY_n/VALUE_n), after any the caller set.
func withGitSafeDirs(env []string, dirs []string) []string {
	if len(dirs) == 0 {
		return env
	}
	n := 0
	idx := -1
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			fmt.Sscanf(v, "%d", &n)
			idx = i
		}
	}
	for _, d := range dirs {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=safe.directory", n), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, d))
		n++
	}
	c := fmt.Sprintf("GIT_CONFIG_COUNT=%d", n)
	if idx >= 0 {
		env[idx] = c
	} else {
		env = append(env, c)
	}
	return env
}

// fixTmpdir points TMPDIR at /tmp when the inherited one is not writable
// inside the sandbox.
func fixTmpdir(env []string, v *view) []string {
	for i, kv := range env {
		if d, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			if ok, _ := v.writable(filepath.Clean(d)); !ok && filepath.IsAbs(d) {
				env[i] = "TMPDIR=/tmp"
			}
			return env
		}
	}
	return env
}

var _ io.Reader = (*os.File)(nil)

// mergeEnv sets each "K=V" of add in env, replacing what env had.
func mergeEnv(env, add []string) []string {
	idx := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		idx[k] = i
	}
	for _, kv := range add {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			env[i] = kv
			continue
		}
		idx[k] = len(env)
		env = append(env, kv)
	}
	return env
}

// unixAllow resolves allowUnixSockets to canonical paths.
func (l *launch) unixAllow() []string {
	var out []string
	for _, r := range l.spec.Policy.Net.AllowUnixSockets {
		p := r.Path
		if c, err := filepath.EvalSymlinks(p); err == nil {
			p = c
		}
		out = append(out, p)
	}
	return out
}

// cloneFlags are the namespaces of stage 2: all but the network's when the
// command shares the host's network (moat.shareNetwork, eBPF-confined).
func cloneFlags(pol *policy.Policy) uintptr {
	f := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if !pol.Net.Shared {
		f |= unix.CLONE_NEWNET
	}
	return f
}

// clone3Works reports whether clone3 is callable: seccomp filters such as
// Docker's default answer it with ENOSYS so that callers fall back to
// clone, and Go's CLONE_INTO_CGROUP start needs it. A NULL, zero-size
// call is refused by the kernel itself with EINVAL and creates nothing.
func clone3Works() bool {
	_, _, errno := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
	return errno != unix.ENOSYS
}
