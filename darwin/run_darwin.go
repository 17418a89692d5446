//go:build darwin

package darwin

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Start sets the run up and starts the command; the caller must Wait.
// Cancelling ctx kills the process group; the timeout and signals are the
// caller's (the runtime's). The steps, in order: what the policy asks that
// macOS cannot give (Unenforced: refused unless best effort); a private
// TMPDIR (makeTmpDir); the proxy's listeners on the host's loopback
// (listenProxy); a pty of the run's own, if asked (openTerminal); the
// survey and the profile (makeProfile); Spec.Planned; the environment
// (environment); the log reader (startLog); sandbox-exec in a new session
// (exec). Each step adds the undoing of what it made to p.cleanup: if one
// fails, nothing runs and the one deferred runCleanup undoes the others.
func Start(ctx context.Context, s Spec) (_ *Process, err error) {
	if s.Policy == nil || len(s.Argv) == 0 {
		return nil, errors.New("darwin: a policy and a command are required")
	}
	skipped, err := Unenforced(s.Policy)
	if err != nil {
		return nil, err
	}
	p := &Process{spec: s, done: make(chan struct{}), skipped: skipped, moatPath: s.MoatPath}
	if p.moatPath == "" {
		p.moatPath, _ = os.Executable()
	}
	defer func() {
		if err != nil {
			p.runCleanup()
		}
	}()
	if err := p.makeTmpDir(); err != nil {
		return nil, err
	}
	route, err := p.listenProxy()
	if err != nil {
		return nil, err
	}
	tty, err := p.openTerminal()
	if err != nil {
		return nil, err
	}
	if err := p.makeProfile(route, tty.name); err != nil {
		return nil, err
	}
	if s.Planned != nil {
		if err := s.Planned(p.Footprint()); err != nil {
			return nil, err
		}
	}
	env, err := p.environment(route.env)
	if err != nil {
		return nil, err
	}
	if s.Policy.Violations {
		p.startLog()
		p.cleanup = append(p.cleanup, p.stopLogNow)
	}
	if err := p.exec(env, tty); err != nil {
		return nil, err
	}
	tty.handOver(s.OnTerminal)
	go p.wait(ctx)
	return p, nil
}

// makeTmpDir makes the run's private TMPDIR (mode 0700).
func (p *Process) makeTmpDir() error {
	tmp, err := os.MkdirTemp(p.spec.TmpRoot, "moat-")
	if err != nil {
		return &enforce.SetupError{Step: "private TMPDIR", Err: err}
	}
	p.cleanup = append(p.cleanup, func() { os.RemoveAll(tmp) })
	p.tmpDir = tmp
	return nil
}

// proxyRoute is where the command reaches its proxy: the loopback ports
// the profile opens (none for an external proxy: Generate takes the
// policy's) and the variables that name them.
type proxyRoute struct {
	httpPort, socksPort int
	env                 []string
}

// listenProxy makes the proxy's listeners on the host's loopback and
// hands them to Spec.Proxy, or names the policy's external proxy.
func (p *Process) listenProxy() (proxyRoute, error) {
	s, pol := p.spec, p.spec.Policy
	switch {
	case pol.Net.HTTPProxyPort != 0 || pol.Net.SOCKSProxyPort != 0:
		// An external filtering proxy already listens on the host's
		// loopback: the profile lets the command reach it there, and
		// that proxy decides.
		if s.Proxy == nil {
			return proxyRoute{}, errors.New("darwin: the policy names an external proxy: Spec.Proxy is required (it gives the command's proxy variables)")
		}
		h, k := externalProxyAddrs(pol.Net)
		return proxyRoute{env: s.Proxy.Env(h, k, p.moatPath)}, nil
	case s.Proxy != nil:
		var ls [2]net.Listener // HTTP, SOCKS5
		for i := range ls {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return proxyRoute{}, &enforce.SetupError{Step: "proxy listener", Err: err}
			}
			p.cleanup = append(p.cleanup, func() { l.Close() })
			ls[i] = l
		}
		// Any process of the host can reach the host's loopback.
		if _, err := s.Proxy.RequireCredential(); err != nil {
			return proxyRoute{}, &enforce.SetupError{Step: "proxy credential", Err: err}
		}
		s.Proxy.Serve(ls[0], false)
		s.Proxy.Serve(ls[1], true)
		return proxyRoute{
			httpPort:  ls[0].Addr().(*net.TCPAddr).Port,
			socksPort: ls[1].Addr().(*net.TCPAddr).Port,
			env:       s.Proxy.Env(ls[0].Addr().String(), ls[1].Addr().String(), p.moatPath),
		}, nil
	case pol.Net.WantsNetwork():
		return proxyRoute{}, errors.New("darwin: the policy allows network destinations: Spec.Proxy is required")
	}
	return proxyRoute{}, nil
}

