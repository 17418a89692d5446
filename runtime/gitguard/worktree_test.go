//go:build linux

package gitguard

import (
	"path/filepath"
	"testing"
)

// A linked worktree has submodule git directories of its own: git takes
// modules/NAME in the worktree's git directory (.git/worktrees/W/modules,
// "modules" is not among the paths git shares through commondir), and the
// audit walked only the common directory's modules/. A core.fsmonitor put
// in the config of an initialized submodule of a worktree outside the
// writable tree ran on the user's git status there, and a repository put
// where a worktree's submodule is not initialized yet ran its
// post-checkout on the user's git submodule update (attack pass 68,
// through moat run).
func TestAuditWorktreeModules(t *testing.T) {
	lib := `git init -q "$W/lib" && git -C "$W/lib" commit -q --allow-empty -m l && git -c protocol.file.allow=always submodule add -q "$W/lib" m && git commit -qm s && `
	t.Run("initialized, worktree outside the tree", func(t *testing.T) {
		runGitAttacks(t, []pushAttack{{"fsmonitor", lib + `git worktree add -q "$OUT/feat" && git -C "$OUT/feat" -c protocol.file.allow=always submodule update -q --init && git config -f .git/worktrees/feat/modules/m/config core.fsmonitor "$PROG"`}},
			func(s *scene) string { return s.repo }, func(s *scene) bool {
				return s.userGit(filepath.Join(s.outside, "feat"), "status")
			}, "git status in the worktree ran the submodule's fsmonitor")
	})
	t.Run("not initialized, worktree in the tree", func(t *testing.T) {
		runGitAttacks(t, []pushAttack{{"post-checkout", lib + `git worktree add -q wt/feat && git clone -q "$W/lib" "$W/t" && mkdir -p .git/worktrees/feat/modules && mv "$W/t/.git" .git/worktrees/feat/modules/m && rm -rf "$W/t" && ` + hookAt(".git/worktrees/feat/modules/m/hooks/post-checkout")}},
			func(s *scene) string { return s.repo }, func(s *scene) bool {
				return s.userGit(filepath.Join(s.repo, "wt", "feat"), "submodule", "update", "--init")
			}, "git submodule update in the worktree ran the planted post-checkout")
	})
}
