//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"golang.org/x/sys/unix"
)

// These tests run the moat binary ($MOAT_BIN, or one built from this
// checkout) the way a user does.

var binDir string

// TestMain removes the directory moatBin made (each run of this package's
// tests left one in /var/tmp).
func TestMain(m *testing.M) {
	if sock := os.Getenv(fakeMoatdEnv); sock != "" {
		fakeMoatd(sock) // a child of TestDaemonClientRefusesServerNotRoot
		return
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func moatBin(t *testing.T) string {
	t.Helper()
	testutil.RequireUserns(t)
	if binDir == "" {
		d, err := os.MkdirTemp(testDir(), "moat-bin-")
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o755)
		binDir = d
	}
	b, err := testutil.MoatBinary(binDir)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testDir() string {
	if d := os.Getenv("MOAT_TEST_DIR"); d != "" {
		return d
	}
	return "/var/tmp"
}

// tree is a working directory (a git repository, outside /tmp) with an
// srt settings file that makes it writable.
type tree struct {
	dir, settings, state, home string
}

func newTree(t *testing.T) tree {
	t.Helper()
	root, err := os.MkdirTemp(testDir(), "moat-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	tr := tree{dir: filepath.Join(root, "work"), state: filepath.Join(root, "state"), home: filepath.Join(root, "home")}
	for _, d := range []string{tr.dir, tr.state, tr.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("git", "init", "-q", tr.dir)
	cmd.Env = append(os.Environ(), "HOME="+tr.home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	tr.settings = filepath.Join(root, "settings.json")
	writeJSON(t, tr.settings, map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{"."}, "denyWrite": []string{}},
	})
	return tr
}

func writeJSON(t *testing.T, p string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (tr tree) env(extra ...string) []string {
	return append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + tr.home, "XDG_STATE_HOME=" + tr.state, "LANG=C"}, extra...)
}

type runOut struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

func (tr tree) moat(t *testing.T, stdin string, env []string, args ...string) runOut {
	t.Helper()
	cmd := exec.Command(moatBin(t), args...)
	cmd.Dir = tr.dir
	cmd.Env = env
	if env == nil {
		cmd.Env = tr.env()
	}
	cmd.Stdin = strings.NewReader(stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	err := cmd.Run()
	r := runOut{stdout: so.String(), stderr: se.String(), elapsed: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunExitStatus(t *testing.T) {
	tr := newTree(t)
	notExec := filepath.Join(tr.dir, "notexec.sh")
	os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644)
	cases := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"success", []string{"run", "--", "true"}, 0, ""},
		{"own status", []string{"run", "-c", "exit 7"}, 7, ""},
		{"signal", []string{"run", "-c", "kill -TERM $$"}, 128 + 15, ""},
		{"sigkill", []string{"run", "-c", "kill -KILL $$"}, 128 + 9, ""},
		{"not found", []string{"run", "--", "no-such-command-moat"}, 127, "command not found"},
		{"not found by path", []string{"run", "--", "./no-such-file"}, 127, "command not found"},
		{"not executable", []string{"run", "--", notExec}, 126, "cannot execute"},
		{"no command", []string{"run"}, 125, "no command"},
		{"both forms", []string{"run", "-c", "true", "--", "true"}, 125, "not both"},
		{"empty -c", []string{"run", "-c", ""}, 125, "non-empty"},
		{"bad flag", []string{"run", "--nope", "--", "true"}, 125, "unknown flag"},
		{"negative timeout", []string{"run", "--timeout", "-1s", "--", "true"}, 125, "negative"},
		{"missing settings", []string{"run", "--settings", "/nonexistent/s.json", "--", "true"}, 125, "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tr.moat(t, "", nil, append([]string{tc.args[0], "--settings", tr.settings}, tc.args[1:]...)...)
			if tc.name == "missing settings" || tc.name == "no command" {
				r = tr.moat(t, "", nil, tc.args...)
			}
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\nstderr: %s", r.code, tc.code, r.stderr)
			}
			if tc.err != "" && !strings.Contains(r.stderr, tc.err) {
				t.Errorf("stderr does not say %q: %s", tc.err, r.stderr)
			}
		})
	}
}

