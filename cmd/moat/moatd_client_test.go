//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// The CLI's side of moatd: moat session --jsonl run by an unprivileged
// user goes through the daemon when it answers, and runs rootless with a
// note when it does not.

// startSessionAs starts moat session --jsonl in dir as u (nil: the test's
// own user), with env.
func startSessionAs(t *testing.T, u *daemonUser, dir string, env []string, args ...string) *jsonlSession {
	t.Helper()
	cmd := exec.Command(moatBin(t), append([]string{"session", "--jsonl"}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	if u != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{uint32(u.gid)}}}
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &jsonlSession{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out), errb: &bytes.Buffer{}}
	s.out.Buffer(make([]byte, 1<<20), 16<<20)
	cmd.Stderr = s.errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return s
}

// send writes one request.
func (s *jsonlSession) send(req map[string]any) {
	s.t.Helper()
	b, _ := json.Marshal(req)
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatal(err)
	}
}

// until reads events until one with this id and event.
func (s *jsonlSession) until(id any, event string) map[string]any {
	s.t.Helper()
	for {
		ev := s.next()
		if ev["id"] == id && ev["event"] == event {
			return ev
		}
		if ev["event"] == "error" {
			s.t.Fatalf("error event: %v", ev)
		}
	}
}

// clientEnv is the environment of a client of moatd: HOME is dir (no
// settings file of the user's there).
func clientEnv(home string, extra ...string) []string {
	return append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C"}, extra...)
}

