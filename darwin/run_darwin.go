//go:build darwin

package darwin

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Run runs a command under Seatbelt and waits for it and everything it
// started. The policy's timeout kills the process group (Result.TimedOut).
// Unless s.NoSignals, SIGINT, SIGTERM, SIGHUP and SIGQUIT that moat
// receives go to the command's process group. An error means the command
// did not run.
func Run(ctx context.Context, s Spec) (*Result, error) {
	p, err := Start(ctx, s)
	if err != nil {
		return nil, err
	}
	if d := s.Policy.Limits.Timeout; d > 0 {
		t := time.AfterFunc(d, func() {
			p.mu.Lock()
			p.timedOut = true
			p.mu.Unlock()
			_ = p.Kill()
		})
		defer t.Stop()
	}
	if !s.NoSignals {
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
		defer signal.Stop(sigs)
		go func() {
			for {
				select {
				case sig := <-sigs:
					_ = p.Signal(sig.(syscall.Signal))
				case <-p.done:
					return
				}
			}
		}()
	}
	return p.Wait()
}

// Start sets the run up and starts the command; the caller must Wait.
// Cancelling ctx kills the process group; the caller enforces the timeout
// and forwards signals (Run does). The steps, in order: what the policy
// asks that macOS cannot give (Unenforced: refused unless best effort); a
// private TMPDIR; the proxy's listeners on the host's loopback; a pty of
// the run's own, if asked; the survey and the profile; Spec.Planned; the
// environment; the log reader; sandbox-exec in a new session. If a step
// fails, nothing runs and what the earlier ones made is undone.
func Start(ctx context.Context, s Spec) (_ *Process, err error) {
	if s.Policy == nil || len(s.Argv) == 0 {
		return nil, errors.New("darwin: a policy and a command are required")
	}
	pol := s.Policy
	skipped, err := Unenforced(pol)
	if err != nil {
		return nil, err
	}
	p := &Process{spec: s, done: make(chan struct{}), start: time.Now(), skipped: skipped}
	defer func() {
		if err != nil {
			p.runCleanup()
		}
	}()
	log := s.logger()

	tmp, err := os.MkdirTemp(s.TmpRoot, "moat-") // mode 0700
	if err != nil {
		return nil, &enforce.SetupError{Step: "private TMPDIR", Err: err}
	}
	p.cleanup = append(p.cleanup, func() { os.RemoveAll(tmp) })
	p.tmpDir = tmp

	moatPath := s.MoatPath
	if moatPath == "" {
		moatPath, _ = os.Executable()
	}
	var httpPort, socksPort int
	var proxyEnv []string
	switch {
	case pol.Net.HTTPProxyPort != 0 || pol.Net.SOCKSProxyPort != 0:
		// An external filtering proxy already listens on the host's
		// loopback: the profile lets the command reach it there (Generate
		// takes the policy's ports), and that proxy decides.
		if s.Proxy == nil {
			return nil, errors.New("darwin: the policy names an external proxy: Spec.Proxy is required (it gives the command's proxy variables)")
		}
		h, k := externalProxyAddrs(pol.Net)
		proxyEnv = s.Proxy.Env(h, k, moatPath)
	case s.Proxy != nil:
		lh, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, &enforce.SetupError{Step: "proxy listener", Err: err}
		}
		p.cleanup = append(p.cleanup, func() { lh.Close() })
		ls, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, &enforce.SetupError{Step: "proxy listener", Err: err}
		}
		p.cleanup = append(p.cleanup, func() { ls.Close() })
		// Any process of the host can reach the host's loopback.
		if _, err := s.Proxy.RequireCredential(); err != nil {
			return nil, &enforce.SetupError{Step: "proxy credential", Err: err}
		}
		s.Proxy.Serve(lh, false)
		s.Proxy.Serve(ls, true)
		httpPort, socksPort = lh.Addr().(*net.TCPAddr).Port, ls.Addr().(*net.TCPAddr).Port
		proxyEnv = s.Proxy.Env(lh.Addr().String(), ls.Addr().String(), moatPath)
	case pol.Net.WantsNetwork():
		return nil, errors.New("darwin: the policy allows network destinations: Spec.Proxy is required")
	}

	var master, slave *os.File
	tty := ""
	if s.Terminal != nil {
		if master, slave, tty, err = openPTY(s.Terminal.Rows, s.Terminal.Cols); err != nil {
			return nil, &enforce.SetupError{Step: "pseudo-terminal", Err: err}
		}
		p.cleanup = append(p.cleanup, func() { slave.Close() })
		defer func() {
			if err != nil || s.OnTerminal == nil {
				master.Close() // not handed to the caller
			}
		}()
	}

	prot, err := Survey(pol, SurveyOptions{XDGConfigHome: lookupEnv(s.Env, "XDG_CONFIG_HOME")})
	if err != nil {
		return nil, &enforce.SetupError{Step: "survey of the writable trees", Err: err}
	}
	if moatPath != "" {
		prot = append(prot, Protection{Path: moatPath, Why: "moat: its own binary is never writable"})
	}
	p.profile, err = Generate(pol, Options{Tag: NewTag(), HTTPProxyPort: httpPort, SOCKSProxyPort: socksPort, TmpDir: tmp, TTY: tty, Protect: prot})
	if err != nil {
		return nil, err
	}
	log.Debug("seatbelt profile", "tag", p.profile.Tag, "rules", len(p.profile.entries), "params", len(p.profile.Params))
	if s.Planned != nil {
		s.Planned(p.Footprint())
	}

	env, removed := policy.FilterEnv(s.Env, pol.Env.Allow, pol.Env.Set)
	if len(removed) > 0 {
		log.Debug("environment", "removed", strings.Join(removed, ","))
	}
	p.marker = randomHex(12)
	env = setEnv(env, proxyEnv...)
	env = setEnv(env, "TMPDIR="+tmp+"/", markerVar+"="+p.marker)

	// The command is looked up here, in its own PATH, so that "not found"
	// is moat's answer (127), not sandbox-exec's.
	if _, err := lookPath(s.Argv[0], lookupEnv(env, "PATH"), pol.Cwd); err != nil {
		return nil, err
	}

	if pol.Violations {
		p.startLog()
		p.cleanup = append(p.cleanup, p.stopLogNow)
	}

	args := p.profile.Args()
	if strings.HasPrefix(s.Argv[0], "-") {
		args = append(args, "--")
	}
	args = append(args, s.Argv...)
	sandboxExec := s.SandboxExec
	if sandboxExec == "" {
		sandboxExec = "/usr/bin/sandbox-exec"
	}
	cmd := exec.Command(sandboxExec, args...)
	if rl := runRlimits(pol.Limits); rl != (rlimits{}) {
		// moat's binary sets the limits and becomes sandbox-exec.
		if moatPath == "" {
			return nil, &enforce.SetupError{Step: "resource limits", Err: errors.New("moat's binary is unknown: it sets the file size and CPU time limits")}
		}
		argv := trampoline(moatPath, rl, sandboxExec, args)
		cmd = &exec.Cmd{Path: moatPath, Args: argv}
	}
	cmd.Env, cmd.Dir = env, pol.Cwd
	files := [3]*os.File{}
	for i, f := range s.Stdio {
		if s.Terminal != nil && s.Terminal.Mask&(1<<i) != 0 {
			f = slave
		}
		if f == nil {
			if f, err = os.Open(os.DevNull); err != nil {
				return nil, err
			}
			defer f.Close()
		}
		files[i] = f
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = files[0], files[1], files[2]
	// A session of its own: no controlling terminal of the caller's (its
	// /dev/tty would take the caller's keystrokes, and TIOCSTI inject
	// them), and a process group to kill as a whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if s.Terminal != nil {
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
		for i := 0; i < 3; i++ {
			if s.Terminal.Mask&(1<<i) != 0 {
				cmd.SysProcAttr.Ctty = i
				break
			}
		}
	}
	if err := cmd.Start(); err != nil {
		p.stopLogNow()
		return nil, &enforce.SetupError{Step: "sandbox-exec", Err: err}
	}
	p.cmd = cmd
	if slave != nil {
		slave.Close()
	}
	if master != nil && s.OnTerminal != nil {
		s.OnTerminal(master)
	}
	go p.wait(ctx)
	return p, nil
}