func TestRunBadSettingsNamesFileAndField(t *testing.T) {
	tr := newTree(t)
	bad := filepath.Join(tr.dir, "..", "bad.json")
	os.WriteFile(bad, []byte(`{"network":{"allowedDomains":["*"],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`), 0o644)
	marker := filepath.Join(tr.dir, "ran")
	r := tr.moat(t, "", nil, "run", "--settings", bad, "--", "touch", marker)
	if r.code != 125 || !strings.Contains(r.stderr, "bad.json") || !strings.Contains(r.stderr, "network.allowedDomains[0]") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran despite bad settings")
	}
}

func TestRunShellAndStdio(t *testing.T) {
	tr := newTree(t)
	r := tr.moat(t, "hello\nworld\n", nil, "run", "--settings", tr.settings, "-c", "tr a-z A-Z; echo err >&2; echo $0")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "HELLO\nWORLD\n") || !strings.Contains(r.stderr, "err") {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "bash") && !strings.Contains(r.stdout, "sh") {
		t.Errorf("-c should run a shell: %q", r.stdout)
	}
	// Arguments reach the command unchanged.
	r = tr.moat(t, "", nil, "run", "--settings", tr.settings, "--", "printf", "%s|", "a b", "'q'", "$HOME", "")
	if r.stdout != "a b|'q'|$HOME||" {
		t.Fatalf("argv changed: %q", r.stdout)
	}
}

func TestRunTimeoutKillsTheTree(t *testing.T) {
	tr := newTree(t)
	m := []string{testutil.SleepMarker(120), testutil.SleepMarker(121), testutil.SleepMarker(122)}
	r := tr.moat(t, "", nil, "run", "--settings", tr.settings, "--timeout", "300ms", "-c", fmt.Sprintf("(sleep %s &) ; setsid sleep %s & sleep %s", m[0], m[1], m[2]))
	if r.code != 124 {
		t.Fatalf("exit %d, want 124: %s", r.code, r.stderr)
	}
	if r.elapsed > 10*time.Second {
		t.Fatalf("took %v", r.elapsed)
	}
	if !strings.Contains(r.stderr, "timed out") || !strings.Contains(r.stderr, "deny resource-timeout") {
		t.Errorf("no timeout report: %s", r.stderr)
	}
	time.Sleep(200 * time.Millisecond)
	for _, x := range m {
		if pids := testutil.Procs("sleep "+x, -1); len(pids) > 0 {
			c := "sleep " + x
			t.Errorf("%q survived the timeout: %v", c, pids)
		}
	}
}

func TestRunSignalsReachTheCommand(t *testing.T) {
	tr := newTree(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1} {
		t.Run(sig.String(), func(t *testing.T) {
			ready := filepath.Join(tr.dir, "ready-"+strconv.Itoa(int(sig)))
			script := fmt.Sprintf("trap 'echo got-%d; exit 42' %d; touch %s; while :; do sleep 0.05; done", int(sig), int(sig), ready)
			cmd := exec.Command(moatBin(t), "run", "--settings", tr.settings, "-c", script)
			cmd.Dir, cmd.Env = tr.dir, tr.env()
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFile(t, ready)
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			code := -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err == nil {
				code = 0
			}
			if code != 42 || !strings.Contains(out.String(), fmt.Sprintf("got-%d", int(sig))) {
				t.Fatalf("exit %d, output %q", code, out.String())
			}
		})
	}
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(p); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", p)
}