// terminal is the run's own pseudo-terminal (Spec.Terminal), or none.
type terminal struct {
	master, slave *os.File
	name          string // the slave's path, which the profile lets the command use
	handed        bool   // the master is no longer the run's to close
}

// openTerminal opens the run's pty when the caller has a terminal.
func (p *Process) openTerminal() (*terminal, error) {
	t := &terminal{}
	if p.spec.Terminal == nil {
		return t, nil
	}
	var err error
	if t.master, t.slave, t.name, err = openPTY(p.spec.Terminal.Rows, p.spec.Terminal.Cols); err != nil {
		return nil, &enforce.SetupError{Step: "pseudo-terminal", Err: err}
	}
	p.cleanup = append(p.cleanup, func() {
		t.slave.Close()
		if !t.handed {
			t.master.Close()
		}
	})
	return t, nil
}

// handOver gives the master to onTerminal once the command runs (the
// caller relays it and owns it), or closes it; this process no longer
// needs the slave.
func (t *terminal) handOver(onTerminal func(master *os.File)) {
	if t.master == nil {
		return
	}
	t.slave.Close()
	t.handed = true
	if onTerminal == nil {
		t.master.Close()
		return
	}
	onTerminal(t.master)
}

// makeProfile surveys the writable trees for what must stay read-only in
// them and generates the run's profile.
func (p *Process) makeProfile(route proxyRoute, tty string) error {
	pol := p.spec.Policy
	env := p.spec.Env
	prot, err := Survey(pol, SurveyOptions{
		XDGConfigHome: lookupEnv(env, "XDG_CONFIG_HOME"),
		HGRCPath:      lookupEnv(env, "HGRCPATH"),
		// The user's git reads these from the same environment.
		GitConfigGlobal: lookupEnv(env, "GIT_CONFIG_GLOBAL"),
		GitConfigSystem: lookupEnv(env, "GIT_CONFIG_SYSTEM"),
		GitTemplateDir:  lookupEnv(env, "GIT_TEMPLATE_DIR"),
	})
	if err != nil {
		return &enforce.SetupError{Step: "survey of the writable trees", Err: err}
	}
	if p.moatPath != "" {
		prot = append(prot, Protection{Path: p.moatPath, Why: "moat: its own binary is never writable"})
	}
	p.profile, err = Generate(pol, Options{Tag: NewTag(), HTTPProxyPort: route.httpPort, SOCKSProxyPort: route.socksPort, TmpDir: p.tmpDir, TTY: tty, Protect: prot})
	if err != nil {
		return err
	}
	p.spec.logger().Debug("seatbelt profile", "tag", p.profile.Tag, "rules", len(p.profile.entries), "params", len(p.profile.Params))
	return nil
}