// Wait waits for the command and everything it started.
func (p *Process) Wait() (*Result, error) {
	<-p.done
	return p.res, p.err
}

// Signal delivers sig to the command's process group.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.cmd == nil || p.cmd.Process == nil {
		return errors.New("darwin: not started")
	}
	err := unix.Kill(-p.cmd.Process.Pid, sig)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// Kill ends the command's process group now.
func (p *Process) Kill() error { return p.Signal(syscall.SIGKILL) }

func (p *Process) wait(ctx context.Context) {
	exited := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = p.Kill()
		case <-exited:
		}
	}()
	_ = p.cmd.Wait()
	close(exited)
	// Nothing the command started outlives it: its process group, then
	// whatever still carries the run's marker.
	_ = p.Kill()
	p.sweep()
	p.finishLog()

	res := &Result{Tag: p.profile.Tag, Skipped: append([]enforce.Skip(nil), p.skipped...)}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = ws.Signal()
		res.ExitCode = 128 + int(res.Signal)
	} else {
		res.ExitCode = p.cmd.ProcessState.ExitCode()
	}
	p.mu.Lock()
	res.TimedOut = p.timedOut
	res.Violations = append(res.Violations, p.violations...)
	if p.logSkip != nil {
		res.Skipped = append(res.Skipped, *p.logSkip)
	}
	p.mu.Unlock()
	p.runCleanup()
	p.res = res
	close(p.done)
}

