//go:build linux

package privtests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/runtime/live"
)

// gitScene is the layout of the review's git reproductions (issue #15):
// the working directory is a committed repository and only its parent is
// writable.
//
//	root/w          writable (allowWrite)
//	root/w/repo     the working directory, a repository with one commit
//	root/outside    readable, not writable (a linked worktree may live here)
//	root/home       HOME
//	root/pwn.sh     the program a planted config names; it creates root/pwned
type gitScene struct {
	t                                  *testing.T
	root, w, repo, outside, home, mark string
	prog, settings, state              string
}

func newGitScene(t *testing.T) *gitScene {
	t.Helper()
	testutil.RequireUserns(t)
	if _, err := exec.LookPath("git"); err != nil {
		testutil.Unavailable(t, "git is not installed")
	}
	root, err := os.MkdirTemp(testRoot(), "moat-git-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		exec.Command("chmod", "-R", "u+rwx", root).Run() // what an attack closed
		os.RemoveAll(root)
	})
	os.Chmod(root, 0o755)
	s := &gitScene{t: t, root: root, w: filepath.Join(root, "w"), outside: filepath.Join(root, "outside"),
		home: filepath.Join(root, "home"), mark: filepath.Join(root, "pwned"), prog: filepath.Join(root, "pwn.sh"),
		state: filepath.Join(root, "state")}
	s.repo = filepath.Join(s.w, "repo")
	for _, d := range []string{s.repo, s.outside, s.home, s.state} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(s.prog, []byte("#!/bin/sh\ntouch "+s.mark+"\nexit 1\n"), 0o755))
	s.git(s.repo, "init", "-q", "-b", "main")
	must(t, os.WriteFile(filepath.Join(s.repo, "a.txt"), []byte("a\n"), 0o644))
	s.git(s.repo, "add", "a.txt")
	s.git(s.repo, "commit", "-q", "-m", "one")
	b, _ := json.Marshal(map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{s.w}, "denyWrite": []string{}},
	})
	s.settings = filepath.Join(root, "settings.json")
	must(t, os.WriteFile(s.settings, b, 0o644))
	return s
}

// homeEnv is env without $XDG_STATE_HOME: a run of the home state
// directory.
func (s *gitScene) homeEnv() []string {
	var out []string
	for _, kv := range s.env() {
		if !strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			out = append(out, kv)
		}
	}
	return out
}

