//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell"
)

func TestMain(m *testing.M) {
	if code, ok := runtime.Reexec(os.Args); ok {
		os.Exit(code)
	}
	done := testutil.OwnHome()
	code := m.Run()
	done()
	os.Exit(code)
}

// newShell opens a session sandbox writable in dir only, and a shell
// session on it.
func newShell(t *testing.T) (*shell.Session, string) {
	t.Helper()
	testutil.RequireUserns(t)
	root := os.Getenv("MOAT_TEST_DIR")
	if root == "" {
		root = "/var/tmp"
	}
	dir, err := os.MkdirTemp(root, "moat-shell-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	pol := &policy.Policy{Cwd: work, Home: dir, Violations: true}
	pol.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	pol.FS.AllowWrite = []policy.PathRule{{Path: work, Source: "test"}}
	sb, err := runtime.NewSession(context.Background(), runtime.SessionRequest{Policy: pol, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := shell.New(shell.Config{Runner: New(sb), Dir: work, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "LANG=C"},
		OutputDir: filepath.Join(dir, "state", "output"), Shell: shell.Bash("/bin/bash")})
	if err != nil {
		sb.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sess.Close()
		sb.Close()
	})
	return sess, work
}

func run(t *testing.T, s *shell.Session, cmd string) shell.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.Run(ctx, shell.Request{Command: cmd})
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return res
}

// The seeds' shell behaviours, end to end in a session sandbox: the working
// directory and exports carry over, exit codes are interpreted, writes
// outside the policy are refused and reported on the command that made them.
func TestShellInSessionSandbox(t *testing.T) {
	s, work := newShell(t)
	if r := run(t, s, "mkdir -p sub && cd sub && export GREETING=hello"); r.ExitCode != 0 {
		t.Fatalf("first command: %+v", r)
	}
	r := run(t, s, `pwd; echo "$GREETING"`)
	if r.Output != filepath.Join(work, "sub")+"\nhello\n" || r.Cwd != filepath.Join(work, "sub") {
		t.Fatalf("cwd and export did not carry over: %+v", r)
	}
	r = run(t, s, "grep -r nothing-matches-this .")
	if r.ExitCode != 1 || r.IsError || r.Message != "No matches found" {
		t.Errorf("grep's exit 1: %+v", r)
	}
	r = run(t, s, "echo pwned > /etc/moat-shell-test")
	if r.ExitCode == 0 || len(r.Violations) == 0 || !strings.Contains(r.Output, "sandbox_violations") {
		t.Errorf("a write outside the policy: %+v", r)
	}
	if _, err := os.Stat("/etc/moat-shell-test"); err == nil {
		os.Remove("/etc/moat-shell-test")
		t.Fatal("ESCAPE: the write outside the policy landed on the host")
	}
	// The session goes on after a refusal, and the snapshot's aliases work.
	if r := run(t, s, "true"); r.ExitCode != 0 {
		t.Errorf("after a refusal: %+v", r)
	}
}

