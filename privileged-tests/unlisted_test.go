//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUnlistableDirectoryProtectedWhole: a directory of the tree that the
// plan's search cannot list or look into (mode 0311, 0000, 0444: a
// tarball can ship one, and a command can leave one for the next run)
// hid what it holds from the search, which went on without it: an
// existing .vscode in it, and a repository's .git/config, were left
// writable, and the command, which owns the directory, put its mode back
// and wrote them (attack pass 82). Such a directory is read-only whole
// now. As root the search reads every directory, so the test runs moat
// as an unprivileged user (nobody, its tree chowned to it, when the test
// runs as root).
func TestUnlistableDirectoryProtectedWhole(t *testing.T) {
	coldRunsOnly(t)
	for _, mode := range []os.FileMode{0o311, 0o000, 0o444} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFixture(t)
			sub := filepath.Join(f.work, "sub")
			tasks := filepath.Join(sub, ".vscode", "tasks.json")
			must(t, os.MkdirAll(filepath.Dir(tasks), 0o755))
			must(t, os.WriteFile(tasks, []byte("{}\n"), 0o644))
			git(t, f.work, "init", "-q", "sub/repo")
			cfg := filepath.Join(sub, "repo", ".git", "config")
			orig := readFile(t, cfg)
			reset := func() {
				must(t, os.Chmod(sub, 0o755))
				must(t, os.WriteFile(tasks, []byte("{}\n"), 0o644))
				must(t, os.WriteFile(cfg, []byte(orig), 0o644))
				must(t, os.Chmod(sub, mode))
			}
			var cred *syscall.Credential
			if os.Geteuid() == 0 {
				const nobody = 65534
				cred = &syscall.Credential{Uid: nobody, Gid: nobody}
				must(t, filepath.Walk(f.root, func(p string, _ os.FileInfo, err error) error {
					if err != nil {
						return err
					}
					return os.Lchown(p, nobody, nobody)
				}))
			}
			reset()
			t.Cleanup(func() { os.Chmod(sub, 0o755) })
			// The command writes each file in turn; ESCAPED-... says it did.
			script := "chmod 755 sub 2>/dev/null; " +
				"echo evil > sub/.vscode/tasks.json 2>/dev/null && echo ESCAPED-VSCODE; " +
				"git -C sub/repo config core.fsmonitor 'echo evil' 2>/dev/null && echo ESCAPED-GITCONFIG; " +
				"echo blocked:; exit 0"
			run := func(args ...string) result { return f.execAs(cred, f.env(), args[0], args[1:]...) }
			got := run(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c", script)
			if got.code != 0 || !strings.Contains(got.out, "blocked:") {
				t.Fatalf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
			}
			if got.escaped() {
				t.Errorf("ESCAPE under moat: a directory of mode %v hid what it holds from moat's search:\n%s", mode, got.out)
			}
			if !strings.Contains(got.out, "moat could not list this directory") {
				t.Errorf("the report does not say why the directory is read-only:\n%s", got.out)
			}
			os.Chmod(sub, 0o755)
			if b := readFile(t, tasks); b != "{}\n" {
				t.Errorf("tasks.json changed under moat: %q", b)
			}
			reset()
			base := run("/bin/sh", "-c", script)
			if !strings.Contains(base.out, "ESCAPED-VSCODE") || !strings.Contains(base.out, "ESCAPED-GITCONFIG") {
				t.Fatalf("the attack must work without moat:\n%s", base.out)
			}
		})
	}
}
