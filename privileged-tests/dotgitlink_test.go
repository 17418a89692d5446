//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDotGitSymlinkProtected: a .git that is a symlink (to a git
// directory, or to a .git file) makes a repository for git as a .git
// directory does, but the plan took it for neither: the working
// directory's repository, and one under the tree whose git directory lay
// deeper than the search or in a node_modules, had their hooks and config
// writable during the run, and the user's git status there meanwhile (a
// prompt, an editor) ran the command's core.fsmonitor on the host (attack
// pass 82; the audit took it out only after the run).
func TestDotGitSymlinkProtected(t *testing.T) {
	coldRunsOnly(t)
	cases := []struct {
		name string
		// setup makes the tree and returns the directory the user's git
		// runs in, relative to the working directory, and its git
		// directory.
		setup func(t *testing.T, f *fixture) (string, string)
	}{
		{"working directory, .git -> node_modules/.cache/g", func(t *testing.T, f *fixture) (string, string) {
			must(t, os.MkdirAll(filepath.Join(f.work, "node_modules", ".cache"), 0o755))
			must(t, os.Rename(filepath.Join(f.work, ".git"), filepath.Join(f.work, "node_modules", ".cache", "g")))
			must(t, os.Symlink("node_modules/.cache/g", filepath.Join(f.work, ".git")))
			return ".", filepath.Join(f.work, "node_modules", ".cache", "g")
		}},
		{"sub/.git -> a git directory deeper than the search", func(t *testing.T, f *fixture) (string, string) {
			deep := filepath.Join(f.work, "store", "a", "b", "c", "d")
			must(t, os.MkdirAll(deep, 0o755))
			git(t, deep, "init", "-q", "r")
			must(t, os.Rename(filepath.Join(deep, "r", ".git"), filepath.Join(deep, "gitdir")))
			must(t, os.MkdirAll(filepath.Join(f.work, "sub"), 0o755))
			must(t, os.Symlink("../store/a/b/c/d/gitdir", filepath.Join(f.work, "sub", ".git")))
			return "sub", filepath.Join(deep, "gitdir")
		}},
		{"sub/.git -> a .git file", func(t *testing.T, f *fixture) (string, string) {
			nm := filepath.Join(f.work, "sub", "node_modules")
			must(t, os.MkdirAll(nm, 0o755))
			git(t, nm, "init", "-q", "r")
			must(t, os.Rename(filepath.Join(nm, "r", ".git"), filepath.Join(nm, "g")))
			// The pointer is read relative to the symlink's directory, as git reads it.
			must(t, os.WriteFile(filepath.Join(nm, "gitfile"), []byte("gitdir: node_modules/g\n"), 0o644))
			must(t, os.Symlink("node_modules/gitfile", filepath.Join(f.work, "sub", ".git")))
			return "sub", filepath.Join(nm, "g")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			dir, gitDir := tc.setup(t, f)
			cfg := filepath.Join(gitDir, "config")
			orig := readFile(t, cfg)
			reset := func() {
				must(t, os.WriteFile(cfg, []byte(orig), 0o644))
				os.Remove(filepath.Join(gitDir, "hooks", "pre-commit"))
			}
			script := "git -C " + dir + " config core.fsmonitor 'echo evil' 2>/dev/null && echo ESCAPED-CONFIG; " +
				"echo evil > \"$(git -C " + dir + " rev-parse --absolute-git-dir)\"/hooks/pre-commit 2>/dev/null && echo ESCAPED-HOOK; echo blocked:; exit 0"
			got := f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c", script)
			if got.code != 0 || !strings.Contains(got.out, "blocked:") {
				t.Fatalf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
			}
			if got.escaped() {
				t.Errorf("ESCAPE under moat: the repository behind a .git symlink was writable during the run:\n%s", got.out)
			}
			reset()
			base := f.exec("/bin/sh", "-c", script)
			if !strings.Contains(base.out, "ESCAPED-CONFIG") || !strings.Contains(base.out, "ESCAPED-HOOK") {
				t.Fatalf("the attack must work without moat:\n%s", base.out)
			}
		})
	}
}

