//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"golang.org/x/sys/unix"
)

// moatRunAs is moat run as the user u in dir, through the test's daemon.
func moatRunAs(t *testing.T, d *daemon, u *daemonUser, dir, stdin string, extraEnv []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(moatBin(t), append([]string{"run"}, args...)...)
	cmd.Dir = dir
	cmd.Env = clientEnv(dir, append([]string{"MOAT_DAEMON_SOCKET=" + d.sock}, extraEnv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{uint32(u.gid)}}}
	cmd.Stdin = strings.NewReader(stdin)
	return cmd
}

// TestDaemonRun: moat run as a user, through a real moatd: the command
// gets the client's own descriptors (stdin read, stdout and stderr
// written), runs as the user with the daemon's eBPF layer (a direct
// connection refused with EPERM and reported), its exit status is moat
// run's, a write outside the policy fails (the user can do it without
// moat), a signal to the client reaches the command, and a client killed
// with SIGKILL leaves no process behind.
func TestDaemonRun(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	outside := filepath.Join(dir, "outside-"+u1.name)
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(outside, u1.uid, u1.gid)
	run := func(stdin string, extraEnv []string, args ...string) (int, string, string) {
		t.Helper()
		cmd := moatRunAs(t, d, u1, u1.dir, stdin, extraEnv, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}

	// Stdio are the client's: stdin read, stdout and stderr written.
	code, out, errs := run("hello from stdin\n", nil, "--write", ".", "--", "sh", "-c", "cat; id -u; echo to-stderr >&2")
	if code != 0 || out != "hello from stdin\n"+strconv.Itoa(u1.uid)+"\n" || !strings.Contains(errs, "to-stderr") {
		t.Fatalf("through moatd: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if !strings.Contains(errs, "moat: running through moatd ("+d.sock+"): eBPF network layer and cgroup limits") {
		t.Errorf("no note that moatd ran it:\n%s", errs)
	}
	// The exit status, and moat's own codes.
	if code, _, errs := run("", nil, "--", "sh", "-c", "exit 7"); code != 7 {
		t.Errorf("exit 7 through moatd: got %d (%s)", code, errs)
	}
	if code, _, errs := run("", nil, "--", "no-such-command-moat"); code != 127 {
		t.Errorf("a missing command through moatd: exit %d, want 127 (%s)", code, errs)
	}
	// The eBPF layer: EPERM from the cgroup's hook (the network namespace
	// alone says ENETUNREACH), and the report.
	code, _, errs = run("", nil, "--", "bash", "-c", "echo > /dev/tcp/192.0.2.1/80")
	if code == 0 || !strings.Contains(errs, "Operation not permitted") || !strings.Contains(errs, "192.0.2.1:80") {
		t.Errorf("a direct connection through moatd: exit %d, stderr %q; want EPERM and a violation", code, errs)
	}
	// A write outside the policy fails; the user can do it without moat.
	target := filepath.Join(outside, "pwned")
	code, _, errs = run("", nil, "--write", ".", "--", "sh", "-c", "echo pwned > "+target)
	if code == 0 {
		t.Errorf("a write to %s through moatd succeeded", target)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("moat run through moatd wrote %s, outside its policy:\n%s", target, errs)
	}
	if _, stderr, err := u1.as("sh", "-c", "echo pwned > "+target+"-without-moat"); err != nil {
		t.Fatalf("%s cannot write %s without moat either: the attack proves nothing (%s)", u1.name, outside, stderr)
	}
	// A change through a descriptor, and a write that reopens one by its
	// link, are reported by the file's path through moatd too (its
	// observer reads another user's process: attack pass 79's routes).
	victim := filepath.Join(outside, "victim")
	for _, route := range []string{`echo x > /dev/fd/3`, `python3 -c 'import os; os.chmod(3, 0o600)'`} {
		if err := os.WriteFile(victim, []byte("v\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(victim, u1.uid, u1.gid)
		script := "exec 3<" + victim + "; if " + route + "; then echo ESCAPED; fi; true"
		if out, stderr, err := u1.as("bash", "-c", script); err != nil || !strings.Contains(out, "ESCAPED") {
			t.Fatalf("%s: %s cannot change its own file without moat: the attack proves nothing (%v, %s)", route, u1.name, err, stderr)
		}
		code, out, errs := run("", nil, "--write", ".", "--", "bash", "-c", script)
		if code != 0 || strings.Contains(out, "ESCAPED") || !strings.Contains(errs, "deny file-write "+victim+" (") || strings.Count(errs, "deny ") != 1 {
			t.Errorf("%s through moatd: exit %d, stdout %q; want it refused and reported once by its path:\n%s", route, code, out, errs)
		}
	}
	// A bad request is moat's error (125), naming the field.
	if code, _, errs := run("", nil, "--write", "/etc", "--", "true"); code != 125 || !strings.Contains(errs, "write") {
		t.Errorf("--write /etc through moatd: exit %d, stderr %q; want 125 naming write", code, errs)
	}
	// What the daemon cannot honour runs rootless, saying why; required: 125.
	if code, _, errs := run("", nil, "--debug", "--", "true"); code != 0 || !strings.Contains(errs, "moatd not used (--debug") {
		t.Errorf("--debug: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := run("", []string{"MOAT_DAEMON=required"}, "--debug", "--", "true"); code != 125 {
		t.Errorf("--debug with MOAT_DAEMON=required: exit %d, stderr %q; want 125", code, errs)
	}

	// A client under no_new_privs (a command of another sandbox: Landlock
	// sets it) is refused, so that the daemon's commands do not escape
	// that sandbox; without MOAT_DAEMON=required it runs rootless, where
	// its own confinement stays.
	nnp := func(extraEnv []string) (int, string) {
		cmd := moatRunAs(t, d, u1, u1.dir, "", extraEnv, "--", "true")
		cmd.Args = append([]string{"setpriv", "--no-new-privs"}, cmd.Args...)
		cmd.Path, _ = exec.LookPath("setpriv")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), errb.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, errb.String()
	}
	if code, errs := nnp([]string{"MOAT_DAEMON=required"}); code != 125 || !strings.Contains(errs, "no_new_privs") {
		t.Errorf("a client under no_new_privs with MOAT_DAEMON=required: exit %d, stderr %q; want 125 naming no_new_privs", code, errs)
	}
	if code, errs := nnp(nil); code != 0 || !strings.Contains(errs, "running rootless") {
		t.Errorf("a client under no_new_privs: exit %d, stderr %q; want a rootless run", code, errs)
	}

	// A signal to the client reaches the command.
	marker := testutil.SleepMarker(300)
	cmd := moatRunAs(t, d, u1, u1.dir, "", nil, "--", "sh", "-c", "trap 'echo got-term; exit 3' TERM; sleep "+marker+" & wait")
	var sigOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &sigOut, &sigOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitProc(t, "sleep "+marker, u1.uid)
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(sigOut.String(), "got-term") {
		t.Errorf("SIGTERM to moat run through moatd: %v, output %q; want the trap's exit 3", err, sigOut.String())
	}
	gone(t, "sleep "+marker)

	// One user holds at most 16 runs (--max-sessions-per-user): the 17th is
	// refused (125), and the others keep running.
	limMarker := testutil.SleepMarker(300)
	var held []*exec.Cmd
	for i := 0; i < 16; i++ {
		c := moatRunAs(t, d, u1, u1.dir, "", []string{"MOAT_DAEMON=required"}, "--", "sleep", limMarker)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for deadline := time.Now().Add(time.Minute); len(testutil.Procs("sleep "+limMarker, u1.uid)) < 16; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("16 runs never ran: %d", len(testutil.Procs("sleep "+limMarker, u1.uid)))
		}
	}
	if code, _, errs := run("", nil, "--", "true"); code != 125 || !strings.Contains(errs, "the most the daemon allows a user") {
		t.Errorf("a 17th run: exit %d, stderr %q; want 125 saying why", code, errs)
	}
	for _, c := range held {
		c.Process.Kill()
		c.Wait()
	}
	gone(t, "sleep "+limMarker)

	// A client killed with SIGKILL: its connection closes, the command dies.
	marker = testutil.SleepMarker(300)
	cmd = moatRunAs(t, d, u1, u1.dir, "", nil, "--", "sleep", marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitProc(t, "sleep "+marker, u1.uid)
	cmd.Process.Kill()
	cmd.Wait()
	gone(t, "sleep "+marker)
}

// waitProc waits until a process of uid runs the command line want.
func waitProc(t *testing.T, want string, uid int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); len(testutil.Procs(want, uid)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%q never ran as uid %d", want, uid)
		}
	}
}

// gone waits (a little) until no process runs the command line want.
func gone(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(testutil.Procs(want, -1)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%q is still running: %v", want, testutil.Procs(want, -1))
		}
	}
}

// TestDaemonSessionKilledClient: moat session --jsonl through moatd, killed
// with SIGKILL while a background command runs: the daemon closes its
// session (the connection that held it closed), and the command is gone.
func TestDaemonSessionKilledClient(t *testing.T) {
	d, u1, _, _ := daemonFixture(t)
	s := startSessionAs(t, u1, u1.dir, clientEnv(u1.dir, "MOAT_DAEMON_SOCKET="+d.sock), "--gate", "off")
	if ev := s.run("id", "id -u"); strings.TrimSpace(ev["output"].(string)) != strconv.Itoa(u1.uid) {
		t.Fatalf("id -u: %v", ev)
	}
	marker := testutil.SleepMarker(300)
	s.send(map[string]any{"id": "bg", "op": "run", "command": "sleep " + marker, "background": true})
	s.until("bg", "backgrounded")
	waitProc(t, "sleep "+marker, u1.uid)
	s.cmd.Process.Kill()
	s.cmd.Wait()
	gone(t, "sleep "+marker)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := u1.call(t, d.sock, "GET", "/v1/sessions", "")
		if code == 200 && !strings.Contains(body, `"id":"s`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon still holds the killed client's session: %d %s", code, body)
		}
	}
}