// TestDaemonSessionJSONL: moat session --jsonl as a user, through a real
// moatd: the command runs as the user, the eBPF layer refuses a direct
// connection and reports it, cwd carries over, background/read/kill work
// and leave nothing, and a write outside the policy fails (which the user
// can do without moat).
func TestDaemonSessionJSONL(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	// A directory of the user's outside the session's policy.
	outside := filepath.Join(dir, "outside-"+u1.name)
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(outside, u1.uid, u1.gid)
	s := startSessionAs(t, u1, u1.dir, clientEnv(u1.dir, "MOAT_DAEMON_SOCKET="+d.sock), "--gate", "off", "--write", ".")
	s.onHang = d.goroutines

	ev := s.run("id", "id -u")
	if out, _ := ev["output"].(string); strings.TrimSpace(out) != strconv.Itoa(u1.uid) {
		t.Fatalf("id -u inside = %q, want %d: %v", out, u1.uid, ev)
	}
	// The snapshot, a memfd moatd (root) made, is read by the user's
	// shell: the command runs in a shell that sourced it, not in the login
	// shell of the fallback.
	ev = s.run("snapshot", "shopt -q login_shell && echo login || echo snapshot")
	if notes, _ := ev["notes"].([]any); ev["output"] != "snapshot\n" || len(notes) != 0 {
		t.Errorf("the snapshot was not taken or not read: %v", ev)
	}
	// The eBPF layer: EPERM from the cgroup's connect hook, reported.
	ev = s.run("2", "bash -c 'echo > /dev/tcp/192.0.2.1/80'; echo done")
	out, _ := ev["output"].(string)
	vs, _ := json.Marshal(ev["violations"])
	if !strings.Contains(out, "connect: Operation not permitted") || !strings.Contains(string(vs), "192.0.2.1:80") || !strings.Contains(string(vs), "eBPF") {
		t.Errorf("a direct connection to 192.0.2.1:80: not refused by eBPF (EPERM) and reported: output %q, violations %s", out, vs)
	}
	// The working directory carries over.
	s.run("3", "mkdir -p sub && cd sub")
	if ev := s.run("4", "pwd"); strings.TrimSpace(ev["output"].(string)) != filepath.Join(u1.dir, "sub") || ev["cwd"] != filepath.Join(u1.dir, "sub") {
		t.Errorf("cwd did not carry over: %v", ev)
	}
	s.run("5", "cd "+u1.dir)
	// Background, read, kill.
	marker := testutil.SleepMarker(300)
	s.send(map[string]any{"id": "bg", "op": "run", "command": "echo begun; sleep " + marker, "background": true})
	if ev := s.until("bg", "backgrounded"); ev["reason"] != "requested" {
		t.Errorf("backgrounded: %v", ev)
	}
	for deadline := time.Now().Add(time.Minute); len(testutil.Procs("sleep "+marker, u1.uid)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the background sleep never ran as uid %d", u1.uid)
		}
	}
	var read string
	for i := 0; !strings.Contains(read, "begun"); i++ {
		s.send(map[string]any{"id": fmt.Sprintf("r%d", i), "op": "read", "target": "bg"})
		ev := s.until(fmt.Sprintf("r%d", i), "read")
		if ev["running"] != true {
			t.Fatalf("read: %v", ev)
		}
		read += ev["output"].(string)
		if i > 1000 {
			t.Fatalf("the background command's output never came: %q", read)
		}
	}
	s.send(map[string]any{"id": "k", "op": "kill", "target": "bg"})
	s.until("k", "ok")
	if ev := s.until("bg", "finished"); ev["interrupted"] != true {
		t.Errorf("the killed command's finished event: %v", ev)
	}
	if pids := testutil.Procs("sleep "+marker, -1); len(pids) > 0 {
		t.Errorf("kill left %v", pids)
	}
	// What the daemon does not offer is said, not silently changed.
	s.send(map[string]any{"id": "ab", "op": "run", "command": "true", "auto_background_ms": 1000})
	if ev := s.until("ab", "finished"); ev["exit_code"] != -1.0 || !strings.Contains(fmt.Sprint(ev["error"]), "not available through moatd") {
		t.Errorf("auto_background_ms through moatd: %v", ev)
	}
	s.send(map[string]any{"id": "pe", "op": "preview_edit", "command": "sed -i s/a/b/ f"})
	for {
		ev := s.next()
		if ev["id"] == "pe" {
			if ev["event"] != "error" || !strings.Contains(fmt.Sprint(ev["error"]), "not available through moatd") {
				t.Errorf("preview_edit through moatd: %v", ev)
			}
			break
		}
	}
	// An attack through the bridge: a write outside the policy.
	target := filepath.Join(outside, "pwned")
	if ev := s.run("6", "echo pwned > "+target+"; echo done"); !strings.Contains(ev["output"].(string), "done") {
		t.Fatalf("the attack did not run: %v", ev)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("a command wrote %s, outside the session's policy, through moatd", target)
	}
	if _, stderr, err := u1.as("sh", "-c", "echo pwned > "+target+"-without-moat"); err != nil {
		t.Fatalf("%s cannot write %s without moat either: the attack proves nothing (%s)", u1.name, outside, stderr)
	}
	// A second background command is killed by the end of the session.
	marker2 := testutil.SleepMarker(300)
	s.send(map[string]any{"id": "bg2", "op": "run", "command": "sleep " + marker2, "background": true})
	s.until("bg2", "backgrounded")
	s.close()
	want := "moat: running through moatd (" + d.sock + "): eBPF network layer and cgroup limits"
	if !strings.Contains(s.errb.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, s.errb)
	}
	if pids := testutil.Procs("sleep "+marker2, -1); len(pids) > 0 {
		t.Errorf("the end of the session left %v", pids)
	}
	if code, body := u1.call(t, d.sock, "GET", "/v1/sessions", ""); code != 200 || strings.Contains(body, `"id":"s`) {
		t.Errorf("the daemon still holds a session of %s: %d %s", u1.name, code, body)
	}

	// moat run goes through the daemon too (TestDaemonRun has the rest).
	run := func(extra ...string) (int, string) {
		cmd := exec.Command(moatBin(t), "run", "--write", ".", "--", "sh", "-c", "id -u > run-uid")
		cmd.Dir, cmd.Env = u1.dir, clientEnv(u1.dir, append([]string{"MOAT_DAEMON_SOCKET=" + d.sock}, extra...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u1.uid), Gid: uint32(u1.gid), Groups: []uint32{uint32(u1.gid)}}}
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
	for _, extra := range [][]string{nil, {"MOAT_DAEMON=required"}} {
		os.Remove(filepath.Join(u1.dir, "run-uid"))
		if code, e := run(extra...); code != 0 || !strings.Contains(e, "moat: running through moatd ("+d.sock+")") {
			t.Errorf("moat run %v with moatd answering: exit %d, stderr %q", extra, code, e)
		}
		if b, _ := os.ReadFile(filepath.Join(u1.dir, "run-uid")); strings.TrimSpace(string(b)) != strconv.Itoa(u1.uid) {
			t.Errorf("moat run %v as %s: id -u = %q", extra, u1.name, b)
		}
	}

	// The daemon stopped: the note, and the session still works rootless.
	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.done
	s = startSessionAs(t, u1, u1.dir, clientEnv(u1.dir, "MOAT_DAEMON_SOCKET="+d.sock), "--gate", "off", "--write", ".")
	if ev := s.run("1", "id -u"); strings.TrimSpace(ev["output"].(string)) != strconv.Itoa(u1.uid) {
		t.Errorf("rootless: %v", ev)
	}
	s.close()
	if e := s.errb.String(); !strings.Contains(e, "moat: moatd not reachable ("+d.sock) || !strings.Contains(e, "): running rootless (no eBPF layer, rlimits for limits)") {
		t.Errorf("no rootless note naming %s:\n%s", d.sock, e)
	}
	// MOAT_DAEMON=required: an error naming the socket, exit 125.
	s = startSessionAs(t, u1, u1.dir, clientEnv(u1.dir, "MOAT_DAEMON_SOCKET="+d.sock, "MOAT_DAEMON=required"), "--gate", "off")
	s.in.Close()
	err := s.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(s.errb.String(), d.sock) {
		t.Errorf("MOAT_DAEMON=required without the daemon: %v, stderr %q; want exit 125 naming %s", err, s.errb, d.sock)
	}
}