func (s *gitScene) env() []string {
	return []string{"HOME=" + s.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", "XDG_STATE_HOME=" + s.state,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"PROG=" + s.prog, "W=" + s.w, "REPO=" + s.repo, "OUT=" + s.outside}
}

func (s *gitScene) git(dir string, args ...string) string {
	s.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, s.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// run runs a script in the working directory, directly or under moat.
func (s *gitScene) run(script string, sandboxed bool) result {
	s.t.Helper()
	var cmd *exec.Cmd
	if sandboxed {
		// Past the kernel's coarse clock tick: the audit takes a
		// protected file changed in the tick before the run for the
		// command's (SECURITY.md), and a setup's own git config made just
		// now would be (a CI flake of TestGitWorkflowsInside).
		time.Sleep(20 * time.Millisecond)
		cmd = exec.Command(moatBin, "run", "--settings", s.settings, "-c", script)
	} else {
		cmd = exec.Command("/bin/bash", "-c", script)
	}
	cmd.Dir, cmd.Env = s.repo, s.env()
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return result{code: code, out: string(out)}
}

// userGit is what the user's shell prompt or editor runs on the host
// afterwards; it reports whether the planted program ran.
func (s *gitScene) userGit(dir string, args ...string) bool {
	s.t.Helper()
	os.Remove(s.mark)
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, s.env()
	_, _ = cmd.CombinedOutput()
	_, err := os.Stat(s.mark)
	os.Remove(s.mark)
	return err == nil
}

// git's rerere record names files by path, unchecked: through moat, a
// planted MERGE_RR and rr-cache must not make the user's plain git commit
// write outside the tree (found by an attack pass).
func TestGitRerereRecord(t *testing.T) {
	attack := `H=2222222222222222222222222222222222222222 && mkdir -p .git/rr-cache/$H && cp "$OUT/victim" .git/rr-cache/$H/preimage && { cat "$OUT/victim"; echo planted; } > .git/rr-cache/$H/postimage && printf '%s.-1\t%s\0' $H ../../outside/victim > .git/MERGE_RR`
	for _, sandboxed := range []bool{false, true} {
		s := newGitScene(t)
		victim := filepath.Join(s.outside, "victim")
		must(t, os.WriteFile(victim, []byte("precious\n"), 0o644))
		if r := s.run(attack, sandboxed); r.code != 0 {
			t.Fatalf("the attack script failed (sandboxed %v, exit %d):\n%s", sandboxed, r.code, r.out)
		}
		must(t, os.WriteFile(filepath.Join(s.repo, "a.txt"), []byte("user's work\n"), 0o644))
		cmd := exec.Command("git", "commit", "-qam", "user's work")
		cmd.Dir, cmd.Env = s.repo, s.env()
		cmd.CombinedOutput()
		b, _ := os.ReadFile(victim)
		written := strings.Contains(string(b), "planted")
		switch {
		case !sandboxed && !written:
			t.Fatalf("the attack does not work without moat: %q", b)
		case sandboxed && written:
			t.Fatalf("ESCAPE: after moat run, the user's git commit wrote %s: %q", victim, b)
		}
	}
}

// gitTwoBranches makes a branch side with a commit of its own and a second
// commit on main: a rebase of main onto side then picks one.
const gitTwoBranches = `git checkout -q -b side && echo s > s.txt && git add s.txt && git commit -qm s && git checkout -q main && echo b > b.txt && git add b.txt && git commit -qm b`

const plantConfig = `printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = "%s"\n' "$PROG"`

// Every reproduction of the review: the same script run without moat makes
// the user's git run the planted program afterwards; run under moat, it
// does not (the mounts refuse it, or the audit takes it out before moat
// returns).
func TestGitPlantedRepositories(t *testing.T) {
	coldRunsOnly(t)
	cases := []struct {
		name   string
		setup  func(s *gitScene)
		attack string
		where  func(s *gitScene) (string, []string)
	}{
		{"a) corrupt HEAD, bare repository at the worktree root", nil,
			`echo garbage > .git/HEAD; mkdir -p objects refs/heads; echo 'ref: refs/heads/main' > HEAD; ` + plantConfig + ` > config`,
			func(s *gitScene) (string, []string) { return s.repo, []string{"status"} }},
		{"b) repository planted in the writable parent", nil,
			`echo garbage > .git/HEAD; git init -q ..; ` + plantConfig + ` > ../.git/config`,
			func(s *gitScene) (string, []string) { return s.repo, []string{"status"} }},
		{"c) bare repository in an existing subdirectory", func(s *gitScene) {
			must(s.t, os.MkdirAll(filepath.Join(s.repo, "src"), 0o755))
			must(s.t, os.WriteFile(filepath.Join(s.repo, "src/main.c"), []byte("int main;\n"), 0o644))
		},
			`cd src; mkdir -p objects refs/heads; echo 'ref: refs/heads/main' > HEAD; ` + plantConfig + ` > config`,
			func(s *gitScene) (string, []string) { return filepath.Join(s.repo, "src"), []string{"status"} }},
		{"d) linked worktree outside allowWrite, commondir rewritten",
			func(s *gitScene) { s.git(s.repo, "worktree", "add", "-q", filepath.Join(s.outside, "wt")) },
			`git init -q --bare ../planted; ` + plantConfig + ` > ../planted/config; echo "$W/planted" > .git/worktrees/wt/commondir`,
			func(s *gitScene) (string, []string) { return filepath.Join(s.outside, "wt"), []string{"status"} }},
		{"e) config.worktree with extensions.worktreeConfig",
			func(s *gitScene) { s.git(s.repo, "config", "extensions.worktreeConfig", "true") },
			`printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > .git/config.worktree`,
			func(s *gitScene) (string, []string) { return s.repo, []string{"status"} }},
		{"f) core.hooksPath in the tree",
			func(s *gitScene) { s.git(s.repo, "config", "core.hooksPath", ".husky/_") },
			`mkdir -p .husky/_; printf '#!/bin/sh\n%s\n' "$PROG" > .husky/_/pre-commit; chmod +x .husky/_/pre-commit`,
			func(s *gitScene) (string, []string) {
				return s.repo, []string{"commit", "-q", "--allow-empty", "-m", "x"}
			}},
		{"g) a new repository in a subdirectory", nil,
			`git init -q sub; printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> sub/.git/config`,
			func(s *gitScene) (string, []string) { return filepath.Join(s.repo, "sub"), []string{"status"} }},
		{"a new repository in a directory its user may search but not list (the audit runs as that user)", nil,
			`git init -q sub; printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> sub/.git/config; echo a > sub/a; chmod 100 sub`,
			func(s *gitScene) (string, []string) { return filepath.Join(s.repo, "sub"), []string{"status"} }},
		{"a hook in a hooks directory its user may search but not list", nil,
			`git init -q sub; printf '#!/bin/sh\n%s\n' "$PROG" > sub/.git/hooks/pre-commit; chmod +x sub/.git/hooks/pre-commit; chmod 100 sub/.git/hooks`,
			func(s *gitScene) (string, []string) {
				return filepath.Join(s.repo, "sub"), []string{"commit", "-q", "--allow-empty", "-m", "x"}
			}},
		{"a hook in a hooks directory made read-only (the audit must still move it out)", nil,
			`git init -q sub; printf '#!/bin/sh\n%s\n' "$PROG" > sub/.git/hooks/pre-commit; chmod +x sub/.git/hooks/pre-commit; chmod 500 sub/.git/hooks`,
			func(s *gitScene) (string, []string) {
				return filepath.Join(s.repo, "sub"), []string{"commit", "-q", "--allow-empty", "-m", "x"}
			}},
		{"a hook in a new repository", nil,
			`git init -q sub; printf '#!/bin/sh\n%s\n' "$PROG" > sub/.git/hooks/pre-commit; chmod +x sub/.git/hooks/pre-commit`,
			func(s *gitScene) (string, []string) {
				return filepath.Join(s.repo, "sub"), []string{"commit", "-q", "--allow-empty", "-m", "x"}
			}},
		{"a .git file pointing at a planted git directory", nil,
			`git init -q --bare ../evil.git; ` + plantConfig + ` > ../evil.git/config; mkdir -p sub; echo "gitdir: $W/evil.git" > sub/.git`,
			func(s *gitScene) (string, []string) { return filepath.Join(s.repo, "sub"), []string{"status"} }},
		{"an interrupted rebase whose todo list runs a program on git rebase --continue", nil,
			gitTwoBranches + ` && GIT_SEQUENCE_EDITOR="sed -i 1ibreak" git rebase -q -i side && sed -i "1iexec \"$PROG\"" .git/rebase-merge/git-rebase-todo`,
			func(s *gitScene) (string, []string) { return s.repo, []string{"rebase", "--continue"} }},
		{"an interrupted rebase whose merge strategy is a program of the tree", nil,
			gitTwoBranches + ` && GIT_SEQUENCE_EDITOR="sed -i 1ibreak" git rebase -q -i side && mkdir -p git-merge-x && cp "$PROG" git-merge-x/evil && echo x/evil > .git/rebase-merge/strategy`,
			func(s *gitScene) (string, []string) { return s.repo, []string{"rebase", "--continue"} }},
		{"an interrupted git am whose options for git apply write a file", nil,
			`git checkout -q -b p && echo one > am.txt && git add am.txt && git commit -qm one && echo two > am.txt && git commit -qam two && echo n > next.txt && git add next.txt && git commit -qm next && git format-patch -q -2 -o ../patches && git checkout -q main && echo other > am.txt && git add am.txt && git commit -qm other && { git am -q ../patches/*.patch >/dev/null 2>&1 || true; } && test -d .git/rebase-apply && echo "'--build-fake-ancestor=$(dirname "$PROG")/pwned'" > .git/rebase-apply/apply-opt`,
			func(s *gitScene) (string, []string) { return s.repo, []string{"am", "--skip"} }},
		{"a bare repository planted at the working directory", nil,
			`mkdir -p objects refs/heads; echo 'ref: refs/heads/main' > HEAD; ` + plantConfig + ` > config; echo garbage > .git/HEAD`,
			func(s *gitScene) (string, []string) { return s.repo, []string{"status"} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Without moat: the attack works (the test can fail).
			s := newGitScene(t)
			if tc.setup != nil {
				tc.setup(s)
			}
			if r := s.run(tc.attack, false); r.code != 0 {
				t.Fatalf("the attack script fails without moat (%d):\n%s", r.code, r.out)
			}
			dir, args := tc.where(s)
			if !s.userGit(dir, args...) {
				t.Fatalf("without moat, git %v in %s did not run the planted program: the test cannot detect an escape", args, dir)
			}
			// Under moat, on a fresh scene.
			s = newGitScene(t)
			if tc.setup != nil {
				tc.setup(s)
			}
			r := s.run(tc.attack, true)
			dir, args = tc.where(s)
			if s.userGit(dir, args...) {
				t.Fatalf("ESCAPE: after moat run, the user's git %v in %s ran the planted program\n%s", args, dir, r.out)
			}
			for _, d := range []string{s.w, s.repo, filepath.Join(s.repo, "sub"), filepath.Join(s.repo, "src")} {
				if _, err := os.Stat(d); err == nil && s.userGit(d, "status") {
					t.Fatalf("ESCAPE: git status in %s ran the planted program\n%s", d, r.out)
				}
			}
			// The user's repository still works (where the attack did not
			// corrupt it, which the command may: it is writable data).
			if !strings.Contains(tc.attack, "garbage") {
				s.git(s.repo, "log", "-1", "--format=%s")
			}
		})
	}
}

// What agents do with git works inside the sandbox, and leaves nothing for
// the audit to take out.
func TestGitWorkflowsInside(t *testing.T) {
	coldRunsOnly(t)
	s := newGitScene(t)
	s.git(s.repo, "config", "core.hooksPath", ".husky") // the user's own setting stays the user's
	r := s.run(`set -e
git checkout -q -b feature
echo b > b.txt; git add b.txt; git commit -q -m two
git switch -q main
git merge -q --no-edit feature
git checkout -q -b other HEAD~1; echo c > c.txt; git add c.txt; git commit -q -m three
git rebase -q main
echo d >> a.txt; git stash -q; git stash pop -q; git checkout -q -- a.txt
git worktree add -q ../wt2 -b wt2
git clone -q "$REPO" ../clone
cd ../clone && git checkout -q -b x && echo e > e.txt && git add e.txt && git commit -q -m e
git init -q ../fresh && cd ../fresh && echo f > f && git add f && git commit -q -m f
echo WORKFLOWS-OK`, true)
	if r.code != 0 || !strings.Contains(r.out, "WORKFLOWS-OK") {
		t.Fatalf("git workflows inside the sandbox failed (%d):\n%s", r.code, r.out)
	}
	if strings.Contains(r.out, "file-plant") {
		t.Fatalf("the audit took out what the workflows made:\n%s", r.out)
	}
	for _, d := range []string{s.repo, filepath.Join(s.w, "wt2"), filepath.Join(s.w, "clone"), filepath.Join(s.w, "fresh")} {
		s.git(d, "status", "--short")
	}
	if got := strings.TrimSpace(s.git(s.repo, "log", "-1", "--format=%s")); got != "three" {
		t.Fatalf("the rebase did not land: last commit %q", got)
	}
}

// The names the seeds reserve in the working directory cannot be created
// there, and nothing is left behind.
func TestReservedNamesInCwd(t *testing.T) {
	coldRunsOnly(t)
	for _, n := range []string{".gitconfig", ".gitmodules", ".bashrc", ".bash_profile", ".zshrc", ".zprofile",
		".profile", ".ripgreprc", ".mcp.json", ".idea/workspace.xml", ".vscode/tasks.json", ".claude/settings.json", "HEAD"} {
		t.Run(n, func(t *testing.T) {
			s := newGitScene(t)
			p := filepath.Join(s.repo, n)
			script := fmt.Sprintf("mkdir -p %q 2>/dev/null; echo evil > %q && echo ESCAPED", filepath.Dir(p), p)
			if r := s.run(script, true); strings.Contains(r.out, "ESCAPED") {
				t.Fatalf("ESCAPE: %s was created in the working directory:\n%s", n, r.out)
			}
			if _, err := os.Lstat(filepath.Join(s.repo, strings.Split(n, "/")[0])); err == nil {
				t.Fatalf("a placeholder for %s was left behind", n)
			}
			if r := s.run(script, false); !strings.Contains(r.out, "ESCAPED") {
				t.Fatalf("without moat %s must be creatable:\n%s", n, r.out)
			}
		})
	}
}

// The working directory's reserved names hold when the working directory
// is a writable root inside another (Claude Code's settings make the
// working directory writable beside what allowWrite names): renaming it
// through the outer root and making a directory of its name made its
// reserved names free (found by an attack pass).
func TestReservedNamesCwdRenamed(t *testing.T) {
	s := newGitScene(t)
	b, _ := json.Marshal(map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{s.w, s.repo}, "denyWrite": []string{}},
	})
	must(t, os.WriteFile(s.settings, b, 0o644))
	script := `cd .. && mv repo repo.old && mkdir repo && cd repo && echo evil > .bashrc && mkdir .vscode && echo '{}' > .vscode/tasks.json && echo ESCAPED`
	r := s.run(script, true)
	if strings.Contains(r.out, "ESCAPED") {
		t.Fatalf("ESCAPE: the working directory was renamed and its reserved names made:\n%s", r.out)
	}
	for _, n := range []string{".bashrc", ".vscode"} {
		if _, err := os.Lstat(filepath.Join(s.repo, n)); err == nil {
			t.Fatalf("ESCAPE: %s exists in the working directory after the run:\n%s", n, r.out)
		}
	}
	if _, err := os.Lstat(filepath.Join(s.w, "repo.old")); err == nil {
		t.Fatalf("the working directory was renamed:\n%s", r.out)
	}
	if r := s.run(script, false); !strings.Contains(r.out, "ESCAPED") {
		t.Fatalf("without moat the script must work:\n%s", r.out)
	}
}