func TestRunViolationsAnnotated(t *testing.T) {
	tr := newTree(t)
	r := tr.moat(t, "", nil, "run", "--settings", tr.settings, "-c", "echo out; echo x > /etc/moat-test; echo y > .git/config; echo done")
	if !strings.Contains(r.stdout, "out\n") || !strings.Contains(r.stdout, "done") {
		t.Fatalf("stdout %q", r.stdout)
	}
	block := r.stderr[strings.Index(r.stderr, "<sandbox_violations>"):]
	for _, want := range []string{"deny file-write /etc/moat-test (not in allowWrite)", "deny file-write " + realpath(t, tr.dir) + "/.git/config (git: config is never writable)", "</sandbox_violations>"} {
		if !strings.Contains(block, want) {
			t.Errorf("violations block lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.HasSuffix(r.stderr, "</sandbox_violations>\n") {
		t.Errorf("the block must come last on stderr:\n%s", r.stderr)
	}
	// ignoreViolations drops lines.
	s := filepath.Join(tr.dir, "..", "quiet.json")
	writeJSON(t, s, map[string]any{
		"network":          map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem":       map[string]any{"denyRead": []string{}, "allowWrite": []string{"."}, "denyWrite": []string{}},
		"ignoreViolations": map[string][]string{"*": {"/etc/moat-test"}},
	})
	r = tr.moat(t, "", nil, "run", "--settings", s, "-c", "echo x > /etc/moat-test")
	if strings.Contains(r.stderr, "deny file-write /etc/moat-test") {
		t.Errorf("ignoreViolations not applied: %s", r.stderr)
	}
}

// TestRunViolationsMissingHiddenPath: a denyRead path that did not exist
// when the sandbox started has nothing mounted on it, so a file the command
// makes there in a writable tree is written (its own, not the user's
// secret), and the report says no write was refused (it said "deny
// file-write ... hidden by"); one that existed is hidden, and a write to it
// is refused and reported, as is one below a hidden directory.
func TestRunViolationsMissingHiddenPath(t *testing.T) {
	tr := newTree(t)
	dir := realpath(t, tr.dir)
	os.Mkdir(filepath.Join(dir, "secrets"), 0o755)
	os.WriteFile(filepath.Join(dir, "old.txt"), []byte("s3cret\n"), 0o644)
	s := filepath.Join(tr.dir, "..", "hidden.json")
	writeJSON(t, s, map[string]any{
		"network": map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{dir + "/new.txt", dir + "/newdir", dir + "/old.txt", dir + "/secrets", dir + "/secrets/new.txt"},
			"allowWrite": []string{"."}, "denyWrite": []string{}},
	})
	r := tr.moat(t, "", nil, "run", "--settings", s, "-c",
		"echo mine > new.txt && cat new.txt; mkdir newdir && echo x > newdir/f && echo made; echo x > old.txt 2>/dev/null || echo refused; echo x > secrets/new.txt 2>/dev/null || echo refused2")
	if r.stdout != "mine\nmade\nrefused\nrefused2\n" {
		t.Fatalf("stdout %q, stderr %s", r.stdout, r.stderr)
	}
	for _, p := range []string{"new.txt", "newdir", "newdir/f"} {
		if strings.Contains(r.stderr, "deny file-write "+dir+"/"+p+" ") {
			t.Errorf("a write that was not refused is reported refused (%s):\n%s", p, r.stderr)
		}
	}
	for _, p := range []string{"old.txt", "secrets/new.txt"} {
		if !strings.Contains(r.stderr, "deny file-write "+dir+"/"+p+" (hidden by") {
			t.Errorf("the refused write to %s is not reported:\n%s", p, r.stderr)
		}
	}
}

func realpath(t *testing.T, p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunEnvironment(t *testing.T) {
	tr := newTree(t)
	env := tr.env("FOO_TOKEN=s3cret", "AWS_SECRET_ACCESS_KEY=s3cret", "GITHUB_TOKEN=s3cret", "DATABASE_URL=postgres://u:p@h/db", "KEEP_ME=1", "_MOAT_NSINIT=1")
	r := tr.moat(t, "", env, "run", "--settings", tr.settings, "--", "env")
	for _, gone := range []string{"FOO_TOKEN", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "DATABASE_URL", "_MOAT_NSINIT"} {
		if strings.Contains(r.stdout, gone+"=") {
			t.Errorf("%s reached the command", gone)
		}
	}
	for _, kept := range []string{"KEEP_ME=1", "PATH=", "HOME=", "LANG=C"} {
		if !strings.Contains(r.stdout, kept) {
			t.Errorf("%s did not reach the command:\n%s", kept, r.stdout)
		}
	}
	s := filepath.Join(tr.dir, "..", "env.json")
	writeJSON(t, s, map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{"."}, "denyWrite": []string{}},
		"moat":       map[string]any{"env": map[string]any{"allow": []string{"GITHUB_TOKEN"}, "set": map[string]string{"SET_BY_MOAT": "yes"}}},
	})
	r = tr.moat(t, "", env, "run", "--settings", s, "--", "env")
	if !strings.Contains(r.stdout, "GITHUB_TOKEN=s3cret") || !strings.Contains(r.stdout, "SET_BY_MOAT=yes") || strings.Contains(r.stdout, "FOO_TOKEN") {
		t.Errorf("env.allow / env.set not applied:\n%s", r.stdout)
	}
}