// Background commands run in the sandbox and can be read and killed; a
// killed command leaves nothing behind.
func TestShellBackgroundKill(t *testing.T) {
	s, work := newShell(t)
	marker := testutil.SleepMarker(300)
	r, err := s.Run(context.Background(), shell.Request{Command: "echo started; sleep " + marker, Background: true})
	if err != nil || r.BackgroundID == "" {
		t.Fatalf("background: %v %+v", err, r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rr, err := s.Read(r.BackgroundID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(rr.Output, "started") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no output from the background command: %+v", rr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Kill(r.BackgroundID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.Wait(ctx, r.BackgroundID)
	if err != nil || !res.Interrupted {
		t.Fatalf("after Kill: %v %+v", err, res)
	}
	if pids := testutil.Procs("sleep "+marker, os.Getuid()); len(pids) > 0 {
		t.Errorf("the killed command left processes: %v", pids)
	}
	_ = work
}

// Output past the inline limit is saved to a file the sandbox cannot write.
func TestShellLongOutput(t *testing.T) {
	s, _ := newShell(t)
	r := run(t, s, "seq 1 20000")
	if r.OutputFile == "" || r.OutputLines != 20000 {
		t.Fatalf("long output: file %q, %d lines", r.OutputFile, r.OutputLines)
	}
	if w := run(t, s, "echo x >> "+r.OutputFile); w.ExitCode == 0 {
		t.Errorf("the sandbox could write the saved output %s", r.OutputFile)
	}
}

// Open is what a library host calls: the decisions gate each command, and
// what runs, runs in the sandbox.
func TestOpen(t *testing.T) {
	dir := openDir(t)
	outside := filepath.Join(dir, "outside.txt")
	os.WriteFile(outside, []byte("x"), 0o644)
	pol := &policy.Policy{Cwd: dir, Home: dir}
	pol.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	pol.Permissions.Deny = []policy.Rule{{Rule: "Bash(rm:*)"}}
	ctx := context.Background()
	for _, bad := range []Config{{}, {Policy: pol, Gate: "sometimes"}, {Policy: pol, Mode: "yolo"}, {Policy: pol, Timeout: -1}} {
		if s, err := Open(ctx, bad); err == nil {
			s.Close()
			t.Errorf("Open(%+v) must fail", bad)
		}
	}
	for _, tc := range []struct {
		gate    Gate
		command string
		refused bool
	}{
		{GateStrict, "echo hi", false},
		{GateStrict, "rm " + outside, true},
		{GateStrict, "touch " + outside + ".new", true}, // ask
		{GateDeny, "rm " + outside, true},
		{GateDeny, "touch " + outside + ".new", false}, // runs, and the sandbox refuses the write
		{GateOff, "rm " + outside, false},              // runs, and the sandbox refuses the unlink
	} {
		s, err := Open(ctx, Config{Policy: pol, Gate: tc.gate, StateDir: filepath.Join(dir, "state"), Env: []string{"PATH=/usr/bin:/bin", "LANG=C"}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Session.Run(ctx, shell.Request{Command: tc.command})
		s.Close()
		if err != nil {
			t.Fatalf("%s %q: %v", tc.gate, tc.command, err)
		}
		if (res.Refused != nil) != tc.refused {
			t.Errorf("gate %s, %q: refused %v, want %v (%+v)", tc.gate, tc.command, res.Refused, tc.refused, res)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the sandbox let a command remove %s: %v", outside, err)
	}
	if _, err := os.Stat(outside + ".new"); err == nil {
		t.Errorf("the sandbox let a command create %s.new", outside)
	}
	// The same removal without moat succeeds: the attack could work.
	if err := os.Remove(outside); err != nil {
		t.Fatal(err)
	}
}

// moat's state is hidden from every sandbox, the saved output of other
// sessions with it (a command of one read another's: found by an attack
// pass); a session's own saved output stays readable to its commands, which
// read it back (cat, tail, grep).
func TestOpenSavedOutputIsTheSessions(t *testing.T) {
	dir := openDir(t)
	pol := &policy.Policy{Cwd: dir, Home: dir}
	pol.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	ctx := context.Background()
	open := func() *Shell {
		s, err := Open(ctx, Config{Policy: pol, Gate: GateOff, StateDir: filepath.Join(dir, "state"), Env: []string{"PATH=/usr/bin:/bin", "LANG=C"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	res, err := a.Session.Run(ctx, shell.Request{Command: "seq 1 20000"})
	if err != nil || res.OutputFile == "" {
		t.Fatalf("long output not saved: %v %+v", err, res)
	}
	back, err := a.Session.Run(ctx, shell.Request{Command: "tail -n 1 " + res.OutputFile})
	if err != nil || back.ExitCode != 0 || !strings.Contains(back.Output, "20000") {
		t.Errorf("the session cannot read back its own saved output: %v %+v", err, back)
	}
	other, err := b.Session.Run(ctx, shell.Request{Command: "tail -n 1 " + res.OutputFile})
	if err != nil || strings.Contains(other.Output, "20000") {
		t.Errorf("another session read this one's saved output: %v %+v", err, other)
	}
	// Without moat the file is there to read: the test can fail.
	if b, err := os.ReadFile(res.OutputFile); err != nil || !strings.Contains(string(b), "20000") {
		t.Fatalf("the saved output: %v", err)
	}
}

// openDir is a directory of the test's own for Open's sandboxes (the
// host's /tmp is hidden in them).
func openDir(t *testing.T) string {
	t.Helper()
	testutil.RequireUserns(t)
	root := os.Getenv("MOAT_TEST_DIR")
	if root == "" {
		root = "/var/tmp"
	}
	dir, err := os.MkdirTemp(root, "moat-open-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// A session's saved output is read-only to its commands whatever the
// writable roots: with moat's state directory under one (--write $HOME), a
// later command rewrote an earlier command's saved output and planted a
// link beside it (found by an attack pass).
func TestOpenSavedOutputReadOnly(t *testing.T) {
	dir := openDir(t)
	pol := &policy.Policy{Cwd: dir, Home: dir}
	pol.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	pol.FS.AllowWrite = []policy.PathRule{{Path: dir, Source: "test: --write $HOME"}}
	ctx := context.Background()
	s, err := Open(ctx, Config{Policy: pol, Gate: GateOff, StateDir: filepath.Join(dir, "state"), Env: []string{"PATH=/usr/bin:/bin", "LANG=C"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	res, err := s.Session.Run(ctx, shell.Request{Command: "seq 1 20000"})
	if err != nil || res.OutputFile == "" {
		t.Fatalf("long output not saved: %v %+v", err, res)
	}
	out := filepath.Dir(res.OutputFile)
	attack := fmt.Sprintf("echo FORGED > %s; ln -s /etc/hostname %s/planted; touch %s/probe", res.OutputFile, out, dir)
	if _, err := s.Session.Run(ctx, shell.Request{Command: attack}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(res.OutputFile); !strings.Contains(string(b), "20000") {
		t.Errorf("a later command rewrote the saved output: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(out, "planted")); err == nil {
		t.Errorf("a command planted a link in the saved output's directory")
	}
	// The writable root is writable: the attack could work.
	if _, err := os.Stat(filepath.Join(dir, "probe")); err != nil {
		t.Errorf("the writable root was not writable (the test cannot fail): %v", err)
	}
	if r, err := s.Session.Run(ctx, shell.Request{Command: "tail -n 1 " + res.OutputFile}); err != nil || !strings.Contains(r.Output, "20000") {
		t.Errorf("the session cannot read back its saved output: %v %+v", err, r)
	}
}