// The placeholders moat makes for reserved names are sockets: git lists
// none of them (git add -A inside the sandbox stages nothing of moat's),
// and in a writable home the git audit does not take the placeholder of
// ~/.srt-settings.json for a planted settings file (it used to move
// moat's own placeholder into the quarantine when the command wrote
// anything).
func TestPlaceholdersInsideAndAfter(t *testing.T) {
	s := newGitScene(t)
	// The working directory is the home: its names are reserved too.
	s.home = s.repo
	script := `stat -c '%n %F' .bashrc .claude .mcp.json .srt-settings.json HEAD; echo made > made.txt; git add -A && git status --porcelain`
	r := s.run(script, true)
	for _, n := range []string{".bashrc", ".claude", ".mcp.json", ".srt-settings.json", "HEAD"} {
		if !strings.Contains(r.out, n+" socket") {
			t.Errorf("%s is not a socket inside the sandbox:\n%s", n, r.out)
		}
	}
	if !strings.Contains(r.out, "A  made.txt") {
		t.Fatalf("git status inside the sandbox:\n%s", r.out)
	}
	for _, l := range strings.Split(r.out, "\n") {
		if strings.HasPrefix(l, "A  ") && !strings.HasPrefix(l, "A  made.txt") {
			t.Errorf("git add -A staged a placeholder: %q\n%s", l, r.out)
		}
	}
	if strings.Contains(r.out, "plant") || strings.Contains(r.out, "quarantine") {
		t.Errorf("the audit acted on a placeholder:\n%s", r.out)
	}
	es, _ := os.ReadDir(filepath.Join(s.repo, ".local/state/moat/quarantine"))
	if len(es) > 0 {
		t.Errorf("the quarantine holds %v", es)
	}
	for _, n := range []string{".bashrc", ".claude", ".mcp.json", ".srt-settings.json", "HEAD"} {
		if _, err := os.Lstat(filepath.Join(s.repo, n)); err == nil {
			t.Errorf("the placeholder %s was left behind", n)
		}
	}
}