// TestDaemonRunTerminal: moat run on a terminal, through moatd: the
// command gets a terminal of its own (of the client's size), keystrokes
// reach it and its output comes back, and the client's terminal is as it
// was afterwards. moatd hands the pty's master to the client, which relays
// (the daemon never writes to a client's terminal).
func TestDaemonRunTerminal(t *testing.T) {
	d, u1, _, _ := daemonFixture(t)
	master, slave := testutil.OpenPTY(t)
	defer master.Close()
	defer slave.Close()
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 101}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	cmd := moatRunAs(t, d, u1, u1.dir, "", nil, "--", "sh", "-c", "test -t 0 && test -t 1 && echo tty-yes; stty size; read line; echo got:$line")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	out := make(chan string, 1)
	go func() {
		var b []byte
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			b = append(b, buf[:n]...)
			if strings.Contains(string(b), "got:") || err != nil {
				out <- string(b)
				return
			}
			if strings.Contains(string(b), "33 101") && !strings.Contains(string(b), "sent") {
				master.Write([]byte("hello\r"))
				b = append(b, "sent"...)
			}
		}
	}()
	var got string
	select {
	case got = <-out:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("no answer from the command on its terminal in 60 s")
	}
	if err := <-done; err != nil {
		t.Errorf("moat run: %v\n%s", err, got)
	}
	for _, want := range []string{"tty-yes", "33 101", "got:hello"} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal shows no %q:\n%q", want, got)
		}
	}
	after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("the client's terminal was left changed: lflag %#x -> %#x, iflag %#x -> %#x, oflag %#x -> %#x",
			before.Lflag, after.Lflag, before.Iflag, after.Iflag, before.Oflag, after.Oflag)
	}
}