// TestGitDormantRepositoryCompleted: a tree shipped a git directory that
// git does not take for a repository (no refs/, or no HEAD: git looks
// further up), its config with a core.fsmonitor nothing had run. The
// command's mkdir of the missing refs/, or its new HEAD, made it the
// repository of the user's next git status there, and the audit, which
// took it for the user's, left it (attack pass 82). A missing refs/ the
// run makes is taken out after the run; a missing HEAD is reserved for
// the run (the audit cannot tell a HEAD the run made in a .git directory
// from git's own new HEAD).
func TestGitDormantRepositoryCompleted(t *testing.T) {
	coldRunsOnly(t)
	for _, tc := range []struct{ name, missing, complete string }{
		{"refs", "refs", "mkdir sub/.git/refs"},
		{"HEAD", "HEAD", "echo 'ref: refs/heads/main' > sub/.git/HEAD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			sub := filepath.Join(f.work, "sub")
			mark := filepath.Join(f.root, "pwned")
			git(t, f.work, "init", "-q", "sub")
			git(t, sub, "config", "core.fsmonitor", "touch "+mark+"; false")
			missing := filepath.Join(sub, ".git", tc.missing)
			must(t, os.RemoveAll(missing))
			userGit := func() bool {
				os.Remove(mark)
				f.exec("/usr/bin/git", "-C", sub, "status")
				_, err := os.Stat(mark)
				os.Remove(mark)
				return err == nil
			}
			if userGit() {
				t.Fatal("the shipped repository's fsmonitor runs before any command: the test shows nothing")
			}
			time.Sleep(1100 * time.Millisecond) // the tree is older than the run
			r := f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c", tc.complete+"; exit 0")
			if r.code != 0 {
				t.Fatalf("moat run (exit %d):\n%s", r.code, r.out)
			}
			if userGit() {
				t.Fatalf("ESCAPE: the repository the command completed runs its fsmonitor on the user's git status:\n%s", r.out)
			}
			// Without moat, the same command completes it.
			os.RemoveAll(missing)
			f.exec("/bin/sh", "-c", tc.complete)
			if !userGit() {
				t.Fatal("the attack must work without moat")
			}
		})
	}
}

// TestGitBranchIncludeActivated: a tree shipped a repository whose config
// includes, on a branch it was not on (includeIf "onbranch:evil"), a file
// with a core.fsmonitor: nothing ran it until the command's ordinary git
// checkout -b evil made the user's next git status run it (attack pass
// 82).
func TestGitBranchIncludeActivated(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	mark := filepath.Join(f.root, "pwned")
	git(t, f.work, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--allow-empty", "-m", "one")
	inc := filepath.Join(f.work, ".git", "evil.cfg")
	must(t, os.WriteFile(inc, []byte("[core]\n\tfsmonitor = touch "+mark+"; false\n"), 0o644))
	git(t, f.work, "config", "includeIf.onbranch:evil.path", "evil.cfg")
	userGit := func() bool {
		os.Remove(mark)
		f.exec("/usr/bin/git", "status")
		_, err := os.Stat(mark)
		os.Remove(mark)
		return err == nil
	}
	if userGit() {
		t.Fatal("the include's fsmonitor runs before any command: the test shows nothing")
	}
	time.Sleep(1100 * time.Millisecond) // the tree is older than the run
	r := f.exec(moatBin, "run", "--settings", f.settings, "--", "/usr/bin/git", "checkout", "-q", "-b", "evil")
	if r.code != 0 {
		t.Fatalf("moat run (exit %d):\n%s", r.code, r.out)
	}
	if userGit() {
		t.Fatalf("ESCAPE: the include on the branch the command checked out runs its fsmonitor on the user's git status:\n%s", r.out)
	}
	// Without moat, the same command makes it run.
	f.exec("/usr/bin/git", "checkout", "-q", "main")
	if _, err := os.Stat(inc); err != nil {
		must(t, os.WriteFile(inc, []byte("[core]\n\tfsmonitor = touch "+mark+"; false\n"), 0o644))
	}
	f.exec("/usr/bin/git", "checkout", "-q", "evil")
	if !userGit() {
		t.Fatal("the attack must work without moat")
	}
}
