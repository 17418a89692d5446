//go:build linux

package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

func newTestSession(t *testing.T, pol *policy.Policy) *Session {
	t.Helper()
	s, err := NewSession(context.Background(), SessionRequest{Policy: pol, StateDir: filepath.Join(pol.Cwd, ".state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sessionRun runs a command in the session and returns its merged output.
func sessionRun(t *testing.T, s *Session, c Command) (*Result, string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout, c.Stderr = w, w
	out := make(chan string)
	go func() { b, _ := io.ReadAll(r); out <- string(b) }()
	res, err := s.Run(context.Background(), c)
	w.Close()
	return res, <-out, err
}

func TestSession(t *testing.T) {
	pol, dir := testPolicy(t)
	s := newTestSession(t, pol)
	res, out, err := sessionRun(t, s, Command{Argv: []string{"/bin/sh", "-c", "echo one; echo x > f; pwd; exit 4"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 4 || out != "one\n"+dir+"\n" {
		t.Fatalf("exit %d, output %q", res.ExitCode, out)
	}
	// The next command sees what the first wrote, in another directory.
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	res, out, err = sessionRun(t, s, Command{Argv: []string{"cat", "../f"}, Dir: filepath.Join(dir, "sub")})
	if err != nil || res.ExitCode != 0 || out != "x\n" {
		t.Fatalf("second command: %v %+v %q", err, res, out)
	}
	// A missing command is an error of its own; the session goes on.
	_, _, err = sessionRun(t, s, Command{Argv: []string{"no-such-command-moat"}})
	var xe *enforce.ExecError
	if !errors.As(err, &xe) || xe.ExitCode() != 127 {
		t.Fatalf("a missing command: %v", err)
	}
	if res, _, err := sessionRun(t, s, Command{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("after an error: %v %+v", err, res)
	}
}

// Each command is confined as a single one is: writes outside allowWrite
// fail and are its own violations.
func TestSessionConfinesEachCommand(t *testing.T) {
	pol, _ := testPolicy(t)
	s := newTestSession(t, pol)
	res, _, err := sessionRun(t, s, Command{Argv: []string{"/bin/sh", "-c", "echo x > /etc/moat-session-test && echo ESCAPED"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 {
		t.Fatal("ESCAPE: a session command wrote /etc")
	}
	found := false
	for _, v := range res.Violations {
		found = found || v.Target == "/etc/moat-session-test"
	}
	if !found {
		t.Errorf("the violation is not the command's: %+v", res.Violations)
	}
	res, _, _ = sessionRun(t, s, Command{Argv: []string{"true"}})
	if len(res.Violations) != 0 {
		t.Errorf("a clean command got another's violations: %+v", res.Violations)
	}
}

// Commands run concurrently; killing one (or its timeout) ends its whole
// tree, daemons included, and leaves the others and the session running.
func TestSessionKillAndConcurrency(t *testing.T) {
	pol, dir := testPolicy(t)
	s := newTestSession(t, pol)
	marker := testutil.SleepMarker(97)
	long, err := s.Start(context.Background(), Command{Argv: []string{"/bin/sh", "-c", "setsid sleep " + marker + " & sleep " + marker}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res, out, err := sessionRun(t, s, Command{Argv: []string{"/bin/sh", "-c", fmt.Sprintf("echo %d", i)}})
			if err != nil || res.ExitCode != 0 || strings.TrimSpace(out) != fmt.Sprint(i) {
				errs <- fmt.Errorf("command %d: %v %+v %q", i, err, res, out)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(testutil.Procs("sleep "+marker, -1)) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := long.Kill(); err != nil {
		t.Fatal(err)
	}
	res, err := long.Wait()
	if err != nil || res.Signal == 0 {
		t.Fatalf("killed command: %v %+v", err, res)
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(testutil.Procs("sleep "+marker, -1)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a process of the killed command is left: %v", testutil.Procs("sleep "+marker, -1))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A timeout is the same, per command.
	res, _, err = sessionRun(t, s, Command{Argv: []string{"sleep", "30"}, Timeout: 200 * time.Millisecond})
	if err != nil || !res.TimedOut || res.ExitCode != 124 {
		t.Fatalf("timeout: %v %+v", err, res)
	}
	if res, _, err := sessionRun(t, s, Command{Argv: []string{"touch", filepath.Join(dir, "still-works")}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("the session stopped working: %v %+v", err, res)
	}
}

// Closing the session ends every command; nothing survives it; a command
// after Close is refused.
func TestSessionClose(t *testing.T) {
	pol, _ := testPolicy(t)
	s, err := NewSession(context.Background(), SessionRequest{Policy: pol, StateDir: filepath.Join(pol.Cwd, ".state")})
	if err != nil {
		t.Fatal(err)
	}
	marker := testutil.SleepMarker(98)
	r, err := s.Start(context.Background(), Command{Argv: []string{"/bin/sh", "-c", "setsid sleep " + marker + " & sleep " + marker}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(); err != nil {
		t.Fatalf("the running command: %v", err)
	}
	if left := testutil.Procs("sleep "+marker, -1); len(left) > 0 {
		t.Fatalf("processes survived the session: %v", left)
	}
	if _, err := s.Start(context.Background(), Command{Argv: []string{"true"}}); !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("a command after Close: %v", err)
	}
}

func TestSessionIdleTimeout(t *testing.T) {
	pol, _ := testPolicy(t)
	s, err := NewSession(context.Background(), SessionRequest{Policy: pol, StateDir: filepath.Join(pol.Cwd, ".state"), IdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := sessionRun(t, s, Command{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the idle session was not closed")
	}
}

// A command's fd 3 is the side channel the shell layer uses (the working
// directory after the command, say).
func TestSessionFD3(t *testing.T) {
	pol, dir := testPolicy(t)
	s := newTestSession(t, pol)
	r, w, _ := os.Pipe()
	got := make(chan string)
	go func() { b, _ := io.ReadAll(r); got <- string(b) }()
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	_, err := s.Run(context.Background(), Command{Argv: []string{"/bin/sh", "-c", "cd d && pwd -P >&3"}, FD3: w})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if out := <-got; strings.TrimSpace(out) != filepath.Join(dir, "d") {
		t.Fatalf("fd 3: %q", out)
	}
}

// A command cannot signal the session's server (pid 2 in the session's pid
// namespace) nor its reapers: Landlock scoping (ABI 6) puts each command in
// a domain of its own.
func TestSessionCommandsCannotSignalTheServer(t *testing.T) {
	v, _, e := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 || v < 6 {
		testutil.Unavailable(t, "Landlock ABI 6 (signal scoping) is needed; this kernel has %d", v)
	}
	pol, _ := testPolicy(t)
	s := newTestSession(t, pol)
	// Without the scope, the same user reaches the server: the test can fail.
	_, out, err := sessionRun(t, s, Command{Argv: []string{"/bin/sh", "-c", "ps -o pid=,ppid=,comm= 2>/dev/null; for p in 1 2; do kill -0 $p 2>/dev/null && echo REACHED $p; done; kill -KILL 2 2>/dev/null; true"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "REACHED") {
		t.Fatalf("ESCAPE: a command can signal the session's server or init:\n%s", out)
	}
	if res, _, err := sessionRun(t, s, Command{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("the session stopped working after a command tried to kill its server: %v %+v", err, res)
	}
}

// A session's limits hold each command's process tree; what a command hit
// is its own violation, and the session goes on.
func TestSessionLimits(t *testing.T) {
	pol, _ := testPolicy(t)
	pol.Limits.Pids = 32
	pol.Limits.FileSize = 1 << 20
	s := newTestSession(t, pol)
	bomb := `my @k; for my $i (1..100) { my $p = fork; if (!defined $p) { print "refused at $i\n"; last } if (!$p) { sleep 60; exit } push @k, $p } kill 'KILL', @k; waitpid($_, 0) for @k; print "done\n";`
	res, out, err := sessionRun(t, s, Command{Argv: []string{"perl", "-e", bomb}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "refused at") {
		t.Fatalf("100 processes under a limit of 32: %q", out)
	}
	if os.Geteuid() == 0 && !hasViolation(res, "limit pids 32 reached") {
		t.Errorf("the cgroup's refusals were not reported: %+v", res.Violations)
	}
	res, _, err = sessionRun(t, s, Command{Argv: []string{"/bin/sh", "-c", "head -c 2000000 /dev/zero > big"}})
	if err != nil || res.ExitCode != 128+25 || !hasViolation(res, "limit fileSize 1 MiB reached") {
		t.Errorf("a file past the limit: %v %+v", err, res)
	}
	if res, out, err := sessionRun(t, s, Command{Argv: []string{"perl", "-e", `for (1..10) { fork or do { sleep 1; exit } } 1 while wait != -1; print "ok\n"`}}); err != nil || res.ExitCode != 0 || out != "ok\n" {
		t.Errorf("the session after the limits were hit: %v %+v %q", err, res, out)
	}
}

// A command whose tree keeps forking ends whole when its timeout ends it,
// and the session goes on. Its reaper killed child by child: each round
// ended one generation while the next forked again, so such a tree
// outlived the command (61 processes as root, 253 rootless, until the
// session closed) and took the process limit from the next commands
// (found by an attack pass). The reaper's kill(-1) in a signal scope of its
// own ends it at once.
func TestSessionKillEndsForkingTree(t *testing.T) {
	pol, _ := testPolicy(t)
	pol.Limits.Pids = 64
	s := newTestSession(t, pol)
	marker := "moat-hydra-" + testutil.SleepMarker(0)
	// Every process forks again and again, whatever a refused fork says.
	script := `$SIG{CHLD} = "IGNORE"; while (1) { fork; select(undef, undef, undef, 0.001) }`
	type ran struct {
		res *Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, _, err := sessionRun(t, s, Command{Argv: []string{"perl", "-e", script, marker}, Timeout: time.Second})
		done <- ran{res, err}
	}()
	var r ran
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the command's end did not come 29 s after its timeout: its tree kept forking (%d processes)", len(testutil.Procs("perl -e "+script+" "+marker, os.Getuid())))
	}
	res, err := r.res, r.err
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut {
		t.Errorf("the forking tree must be ended by its timeout: %+v", res)
	}
	if pids := testutil.Procs("perl -e "+script+" "+marker, os.Getuid()); len(pids) > 0 {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("%d processes of the command outlived it", len(pids))
	}
	if res, out, err := sessionRun(t, s, Command{Argv: []string{"/bin/sh", "-c", "echo ok"}}); err != nil || res.ExitCode != 0 || out != "ok\n" {
		t.Errorf("the session after the forking tree: %v %+v %q", err, res, out)
	}
}

// A command cannot take the session's server (pid 2) its descriptors or
// its CPU: it lowered the server's descriptor limit, and every later
// command failed, "malformed request" (found by an attack pass). The
// server's limits and priority are kept as init's are.
func TestSessionServerKeepsItsLimits(t *testing.T) {
	pol, _ := testPolicy(t)
	s := newTestSession(t, pol)
	res, out, err := sessionRun(t, s, Command{Argv: []string{"/bin/sh", "-c", "prlimit --pid 2 --nofile=5:5 && echo LOWERED; renice -n 19 -p 2 >/dev/null && echo RENICED; grep 'open files' /proc/2/limits"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "LOWERED") || strings.Contains(out, "RENICED") {
		t.Errorf("a command changed the session server's limits or priority (exit %d):\n%s", res.ExitCode, out)
	}
	for i := 0; i < 3; i++ {
		if res, out, err := sessionRun(t, s, Command{Argv: []string{"/bin/sh", "-c", "echo ok"}}); err != nil || res.ExitCode != 0 || out != "ok\n" {
			t.Fatalf("the session after a command tried to cripple its server: %v %+v %q", err, res, out)
		}
	}
}

// A command's reaper (its parent, a subreaper that ends everything the
// command started) keeps its limits too: a command gave it a CPU-time limit
// of one second (prlimit --pid $PPID --cpu=1:1) and spent it with a stream
// of orphans for it to reap; the kernel killed the reaper, the session
// reported the command ended, and what it had started (setsid sleep) ran
// on into the next commands (found by attack pass 56). Only the command's
// own limits may change (prlimit64 on pid 0).
func TestSessionReaperKeepsItsLimits(t *testing.T) {
	pol, _ := testPolicy(t)
	s := newTestSession(t, pol)
	res, out, err := sessionRun(t, s, Command{Argv: []string{"/bin/sh", "-c",
		"prlimit --pid $PPID --cpu=1:1 && echo LOWERED; grep 'cpu time' /proc/$PPID/limits; prlimit --cpu=100:100 sh -c 'ulimit -t'"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "LOWERED") {
		t.Errorf("a command changed its reaper's limits (exit %d):\n%s", res.ExitCode, out)
	}
	if !strings.HasSuffix(out, "100\n") {
		t.Errorf("a command must still set its own limits (exit %d):\n%s", res.ExitCode, out)
	}
}

func hasViolation(res *Result, s string) bool {
	for _, v := range res.Violations {
		if strings.Contains(v.Line(), s) {
			return true
		}
	}
	return false
}

// deniedRequest is a python3 script whose request the test policy's proxy
// refuses; it prints "refused:" and why.
const deniedRequest = `import urllib.request
try:
    urllib.request.urlopen("http://denied.example/", timeout=5)
except Exception as e:
    print("refused:", e)`

// What the sandbox as a whole refuses (the proxy; as root, eBPF) is the
// running command's violation too, not only the session's.
func TestSessionProxyViolationIsTheCommands(t *testing.T) {
	pol, _ := testPolicy(t)
	s := newTestSession(t, pol)
	res, out, err := sessionRun(t, s, Command{Argv: []string{"python3", "-c", deniedRequest}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "refused:") {
		t.Fatalf("the request was not refused: %q", out)
	}
	found := false
	for _, v := range res.Violations {
		if v.Kind == policy.NetworkViolation && strings.Contains(v.Target, "denied.example") {
			found = true
		}
	}
	if !found {
		t.Errorf("the proxy's refusal is not among the command's violations: %+v\n%s", res.Violations, out)
	}
}

// A refusal the sandbox as a whole sees (the proxy's) names no command: with
// two commands running, the one that did nothing but sleep got the other's
// refused request in its report, unqualified, as if it had made it (attack
// pass 79). Each command's line says that any of those running may have made
// it, and a command running alone keeps the plain line.
func TestSessionSandboxViolationSaysWhoMayHaveMadeIt(t *testing.T) {
	pol, _ := testPolicy(t)
	s := newTestSession(t, pol)
	idle, err := s.Start(context.Background(), Command{Argv: []string{"sleep", "4"}})
	if err != nil {
		t.Fatal(err)
	}
	res, out, err := sessionRun(t, s, Command{Argv: []string{"python3", "-c", deniedRequest}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "refused:") {
		t.Fatalf("the request was not refused: %q", out)
	}
	idleRes, err := idle.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Result{"the command that made it": res, "the sleep beside it": idleRes} {
		found := false
		for _, v := range r.Violations {
			if v.Kind != policy.NetworkViolation || !strings.Contains(v.Target, "denied.example") {
				continue
			}
			found = true
			if !strings.Contains(v.Line(), "any of them may have made it") {
				t.Errorf("%s: the refusal is reported as this command's alone: %s", name, v.Line())
			}
		}
		if !found {
			t.Errorf("%s: the proxy's refusal is not in the report: %+v", name, r.Violations)
		}
	}
	// Alone, the command's line is the plain one.
	res, _, err = sessionRun(t, s, Command{Argv: []string{"python3", "-c", deniedRequest}})
	if err != nil {
		t.Fatal(err)
	}
	if !hasViolation(res, "denied.example") || hasViolation(res, "may have made it") {
		t.Errorf("a command running alone: %+v", res.Violations)
	}
}

// A session whose sandbox ends under a running command without Close (its
// stage 2 killed from outside, as nothing in moat does) fails the command
// as killed and logs how the sandbox ended: stage 2's own wait status (here
// the SIGKILL), so that a session lost under load says what ended it.
func TestSessionLostSaysHow(t *testing.T) {
	pol, _ := testPolicy(t)
	var log syncBuffer
	s, err := NewSession(context.Background(), SessionRequest{Policy: pol, StateDir: filepath.Join(pol.Cwd, ".state"),
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	marker := testutil.SleepMarker(97)
	r, err := s.Start(context.Background(), Command{Argv: []string{"sleep", marker}})
	if err != nil {
		t.Fatal(err)
	}
	// The session's stage 2: the ancestor of the command that is this
	// process's child.
	var stage2 int
	for deadline := time.Now().Add(10 * time.Second); stage2 == 0 && time.Now().Before(deadline); {
		for _, p := range testutil.Procs("sleep "+marker, -1) {
			for q := p; q > 1; {
				pp := parentPID(q)
				if pp == os.Getpid() {
					stage2 = q
					break
				}
				q = pp
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if stage2 == 0 {
		t.Fatal("the session's command is not below this process")
	}
	if err := syscall.Kill(stage2, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != syscall.SIGKILL {
		t.Fatalf("the command of a lost session: %+v", res)
	}
	if got := log.String(); !strings.Contains(got, "session sandbox ended with commands running") || !strings.Contains(got, `stage2="signal: killed"`) {
		t.Fatalf("the lost session's warning does not say stage 2 was killed:\n%s", got)
	}
}

// parentPID is pid's parent (0 once it is gone).
func parentPID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	var st byte
	var pp int
	fmt.Sscanf(s[i+1:], " %c %d", &st, &pp)
	return pp
}

// A command started as the idle timer fires either is refused
// (ErrSessionClosed) or runs to its end: the timer's check that nothing
// runs and its close are one step, so a command started between the two is
// never killed by a close meant for an idle session. The test holds the
// timer between its check and its close (idleCloseHook) while a command
// starts.
func TestSessionIdleCloseRace(t *testing.T) {
	pol, _ := testPolicy(t)
	checked := make(chan struct{})
	release := make(chan struct{})
	idleCloseHook = func() {
		close(checked)
		<-release
	}
	t.Cleanup(func() { idleCloseHook = nil })
	s, err := NewSession(context.Background(), SessionRequest{Policy: pol, StateDir: filepath.Join(pol.Cwd, ".state"), IdleTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := sessionRun(t, s, Command{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-checked:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle timer did not fire")
	}
	// The timer found the session idle and is about to close it: a
	// command starts now.
	type started struct {
		r   *Running
		err error
	}
	got := make(chan started, 1)
	go func() {
		r, err := s.Start(context.Background(), Command{Argv: []string{"sleep", "0.2"}})
		got <- started{r, err}
	}()
	time.Sleep(100 * time.Millisecond)
	close(release)
	st := <-got
	if errors.Is(st.err, ErrSessionClosed) {
		return // refused: the session was closing
	}
	if st.err != nil {
		t.Fatalf("a command started as the session went idle failed: %v", st.err)
	}
	if res, err := st.r.Wait(); err != nil || res.ExitCode != 0 {
		t.Fatalf("a command started as the session went idle was killed by the idle close: %v %+v", err, res)
	}
}

// A signal asked for a command whose reaper has just exited (its exit
// reported, not yet reaped by the server) writes to a pipe nobody reads:
// the session's server died of SIGPIPE, and every command of the session
// with it (the daemon's load test lost a session that way: "server killed
// by broken pipe"). Signals sent while commands end must leave the session
// working.
func TestSessionSignalAtCommandEnd(t *testing.T) {
	pol, _ := testPolicy(t)
	s := newTestSession(t, pol)
	for i := 0; i < 150; i++ {
		r, err := s.Start(context.Background(), Command{Argv: []string{"/bin/true"}})
		if err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if r.Signal(syscall.SIGCONT) != nil {
					return
				}
			}
		}()
		res, err := r.Wait()
		close(stop)
		<-stopped
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("command %d, signalled as it ended: %v %+v", i, err, res)
		}
	}
	if res, out, err := sessionRun(t, s, Command{Argv: []string{"/bin/sh", "-c", "echo alive"}}); err != nil || res.ExitCode != 0 || strings.TrimSpace(out) != "alive" {
		t.Fatalf("the session after signals at its commands' ends: %v %+v %q", err, res, out)
	}
}
