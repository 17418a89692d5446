package gitguard

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAuditGlobalOutsideTreeLinksIn: the user's template directory or
// hooks directory lies outside the writable trees, and what git takes
// from it is a symlink of the user's into a tree (a dotfiles layout:
// ~/.git_template/hooks -> ~/dotfiles/git/hooks, ~/.githooks/pre-commit
// -> ~/dotfiles/git/pre-commit, as GNU stow makes them). The audit judged
// a template directory only when it lay in a tree, and a hook by the
// symlink's own change time, so what the command wrote in the tree ran on
// the user's next clone or commit (found by attack pass 47).
func TestAuditGlobalOutsideTreeLinksIn(t *testing.T) {
	runGlobal(t, []globalCase{
		{"a template's hooks symlinked into the tree",
			func(s *scene) {
				tmpl := filepath.Join(s.outside, "tmpl")
				must(t, os.MkdirAll(filepath.Join(s.w, "dots", "hooks"), 0o755))
				must(t, os.MkdirAll(tmpl, 0o755))
				must(t, os.Symlink(filepath.Join(s.w, "dots", "hooks"), filepath.Join(tmpl, "hooks")))
				s.write(filepath.Join(s.home, ".gitconfig"), "[init]\n\ttemplateDir = "+tmpl+"\n")
			},
			`printf '#!/bin/sh\n"%s"\n' "$PROG" > ../dots/hooks/post-checkout && chmod +x ../dots/hooks/post-checkout`,
			func(s *scene) bool {
				c := filepath.Join(s.outside, "clone")
				os.RemoveAll(c)
				return s.userGit(s.outside, "clone", "-q", s.repo, c)
			}},
		{"a global hook symlinked to a file in the tree",
			func(s *scene) {
				hooks := filepath.Join(s.outside, "githooks")
				s.write(filepath.Join(s.w, "dots", "pre-commit"), "#!/bin/sh\nexit 0\n")
				must(t, os.MkdirAll(hooks, 0o755))
				must(t, os.Symlink(filepath.Join(s.w, "dots", "pre-commit"), filepath.Join(hooks, "pre-commit")))
				s.write(filepath.Join(s.home, ".gitconfig"), "[core]\n\thooksPath = "+hooks+"\n")
			},
			`printf '#!/bin/sh\n"%s"\n' "$PROG" > ../dots/pre-commit`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
	})
}

// TestAuditRepoHookSymlinkedToScript: a repository's hook that is a
// symlink to a script in the work tree (.git/hooks/pre-commit ->
// ../../scripts/pre-commit) runs what the command wrote in the script on
// the user's next commit: the symlink goes, the script stays (found by
// attack pass 47).
func TestAuditRepoHookSymlinkedToScript(t *testing.T) {
	runGlobal(t, []globalCase{
		{"a hook symlinked to a script of the work tree",
			func(s *scene) {
				s.write(filepath.Join(s.repo, "scripts", "pre-commit"), "#!/bin/sh\nexit 0\n")
				must(t, os.Symlink("../../scripts/pre-commit", filepath.Join(s.repo, ".git", "hooks", "pre-commit")))
			},
			`printf '#!/bin/sh\n"%s"\n' "$PROG" > scripts/pre-commit`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
	})
}

// TestAuditGlobalConfigSymlinkedIntoTree: a config git reads by a path
// outside the trees that is a symlink of the user's to a file in one
// (~/cfg/git-local -> ~/dotfiles/git-local, included by ~/.gitconfig; a
// template's config likewise). The audit saw the file change, but could
// not act on the symlink (outside the trees) and took the file for
// unchanged: the command's core.fsmonitor ran on the user's next git
// status (found by attack pass 47). The file in the tree is rewritten.
func TestAuditGlobalConfigSymlinkedIntoTree(t *testing.T) {
	runGlobal(t, []globalCase{
		{"an include outside the tree symlinked into it",
			func(s *scene) {
				s.write(filepath.Join(s.w, "dots", "git-local"), "[user]\n\tname = me\n")
				must(t, os.MkdirAll(filepath.Join(s.home, "cfg"), 0o755))
				must(t, os.Symlink(filepath.Join(s.w, "dots", "git-local"), filepath.Join(s.home, "cfg", "git-local")))
				s.write(filepath.Join(s.home, ".gitconfig"), "[include]\n\tpath = ~/cfg/git-local\n")
			},
			`printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> ../dots/git-local`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
		{"a template's config outside the tree symlinked into it",
			func(s *scene) {
				tmpl := filepath.Join(s.outside, "tmpl")
				s.write(filepath.Join(s.w, "dots", "tmpl-config"), "[user]\n\tname = me\n")
				must(t, os.MkdirAll(tmpl, 0o755))
				must(t, os.Symlink(filepath.Join(s.w, "dots", "tmpl-config"), filepath.Join(tmpl, "config")))
				s.write(filepath.Join(s.home, ".gitconfig"), "[init]\n\ttemplateDir = "+tmpl+"\n")
			},
			`printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> ../dots/tmpl-config`,
			func(s *scene) bool {
				c := filepath.Join(s.outside, "clone")
				os.RemoveAll(c)
				s.userGit(s.outside, "clone", "-q", s.repo, c)
				return s.userGit(c, "status")
			}},
	})
}

// TestAuditGlobalHookSymlinkRetargetedOnWay: the user's global hook is a
// symlink through a symlinked directory of the user's in the tree
// (~/.githooks/pre-commit -> W/link/pre-commit, W/link -> the user's hooks
// outside it). The command retargets W/link at /proc/self/cwd/.x, which
// leads the user's git (in its repository) to a hook the command wrote
// there, and the audit nowhere (found by attack pass 47).
func TestAuditGlobalHookSymlinkRetargetedOnWay(t *testing.T) {
	runGlobal(t, []globalCase{
		{"a symlink on the way to a global hook retargeted at /proc/self/cwd",
			func(s *scene) {
				real := filepath.Join(s.outside, "realhooks")
				s.write(filepath.Join(real, "pre-commit"), "#!/bin/sh\nexit 0\n")
				must(t, os.Symlink(real, filepath.Join(s.w, "link")))
				hooks := filepath.Join(s.outside, "githooks")
				must(t, os.MkdirAll(hooks, 0o755))
				must(t, os.Symlink(filepath.Join(s.w, "link", "pre-commit"), filepath.Join(hooks, "pre-commit")))
				s.write(filepath.Join(s.home, ".gitconfig"), "[core]\n\thooksPath = "+hooks+"\n")
			},
			`mkdir -p .x && printf '#!/bin/sh\n"%s"\n' "$PROG" > .x/pre-commit && chmod +x .x/pre-commit && rm ../link && ln -s /proc/self/cwd/.x ../link`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
	})
}