func TestRunNetworkEnvironment(t *testing.T) {
	tr := newTree(t)
	s := filepath.Join(tr.dir, "..", "net.json")
	writeJSON(t, s, map[string]any{
		"network":    map[string]any{"allowedDomains": []string{"example.com"}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{}, "denyWrite": []string{}},
	})
	r := tr.moat(t, "", tr.env("HTTP_PROXY=http://leak:1", "NO_PROXY=*"), "run", "--settings", s, "--", "env")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "ALL_PROXY=socks5h://127.0.0.1:1080", "NO_PROXY=\n", "GIT_SSH_COMMAND="} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("environment lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "leak") {
		t.Errorf("the caller's proxy settings reached the command:\n%s", r.stdout)
	}
}

// Twenty runs at once in one working tree do not interfere, and leave
// nothing behind.
func TestRunConcurrent(t *testing.T) {
	tr := newTree(t)
	before := listTree(t, tr.dir)
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			script := fmt.Sprintf("echo %d > out-%d.txt && test -S .vscode && ! mkdir .vscode/x 2>/dev/null && ! touch .git/commondir 2>/dev/null && cat out-%d.txt", i, i, i)
			r := tr.moat(t, "", nil, "run", "--settings", tr.settings, "-c", script)
			if r.code != 0 || strings.TrimSpace(r.stdout) != strconv.Itoa(i) {
				errs <- fmt.Sprintf("run %d: exit %d stdout %q stderr %q", i, r.code, r.stdout, r.stderr)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	after := listTree(t, tr.dir)
	for i := 0; i < n; i++ {
		after = strings.Replace(after, fmt.Sprintf("out-%d.txt\n", i), "", 1)
	}
	if after != before {
		t.Fatalf("left behind:\nbefore %q\nafter  %q", before, after)
	}
}

func listTree(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || strings.Contains(p, "/.git/objects") {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + "\n")
		return nil
	})
	return b.String()
}

