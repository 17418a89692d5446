//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// jsonlSession is a running moat session --jsonl.
type jsonlSession struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	errb *bytes.Buffer
	// onHang, if set, says more when no event comes (hangAfter): the
	// daemon's goroutines, for a session through moatd.
	onHang func() string
}

// hangAfter: no event for this long is a hang. The test then fails with
// the session's goroutines (SIGQUIT) and onHang's report, rather than
// holding the package until go test's timeout with nothing to go on (CI23:
// TestDaemonSessionJSONL waited for good on a killed command's finished
// event, once in some thirty runs).
const hangAfter = 3 * time.Minute

func startSession(t *testing.T, tr tree, args ...string) *jsonlSession {
	t.Helper()
	cmd := exec.Command(moatBin(t), append([]string{"session", "--jsonl", "--settings", tr.settings}, args...)...)
	cmd.Dir, cmd.Env = tr.dir, tr.env()
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

// next reads the next event.
func (s *jsonlSession) next() map[string]any {
	s.t.Helper()
	hung := make(chan string, 1)
	timer := time.AfterFunc(hangAfter, func() {
		var more string
		if s.onHang != nil {
			more = s.onHang()
		}
		s.cmd.Process.Signal(syscall.SIGQUIT) // a Go program's goroutines, to its stderr
		time.Sleep(2 * time.Second)
		s.cmd.Process.Kill()
		hung <- more
	})
	ok := s.out.Scan()
	if !timer.Stop() {
		more := <-hung
		s.cmd.Wait() // its stderr whole
		s.t.Fatalf("no event for %v: a hang\n--- the session's stderr:\n%s\n%s", hangAfter, s.errb.String(), more)
	}
	if !ok {
		s.t.Fatalf("the event stream ended: %v\n%s", s.out.Err(), s.errb.String())
	}
	var ev map[string]any
	if err := json.Unmarshal(s.out.Bytes(), &ev); err != nil {
		s.t.Fatalf("not a JSON line: %q", s.out.Text())
	}
	return ev
}

// run sends a run request and returns its finished event.
func (s *jsonlSession) run(id, command string) map[string]any {
	s.t.Helper()
	b, _ := json.Marshal(map[string]any{"id": id, "op": "run", "command": command})
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatal(err)
	}
	for {
		ev := s.next()
		if ev["id"] == id && ev["event"] == "finished" {
			for _, k := range []string{"exit_code", "is_error", "message", "output", "output_file", "cwd"} {
				if _, ok := ev[k]; !ok {
					s.t.Errorf("finished %s lacks %q: %v", id, k, ev)
				}
			}
			return ev
		}
		if ev["event"] == "error" {
			s.t.Fatalf("error event: %v", ev)
		}
	}
}

// close ends the input; the stream must end with closed and moat exit 0.
func (s *jsonlSession) close() {
	s.t.Helper()
	s.in.Close()
	var last map[string]any
	for s.out.Scan() {
		json.Unmarshal(s.out.Bytes(), &last)
	}
	if last["event"] != "closed" {
		s.t.Errorf("the last event is %v, want closed", last)
	}
	if err := s.cmd.Wait(); err != nil {
		s.t.Errorf("moat session: %v\n%s", err, s.errb.String())
	}
}

// moat session --jsonl end to end: the working directory and exports carry
// over, the gate refuses what is not allowed, the sandbox refuses writes
// outside the policy, and the stable fields are there.
func TestSessionJSONL(t *testing.T) {
	tr := newTree(t)
	os.Mkdir(filepath.Join(tr.dir, "sub"), 0o755)
	// The default gate: only allowed commands run; an ask is refused.
	s := startSession(t, tr)
	if ev := s.run("1", "echo x > /etc/moat-session-test"); ev["refused"] == nil || ev["exit_code"] != -1.0 {
		t.Errorf("an ask must not run under --gate strict: %v", ev)
	}
	if ev := s.run("2", "grep -r no-such-text-anywhere ."); ev["exit_code"] != 1.0 || ev["is_error"] != false || ev["message"] != "No matches found" {
		t.Errorf("grep with no match: %v", ev)
	}
	s.close()

	// --gate off: the host decided; the sandbox still confines.
	s = startSession(t, tr, "--gate", "off")
	s.run("1", "cd sub && export GREETING=hi")
	sub := filepath.Join(tr.dir, "sub")
	if ev := s.run("2", "pwd; echo $GREETING"); ev["output"] != sub+"\nhi\n" || ev["cwd"] != sub {
		t.Errorf("cwd and export did not carry over: %v", ev)
	}
	ev := s.run("3", "echo x > /etc/moat-session-test")
	if ev["exit_code"] == 0.0 || !strings.Contains(ev["output"].(string), "sandbox_violations") {
		t.Errorf("a write outside the policy: %v", ev)
	}
	if _, err := os.Stat("/etc/moat-session-test"); err == nil {
		os.Remove("/etc/moat-session-test")
		t.Fatal("ESCAPE: the write landed on the host")
	}
	s.close()
}

