package shell_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/internal/hostrun"
)

// env is a session under test: a real bash, run on the host by hostrun
// (the tests' stand-in for the session sandbox), in a temporary start
// directory with a temporary home.
type env struct {
	s      *shell.Session
	runner *hostrun.Runner
	dir    string // the start directory
	home   string
	out    string // the output directory
}

func bashPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	p, _ = filepath.EvalSymlinks(p)
	return p
}

func newEnv(t testing.TB, rc string, mod func(*shell.Config)) *env {
	t.Helper()
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	e := &env{runner: &hostrun.Runner{}, dir: filepath.Join(root, "work"), home: filepath.Join(root, "home"),
		out: filepath.Join(root, "out")}
	for _, d := range []string{e.dir, e.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if rc != "" {
		if err := os.WriteFile(filepath.Join(e.home, ".bashrc"), []byte(rc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := shell.Config{
		Runner:    e.runner,
		Dir:       e.dir,
		Shell:     shell.Bash(bashPath(t)),
		Env:       []string{"PATH=/usr/bin:/bin", "HOME=" + e.home, "LANG=C.UTF-8"},
		OutputDir: e.out,
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := shell.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e.s = s
	return e
}

func (e *env) run(t *testing.T, cmd string) shell.Result {
	t.Helper()
	r, err := e.s.Run(context.Background(), shell.Request{Command: cmd})
	if err != nil {
		t.Fatalf("Run(%q): %v", cmd, err)
	}
	return r
}

func TestCwdTracking(t *testing.T) {
	e := newEnv(t, "", nil)
	if err := os.MkdirAll(filepath.Join(e.dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.dir, "a", "b"), filepath.Join(e.dir, "link")); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		cmd, out, cwd string
	}{
		{"pwd", e.dir + "\n", e.dir},
		{"cd a", "", e.dir + "/a"},
		{"pwd", e.dir + "/a\n", e.dir + "/a"},
		{"cd b && false", "", e.dir + "/a/b"},             // tracked even when the command fails
		{"cd " + e.dir + "/link", "", e.dir + "/a/b"},     // pwd -P: the physical directory
		{"(cd /); pwd", e.dir + "/a/b\n", e.dir + "/a/b"}, // a subshell's cd does not count
		{"cd /tmp; exit 3", "", "/tmp"},                   // tracked through exit
		{"cd '" + e.dir + "'", "", e.dir},
	}
	for _, st := range steps {
		r := e.run(t, st.cmd)
		if r.Output != st.out || r.Cwd != st.cwd || e.s.Cwd() != st.cwd {
			t.Fatalf("%q: output %q cwd %q (session %q), want %q %q", st.cmd, r.Output, r.Cwd, e.s.Cwd(), st.out, st.cwd)
		}
	}
}

func TestCwdRecovery(t *testing.T) {
	e := newEnv(t, "", nil)
	sub := filepath.Join(e.dir, "gone")
	os.Mkdir(sub, 0o755)
	tests := []struct {
		name   string
		before func()
		cmd    string
		note   string
	}{
		{"deleted between commands", func() { e.run(t, "cd gone"); os.RemoveAll(sub) }, "pwd",
			"The working directory " + sub + " no longer exists; the command ran in " + e.dir + " instead."},
		{"deleted by the command itself", func() { os.Mkdir(sub, 0o755); e.run(t, "cd gone") }, "rmdir " + sub,
			"The working directory could not be read after the command (was it deleted?); the session is back in " + e.dir + "."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.before()
			r := e.run(t, tc.cmd)
			if !slices.Contains(r.Notes, tc.note) {
				t.Errorf("notes %q, want %q", r.Notes, tc.note)
			}
			if r.Cwd != e.dir {
				t.Errorf("cwd %q, want the start directory %q", r.Cwd, e.dir)
			}
			if r := e.run(t, "pwd"); r.Output != e.dir+"\n" || len(r.Notes) != 0 {
				t.Errorf("next command: %q %q", r.Output, r.Notes)
			}
		})
	}
}

func TestEnvPersists(t *testing.T) {
	e := newEnv(t, "", nil)
	steps := []struct{ cmd, out string }{
		{"export FOO='a b' BAR=\"it's\"", ""},
		{`echo "$FOO|$BAR"`, "a b|it's\n"},
		{"export FOO=changed; unset BAR", ""},
		{`echo "$FOO|${BAR-unset}"`, "changed|unset\n"},
		{"unset LANG", ""}, // a base variable
		{`echo "${LANG-unset}"`, "unset\n"},
		{"export LANG=C.UTF-8", ""}, // back to the base value
		{`echo "$LANG"`, "C.UTF-8\n"},
		{"export PATH=$PATH:/opt/x", ""},
		{`echo "${PATH##*:}"`, "/opt/x\n"},
		{"export LD_PRELOAD=/nonexistent.so BASH_ENV=/tmp/x IFS=x", ""}, // never carried over
		{`echo "[${LD_PRELOAD-}][${BASH_ENV-}]"`, "[][]\n"},
		{"X=1", ""}, // not exported
		{`echo "[${X-}]"`, "[]\n"},
		{"export M=$'multi\\nline'", ""},
		{`echo "$M"`, "multi\nline\n"},
	}
	for _, st := range steps {
		if r := e.run(t, st.cmd); r.Output != st.out {
			t.Fatalf("%q: %q, want %q", st.cmd, r.Output, st.out)
		}
	}
	want := map[string]shell.EnvChange{"FOO": {Name: "FOO", Value: "changed"}, "LANG": {Name: "LANG", Unset: false, Value: ""}}
	got := map[string]shell.EnvChange{}
	for _, c := range e.s.Env() {
		got[c.Name] = c
	}
	if got["FOO"] != want["FOO"] {
		t.Errorf("Env() FOO = %+v", got["FOO"])
	}
	if _, ok := got["LANG"]; ok {
		t.Errorf("LANG is back to its base value but still a change: %+v", got["LANG"])
	}
	if _, ok := got["BAR"]; ok {
		t.Errorf("BAR was unset and not in the base environment, but is kept: %+v", got["BAR"])
	}
	// Values never appear in the command string (world-readable in
	// /proc/PID/cmdline); they travel in the environment.
	e.run(t, "export SECRET_VALUE=hunter2-xyz")
	if r := e.run(t, `echo "$SECRET_VALUE"; env | grep -c __MOAT_ENV_ || true`); r.Output != "hunter2-xyz\n0\n" {
		t.Errorf("%q", r.Output)
	}
	last := e.runner.Last()
	if strings.Contains(strings.Join(last.Argv, " "), "hunter2") {
		t.Errorf("an exported value is in argv: %q", last.Argv)
	}
	if !slices.Contains(last.Env, shell.EnvCarrierPrefix+"SECRET_VALUE=hunter2-xyz") {
		t.Errorf("env %q", last.Env)
	}
	// A background command's exports are its own.
	r, err := e.s.Run(context.Background(), shell.Request{Command: "export BG=1; cd /", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Wait(context.Background(), r.BackgroundID); err != nil {
		t.Fatal(err)
	}
	if r := e.run(t, `echo "[${BG-}]"; pwd`); r.Output != "[]\n"+e.dir+"\n" {
		t.Errorf("a background command changed the session: %q", r.Output)
	}
}

const testRC = `
alias ll='echo ALIAS-LL'
alias greet='echo hello from alias'
myfn() { echo "FUNCTION $1"; }
_myfn_completion() { echo completion; }
__private() { echo private; }
shopt -s globstar
shopt -s extglob
set -o noclobber
export PATH="$HOME/bin:$PATH"
export FROM_RC=1
`

func TestSnapshot(t *testing.T) {
	e := newEnv(t, testRC, nil)
	os.MkdirAll(filepath.Join(e.home, "bin"), 0o755)
	os.WriteFile(filepath.Join(e.home, "bin", "mytool"), []byte("#!/bin/sh\necho MYTOOL\n"), 0o755)
	if err := e.s.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	starts := e.runner.Starts()
	tests := []struct{ cmd, out string }{
		{"ll", "ALIAS-LL\n"},
		{"greet world", "hello from alias world\n"},
		{"myfn x", "FUNCTION x\n"},
		{"type -t _myfn_completion __private || echo filtered", "filtered\n"},
		{"shopt -q globstar && echo globstar-on", "globstar-on\n"},
		{"shopt -q extglob && echo on || echo extglob-off", "extglob-off\n"}, // turned off after the snapshot
		{"[[ -o noclobber ]] && echo noclobber-on", "noclobber-on\n"},
		{"mytool", "MYTOOL\n"}, // PATH from the rc file
	}
	for _, tc := range tests {
		if r := e.run(t, tc.cmd); r.Output != tc.out {
			t.Errorf("%q: %q, want %q", tc.cmd, r.Output, tc.out)
		}
	}
	if n := e.runner.Starts() - starts; n != len(tests) {
		t.Errorf("%d processes for %d commands: the snapshot was taken again", n, len(tests))
	}
	last := e.runner.Last()
	if slices.Contains(last.Argv, "-l") {
		t.Errorf("a command with a snapshot ran in a login shell: %q", last.Argv[:2])
	}
	if !strings.Contains(string(last.Stdin), "ALIAS-LL") {
		t.Errorf("the command was not handed the snapshot on its standard input: %q", last.Stdin)
	}
	// The command itself reads /dev/null, not the snapshot.
	if r := e.run(t, "wc -c"); r.Output != "0\n" {
		t.Errorf("the command read %q on its standard input", r.Output)
	}
}

// The snapshot is no file: none is left in $TMPDIR (moat-shell-*
// directories were, in the host's /tmp when it was writable), and none is
// there for a command or another sandbox to rewrite.
func TestSnapshotNoFile(t *testing.T) {
	tmp := t.TempDir()
	e := newEnv(t, testRC, func(c *shell.Config) { c.Env = append(c.Env, "TMPDIR="+tmp) })
	if r := e.run(t, "ll"); r.Output != "ALIAS-LL\n" {
		t.Errorf("%q", r.Output)
	}
	if names, _ := os.ReadDir(tmp); len(names) != 0 {
		t.Errorf("files left in $TMPDIR: %v", names)
	}
	if names, _ := os.ReadDir(filepath.Dir(e.dir)); len(names) != 2 { // work and home
		t.Errorf("files left beside the session's directories: %v", names)
	}
}

func TestSnapshotRipgrepShim(t *testing.T) {
	root := t.TempDir()
	rg := filepath.Join(root, "fake-rg")
	os.WriteFile(rg, []byte("#!/bin/sh\necho \"FAKE RG $*\"\n"), 0o755)
	t.Run("shim when rg is missing", func(t *testing.T) {
		e := newEnv(t, "", func(c *shell.Config) { c.Ripgrep = rg; c.Env[0] = "PATH=/nonexistent:/bin" })
		if r := e.run(t, "rg -n foo"); r.Output != "FAKE RG -n foo\n" {
			t.Errorf("%q", r.Output)
		}
	})
	t.Run("no shim when rg exists", func(t *testing.T) {
		bin := filepath.Join(root, "bin")
		os.Mkdir(bin, 0o755)
		os.WriteFile(filepath.Join(bin, "rg"), []byte("#!/bin/sh\necho REAL RG\n"), 0o755)
		// The snapshot runs in a login shell, whose profile may reset
		// PATH: the user's rc file puts bin first, as users do.
		e := newEnv(t, "export PATH="+bin+":$PATH\n", func(c *shell.Config) { c.Ripgrep = rg })
		if r := e.run(t, "rg foo"); r.Output != "REAL RG\n" {
			t.Errorf("%q", r.Output)
		}
	})
}

// The snapshot is taken once, and a command cannot make the session take
// it again (a retake while commands run could be raced).
func TestSnapshotTakenOnce(t *testing.T) {
	e := newEnv(t, testRC, nil)
	starts := e.runner.Starts()
	for i := 0; i < 3; i++ {
		if r := e.run(t, "ll; rm -rf /proc/self/fd/0 \"${TMPDIR:-/tmp}\"/moat-shell-* 2>/dev/null; true"); r.Output != "ALIAS-LL\n" || len(r.Notes) != 0 {
			t.Errorf("%q %q", r.Output, r.Notes)
		}
	}
	if n := e.runner.Starts() - starts; n != 4 {
		t.Errorf("%d processes for 3 commands, want 4 (the snapshot once)", n)
	}
}

func TestSnapshotFailureFallsBackToLogin(t *testing.T) {
	e := newEnv(t, testRC+"exit 3\n", nil)
	os.WriteFile(filepath.Join(e.home, ".bash_profile"), []byte("export FROM_PROFILE=yes\n"), 0o644)
	if err := e.s.Snapshot(context.Background()); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Snapshot() = %v", err)
	}
	r := e.run(t, `echo "$FROM_PROFILE"`)
	if r.Output != "yes\n" {
		t.Errorf("the login shell's profile was not read: %q", r.Output)
	}
	if argv := e.runner.Last().Argv; len(argv) < 2 || argv[1] != "-l" {
		t.Errorf("argv %q is not a login shell", argv)
	}
	if r := e.run(t, "pwd"); r.Output != e.dir+"\n" {
		t.Errorf("%q", r.Output)
	}
}

func TestEnvPersistsInLoginShells(t *testing.T) {
	e := newEnv(t, "", func(c *shell.Config) { c.NoSnapshot = true })
	// The login shell's profile sets PATH before the script runs; the
	// session's PATH still wins.
	os.WriteFile(filepath.Join(e.home, ".bash_profile"), []byte("export PATH=/usr/bin:/bin\n"), 0o644)
	e.run(t, "export PATH=/opt/mine:$PATH")
	if r := e.run(t, `echo "${PATH%%:*}"`); r.Output != "/opt/mine\n" {
		t.Errorf("%q", r.Output)
	}
}

func TestNoSnapshot(t *testing.T) {
	e := newEnv(t, testRC, func(c *shell.Config) { c.NoSnapshot = true })
	e.run(t, "true")
	if e.runner.Starts() != 1 {
		t.Errorf("%d processes, want 1", e.runner.Starts())
	}
}

func TestOutput(t *testing.T) {
	e := newEnv(t, "", func(c *shell.Config) { c.MaxOutput = 1000; c.MaxFileBytes = 100_000 })
	tests := []struct {
		name  string
		cmd   string
		check func(t *testing.T, r shell.Result)
	}{
		{"merged in order", "echo out1; echo err1 >&2; echo out2; echo err2 >&2", func(t *testing.T, r shell.Result) {
			if r.Output != "out1\nerr1\nout2\nerr2\n" {
				t.Errorf("%q", r.Output)
			}
		}},
		{"stdin is empty", `cat; read x; echo "[$x]"`, func(t *testing.T, r shell.Result) {
			if r.Output != "[]\n" {
				t.Errorf("%q", r.Output)
			}
		}},
		{"inline up to the limit", "printf 'x%.0s' $(seq 1 1000)", func(t *testing.T, r shell.Result) {
			if len(r.Output) != 1000 || r.OutputFile != "" {
				t.Errorf("%d bytes, file %q", len(r.Output), r.OutputFile)
			}
		}},
		{"persisted above it", "seq 1 2000", func(t *testing.T, r shell.Result) {
			b, err := os.ReadFile(r.OutputFile)
			if err != nil || strings.Count(string(b), "\n") != 2000 || !strings.HasPrefix(r.Output, "<persisted-output>\n") ||
				r.OutputBytes != int64(len(b)) || r.OutputLines != 2000 {
				t.Errorf("file %q (%d bytes, %v), %d lines, output %.100q", r.OutputFile, len(b), err, r.OutputLines, r.Output)
			}
			if filepath.Dir(r.OutputFile) != e.out {
				t.Errorf("file %s not in the output directory %s", r.OutputFile, e.out)
			}
			if fi, _ := os.Stat(r.OutputFile); fi.Mode().Perm() != 0o600 {
				t.Errorf("file mode %v", fi.Mode().Perm())
			}
		}},
		{"file capped", "seq 1 50000", func(t *testing.T, r shell.Result) {
			fi, err := os.Stat(r.OutputFile)
			if err != nil || fi.Size() != 100_000 || !r.Truncated || r.OutputBytes != 288894 {
				t.Errorf("file %v %v, truncated %v, %d bytes", fi, err, r.Truncated, r.OutputBytes)
			}
		}},
		{"binary", `printf 'a\0b'`, func(t *testing.T, r shell.Result) {
			if !r.Binary || r.OutputFile == "" || strings.Contains(r.Output, "\x00") {
				t.Errorf("%+v", r)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, e.run(t, tc.cmd)) })
	}
}

// A session's saved output is bounded on disk: the oldest files go when a
// new one would not fit (moatd kept every command's, 64 MB each, in root's
// state until the session closed, and a user filled the disk: found by an
// attack pass).
func TestSavedOutputBounded(t *testing.T) {
	e := newEnv(t, "", func(c *shell.Config) { c.MaxOutput = 1000; c.MaxFileBytes = 100_000; c.MaxSavedBytes = 250_000 })
	var files []string
	for i := 0; i < 6; i++ {
		r := e.run(t, "seq 1 50000") // 288,894 bytes: each file capped at 100,000
		if r.OutputFile == "" {
			t.Fatalf("no file saved: %+v", r)
		}
		files = append(files, r.OutputFile)
	}
	total, es := dirBytes(e.out)
	if total > 250_000 {
		t.Errorf("%d bytes of saved output on disk, over the 250,000 allowed (%d files)", total, len(es))
	}
	if _, err := os.Stat(files[len(files)-1]); err != nil {
		t.Errorf("the newest saved output is gone: %v", err)
	}
	if _, err := os.Stat(files[0]); err == nil {
		t.Errorf("the oldest saved output is still there")
	}
}

// Commands writing at once are held to the cap too: a running command's
// file counts whole, and none is removed while it is written (eight
// background commands wrote 512 MB into a session capped at 256: found by
// an attack pass).
func TestSavedOutputBoundedWhileRunning(t *testing.T) {
	e := newEnv(t, "", func(c *shell.Config) { c.MaxOutput = 1000; c.MaxFileBytes = 100_000; c.MaxSavedBytes = 250_000 })
	var ids []string
	for i := 0; i < 6; i++ {
		r, err := e.s.Run(context.Background(), shell.Request{ID: fmt.Sprintf("w%d", i), Command: "seq 1 50000; sleep 1", Background: true})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.BackgroundID)
	}
	time.Sleep(500 * time.Millisecond) // each has written its output, none has ended
	total, es := dirBytes(e.out)
	if total > 250_000 {
		t.Errorf("%d bytes of saved output on disk while the commands run, over the 250,000 allowed (%d files)", total, len(es))
	}
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := e.s.Wait(ctx, id)
		cancel()
		if err != nil || r.ExitCode != 0 {
			t.Errorf("%s: %v %+v", id, err, r)
		}
		// A file is removed only once its command ended (removing an
		// open file frees nothing): no later command ran to remove it.
		if r.OutputFile != "" {
			if _, err := os.Stat(r.OutputFile); err != nil {
				t.Errorf("%s: its saved output was removed while it ran: %v", id, err)
			}
		}
	}
}

// dirBytes is the size of the files in dir, and the files.
func dirBytes(dir string) (int64, []os.DirEntry) {
	var total int64
	es, _ := os.ReadDir(dir)
	for _, d := range es {
		if fi, err := d.Info(); err == nil {
			total += fi.Size()
		}
	}
	return total, es
}

func TestImageOutput(t *testing.T) {
	e := newEnv(t, "", nil)
	// A 1x1 PNG.
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82"
	os.WriteFile(filepath.Join(e.dir, "pic.png"), []byte(png), 0o644)
	r := e.run(t, "cat pic.png")
	if r.Image == nil || r.Image.MediaType != "image/png" || string(r.Image.Data) != png || r.Image.Width != 1 || r.Output != "" {
		t.Errorf("%+v", r)
	}
}

func TestExitSemantics(t *testing.T) {
	e := newEnv(t, "", nil)
	os.WriteFile(filepath.Join(e.dir, "a"), []byte("1\n"), 0o644)
	os.WriteFile(filepath.Join(e.dir, "b"), []byte("2\n"), 0o644)
	tests := []struct {
		cmd     string
		code    int
		isError bool
		msg     string
	}{
		{"grep nothing a", 1, false, shell.MsgNoMatches},
		{"grep nothing missing", 2, true, "Command failed with exit code 2"},
		{"cat a | grep nothing", 1, false, shell.MsgNoMatches},
		{"diff a b >/dev/null", 1, false, shell.MsgFilesDiffer},
		{"test -f missing", 1, false, shell.MsgFalse},
		{"[ -d a ]", 1, false, shell.MsgFalse},
		{"false", 1, true, "Command failed with exit code 1"},
		{"grep 1 a >/dev/null", 0, false, ""},
		{"kill -9 $$", 137, true, "Command was killed by signal 9"},
	}
	for _, tc := range tests {
		r := e.run(t, tc.cmd)
		if r.ExitCode != tc.code || r.IsError != tc.isError || r.Message != tc.msg {
			t.Errorf("%q: exit %d is_error %v %q, want %d %v %q", tc.cmd, r.ExitCode, r.IsError, r.Message, tc.code, tc.isError, tc.msg)
		}
	}
}

func TestHints(t *testing.T) {
	const cmd = `echo before; [ "$CLAUDECODE" = 1 ] && echo '<claude-code-hint plugin-name="lsp" reason="why" />' >&2; echo after`
	hint := shell.Hint{Attrs: map[string]string{"plugin-name": "lsp", "reason": "why"}}
	t.Run("main agent", func(t *testing.T) {
		e := newEnv(t, "", nil)
		r := e.run(t, cmd)
		if r.Output != "before\nafter\n" || !reflect.DeepEqual(r.Hints, []shell.Hint{hint}) {
			t.Errorf("%q %v", r.Output, r.Hints)
		}
	})
	t.Run("subagent", func(t *testing.T) {
		e := newEnv(t, "", nil)
		r, _ := e.s.Run(context.Background(), shell.Request{Command: cmd, Subagent: true})
		if r.Output != "before\nafter\n" || r.Hints != nil {
			t.Errorf("%q %v", r.Output, r.Hints)
		}
	})
	t.Run("off", func(t *testing.T) {
		e := newEnv(t, "", func(c *shell.Config) { c.NoHints = true })
		r := e.run(t, cmd)
		if r.Output != "before\nafter\n" || r.Hints != nil {
			t.Errorf("CLAUDECODE was set: %q %v", r.Output, r.Hints)
		}
		r = e.run(t, `echo '<claude-code-hint a="1" />'`)
		if r.Output != "<claude-code-hint a=\"1\" />\n" {
			t.Errorf("the tag was removed: %q", r.Output)
		}
	})
}

func TestKind(t *testing.T) {
	e := newEnv(t, "", nil)
	tests := []struct{ cmd, kind string }{
		{"ls", "list"}, {"grep -r x . | head", "search"}, {"cat /dev/null", "read"}, {"mkdir -p d", "silent"}, {"echo x > f", "none"},
	}
	for _, tc := range tests {
		if r := e.run(t, tc.cmd); r.Kind != tc.kind {
			t.Errorf("%q: kind %q, want %q", tc.cmd, r.Kind, tc.kind)
		}
	}
}

func TestProgress(t *testing.T) {
	e := newEnv(t, "", func(c *shell.Config) { c.ProgressInterval = 20 * time.Millisecond })
	var mu sync.Mutex
	var chunks []string
	var ticks int
	var last shell.Progress
	r, err := e.s.Run(context.Background(), shell.Request{Command: "for i in 1 2 3; do echo line$i; sleep 0.1; done; printf 'é'",
		Progress: func(p shell.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if p.Bytes < last.Bytes || p.Lines < last.Lines {
				t.Errorf("counts went down: %+v after %+v", p, last)
			}
			last = p
			if p.Chunk == "" {
				ticks++
				return
			}
			chunks = append(chunks, p.Chunk)
		}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(chunks, "") != r.Output || len(chunks) < 3 {
		t.Errorf("chunks %q, output %q", chunks, r.Output)
	}
	if ticks == 0 {
		t.Error("no periodic progress")
	}
	if last.Bytes != int64(len(r.Output)) || last.Lines != 4 {
		t.Errorf("last progress %+v, output %d bytes", last, len(r.Output))
	}
}

func TestBackgroundRequested(t *testing.T) {
	e := newEnv(t, "", nil)
	start := time.Now()
	r, err := e.s.Run(context.Background(), shell.Request{ID: "job", Command: "echo one; sleep 0.3; echo two", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 250*time.Millisecond || r.BackgroundID != "job" || r.Backgrounded != shell.BackgroundRequested || r.ExitCode != -1 {
		t.Fatalf("%+v", r)
	}
	if tasks := e.s.Tasks(); len(tasks) != 1 || tasks[0].ID != "job" || !tasks[0].Running {
		t.Errorf("Tasks() = %+v", tasks)
	}
	var got strings.Builder
	var final *shell.Result
	for deadline := time.Now().Add(5 * time.Second); final == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		rr, err := e.s.Read("job")
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(rr.Output)
		final = rr.Result
	}
	if got.String() != "one\ntwo\n" || final == nil || final.ExitCode != 0 || final.Output != "one\ntwo\n" || final.BackgroundID != "job" {
		t.Errorf("read %q, result %+v", got.String(), final)
	}
	if rr, err := e.s.Read("job"); err != nil || rr.Result == nil || rr.Output != "" {
		t.Errorf("a second Read after the end: %+v %v", rr, err)
	}
	if r, err := e.s.Wait(context.Background(), "job"); err != nil || r.Output != "one\ntwo\n" {
		t.Errorf("Wait: %+v %v", r, err)
	}
	if _, err := e.s.Read("job"); !errors.Is(err, shell.ErrUnknownID) {
		t.Errorf("the session still holds a collected command: %v", err)
	}
}

func TestBackgroundByUser(t *testing.T) {
	e := newEnv(t, "", nil)
	done := make(chan shell.Result)
	go func() {
		r, _ := e.s.Run(context.Background(), shell.Request{ID: "u", Command: "echo start; sleep 0.5; echo end"})
		done <- r
	}()
	deadline := time.Now().Add(5 * time.Second)
	for e.s.Background("u") != nil {
		if time.Now().After(deadline) {
			t.Fatal("never in the foreground")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := <-done
	if r.Backgrounded != shell.BackgroundUser || r.BackgroundID != "u" {
		t.Fatalf("%+v", r)
	}
	if err := e.s.Background("u"); !errors.Is(err, shell.ErrNotForeground) {
		t.Errorf("moved twice: %v", err)
	}
	final, err := e.s.Wait(context.Background(), "u")
	if err != nil || final.Output != "start\nend\n" || final.Backgrounded != shell.BackgroundUser {
		t.Errorf("%+v %v", final, err)
	}
}

func TestAutoBackground(t *testing.T) {
	e := newEnv(t, "", func(c *shell.Config) { c.AutoBackground = 200 * time.Millisecond })
	tests := []struct {
		name string
		req  shell.Request
		auto bool
	}{
		{"long command", shell.Request{Command: "echo a; sleep 0.6; echo b"}, true},
		{"short command", shell.Request{Command: "echo a"}, false},
		{"sleep is never moved", shell.Request{Command: "sleep 0.4"}, false},
		{"turned off for the request", shell.Request{Command: "echo a; sleep 0.4", AutoBackground: -1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := e.s.Run(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Backgrounded == shell.BackgroundAuto; got != tc.auto {
				t.Fatalf("auto-backgrounded %v, want %v: %+v", got, tc.auto, r)
			}
			if tc.auto {
				if !strings.Contains(r.Message, "was moved to the background") {
					t.Errorf("message %q", r.Message)
				}
				final, err := e.s.Wait(context.Background(), r.BackgroundID)
				if err != nil || final.Output != "a\nb\n" {
					t.Errorf("%+v %v", final, err)
				}
			}
		})
	}
}

func TestKillTimeoutCancel(t *testing.T) {
	e := newEnv(t, "", func(c *shell.Config) { c.AutoBackground = -1 })
	t.Run("kill", func(t *testing.T) {
		r, _ := e.s.Run(context.Background(), shell.Request{ID: "k", Command: "sleep 30", Background: true})
		if err := e.s.Kill(r.BackgroundID); err != nil {
			t.Fatal(err)
		}
		final, err := e.s.Wait(context.Background(), "k")
		if err != nil || !final.Interrupted || !final.IsError || final.Message != "Command was interrupted" {
			t.Errorf("%+v %v", final, err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		r, err := e.s.Run(context.Background(), shell.Request{Command: "echo partial; sleep 30", Timeout: 200 * time.Millisecond})
		if err != nil || !r.TimedOut || !r.IsError || r.Message != "Command timed out after 200ms" || r.Output != "partial\n" {
			t.Errorf("%+v %v", r, err)
		}
		if time.Since(start) > 5*time.Second {
			t.Error("the timeout did not kill the command")
		}
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		r, err := e.s.Run(ctx, shell.Request{Command: "sleep 30"})
		if !errors.Is(err, context.DeadlineExceeded) || !r.Interrupted {
			t.Errorf("%+v %v", r, err)
		}
	})
	t.Run("foreground kill from another goroutine", func(t *testing.T) {
		go func() {
			for e.s.Kill("fg") != nil {
				time.Sleep(10 * time.Millisecond)
			}
		}()
		r, err := e.s.Run(context.Background(), shell.Request{ID: "fg", Command: "sleep 30"})
		if err != nil || !r.Interrupted {
			t.Errorf("%+v %v", r, err)
		}
	})
}

func TestGate(t *testing.T) {
	e := newEnv(t, "", func(c *shell.Config) {
		c.Gate = func(_ context.Context, cmd, cwd string) policy.Decision {
			if strings.HasPrefix(cmd, "rm") {
				return policy.Decision{Verdict: policy.Deny, Reason: "no rm", Rule: "Bash(rm:*)"}
			}
			return policy.Decision{Verdict: policy.Allow}
		}
	})
	e.run(t, "true")
	starts := e.runner.Starts()
	r := e.run(t, "rm -rf x")
	if r.Refused == nil || r.Refused.Verdict != policy.Deny || r.ExitCode != -1 || !r.IsError ||
		r.Message != "Command not run: deny: no rm [Bash(rm:*)]" || e.runner.Starts() != starts {
		t.Errorf("%+v", r)
	}
}

// violating wraps a Runner and reports a violation for every process.
type violating struct{ shell.Runner }

type violatingProc struct{ shell.Process }

func (v violating) Start(ctx context.Context, p shell.Proc) (shell.Process, error) {
	pr, err := v.Runner.Start(ctx, p)
	if err != nil {
		return nil, err
	}
	return violatingProc{pr}, nil
}

func (v violatingProc) Wait() (shell.Exit, error) {
	ex, err := v.Process.Wait()
	ex.Violations = append(ex.Violations, policy.Violation{Kind: policy.FileViolation, Op: "write", Target: "/etc/passwd", Rule: "read-only"})
	return ex, err
}

func TestViolations(t *testing.T) {
	e := newEnv(t, "", func(c *shell.Config) { c.Runner = violating{c.Runner} })
	r := e.run(t, "echo hi")
	if len(r.Violations) != 1 || r.Output != "hi\n<sandbox_violations>\ndeny file-write /etc/passwd (read-only)\n</sandbox_violations>\n" {
		t.Errorf("%q %+v", r.Output, r.Violations)
	}
}

func TestFd3IsClosedForTheCommand(t *testing.T) {
	e := newEnv(t, "", nil)
	r := e.run(t, `printf '\0cwd=/etc\n\0' >&3; echo done`)
	if r.Cwd != e.dir || !strings.Contains(r.Output, "done") {
		t.Errorf("the command wrote on the side channel: cwd %q, %q", r.Cwd, r.Output)
	}
}

func TestConcurrentCommands(t *testing.T) {
	e := newEnv(t, testRC, nil)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := e.s.Run(context.Background(), shell.Request{Command: "ll; sleep 0.1"})
			if err != nil || r.Output != "ALIAS-LL\n" {
				t.Errorf("%q %v", r.Output, err)
			}
		}()
	}
	wg.Wait()
	if n := e.runner.Starts(); n != 5 {
		t.Errorf("%d processes for 4 commands, want 5 (one snapshot)", n)
	}
}

func TestRequestErrors(t *testing.T) {
	e := newEnv(t, "", nil)
	ctx := context.Background()
	if _, err := e.s.Run(ctx, shell.Request{Command: " "}); err == nil {
		t.Error("empty command accepted")
	}
	if _, err := e.s.Run(ctx, shell.Request{ID: "x", Command: "sleep 5", Background: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Run(ctx, shell.Request{ID: "x", Command: "true"}); !errors.Is(err, shell.ErrDuplicateID) {
		t.Errorf("duplicate id: %v", err)
	}
	for _, f := range []func() error{
		func() error { _, err := e.s.Read("nope"); return err },
		func() error { _, err := e.s.Wait(ctx, "nope"); return err },
		func() error { return e.s.Kill("nope") },
		func() error { return e.s.Background("nope") },
	} {
		if err := f(); !errors.Is(err, shell.ErrUnknownID) {
			t.Errorf("unknown id: %v", err)
		}
	}
	r, err := e.s.Run(ctx, shell.Request{Command: "echo " + strings.Repeat("x", shell.MaxScriptBytes)})
	if !errors.Is(err, shell.ErrTooLong) || r.ExitCode != -1 || !r.IsError {
		t.Errorf("too long: %+v %v", r, err)
	}
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Run(ctx, shell.Request{Command: "true"}); !errors.Is(err, shell.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestCloseKillsAndCleansUp(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	e := newEnv(t, "", func(c *shell.Config) { c.OutputDir = ""; c.MaxOutput = 100 })
	r := e.run(t, "seq 1 1000")
	if !strings.HasPrefix(r.OutputFile, filepath.Join(cache, "moat", "shell-output")) {
		t.Fatalf("output file %q", r.OutputFile)
	}
	bg, _ := e.s.Run(context.Background(), shell.Request{Command: "sleep 30", Background: true})
	start := time.Now()
	if err := e.s.Close(); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("Close waited for the background command")
	}
	if _, err := os.Stat(filepath.Dir(r.OutputFile)); !os.IsNotExist(err) {
		t.Errorf("the session's output directory is still there: %v", err)
	}
	_ = bg
}

// TestProcContract checks what the session hands the Runner.
func TestProcContract(t *testing.T) {
	var rec recorder
	e := newEnv(t, "", func(c *shell.Config) { rec.Runner = c.Runner; c.Runner = &rec; c.NoSnapshot = true })
	e.run(t, "true")
	p := rec.last
	if p.Dir != e.dir || p.Output == nil || p.Report == nil || p.Output == p.Report || p.Stdin != nil {
		t.Errorf("%+v", p)
	}
	for _, kv := range []string{"SHELL=" + bashPath(t), "GIT_EDITOR=true", "GIT_OPTIONAL_LOCKS=0", "CLAUDECODE=1", "HOME=" + e.home} {
		if !slices.Contains(p.Env, kv) {
			t.Errorf("env lacks %s: %q", kv, p.Env)
		}
	}
}

type recorder struct {
	shell.Runner
	mu   sync.Mutex
	last shell.Proc
}

func (r *recorder) Start(ctx context.Context, p shell.Proc) (shell.Process, error) {
	r.mu.Lock()
	r.last = p
	r.mu.Unlock()
	return r.Runner.Start(ctx, p)
}

var _ io.Writer = (*strings.Builder)(nil)

func TestSubmit(t *testing.T) {
	e := newEnv(t, "", nil)
	ctx := context.Background()
	t.Run("kill before it starts", func(t *testing.T) {
		run, err := e.s.Submit(shell.Request{ID: "k", Command: "sleep 30"})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.Kill("k"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r, err := run(ctx)
		if err != nil || !r.Interrupted || time.Since(start) > 5*time.Second {
			t.Errorf("%+v %v", r, err)
		}
	})
	t.Run("background before it starts", func(t *testing.T) {
		run, _ := e.s.Submit(shell.Request{ID: "b", Command: "sleep 0.2; echo bg", AutoBackground: -1})
		if err := e.s.Background("b"); err != nil {
			t.Fatal(err)
		}
		r, err := run(ctx)
		if err != nil || r.Backgrounded != shell.BackgroundUser {
			t.Fatalf("%+v %v", r, err)
		}
		if f, err := e.s.Wait(ctx, "b"); err != nil || f.Output != "bg\n" {
			t.Errorf("%+v %v", f, err)
		}
	})
	t.Run("read before it starts", func(t *testing.T) {
		run, _ := e.s.Submit(shell.Request{ID: "r", Command: "echo hi"})
		if rr, err := e.s.Read("r"); err != nil || !rr.Running || rr.Output != "" {
			t.Errorf("%+v %v", rr, err)
		}
		run(ctx)
	})
	t.Run("started callback", func(t *testing.T) {
		var got shell.Started
		e.run(t, "cd /tmp")
		r, _ := e.s.Run(ctx, shell.Request{Command: "ls", Started: func(s shell.Started) { got = s }})
		if got.ID != r.ID || got.Cwd != "/tmp" || got.Kind != "list" || got.Command != "ls" {
			t.Errorf("%+v", got)
		}
	})
}

// A command judged in one directory does not run in another: a concurrent
// command's cd between the decision (an MCP client's user being asked)
// and the start moved the session, and the approved command ran there.
func TestDecidedInMustBeTheCwd(t *testing.T) {
	e := newEnv(t, "", nil)
	if err := os.MkdirAll(filepath.Join(e.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	judged := e.s.Cwd()
	e.run(t, "cd sub")
	r, err := e.s.Run(context.Background(), shell.Request{Command: "touch ran", DecidedIn: judged})
	if err != nil {
		t.Fatal(err)
	}
	if _, serr := os.Stat(filepath.Join(e.dir, "sub", "ran")); serr == nil || !r.IsError || !strings.Contains(r.Message, "judged in "+judged) {
		t.Fatalf("a command judged in %s ran in %s: %+v", judged, e.s.Cwd(), r)
	}
	if r, err := e.s.Run(context.Background(), shell.Request{Command: "touch ran", DecidedIn: e.s.Cwd()}); err != nil || r.IsError {
		t.Fatalf("judged where it runs: %+v %v", r, err)
	}
}

// TestListingAgreesWithRead: once the session's listing says a background
// command has ended, a read gives its result. The listing had said so from
// the moment the process was reaped, before the result was made (its output
// rendered and saved), so a client that read on the listing's word was told
// "running" once more.
func TestListingAgreesWithRead(t *testing.T) {
	e := newEnv(t, "", nil)
	for i := range 8 {
		id := fmt.Sprintf("job%d", i)
		// Output past the limit: the result saves it to a file, which
		// takes a while after the process has been reaped.
		if _, err := e.s.Run(context.Background(), shell.Request{ID: id, Command: "head -c 4000000 /dev/zero | tr '\\0' a", Background: true}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			running := true
			for _, ti := range e.s.Tasks() {
				if ti.ID == id {
					running = ti.Running
				}
			}
			if !running {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still running", id)
			}
		}
		rr, err := e.s.Read(id)
		if err != nil {
			t.Fatal(err)
		}
		if rr.Running {
			t.Fatalf("%s: the listing said it had ended, and a read right after said running", id)
		}
		if _, err := e.s.Wait(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
}
