package shell_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// What a session carries from one command to the next (the snapshot, the
// working directory, the environment) is the host's, not something a
// command can rewrite for the next one. These run real shells on the host
// (hostrun); privileged-tests and cmd/moat hold the same attacks in the
// sandbox.

// A command cannot change the snapshot the next command sources: it
// appended `export PATH=/evil:$PATH` and a function to the snapshot file,
// and the next command, judged as read-only, ran a fake git (found by an
// attack pass). It tries every place the snapshot could be: files under
// the session's directories and $TMPDIR, and every descriptor of its
// shell, reopened through /proc (the snapshot is on one).
func TestSnapshotCannotBeRewritten(t *testing.T) {
	e := newEnv(t, testRC, nil)
	if r := e.run(t, "ll"); r.Output != "ALIAS-LL\n" {
		t.Fatalf("%q", r.Output)
	}
	const plant = `export PATH=/evil:$PATH
ll() { echo PLANTED; }
`
	attack := `n=0; for f in $(find "$HOME/.." "${TMPDIR:-/tmp}"/moat-shell-* -name 'snapshot-*.sh' 2>/dev/null) /proc/$$/fd/*; do
  printf '%s' "$PLANT" >> "$f" 2>/dev/null && n=$((n+1))
done; echo "planted $n"`
	r := e.run(t, "PLANT='"+plant+"'; "+attack)
	t.Logf("%s", r.Output)
	for i := 0; i < 2; i++ {
		r = e.run(t, `ll; echo "$PATH"`)
		if strings.Contains(r.Output, "PLANTED") || strings.Contains(r.Output, "/evil") || !strings.HasPrefix(r.Output, "ALIAS-LL\n") {
			t.Errorf("a command rewrote the snapshot the next one sourced: %q", r.Output)
		}
	}
}

// forgeScript is a program a command runs (a test suite: repository
// content, not judged) that writes a forged report (working directory /,
// PATH with a directory of its own first) on every descriptor of its
// shell it can reopen through /proc, in the old and the new records, and
// then keeps the shell's own report from being written: kill -9 (the
// shell dies by a signal), or no descriptors left for its exit trap's
// redirection (the shell exits normally, its trap's report lost).
const forgeScript = `#!/bin/sh
trap '' PIPE
for fd in /proc/$PPID/fd/*; do
  case ${fd##*/} in 0|1|2) continue;; esac
  printf '\0cwd=/\n\0env=declare -x PATH="/evil:/usr/bin:/bin"\n\0' > "$fd" 2>/dev/null && echo "forged on $fd"
  printf 'cwd=/\n\0env=declare -x PATH="/evil:/usr/bin:/bin"\n\0end=\0' > "$fd" 2>/dev/null
done
case $1 in
kill) kill -9 $PPID;;
limit) prlimit --pid $PPID --nofile=0:0 && echo limited;;
esac
`

// A program the command runs cannot forge the report its shell makes of
// the working directory and the environment: it wrote one through
// /proc/$PPID/fd/N (bash's saved copy of descriptor 3) and killed its
// shell, and the session took / as its working directory (the gate's
// boundary: reads outside the project passed) and a PATH that ran a fake
// git for an approved git push (found by an attack pass). The report
// channel is a socket (no reopening through /proc), a shell that died by a
// signal or did not finish its report is not believed, and the session
// keeps its working directory and environment, saying so.
func TestReportCannotBeForged(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("no prlimit")
	}
	for _, mode := range []string{"kill", "limit"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, "", nil)
			os.WriteFile(filepath.Join(e.dir, "forge.sh"), []byte(forgeScript), 0o755)
			sub := filepath.Join(e.dir, "sub")
			os.Mkdir(sub, 0o755)
			e.run(t, "cd sub && export KEPT=1")
			r := e.run(t, "../forge.sh "+mode)
			t.Logf("exit %d, notes %q, output %q", r.ExitCode, r.Notes, r.Output)
			if r.Cwd != sub {
				t.Errorf("the forged working directory was taken: %q", r.Cwd)
			}
			for _, v := range e.s.Env() {
				if strings.Contains(v.Value, "/evil") {
					t.Errorf("the forged environment was taken: %v", v)
				}
			}
			if len(r.Notes) == 0 {
				t.Errorf("no note says the report was not used")
			}
			if r := e.run(t, `pwd; echo "$KEPT $PATH"`); !strings.HasPrefix(r.Output, sub+"\n1 ") || strings.Contains(r.Output, "/evil") {
				t.Errorf("the next command: %q", r.Output)
			}
		})
	}
}