// environment is the command's environment: credentials filtered out, the
// proxy's variables, TMPDIR and the run's marker. The command is looked up
// here, in its own PATH, so that "not found" is moat's answer (127), not
// sandbox-exec's.
func (p *Process) environment(proxyEnv []string) ([]string, error) {
	pol := p.spec.Policy
	env, removed := policy.FilterEnv(p.spec.Env, pol.Env.Allow, pol.Env.Set)
	if len(removed) > 0 {
		p.spec.logger().Debug("environment", "removed", strings.Join(removed, ","))
	}
	p.marker = randomHex(12)
	env = setEnv(env, proxyEnv...)
	env = setEnv(env, "TMPDIR="+p.tmpDir+"/", markerVar+"="+p.marker)
	if _, err := lookPath(p.spec.Argv[0], lookupEnv(env, "PATH"), pol.Cwd); err != nil {
		return nil, err
	}
	return env, nil
}

// command is sandbox-exec with the profile and the command, or moat's
// binary setting the rlimits first and becoming sandbox-exec.
func (p *Process) command(env []string) (*exec.Cmd, error) {
	s := p.spec
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
	if rl := runRlimits(s.Policy.Limits); rl != (rlimits{}) {
		if p.moatPath == "" {
			return nil, &enforce.SetupError{Step: "resource limits", Err: errors.New("moat's binary is unknown: it sets the file size and CPU time limits")}
		}
		cmd = &exec.Cmd{Path: p.moatPath, Args: trampoline(p.moatPath, rl, sandboxExec, args)}
	}
	cmd.Env, cmd.Dir = env, s.Policy.Cwd
	return cmd, nil
}

// exec starts the command on its descriptors (the pty's slave for those
// the terminal replaces, /dev/null for a nil one) in a session of its own:
// no controlling terminal of the caller's (its /dev/tty would take the
// caller's keystrokes, and TIOCSTI inject them), and a process group to
// kill as a whole.
func (p *Process) exec(env []string, tty *terminal) error {
	s := p.spec
	cmd, err := p.command(env)
	if err != nil {
		return err
	}
	files := [3]*os.File{}
	for i, f := range s.Stdio {
		if s.Terminal != nil && s.Terminal.Mask&(1<<i) != 0 {
			f = tty.slave
		}
		if f == nil {
			if f, err = os.Open(os.DevNull); err != nil {
				return err
			}
			defer f.Close() // the command has its own copy
		}
		files[i] = f
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = files[0], files[1], files[2]
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
		return &enforce.SetupError{Step: "sandbox-exec", Err: err}
	}
	p.cmd = cmd
	return nil
}

// Wait waits for the command and everything it started. The violations
// already went to Spec.Report as the log reader read them.
func (p *Process) Wait() (*enforce.Exit, error) {
	<-p.done
	return p.exit, nil
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

	exit := exitOf(p.cmd.ProcessState, append([]enforce.Skip(nil), p.skipped...))
	if p.logSkip != nil {
		exit.Skipped = append(exit.Skipped, *p.logSkip)
	}
	p.runCleanup()
	p.exit = exit
	close(p.done)
}

func (p *Process) runCleanup() {
	for i := len(p.cleanup) - 1; i >= 0; i-- {
		p.cleanup[i]()
	}
	p.cleanup = nil
}

func (p *Process) report(v policy.Violation) {
	if p.spec.Report != nil {
		p.spec.Report(v)
	}
}

// startLog starts `log stream` for the run's tag and waits until it
// streams, so that no denial of the command is missed: until its first
// line, which is its header, or the readiness marker this process logs
// with logger(1) (a message holding the tag, which the reader does not
// take for a report: it is not the kernel's) every 200 ms, for at most 3 s.
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
		_ = cmd.Wait()
	}()
	p.stopLog = func() { _ = cmd.Process.Kill() }
	deadline := time.After(3 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	mark := func() { _ = exec.Command("/usr/bin/logger", "moat: log stream ready "+p.profile.Tag).Run() }
	mark()
	for {
		select {
		case <-ready:
			return
		case <-tick.C:
			mark()
		case <-deadline:
			p.stopLogNow()
			skip(errors.New("log stream printed nothing for 3 s"))
			return
		}
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