// TestDaemonClientFallback: without a daemon (a socket nobody serves, one
// that never answers), moat session --jsonl as a user runs rootless and
// says why; MOAT_DAEMON=required refuses (125); MOAT_DAEMON=off says
// nothing. Runs as an unprivileged user (as root: as moat-ci).
func TestDaemonClientFallback(t *testing.T) {
	var u *daemonUser // nil: this test's own user
	if os.Geteuid() == 0 {
		u = lookupDaemonUser(t, "moat-ci", true)
	}
	dir, err := os.MkdirTemp(testDir(), "moatd-client-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	if u != nil {
		os.Chown(work, u.uid, u.gid)
	}
	// A socket that accepts and never answers.
	mute := filepath.Join(dir, "mute.sock")
	l, err := net.Listen("unix", mute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(mute, 0o666)
	missing := filepath.Join(dir, "missing.sock")
	for _, sock := range []string{missing, mute} {
		s := startSessionAs(t, u, work, clientEnv(work, "MOAT_DAEMON_SOCKET="+sock), "--gate", "off", "--write", ".")
		if ev := s.run("1", "echo hi > f && cat f"); strings.TrimSpace(ev["output"].(string)) != "hi" {
			t.Errorf("rootless session (%s): %v", sock, ev)
		}
		s.close()
		if e := s.errb.String(); !strings.Contains(e, "moat: moatd not reachable ("+sock) || !strings.Contains(e, "running rootless (no eBPF layer, rlimits for limits)") {
			t.Errorf("%s: no rootless note:\n%s", sock, e)
		}
		s = startSessionAs(t, u, work, clientEnv(work, "MOAT_DAEMON_SOCKET="+sock, "MOAT_DAEMON=required"))
		s.in.Close()
		err := s.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(s.errb.String(), sock) {
			t.Errorf("MOAT_DAEMON=required, %s: %v, stderr %q; want exit 125 naming the socket", sock, err, s.errb)
		}
	}
	// moat run where no daemon is installed (no socket): as it always was,
	// not a word of moatd.
	cmd := exec.Command(moatBin(t), "run", "--", "true")
	cmd.Dir, cmd.Env = work, clientEnv(work, "MOAT_DAEMON_SOCKET="+missing)
	if u != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{uint32(u.gid)}}}
	}
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "moatd") {
		t.Errorf("moat run without a daemon: %v %q", err, out)
	}
	s := startSessionAs(t, u, work, clientEnv(work, "MOAT_DAEMON_SOCKET="+missing, "MOAT_DAEMON=off"), "--gate", "off")
	s.run("1", "true")
	s.close()
	if strings.Contains(s.errb.String(), "moatd") {
		t.Errorf("MOAT_DAEMON=off still speaks of moatd: %s", s.errb)
	}
	s = startSessionAs(t, u, work, clientEnv(work, "MOAT_DAEMON=sometimes"))
	s.in.Close()
	if err := s.cmd.Wait(); err == nil || !strings.Contains(s.errb.String(), "MOAT_DAEMON") {
		t.Errorf("MOAT_DAEMON=sometimes: %v %s", err, s.errb)
	}
}

