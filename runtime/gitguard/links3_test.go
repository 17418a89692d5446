//go:build linux

package gitguard

import (
	"path/filepath"
	"testing"
)

// A symlink made during the run whose target is a per-process link
// (/proc/self/cwd): the audit resolved it in its own process (its working
// directory), git in its own (the work tree's top level), and the plant
// it led git to stayed (found by an attack pass, 43). Also a .git file
// and a .git symlink naming such a path.
func TestAuditProcSelfSymlink(t *testing.T) {
	runStaged(t, []stagedCase{
		{"global hooksPath through /proc/self/cwd",
			func(s *scene) {
				s.write(filepath.Join(s.home, ".gitconfig"), "[core]\n\thooksPath = "+filepath.Join(s.w, "hk", "git", "h")+"\n")
			},
			`mkdir -p ../stage/git/h && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../stage/git/h/pre-commit && chmod +x ../stage/git/h/pre-commit`,
			`ln -s /proc/self/cwd/../stage ../hk`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
		{"user's include through /proc/self/cwd",
			func(s *scene) {
				s.protected[filepath.Join(s.repo, ".git", "config")] = true
				s.git(s.repo, "config", "include.path", "../cfgdir/git/extra.cfg")
			},
			`mkdir -p ../stage/git && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../stage/git/extra.cfg`,
			`ln -s /proc/self/cwd/../stage cfgdir`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
		{"one run: include through /proc/self/cwd",
			func(s *scene) {
				s.protected[filepath.Join(s.repo, ".git", "config")] = true
				s.git(s.repo, "config", "include.path", "../cfgdir/git/extra.cfg")
			},
			`true`,
			`mkdir -p ../stage/git && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../stage/git/extra.cfg && ln -s /proc/self/cwd/../stage cfgdir`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
		{"a .git file through /proc/self/cwd, to a repository hidden in .git",
			nil,
			`git init -q --bare .git/stash/evil && git config -f .git/stash/evil/config core.bare false && git config -f .git/stash/evil/config core.fsmonitor "$PROG"`,
			`mkdir -p sub && printf 'gitdir: /proc/self/cwd/../.git/stash/evil\n' > sub/.git`,
			func(s *scene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
		{"a .git symlink through /proc/self/cwd",
			nil,
			`git init -q --bare .git/stash/evil && git config -f .git/stash/evil/config core.bare false && git config -f .git/stash/evil/config core.fsmonitor "$PROG"`,
			`mkdir -p sub && ln -s /proc/self/cwd/../.git/stash/evil sub/.git`,
			func(s *scene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
	})
}