func TestSessionUsage(t *testing.T) {
	tr := newTree(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"session"}, "--jsonl"},
		{[]string{"session", "--jsonl", "--gate", "maybe"}, "unknown --gate"},
		{[]string{"session", "--jsonl", "--mode", "yolo"}, "unknown --mode"},
		{[]string{"session", "--jsonl", "--write", "/no/such/dir"}, "--write /no/such/dir"},
		{[]string{"shell", "extra"}, "unknown command"},
	} {
		r := tr.moat(t, "", nil, c.args...)
		if r.code != 125 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("moat %v: exit %d, want 125 and %q:\n%s", c.args, r.code, c.want, r.stderr)
		}
	}
}

// moat shell under a real terminal: the decision is shown, an ask is
// asked, the result printed as the agent sees it.
func TestShellInteractive(t *testing.T) {
	tr := newTree(t)
	bin := moatBin(t)
	master, slave := testutil.OpenPTY(t)
	defer master.Close()
	cmd := exec.Command(bin, "shell", "--settings", tr.settings)
	cmd.Dir, cmd.Env = tr.dir, tr.env("TERM=dumb")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()

	var seen strings.Builder
	lines := make(chan string, 64)
	go func() {
		r := bufio.NewReader(master)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				lines <- string(buf[:n])
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	expect := func(s string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for !strings.Contains(seen.String(), s) {
			select {
			case chunk, ok := <-lines:
				if !ok {
					t.Fatalf("the terminal closed before %q:\n%s", s, seen.String())
				}
				seen.WriteString(chunk)
			case <-deadline:
				t.Fatalf("no %q on the terminal:\n%s", s, seen.String())
			}
		}
	}
	send := func(s string) {
		if _, err := master.Write([]byte(s + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	expect("moat:" + tr.dir + "$ ")
	send("echo hello-from-the-session")
	expect("allow:")
	expect("[exit 0; cwd " + tr.dir + "]")
	send("echo x > /etc/moat-shell-test")
	expect("ask:")
	expect("run it? [y/N] ")
	send("y")
	expect("sandbox_violations")
	expect("an error")
	send("rm -rf /")
	expect("run it? [y/N] ")
	send("n")
	expect("not run")
	send("exit")
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("moat shell: %v\n%s", err, seen.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("moat shell did not end on exit:\n%s", seen.String())
	}
	if _, err := os.Stat("/etc/moat-shell-test"); err == nil {
		os.Remove("/etc/moat-shell-test")
		t.Fatal("ESCAPE: the write landed on the host")
	}
}

// The shell snapshot a session's commands source cannot be rewritten, by
// another sandbox or by a command of the session. It was a file in
// ${TMPDIR:-/tmp}: with /tmp writable (the host's /tmp), a `moat run
// --write /tmp` appended an ls function to it and the session's next
// auto-allowed ls ran it under the session's wider policy; and a command
// of the session appended `export PATH=<dir>:$PATH`, so that the next `git
// status`, judged read-only, ran a fake git (found by an attack pass). The
// snapshot is now the host's, handed to each command on a sealed
// descriptor, and no moat-shell-* directory is left in /tmp.
//
// make test runs it alone (the Makefile's ALONE): its --write /tmp
// sandboxes' git audit judges the trees other tests keep in /tmp.
func TestSessionSnapshotNotWritable(t *testing.T) {
	tr := newTree(t)
	os.WriteFile(filepath.Join(tr.home, ".bashrc"), []byte("alias ll='echo ALIAS-LL'\n"), 0o644)
	marker := filepath.Join(tr.dir, "planted")
	evil := filepath.Join(tr.dir, "evil")
	os.Mkdir(evil, 0o755)
	os.WriteFile(filepath.Join(evil, "git"), []byte("#!/bin/sh\necho FAKE-GIT > "+marker+"\n"), 0o755)
	before, _ := filepath.Glob("/tmp/moat-shell-*")
	probe := fmt.Sprintf("/tmp/moat-snapshot-probe-%d", time.Now().UnixNano())
	t.Cleanup(func() { os.Remove(probe) })

	s := startSession(t, tr, "--gate", "deny", "--write", "/tmp")
	if ev := s.run("1", "ll"); ev["output"] != "ALIAS-LL\n" {
		t.Fatalf("the snapshot was not sourced: %v", ev)
	}
	// Another sandbox, whose policy lets it write /tmp (and the project).
	plantLS := `ls() { echo PLANTED > ` + marker + `; }`
	other := tr.moat(t, "", nil, "run", "--settings", tr.settings, "--write", "/tmp", "--", "sh", "-c",
		`touch `+probe+`; for f in /tmp/moat-shell-*/snapshot-*.sh; do [ -f "$f" ] && printf '%s\n' '`+plantLS+`' >> "$f" && echo planted "$f"; done; true`)
	t.Logf("the other sandbox: %s%s", other.stdout, other.stderr)
	if _, err := os.Stat(probe); err != nil {
		t.Fatalf("the other sandbox could not write the host's /tmp (the test cannot fail): %v\n%s", err, other.stderr)
	}
	// A command of the session, on every snapshot it can reach.
	ev := s.run("2", `for f in $(find /tmp "${TMPDIR:-/tmp}" -maxdepth 2 -name 'snapshot-*.sh' 2>/dev/null) /proc/$$/fd/*; do printf '%s\n' 'export PATH=`+evil+`:$PATH' >> "$f" 2>/dev/null && echo "appended to $f"; done; true`)
	t.Logf("the session's command: %v", ev["output"])
	if ev := s.run("3", "ls"); strings.Contains(ev["output"].(string), "PLANTED") {
		t.Errorf("ls ran another sandbox's function: %v", ev)
	}
	if ev := s.run("4", "git status --short"); strings.Contains(ev["output"].(string), "FAKE-GIT") || ev["exit_code"] != 0.0 {
		t.Errorf("git status: %v", ev)
	}
	s.close()
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("ESCAPE: the next command ran what was planted in the snapshot: %q", b)
	}
	after, _ := filepath.Glob("/tmp/moat-shell-*")
	for _, d := range after {
		if !slices.Contains(before, d) {
			t.Errorf("the session left %s in the host's /tmp", d)
			os.RemoveAll(d)
		}
	}
}

// A program a command runs cannot forge its shell's report of the working
// directory and the environment, in the sandbox: it wrote a report naming
// / and a PATH of its own through /proc/$PPID/fd/N (bash's saved copy of
// descriptor 3) and killed its shell (or left its exit trap no descriptor
// to write with), and the session moved to / (the gate's boundary: reads
// outside the project passed) and ran a fake git for the next git command
// (found by an attack pass).
func TestSessionReportCannotBeForged(t *testing.T) {
	tr := newTree(t)
	evil := filepath.Join(tr.dir, "evil")
	os.Mkdir(evil, 0o755)
	marker := filepath.Join(tr.dir, "fake-git-ran")
	os.WriteFile(filepath.Join(evil, "git"), []byte("#!/bin/sh\necho FAKE-GIT > "+marker+"\n"), 0o755)
	forge := `#!/bin/sh
trap '' PIPE
for fd in /proc/$PPID/fd/*; do
  case ${fd##*/} in 0|1|2) continue;; esac
  printf '\0cwd=/\n\0env=declare -x PATH="` + evil + `:/usr/bin:/bin"\n\0' > "$fd" 2>/dev/null && echo "forged on $fd"
  printf 'cwd=/\n\0env=declare -x PATH="` + evil + `:/usr/bin:/bin"\n\0end=\0' > "$fd" 2>/dev/null
done
case $1 in
kill) kill -9 $PPID;;
limit) prlimit --pid $PPID --nofile=0:0 && echo limited;;
esac
`
	os.WriteFile(filepath.Join(tr.dir, "run-tests.sh"), []byte(forge), 0o755)
	for _, mode := range []string{"kill", "limit"} {
		s := startSession(t, tr, "--gate", "deny")
		ev := s.run("1", "./run-tests.sh "+mode)
		t.Logf("%s: %v %v", mode, ev["output"], ev["notes"])
		if ev["cwd"] != tr.dir {
			t.Errorf("%s: the session took the forged working directory: %v", mode, ev["cwd"])
		}
		if ev := s.run("2", "pwd; git status --short"); ev["output"] != tr.dir+"\n" && !strings.HasPrefix(ev["output"].(string), tr.dir+"\n?? ") {
			t.Errorf("%s: the next command: %v", mode, ev)
		}
		s.close()
		if b, err := os.ReadFile(marker); err == nil {
			t.Errorf("ESCAPE (%s): the next git was the forged PATH's: %q", mode, b)
			os.Remove(marker)
		}
	}
}
