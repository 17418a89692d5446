//go:build linux

package gitguard

import (
	"path/filepath"
	"testing"
)

// A pointer whose way reaches /proc through another symlink (in the tree,
// or a link to / staged in an earlier run): moat resolved it in its own
// process, to nothing, and git, in its own, to a staged repository
// (found by an attack pass, 44).
func TestAuditProcSelfIndirect(t *testing.T) {
	runStaged(t, []stagedCase{
		{"a .git symlink to an in-tree symlink to /proc/self/cwd",
			nil,
			`git init -q --bare .git/stash/evil && git config -f .git/stash/evil/config core.bare false && git config -f .git/stash/evil/config core.fsmonitor "$PROG"`,
			`mkdir -p sub && ln -s /proc/self/cwd/.. sub/pl && ln -s pl/.git/stash/evil sub/.git`,
			func(s *scene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
		{"a .git file through an in-tree symlink to /proc/self/cwd",
			nil,
			`git init -q --bare .git/stash/evil && git config -f .git/stash/evil/config core.bare false && git config -f .git/stash/evil/config core.fsmonitor "$PROG"`,
			`mkdir -p sub && ln -s /proc/self/cwd/.. sub/pl && printf 'gitdir: pl/.git/stash/evil\n' > sub/.git`,
			func(s *scene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
		{"a .git symlink through a staged link to /",
			nil,
			`git init -q --bare .git/stash/evil && git config -f .git/stash/evil/config core.bare false && git config -f .git/stash/evil/config core.fsmonitor "$PROG"; ln -s / root`,
			`mkdir -p sub && ln -s ../root/proc/self/cwd/../.git/stash/evil sub/.git`,
			func(s *scene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
		{"a .git file through staged link to /",
			nil,
			`git init -q --bare .git/stash/evil && git config -f .git/stash/evil/config core.bare false && git config -f .git/stash/evil/config core.fsmonitor "$PROG"; ln -s / root`,
			`mkdir -p sub && printf 'gitdir: ../root/proc/self/cwd/../.git/stash/evil\n' > sub/.git`,
			func(s *scene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
		{"include through /proc via in-tree link, staged link to /",
			func(s *scene) {
				s.protected[filepath.Join(s.repo, ".git", "config")] = true
				s.git(s.repo, "config", "include.path", "../cfgdir/git/extra.cfg")
			},
			`mkdir -p ../stage/git && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../stage/git/extra.cfg; ln -s / ../root`,
			`ln -s ../root/proc/self/cwd/../stage cfgdir`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
	})
}

// The same, staged across two runs (a directory swapped for a link to /,
// the pointer itself unchanged), and with the repository in a bare
// repository's objects, where the walk does not go.
func TestAuditProcSelfIndirectStaged(t *testing.T) {
	runStaged(t, []stagedCase{
		{"a .git symlink staged through a directory later swapped for a link to /",
			nil,
			`git init -q --bare .git/stash/evil && git config -f .git/stash/evil/config core.bare false && git config -f .git/stash/evil/config core.fsmonitor "$PROG"; mkdir -p root sub && ln -s ../root/proc/self/cwd/../.git/stash/evil sub/.git`,
			`rmdir root && ln -s / root`,
			func(s *scene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
		{"work-tree-only (no .git writes): evil repo in a bare repo's objects/ab, .git symlink through in-tree link to /proc/self/cwd",
			nil,
			`git init -q --bare r && mkdir -p r/objects/ab && git init -q --bare r/objects/ab/evil && git config -f r/objects/ab/evil/config core.bare false && git config -f r/objects/ab/evil/config core.fsmonitor "$PROG"`,
			`mkdir -p sub && ln -s /proc/self/cwd/.. sub/pl && ln -s pl/r/objects/ab/evil sub/.git`,
			func(s *scene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
	})
}

// A file the user's global config includes, reached through a symlink
// made during the run (the include was resolved before it was judged,
// and the symlink never seen; found by an attack pass, 44).
func TestAuditGlobalIncludeSymlinkOnWay(t *testing.T) {
	runStaged(t, []stagedCase{
		{"global include, symlink as a middle component, staged target",
			func(s *scene) {
				s.write(filepath.Join(s.home, ".gitconfig"), "[include]\n\tpath = "+filepath.Join(s.w, "cfgdir", "git", "extra.cfg")+"\n")
			},
			`mkdir -p ../stage/git && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../stage/git/extra.cfg`,
			`ln -s "$W/stage" ../cfgdir`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
		{"global include, symlink through /proc/self/cwd",
			func(s *scene) {
				s.write(filepath.Join(s.home, ".gitconfig"), "[include]\n\tpath = "+filepath.Join(s.w, "cfgdir", "git", "extra.cfg")+"\n")
			},
			`mkdir -p ../stage/git && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../stage/git/extra.cfg`,
			`ln -s /proc/self/cwd/../stage ../cfgdir`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
	})
}