// moatShellAs runs moat shell as u in u.dir through the daemon d with
// script as its input, and returns its stdout and stderr.
func moatShellAs(t *testing.T, d *daemon, u *daemonUser, script string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, moatBin(t), append([]string{"shell"}, args...)...)
	cmd.Dir = u.dir
	cmd.Env = clientEnv(u.dir, "MOAT_DAEMON_SOCKET="+d.sock, "MOAT_DAEMON=required")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{uint32(u.gid)}}}
	cmd.Stdin = strings.NewReader(script)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("moat shell: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// TestDaemonShell: moat shell as a user, through moatd. Its decisions are
// the daemon's for the user; "ask" asks, and only what is approved runs
// (as the user, in the daemon's session: cwd carries over); a write
// outside the policy, approved, still fails (the user can do it without
// moat). Through a daemon whose gate is strict, an "ask" command is not
// run and moat shell says why instead of asking.
func TestDaemonShell(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	outside := filepath.Join(dir, "outside-"+u1.name)
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(outside, u1.uid, u1.gid)
	sub := filepath.Join(u1.dir, "sub")
	os.Mkdir(sub, 0o755)
	os.Chown(sub, u1.uid, u1.gid)
	script := strings.Join([]string{
		"id -u",
		"cd sub",
		"touch declined", "n",
		"touch approved", "y",
		"touch " + outside + "/escaped", "y",
		"exit",
	}, "\n") + "\n"
	out, errs := moatShellAs(t, d, u1, script, "--write", ".")
	for _, want := range []string{"running through moatd", "moatd session ready in " + u1.dir + " (gate deny)"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	for _, want := range []string{"\n" + strconv.Itoa(u1.uid) + "\n", "moat:" + sub + "$ ", "ask: ", "not run"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(sub, "declined")); err == nil {
		t.Error("a command declined at the prompt ran")
	}
	if fi, err := os.Stat(filepath.Join(sub, "approved")); err != nil {
		t.Errorf("the approved command did not run: %v\n%s", err, out)
	} else if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != u1.uid {
		t.Errorf("the approved command's file is uid %d's, want %d", st.Uid, u1.uid)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Errorf("an approved write outside the policy got through:\n%s", out)
	}
	if _, stderr, err := u1.as("touch", filepath.Join(outside, "escaped-without-moat")); err != nil {
		t.Fatalf("%s cannot write %s without moat either (%v %s): the check proves nothing", u1.name, outside, err, stderr)
	}

	// A daemon whose gate is strict: "ask" is not run, nor asked about.
	dir2, err := os.MkdirTemp("/var/tmp", "moatd-strict-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir2) })
	os.Chmod(dir2, 0o755)
	strict := startDaemonGate(t, moatBin(t), dir2, "strict", nil)
	out, errs = moatShellAs(t, strict, u1, "touch strict-ask\ny\nexit\n", "--write", ".")
	if !strings.Contains(errs, "(gate strict)") || !strings.Contains(out, "not run: moatd runs only what its policy for you allows") || strings.Contains(out, "run it?") {
		t.Errorf("through a strict daemon:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
	if _, err := os.Stat(filepath.Join(u1.dir, "strict-ask")); err == nil {
		t.Error("an ask command ran through a daemon whose gate is strict")
	}
}