// When moat itself is killed, the sandbox dies with it and the mount
// points it created are removed (by the sandbox's init).
func TestRunSupervisorKilled(t *testing.T) {
	tr := newTree(t)
	before := listTree(t, tr.dir)
	marker := "sleep " + testutil.SleepMarker(123)
	cmd := exec.Command(moatBin(t), "run", "--settings", tr.settings, "-c", "touch started; exec "+marker)
	cmd.Dir, cmd.Env = tr.dir, tr.env()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(tr.dir, "started"))
	if _, err := os.Stat(filepath.Join(tr.dir, ".vscode")); err != nil {
		t.Fatalf("expected a placeholder during the run: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	os.Remove(filepath.Join(tr.dir, "started"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		after := listTree(t, tr.dir)
		alive := testutil.Procs(marker, -1)
		if after == before && len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGKILL of moat: processes %v, tree:\nbefore %q\nafter  %q", alive, before, after)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A working directory whose name carries a journal record (a newline, a
// placeholder line with the device and inode of an empty directory of the
// user's): after a SIGKILL of moat the real placeholders are removed and the
// forged one names nothing that is removed.
func TestRunSupervisorKilledHostileName(t *testing.T) {
	tr := newTree(t)
	victim := filepath.Join(tr.dir, "victim")
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(victim, &st); err != nil {
		t.Fatal(err)
	}
	hostile := filepath.Join(tr.dir, fmt.Sprintf("x\nP %d %d - d %s\nI 0 d - %s\n", st.Dev, st.Ino, victim, victim))
	if err := os.MkdirAll(hostile, 0o755); err != nil {
		t.Fatal(err)
	}
	before := listTree(t, hostile)
	marker := "sleep " + testutil.SleepMarker(124)
	// (A rule naming it is refused: paths with control characters are. The
	// working directory below a writable root is enough.)
	settings := filepath.Join(filepath.Dir(tr.dir), "abs.json")
	writeJSON(t, settings, map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{tr.dir}, "denyWrite": []string{}},
	})
	cmd := exec.Command(moatBin(t), "run", "--settings", settings, "-c", "touch "+filepath.Join(tr.dir, "started")+"; exec "+marker)
	cmd.Dir, cmd.Env = hostile, tr.env()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(tr.dir, "started"))
	if _, err := os.Stat(filepath.Join(hostile, ".vscode")); err != nil {
		t.Fatalf("expected a placeholder in the working directory during the run: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for listTree(t, hostile) != before || len(testutil.Procs(marker, -1)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after SIGKILL of moat: placeholders or processes left:\nbefore %q\nafter  %q", before, listTree(t, hostile))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The next start sweeps the journal: the forged record removes nothing.
	if r := tr.moat(t, "", nil, "run", "--settings", tr.settings, "--", "true"); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Lstat(victim); err != nil {
		t.Fatalf("a forged journal record removed the user's directory: %v", err)
	}
}