// A command that takes its owner's permissions off the working directory
// (chmod 000 .) does not leave moat's placeholders there: rootless, their
// removal was refused and their record dropped, so that .bashrc, .claude,
// .vscode and HEAD stayed as mode-0 sockets for good (found by an attack
// pass).
func TestPlaceholdersAfterChmod(t *testing.T) {
	s := newGitScene(t)
	r := s.run(`chmod 000 .`, true)
	os.Chmod(s.repo, 0o755)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.out)
	}
	for _, n := range []string{".bashrc", ".claude", ".vscode", ".mcp.json", "HEAD"} {
		if _, err := os.Lstat(filepath.Join(s.repo, n)); err == nil {
			t.Errorf("the placeholder %s was left behind", n)
		}
	}
}

// A rule inside a writable tree cannot be undone by renaming its parent
// and making the path again.
func TestRenameParentOfDenyRule(t *testing.T) {
	f := newFixture(t)
	must(t, os.MkdirAll(filepath.Join(f.work, "cfg"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.work, "cfg/deploy.conf"), []byte("safe\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(f.work, "sec/inner"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.work, "sec/inner/key"), []byte(secretText+"\n"), 0o644))
	// A rule naming a file that does not exist yet (its parent does).
	must(t, os.MkdirAll(filepath.Join(f.work, "top"), 0o755))
	settings := f.writeSettings(map[string]any{
		"denyWrite": []string{filepath.Join(f.work, "cfg/deploy.conf"), filepath.Join(f.work, "top/notyet.conf")},
		"denyRead":  []string{filepath.Join(f.work, "sec/inner")},
	})
	reset := func() {
		os.RemoveAll(filepath.Join(f.work, "cfg.old"))
		os.RemoveAll(filepath.Join(f.work, "cfg"))
		must(t, os.MkdirAll(filepath.Join(f.work, "cfg"), 0o755))
		must(t, os.WriteFile(filepath.Join(f.work, "cfg/deploy.conf"), []byte("safe\n"), 0o644))
		os.RemoveAll(filepath.Join(f.work, "top.old"))
		os.RemoveAll(filepath.Join(f.work, "top"))
		must(t, os.MkdirAll(filepath.Join(f.work, "top"), 0o755))
		if _, err := os.Stat(filepath.Join(f.work, "sec.old")); err == nil {
			os.RemoveAll(filepath.Join(f.work, "sec"))
			os.Rename(filepath.Join(f.work, "sec.old"), filepath.Join(f.work, "sec"))
		}
	}
	run := func(args ...string) result { return f.sandboxedWith(settings, args...) }
	f.attackWith(run, []string{"rename-parent-write", filepath.Join(f.work, "cfg"), "deploy.conf", "evil"}, reset)
	f.attackWith(run, []string{"rename-parent-read", filepath.Join(f.work, "sec"), "inner/key"}, reset)
	f.attackWith(run, []string{"rename-parent-write", filepath.Join(f.work, "top"), "notyet.conf", "evil"}, reset)
	// The placeholder of the missing file stayed where it was made and was
	// removed: nothing is left behind, under either name.
	top := filepath.Join(f.work, "top")
	r := f.exec(moatBin, "run", "--settings", settings, "--", "/bin/sh", "-c", "mv "+top+" "+top+".old; mv "+top+" "+top+".moved; true")
	for _, p := range []string{"top/notyet.conf", "top.old", "top.moved"} {
		if _, err := os.Lstat(filepath.Join(f.work, p)); err == nil {
			t.Errorf("%s is left on the host after the run:\n%s", p, r.out)
		}
	}
}

// A settings file a sandboxed command writes never widens a later run: not
// after it (the audit takes it out), nor while it runs (moat refuses to load
// a settings file a live sandbox could have written).
//
// (A project's file may still widen some things, not the writable paths
// outside the project nor the host's loopback: the widening here is
// allowLocalBinding, a server listening inside the sandbox.)
func TestSettingsCannotWidenLaterRun(t *testing.T) {
	s := newGitScene(t)
	sub := filepath.Join(s.repo, "sub")
	widen := `mkdir -p sub/.claude && printf '{"sandbox":{"network":{"allowLocalBinding":true}}}' > sub/.claude/settings.json`
	// The later run: default settings discovery, started in sub.
	later := func() result {
		cmd := exec.Command(moatBin, "run", "--", self, "listen", "127.0.0.1:0")
		cmd.Dir, cmd.Env = sub, append(s.env(), "MOAT_ATTACK=1")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return result{code: code, out: string(out)}
	}
	// Without moat writing it, the file widens the later run: the attack is real.
	if r := s.run(widen, false); r.code != 0 {
		t.Fatalf("%s", r.out)
	}
	if r := later(); !strings.Contains(r.out, "ESCAPED") {
		t.Fatalf("a project settings file must widen the run it is found by (or this test proves nothing):\n%s", r.out)
	}
	os.RemoveAll(filepath.Join(sub, ".claude"))
	// Written under moat: gone when moat returns.
	r := s.run(widen, true)
	if !strings.Contains(r.out, "settings") {
		t.Errorf("no violation reported for the settings file:\n%s", r.out)
	}
	if r := later(); strings.Contains(r.out, "ESCAPED") {
		t.Fatalf("ESCAPE: a settings file written under moat widened the next run:\n%s", r.out)
	}
	// While the writer still runs: the later run refuses to load it.
	os.RemoveAll(filepath.Join(sub, ".claude"))
	writer := exec.Command(moatBin, "run", "--settings", s.settings, "-c", widen+"; touch "+filepath.Join(s.w, "written")+"; sleep 5")
	writer.Dir, writer.Env = s.repo, s.env()
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { writer.Process.Kill(); writer.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(s.w, "written")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not write")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r = later()
	if strings.Contains(r.out, "ESCAPED") {
		t.Fatalf("ESCAPE: a settings file a live sandbox wrote widened another run:\n%s", r.out)
	}
	if r.code != 125 || !strings.Contains(r.out, "sandboxed command that can write it") {
		t.Fatalf("want a refusal naming the file (exit 125), got %d:\n%s", r.code, r.out)
	}
}

// Without user namespaces (--best-effort's no-namespace tier) there are no
// mounts: the audit alone keeps the user's git from running what the
// command planted.
func TestNoUsernsGitAudit(t *testing.T) {
	coldRunsOnly(t)
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock: the no-namespace tier has nothing to confine with")
	}
	for _, attack := range []string{
		`echo garbage > .git/HEAD; mkdir -p objects refs/heads; echo 'ref: refs/heads/main' > HEAD; ` + plantConfig + ` > config`,
		`git init -q sub; printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> sub/.git/config`,
		`printf '#!/bin/sh\n%s\n' "$PROG" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`,
	} {
		checks := []struct {
			dir  string
			args []string
		}{{"", []string{"status"}}, {"sub", []string{"status"}}, {"", []string{"commit", "-q", "--allow-empty", "-m", "x"}}}
		// Without moat the attack plants: this test can fail.
		s := newGitScene(t)
		if r := s.run(attack, false); r.code != 0 {
			t.Fatalf("without moat %q failed:\n%s", attack, r.out)
		}
		planted := false
		for _, c := range checks {
			if d := filepath.Join(s.repo, c.dir); !planted {
				if _, err := os.Stat(d); err == nil && s.userGit(d, c.args...) {
					planted = true
				}
			}
		}
		if !planted {
			t.Fatalf("without moat, %q plants nothing the user's git runs: this test could not detect an escape", attack)
		}
		s = newGitScene(t)
		cmd := exec.Command(self, moatBin, "run", "--best-effort", "--settings", s.settings, "-c", attack)
		cmd.Dir, cmd.Env = s.repo, append(s.env(), denyUsernsEnv+"=1")
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), "best effort") {
			t.Fatalf("not the no-namespace tier:\n%s", out)
		}
		for _, c := range checks {
			d := filepath.Join(s.repo, c.dir)
			if _, err := os.Stat(d); err == nil && s.userGit(d, c.args...) {
				t.Fatalf("ESCAPE in the no-namespace tier: git %v in %s ran the planted program after %q\n%s", c.args, d, attack, out)
			}
		}
	}
}

// What one run stages where no audit looks (a tree without HEAD yet, a
// directory inside .git, a directory the user cannot read) and a later run
// moves or opens into place: the user's git still runs nothing, and a
// settings file still widens nothing. Each pair of scripts, run without
// moat, does plant (so the test can fail); found by an outside attack pass.
func TestGitStagedAcrossRuns(t *testing.T) {
	coldRunsOnly(t)
	cases := []struct {
		name       string
		run1, run2 string
		effective  func(s *gitScene) bool
	}{
		{"staged deep without HEAD, moved to the parent's .git",
			`mkdir -p ../a/b/c/evil && cd ../a/b/c/evil && mkdir -p objects refs/heads && echo 'ref: refs/heads/main' > HEAD.x && ` + plantConfig + ` > config`,
			`mv ../a/b/c/evil/HEAD.x ../a/b/c/evil/HEAD && mv ../a/b/c/evil ../.git && rm -rf ../a && echo garbage > .git/HEAD`,
			func(s *gitScene) bool { return s.userGit(s.repo, "status") }},
		{"a settings file staged inside a .git directory, moved to a subdirectory",
			`mkdir -p hide/.git/sub/.claude && printf '{"sandbox":{"filesystem":{"allowWrite":["/%s"]}}}' "$OUT" > hide/.git/sub/.claude/settings.json`,
			`mv hide/.git/sub sub && rm -rf hide`,
			func(s *gitScene) bool {
				_, err := os.Lstat(filepath.Join(s.repo, "sub/.claude/settings.json"))
				return err == nil
			}},
		{"a repository's config written through a hard link made before moat protected it",
			`mkdir r && cd r && git init -q && cd .. && ln r/.git/config h`,
			`printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> h`,
			func(s *gitScene) bool { return s.userGit(filepath.Join(s.repo, "r"), "status") }},
		{"a .claude symlink to a directory staged earlier",
			`mkdir -p data/cl proj && printf '{"sandbox":{"filesystem":{"allowWrite":["/%s"]}}}' "$OUT" > data/cl/settings.json`,
			`ln -s ../data/cl proj/.claude`,
			func(s *gitScene) bool {
				_, err := os.Stat(filepath.Join(s.repo, "proj/.claude/settings.json"))
				return err == nil
			}},
		{"a bare repository whose HEAD is a socket, used later as a worktree's commondir",
			`mkdir -p sock/objects sock/refs && printf '[core]\n\tbare = true\n\tfsmonitor = "%s"\n' "$PROG" > sock/config && python3 -c 'import os, stat; os.mknod("sock/HEAD", 0o644 | stat.S_IFSOCK)'`,
			`mkdir -p wt proj && echo 'ref: refs/heads/main' > wt/HEAD && echo ../sock > wt/commondir && echo "gitdir: $PWD/wt" > proj/.git && echo "$PWD/proj/.git" > wt/gitdir`,
			func(s *gitScene) bool { return s.userGit(filepath.Join(s.repo, "proj"), "status") }},
		// A symlinked config or hooks directory whose target's directory
		// is swapped by a rename: change times stay old, and moat's mount
		// of a symlinked hooks path holds the symlink, not its target
		// (found by an outside attack pass).
		{"a symlinked config whose target's directory is swapped for one staged earlier",
			`mkdir sub && cd sub && git init -q && cd .. && mkdir D E && cp sub/.git/config D/config && { cat sub/.git/config; printf '[core]\n\tfsmonitor = "%s"\n' "$PROG"; } > E/config && ln -sf ../../D/config sub/.git/config`,
			`mv D D.old && mv E D`,
			func(s *gitScene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
		{"a symlinked hooks directory swapped for one staged earlier",
			`mkdir sub && cd sub && git init -q && cd .. && mkdir H H2 && rm -rf sub/.git/hooks && ln -s ../../H sub/.git/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > H2/pre-commit && chmod +x H2/pre-commit`,
			`mv H H.old && mv H2 H`,
			func(s *gitScene) bool {
				return s.userGit(filepath.Join(s.repo, "sub"), "commit", "-q", "--allow-empty", "-m", "x")
			}},
		{"a dangling hooks symlink whose directory is renamed into place later",
			`mkdir -p vendor/a/b && git init -q vendor/a/b/lib && rm -rf vendor/a/b/lib/.git/hooks && ln -s ../../../../../.cache-x vendor/a/b/lib/.git/hooks && mkdir stage && printf '#!/bin/sh\n"%s"\n' "$PROG" > stage/post-commit && chmod +x stage/post-commit`,
			`mv stage .cache-x`,
			func(s *gitScene) bool {
				return s.userGit(filepath.Join(s.repo, "vendor/a/b/lib"), "commit", "-q", "--allow-empty", "-m", "x")
			}},
		// A bare repository hidden inside .git (where the audit's walk
		// does not go), pushed to by a local path: a push runs its
		// pre-receive hook (found by an attack pass).
		{"a bare repository hidden in .git, named by remote.*.url",
			`git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git init -q --bare .git/evil.git && printf '#!/bin/sh\n"%s"\n' "$PROG" > .git/evil.git/hooks/pre-receive && chmod +x .git/evil.git/hooks/pre-receive && git remote add origin "$PWD/.git/evil.git"`,
			`true`,
			func(s *gitScene) bool {
				return s.userGit(filepath.Join(s.repo, "sub"), "push", "-q", "origin", "HEAD:refs/heads/x")
			}},
		{"a bare repository hidden in .git, named by a legacy .git/remotes file",
			`git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git init -q --bare .git/evil.git && printf '#!/bin/sh\n"%s"\n' "$PROG" > .git/evil.git/hooks/pre-receive && chmod +x .git/evil.git/hooks/pre-receive`,
			`cd sub && mkdir -p .git/remotes && printf 'URL: %s\n' "$PWD/.git/evil.git" > .git/remotes/origin`,
			func(s *gitScene) bool {
				return s.userGit(filepath.Join(s.repo, "sub"), "push", "-q", "origin", "HEAD:refs/heads/x")
			}},
		{"a repository in a directory made unreadable, opened again with fchmod",
			`git init -q sub && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> sub/.git/config && chmod 400 sub`,
			`python3 -c 'import os; fd = os.open("sub", os.O_RDONLY | os.O_DIRECTORY); os.fchmod(fd, 0o755)'`,
			func(s *gitScene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
	}
	// The gap between the runs, where what run 1 made must be older than
	// run 2's rounded start (enforce.Since, up to 2 s before it), or run
	// 2's audit judges it by luck and the test could not fail.
	gaps := map[string]time.Duration{
		"a dangling hooks symlink whose directory is renamed into place later":  2100 * time.Millisecond,
		"a bare repository hidden in .git, named by a legacy .git/remotes file": 2100 * time.Millisecond,
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newGitScene(t)
			for _, r := range []result{s.run(tc.run1, false), s.run(tc.run2, false)} {
				if r.code != 0 {
					t.Fatalf("without moat the scripts fail (%d):\n%s", r.code, r.out)
				}
			}
			if !tc.effective(s) {
				t.Fatal("the attack does not work without moat: this test could not detect an escape")
			}
			s = newGitScene(t)
			r1 := s.run(tc.run1, true)
			time.Sleep(20*time.Millisecond + gaps[tc.name])
			r2 := s.run(tc.run2, true)
			os.Chmod(filepath.Join(s.repo, "sub"), 0o755) // the user opens it, whoever closed it
			if tc.effective(s) {
				t.Fatalf("ESCAPE: what the first run staged took effect after the second\nrun 1:\n%s\nrun 2:\n%s", r1.out, r2.out)
			}
		})
	}
}

// A moat run SIGKILLed after its command planted, before its audit: the
// next moat run audits the killed run's trees first (its announcement
// stays in the state directory), so the user's git runs nothing (found by
// an attack pass: no audit ever happened).
func TestGitAuditAfterKilledRun(t *testing.T) {
	plant := `git init -q k && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> k/.git/config && echo planted > k/ready`
	s := newGitScene(t)
	if r := s.run(plant, false); r.code != 0 {
		t.Fatalf("%s", r.out)
	}
	if !s.userGit(filepath.Join(s.repo, "k"), "status") {
		t.Fatal("the plant does not work without moat: this test could not detect an escape")
	}
	s = newGitScene(t)
	cmd := exec.Command(moatBin, "run", "--settings", s.settings, "-c", plant+" && sleep 60")
	cmd.Dir, cmd.Env = s.repo, s.env()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(s.repo, "k/ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the sandboxed command did not plant within 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill() // SIGKILL
	cmd.Wait()
	// The next moat run, of anything.
	r := s.run("true", true)
	if !strings.Contains(r.out, "killed before its audit") {
		t.Errorf("the next run did not say it audited the killed run:\n%s", r.out)
	}
	if s.userGit(filepath.Join(s.repo, "k"), "status") {
		t.Fatalf("ESCAPE: after a moat run was SIGKILLed, its plant ran in the user's git\n%s", r.out)
	}
}

// The home's own files kept in a dotfiles tree the command may write
// (~/.gitconfig and ~/.claude as symlinks into it): moat's mounts hold the
// symlinks, and now what they lead to as well, so the user's git runs
// nothing and no settings file appears (found by an attack pass). Without
// moat the same script plants both.
func TestGitHomeFilesSymlinkedIntoTheTree(t *testing.T) {
	coldRunsOnly(t)
	setup := func(s *gitScene) {
		dots := filepath.Join(s.w, "dotfiles")
		must(t, os.MkdirAll(filepath.Join(dots, "claude"), 0o755))
		must(t, os.WriteFile(filepath.Join(dots, "gitconfig"), []byte("[user]\n\tname = t\n"), 0o644))
		must(t, os.Symlink(filepath.Join(dots, "gitconfig"), filepath.Join(s.home, ".gitconfig")))
		must(t, os.Symlink(filepath.Join(dots, "claude"), filepath.Join(s.home, ".claude")))
	}
	attack := `printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> ../dotfiles/gitconfig; printf '{"sandbox":{"filesystem":{"allowWrite":["/%s"]}}}' "$OUT" > ../dotfiles/claude/settings.json; true`
	planted := func(s *gitScene) (git, settings bool) {
		_, err := os.Stat(filepath.Join(s.w, "dotfiles", "claude", "settings.json"))
		return s.userGit(s.repo, "status"), err == nil
	}
	s := newGitScene(t)
	setup(s)
	s.run(attack, false)
	if g, st := planted(s); !g || !st {
		t.Fatalf("without moat the attack does not work (git %v, settings %v): this test could not detect an escape", g, st)
	}
	s = newGitScene(t)
	setup(s)
	r := s.run(attack, true)
	if g, st := planted(s); g || st {
		t.Fatalf("ESCAPE: through symlinked home files, git ran the planted program (%v) or a settings file appeared (%v)\n%s", g, st, r.out)
	}
}

// A symlink the command plants at a protected name in the tree (sub/.claude
// -> .., a/b/.vscode -> ../../.git) does not make a later run protect what
// it leads to: the working tree and its .git stay writable (an attack pass
// locked every later run out of its tree that way).
func TestPlantedSymlinkDoesNotLockTheTree(t *testing.T) {
	coldRunsOnly(t)
	s := newGitScene(t)
	if r := s.run(`mkdir -p sub a/b && ln -s .. sub/.claude && ln -s ../../.git a/b/.vscode`, true); r.code != 0 {
		t.Fatalf("the planting run: %d\n%s", r.code, r.out)
	}
	r := s.run(`echo new > keep.txt && git add keep.txt && git commit -qm keep && echo wrote`, true)
	if r.code != 0 || !strings.Contains(r.out, "wrote") {
		t.Fatalf("a run after the planted symlinks cannot write its tree or commit (%d):\n%s", r.code, r.out)
	}
}

// A home's own name that is a dangling symlink into a writable tree
// (~/.gitconfig -> dotfiles/gitconfig, not made yet): the command cannot
// make the file it leads to (moat reserves it for the run).
func TestGitHomeDanglingSymlinkIntoTheTree(t *testing.T) {
	coldRunsOnly(t)
	setup := func(s *gitScene) {
		dots := filepath.Join(s.w, "dotfiles")
		must(t, os.MkdirAll(dots, 0o755))
		must(t, os.Symlink(filepath.Join(dots, "gitconfig"), filepath.Join(s.home, ".gitconfig")))
	}
	attack := `printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../dotfiles/gitconfig; true`
	s := newGitScene(t)
	setup(s)
	s.run(attack, false)
	if !s.userGit(s.repo, "status") {
		t.Fatal("without moat the attack does not work: this test could not detect an escape")
	}
	s = newGitScene(t)
	setup(s)
	r := s.run(attack, true)
	if s.userGit(s.repo, "status") {
		t.Fatalf("ESCAPE: the file a dangling ~/.gitconfig leads to was made, and git ran the planted program\n%s", r.out)
	}
	if _, err := os.Lstat(filepath.Join(s.w, "dotfiles", "gitconfig")); err == nil {
		t.Errorf("moat's placeholder for the dangling ~/.gitconfig was left behind")
	}
}

// TestSettingsOfAnotherStateDir: the register of live sandboxes was read
// only by the runs of its own state directory. A run of the user's
// default one (no $XDG_STATE_HOME), started while a sandbox of another
// (an agent host's, with $XDG_STATE_HOME set) had just written
// sub/.claude/settings.json, loaded it and ran with the widened policy
// (attack pass 106). Every run now announces itself in the home state
// directory's register too, which every run reads; the other way round as
// well. Without moat writing it the file widens the run
// (TestSettingsCannotWidenLaterRun).
func TestSettingsOfAnotherStateDir(t *testing.T) {
	s := newGitScene(t)
	sub := filepath.Join(s.repo, "sub")
	widen := `mkdir -p sub/.claude && printf '{"sandbox":{"network":{"allowLocalBinding":true}}}' > sub/.claude/settings.json`
	homeEnv := s.homeEnv()
	other := filepath.Join(filepath.Dir(s.state), "state-other")
	for _, c := range []struct {
		name                string
		writerEnv, laterEnv []string
	}{
		{"writer of XDG_STATE_HOME, later run of the home one", s.env(), homeEnv},
		{"writer of the home one, later run of XDG_STATE_HOME", homeEnv, s.env()},
		{"two XDG_STATE_HOMEs", s.env(), append(homeEnv[:len(homeEnv):len(homeEnv)], "XDG_STATE_HOME="+other)},
	} {
		os.RemoveAll(filepath.Join(sub, ".claude"))
		os.Remove(filepath.Join(s.w, "written"))
		writer := exec.Command(moatBin, "run", "--settings", s.settings, "-c", widen+"; touch "+filepath.Join(s.w, "written")+"; sleep 5")
		writer.Dir, writer.Env = s.repo, c.writerEnv
		var wOut strings.Builder
		writer.Stdout, writer.Stderr = &wOut, &wOut
		must(t, writer.Start())
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(s.w, "written")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				writer.Process.Kill()
				writer.Wait()
				t.Fatalf("%s: the writer did not write:\n%s", c.name, wOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd := exec.Command(moatBin, "run", "--", self, "listen", "127.0.0.1:0")
		cmd.Dir, cmd.Env = sub, append(c.laterEnv, "MOAT_ATTACK=1")
		out, err := cmd.CombinedOutput()
		writer.Wait() // its audit takes the file out: the next case starts clean
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if strings.Contains(string(out), "ESCAPED") {
			t.Errorf("ESCAPE (%s): a settings file a live sandbox of another state directory wrote widened the run:\n%s", c.name, out)
		} else if code != 125 || !strings.Contains(string(out), "sandboxed command that can write it") {
			t.Errorf("%s: want a refusal naming the file (exit 125), got %d:\n%s", c.name, code, out)
		}
	}
}

// TestOtherStateDirHidden: a run hid its own state directory alone. The
// command of a run with $XDG_STATE_HOME set read the output a session of
// the user's home state directory had saved there
// (~/.local/state/moat/output), a file its own policy hid, and a run of the
// home one read a session's of the other (attack pass 106). Every state
// directory of the user's is now hidden from every sandbox (the home one
// lists the others). Without moat the user reads both.
func TestOtherStateDirHidden(t *testing.T) {
	s := newGitScene(t)
	secret := filepath.Join(s.repo, "secret.txt")
	var b strings.Builder
	for i := 0; i < 30000; i++ {
		fmt.Fprintf(&b, "TOPSECRET line %d\n", i)
	}
	must(t, os.WriteFile(secret, []byte(b.String()), 0o600))
	deny := filepath.Join(filepath.Dir(s.settings), "deny.json")
	must(t, os.WriteFile(deny, []byte(`{"sandbox":{"filesystem":{"denyRead":["/`+secret+`"]}}}`), 0o644))
	homeEnv := s.homeEnv()
	for _, c := range []struct {
		name            string
		sessEnv, runEnv []string
		saved           string
	}{
		{"session of the home state directory, run of XDG_STATE_HOME", homeEnv, s.env(), filepath.Join(s.home, ".local", "state", "moat", "output")},
		{"session of XDG_STATE_HOME, run of the home state directory", s.env(), homeEnv, filepath.Join(s.state, "moat", "output")},
	} {
		// A session saves the long output of a command that reads the file.
		sess := exec.Command(moatBin, "session", "--jsonl")
		sess.Dir, sess.Env = s.repo, c.sessEnv
		in, err := sess.StdinPipe()
		must(t, err)
		var sout strings.Builder
		sess.Stdout, sess.Stderr = &sout, &sout
		must(t, sess.Start())
		fmt.Fprintln(in, `{"id":"a","op":"run","command":"cat secret.txt"}`)
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if m, _ := filepath.Glob(filepath.Join(c.saved, "*", "*")); len(m) > 0 {
				break
			}
			if time.Now().After(deadline) {
				in.Close()
				sess.Wait()
				t.Fatalf("%s: the session saved no output:\n%s", c.name, sout.String())
			}
		}
		read := `echo RAN; cat ` + c.saved + `/*/* | head -1`
		// Without moat the same user reads it.
		if r := s.run(read, false); !strings.Contains(r.out, "TOPSECRET") {
			t.Fatalf("without moat the saved output must be readable (or this test proves nothing):\n%s", r.out)
		}
		// A run of the other state directory, whose policy hides the file.
		cmd := exec.Command(moatBin, "run", "--settings", deny, "--", "sh", "-c", read)
		cmd.Dir, cmd.Env = s.repo, c.runEnv
		out, _ := cmd.CombinedOutput()
		in.Close()
		sess.Wait()
		if strings.Contains(string(out), "TOPSECRET") {
			t.Errorf("ESCAPE (%s): the run read another state directory's saved session output, a file its policy hides:\n%s", c.name, out)
		} else if !strings.Contains(string(out), "RAN") {
			t.Errorf("%s: the run did not run:\n%s", c.name, out)
		}
	}
}

// TestHomeStateDirMadeBeforeThePlan: a run of another state directory
// ($XDG_STATE_HOME set) makes the user's home state directory, where it
// announces its sandbox for the user's other runs and lists its own state
// directory. The first fix of attack pass 106 made it during the run,
// after the plan: in a writable home the command then saw moat's register
// and could write it (CI27, TestPlaceholdersInsideAndAfter). It is made
// before the plan now, and hidden and read-only to the command like every
// state directory of the user's. Without moat the user writes both files.
func TestHomeStateDirMadeBeforeThePlan(t *testing.T) {
	s := newGitScene(t)
	s.home = s.repo // a writable home, where the home state directory is made
	hs := filepath.Join(s.home, ".local", "state", "moat")
	if _, err := os.Lstat(hs); err == nil {
		t.Fatalf("%s exists before the first run: the test proves nothing", hs)
	}
	script := `ls -A ` + hs + `/journal 2>&1 | grep -c live; echo forged > ` + hs + `/journal/forged.live && echo WROTE-REGISTER; printf 2f0a > ` + hs + `/statedirs && echo WROTE-LIST; true`
	r := s.run(script, true)
	if strings.Contains(r.out, "WROTE") {
		t.Errorf("ESCAPE: the command wrote the home state directory moat made for the run:\n%s", r.out)
	}
	if fi, err := os.Stat(filepath.Join(hs, "journal")); err != nil || !fi.IsDir() {
		t.Fatalf("the run did not make the home register: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(hs, "journal", "forged.live")); err == nil {
		t.Errorf("ESCAPE: a forged announcement is in the home register")
	}
	if got := live.StateDirs(hs); len(got) != 1 || got[0] != filepath.Join(s.state, "moat") {
		t.Errorf("the home state directory lists %q, want the run's own state directory alone", got)
	}
	if r := s.run(script, false); !strings.Contains(r.out, "WROTE-REGISTER") || !strings.Contains(r.out, "WROTE-LIST") {
		t.Fatalf("without moat the user writes both (or this test proves nothing):\n%s", r.out)
	}
}