func (p *Process) runCleanup() {
	for i := len(p.cleanup) - 1; i >= 0; i-- {
		p.cleanup[i]()
	}
	p.cleanup = nil
}

func (p *Process) report(v policy.Violation) {
	p.mu.Lock()
	p.violations = append(p.violations, v)
	p.mu.Unlock()
	if p.spec.Report != nil {
		p.spec.Report(v)
	}
}

// startLog starts `log stream` for the run's tag and waits until it
// streams (its first line), so that no denial of the command is missed.
func (p *Process) startLog() {
	skip := func(err error) {
		p.logSkip = &enforce.Skip{Protection: enforce.ProtectionViolations, Reason: "the sandbox's log could not be read (" + err.Error() + "): denials are enforced, not reported"}
	}
	logCmd := p.spec.LogCommand
	if logCmd == "" {
		logCmd = "/usr/bin/log"
	}
	cmd := exec.Command(logCmd, LogStreamArgs(p.profile.Tag)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		skip(err)
		return
	}
	if err := cmd.Start(); err != nil {
		skip(err)
		return
	}
	r := &LogReader{Tag: p.profile.Tag, Explain: p.profile.Explain}
	ready := make(chan struct{})
	p.logDone = make(chan struct{})
	go func() {
		defer close(p.logDone)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		first := true
		for sc.Scan() {
			if first {
				close(ready)
				first = false
			}
			p.lastLog.Store(time.Now().UnixNano())
			for _, v := range r.Line(sc.Text()) {
				p.report(v)
			}
		}
		if first {
			close(ready)
		}
		for _, v := range r.Flush() {
			p.report(v)
		}
		_ = cmd.Wait()
	}()
	p.stopLog = func() { _ = cmd.Process.Kill() }
	select {
	case <-ready:
	case <-time.After(3 * time.Second):
		p.stopLogNow()
		skip(errors.New("log stream printed nothing for 3 s"))
	}
}

func (p *Process) stopLogNow() {
	if p.stopLog != nil {
		p.stopLog()
		<-p.logDone
		p.stopLog = nil
	}
}

// finishLog lets the log catch up with the command's last denials (the
// kernel reports them asynchronously): until it has been quiet for 300 ms,
// at most 1.5 s.
func (p *Process) finishLog() {
	if p.stopLog == nil {
		return
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if time.Since(time.Unix(0, p.lastLog.Load())) > 300*time.Millisecond {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stopLogNow()
}

// sweep kills every process of this user whose environment holds the
// run's marker: what left the process group (setsid, a double fork).
func (p *Process) sweep() {
	self := os.Getpid()
	for round := 0; round < 5; round++ {
		procs, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Getuid())
		if err != nil {
			return
		}
		killed := 0
		for _, kp := range procs {
			pid := int(kp.Proc.P_pid)
			if pid <= 1 || pid == self {
				continue
			}
			b, err := unix.SysctlRaw("kern.procargs2", pid)
			if err != nil || !hasMarker(b, p.marker) {
				continue
			}
			if unix.Kill(pid, unix.SIGKILL) == nil {
				killed++
			}
		}
		if killed == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openPTY opens a pseudo-terminal pair: posix_openpt, grantpt, unlockpt
// and ptsname, as the ioctls macOS implements them with.
func openPTY(rows, cols uint16) (master, slave *os.File, name string, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, "", err
	}
	fail := func(e error) (*os.File, *os.File, string, error) { m.Close(); return nil, nil, "", e }
	fd := int(m.Fd())
	if err := unix.IoctlSetInt(fd, unix.TIOCPTYGRANT, 0); err != nil {
		return fail(err)
	}
	if err := unix.IoctlSetInt(fd, unix.TIOCPTYUNLK, 0); err != nil {
		return fail(err)
	}
	var buf [128]byte
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(unix.TIOCPTYGNAME), uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
		return fail(e)
	}
	name = unix.ByteSliceToString(buf[:])
	s, err := os.OpenFile(name, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return fail(err)
	}
	if rows > 0 && cols > 0 {
		_ = unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}
	return m, s, name, nil
}