// What a dead run left in the journal is cleaned by the next start.
func TestRunCleansAfterDeadRun(t *testing.T) {
	tr := newTree(t)
	ghost := filepath.Join(tr.dir, ".vscode")
	if err := os.Mkdir(ghost, 0o755); err != nil {
		t.Fatal(err)
	}
	// A state directory a run used (listed in the home one): a record in
	// one that is not is dropped, as a sandbox could have forged it
	// (attack pass 107, TestStateDirForgedRecord).
	if r := tr.moat(t, "", nil, "run", "--settings", tr.settings, "--", "true"); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var st syscall.Stat_t
	syscall.Lstat(ghost, &st)
	jdir := filepath.Join(tr.state, "moat", "journal")
	os.MkdirAll(jdir, 0o700)
	rec := fmt.Sprintf("P %d %d - d %x\n", st.Dev, st.Ino, ghost) // paths are hex in a record
	if err := os.WriteFile(filepath.Join(jdir, "deadbeefdeadbeef.run"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	r := tr.moat(t, "", nil, "run", "--settings", tr.settings, "--", "true")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Lstat(ghost); err == nil {
		t.Fatal("the dead run's placeholder is still there")
	}
	if es, _ := os.ReadDir(jdir); len(es) > 1 { // journal.lock stays
		t.Fatalf("journal not emptied: %v", es)
	}
}

// A user's own empty .vscode directory is never taken for a placeholder.
func TestRunKeepsUserDirectories(t *testing.T) {
	tr := newTree(t)
	mine := filepath.Join(tr.dir, ".vscode")
	os.Mkdir(mine, 0o755)
	r := tr.moat(t, "", nil, "run", "--settings", tr.settings, "--", "true")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Fatal("moat removed the user's own .vscode directory")
	}
}

func TestPolicyCommand(t *testing.T) {
	tr := newTree(t)
	r := tr.moat(t, "", nil, "policy", "--settings", tr.settings, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Policy struct {
			Filesystem struct {
				AllowWrite []struct{ Path string } `json:"allowWrite"`
			} `json:"filesystem"`
		} `json:"policy"`
		Enforcement struct {
			Tier         string
			Placeholders []string
			Mechanisms   []struct {
				Part     string
				Enforced bool
			}
		} `json:"enforcement"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(out.Policy.Filesystem.AllowWrite) != 1 || out.Policy.Filesystem.AllowWrite[0].Path != tr.dir {
		t.Errorf("allowWrite %+v", out.Policy.Filesystem.AllowWrite)
	}
	if out.Enforcement.Tier == "" || len(out.Enforcement.Mechanisms) < 5 || len(out.Enforcement.Placeholders) == 0 {
		t.Errorf("enforcement %+v", out.Enforcement)
	}
	r = tr.moat(t, "", nil, "policy", "--settings", tr.settings)
	if r.code != 0 || !strings.Contains(r.stdout, "enforcement on this machine") {
		t.Errorf("text form: %s", r.stdout)
	}
}

// A memfd as stdin (what a host passes as a command's input without a
// file on disk): the command reads it. A memfd is a regular file of a
// kernel-internal filesystem, on which Landlock takes no rule: moat's rule
// for the descriptor was refused and the run failed before its command.
func TestRunMemfdStdin(t *testing.T) {
	tr := newTree(t)
	fd, err := unix.MemfdCreate("moat-test-stdin", unix.MFD_CLOEXEC)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	f := os.NewFile(uintptr(fd), "memfd")
	defer f.Close()
	if _, err := f.WriteString("from a memfd\n"); err != nil {
		t.Fatal(err)
	}
	f.Seek(0, 0)
	cmd := exec.Command(moatBin(t), "run", "--settings", tr.settings, "--", "cat")
	cmd.Dir, cmd.Env = tr.dir, tr.env()
	cmd.Stdin = f
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "from a memfd\n" {
		t.Errorf("moat run with a memfd as stdin: %v\n%s", err, out)
	}
}

// Two moat runs at once in one working directory: the second finds the
// first's placeholders (a socket at .claude, say) where it looks for
// settings, and runs as if they were absent (it failed with "not a
// directory", exit 125: agents run commands in parallel in one project).
func TestConcurrentRunsInOneDirectory(t *testing.T) {
	tr := newTree(t)
	marker := filepath.Join(tr.dir, "first-started")
	first := exec.Command(moatBin(t), "run", "-w", ".", "--", "sh", "-c", "touch first-started; sleep 3")
	first.Dir, first.Env = tr.dir, tr.env()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Wait()
	defer first.Process.Kill()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first run never started its command")
		}
	}
	if fi, err := os.Lstat(filepath.Join(tr.dir, ".claude")); err != nil || fi.IsDir() {
		t.Fatalf("the first run has no placeholder at .claude (%v): the test would not show the second run past it", err)
	}
	if r := tr.moat(t, "", nil, "run", "-w", ".", "--", "echo", "second"); r.code != 0 || r.stdout != "second\n" {
		t.Fatalf("a second run beside the first: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}

// An external proxy (httpProxyPort) with domain lists: moat relays to the
// proxy as is, and every run says the lists are that proxy's to enforce
// (found by an attack pass: nothing said they no longer applied).
func TestRunExternalProxyNote(t *testing.T) {
	tr := newTree(t)
	s := filepath.Join(tr.dir, "..", "ext.json")
	writeJSON(t, s, map[string]any{
		"network":    map[string]any{"allowedDomains": []string{"example.com"}, "deniedDomains": []string{"evil.example"}, "httpProxyPort": 18765},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{}, "denyWrite": []string{}},
	})
	r := tr.moat(t, "", nil, "run", "--settings", s, "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "moat: note: network: an external proxy is set") || !strings.Contains(r.stderr, "127.0.0.1:18765") || !strings.Contains(r.stderr, "allowedDomains (1), deniedDomains (1) are that proxy's to enforce") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