// A denyRead path its client cannot reach (in a root-only directory, as
// /root/.ssh is) does not break the client's runs: moatd plans as root,
// and the mount over it, made in the client's sandbox, was refused, so
// every run failed on a host with /root/.ssh. The file stays unreadable.
func TestDaemonUnreachableDenyRead(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	ro := filepath.Join(dir, "rootonly")
	if err := os.Mkdir(ro, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(ro, "secret")
	if err := os.WriteFile(secret, []byte("SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(dir, "users.d")
	if err := os.MkdirAll(users, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := fmt.Sprintf(`{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[%q],"allowWrite":[],"denyWrite":[]}}`, secret)
	if err := os.WriteFile(filepath.Join(users, "default.json"), []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := moatRunAs(t, d, u1, u1.dir, "", []string{"MOAT_DAEMON=required"}, "--", "sh", "-c", "echo ran; cat "+secret+" 2>/dev/null || echo refused")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil || out.String() != "ran\nrefused\n" {
		t.Fatalf("through moatd with an unreachable denyRead path: %v, stdout %q, stderr %q", err, out.String(), errb.String())
	}
}

// TestDaemonPlaceholderBesideOwnRun: a user's run through moatd and the
// same user's own rootless run, at once in one project, record their
// placeholders in journals of their own (moatd's per-uid one, the user's
// state directory). The moatd run made the placeholder .vscode, the
// rootless run mounted over it as the user's file, and when the moatd run
// ended it removed it: the kernel detached the rootless run's mount, and
// its command made .vscode/tasks.json in the project. Runs now hold the
// directories they mount over a name in (linux/journal Hold). The user
// makes the file without moat.
func TestDaemonPlaceholderBesideOwnRun(t *testing.T) {
	d, u1, _, _ := daemonFixture(t)
	vscode := filepath.Join(u1.dir, ".vscode")
	b := moatRunAs(t, d, u1, u1.dir, "", []string{"MOAT_DAEMON=required"}, "--write", ".", "--", "sh", "-c", "while [ ! -e end-b ]; do sleep 0.05; done")
	var bOut, aOut bytes.Buffer
	b.Stdout, b.Stderr = &bOut, &bOut
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		os.WriteFile(filepath.Join(u1.dir, "end-b"), nil, 0o644)
		b.Wait()
	}()
	waitFor := func(p, what string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Lstat(p); err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never came (%s)\nmoatd's run: %s\nthe rootless run: %s", what, p, bOut.String(), aOut.String())
			}
		}
	}
	waitFor(vscode, "the moatd run's placeholder")
	a := moatRunAs(t, d, u1, u1.dir, "", []string{"MOAT_DAEMON=off"}, "--write", ".", "--", "sh", "-c",
		"touch a-ready; while [ ! -e plant-now ]; do sleep 0.05; done; mkdir -p .vscode && echo '{}' > .vscode/tasks.json && echo PLANTED")
	a.Stdout, a.Stderr = &aOut, &aOut
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(filepath.Join(u1.dir, "a-ready"), "the rootless run's command")
	if err := os.WriteFile(filepath.Join(u1.dir, "end-b"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(); err != nil || !strings.Contains(bOut.String(), "running through moatd") {
		t.Fatalf("the first run did not run through moatd to its end: %v\n%s", err, bOut.String())
	}
	if err := os.WriteFile(filepath.Join(u1.dir, "plant-now"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a.Wait()
	if strings.Contains(aOut.String(), "PLANTED") {
		t.Errorf("ESCAPE: the rootless run's command made .vscode/tasks.json once moatd's run removed the placeholder it was mounted over:\n%s", aOut.String())
	} else if !strings.Contains(aOut.String(), "mkdir") {
		t.Errorf("the rootless run's command did not try:\n%s", aOut.String())
	}
	if _, err := os.Stat(filepath.Join(vscode, "tasks.json")); err == nil {
		t.Errorf("%s/tasks.json is on the host", vscode)
	}
	// Without moat the user makes it (the kept placeholder taken away).
	os.Remove(vscode)
	if _, stderr, err := u1.as("sh", "-c", "mkdir -p "+vscode+" && echo '{}' > "+vscode+"/tasks.json"); err != nil {
		t.Errorf("%s cannot make %s/tasks.json without moat either: the test proves nothing (%s)", u1.name, vscode, stderr)
	}
}