// A command runs in the directory it was judged in, or not at all: the
// session's working directory replaced by a symbolic link between the
// decision and the command's cd (another command of the session can do
// it) took the command, and then the session, where the link led. The
// shell changes directory physically (cd -P) and checks where it landed.
func TestCwdReplacedByLink(t *testing.T) {
	e := newEnv(t, "", nil)
	sub := filepath.Join(e.dir, "sub")
	os.Mkdir(sub, 0o755)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o644)
	if r := e.run(t, "cd sub"); r.Cwd != sub {
		t.Fatalf("cwd %q", r.Cwd)
	}
	if err := os.Rename(sub, sub+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, sub); err != nil {
		t.Fatal(err)
	}
	r := e.run(t, "pwd; ls")
	if strings.Contains(r.Output, "secret") || strings.Contains(r.Output, outside) || r.ExitCode != -1 || !strings.HasPrefix(r.Message, "Command not run") {
		t.Errorf("the command ran where the link led: %+v", r)
	}
	if r.Cwd != e.dir || e.s.Cwd() != e.dir || len(r.Notes) == 0 {
		t.Errorf("the session is in %q (%q), notes %q; want its start directory", e.s.Cwd(), r.Cwd, r.Notes)
	}
	if r := e.run(t, "pwd"); r.Output != e.dir+"\n" {
		t.Errorf("the next command: %+v", r)
	}
}

// A directory of the working tree that git takes for a bare repository
// (HEAD, objects/, refs/ and a config: repository content, which a clone
// brings) does not run its configuration's programs when the agent's
// auto-allowed git command runs in it: `cd evil && git diff --no-index a
// b`, judged read-only, ran the tree's diff.external (found by attack pass
// 49). The session's git refuses a bare repository it was not pointed at
// (safe.bareRepository=explicit), as git's own hardening advises; one
// named with --git-dir still works.
func TestImplicitBareRepositoryNotUsed(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	e := newEnv(t, "", nil)
	evil := filepath.Join(e.dir, "evil")
	marker := filepath.Join(e.dir, "PWNED")
	for _, d := range []string{"objects", "refs"} {
		if err := os.MkdirAll(filepath.Join(evil, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, c := range map[string]string{
		"HEAD":   "ref: refs/heads/main\n",
		"config": "[diff]\n\texternal = touch " + marker + "; true\n",
		"a":      "a\n",
		"b":      "b\n",
	} {
		if err := os.WriteFile(filepath.Join(evil, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Without moat's environment, git uses the directory and runs the
	// program: the case is real.
	plain := exec.Command("git", "diff", "--no-index", "a", "b")
	plain.Dir = evil
	plain.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + e.home, "GIT_CONFIG_NOSYSTEM=1"}
	plain.Run()
	if _, err := os.Stat(marker); err != nil {
		t.Skipf("this git does not take %s for a bare repository: the case proves nothing", evil)
	}
	os.Remove(marker)
	e.run(t, "cd evil")
	r := e.run(t, "git diff --no-index a b; git --git-dir=. rev-parse --git-dir")
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the session's git ran the program of a bare repository it found: %q", r.Output)
	}
	if !strings.Contains(r.Output, "\n.\n") && !strings.HasSuffix(r.Output, ".\n") {
		t.Errorf("git --git-dir=. no longer works: %q", r.Output)
	}
}
