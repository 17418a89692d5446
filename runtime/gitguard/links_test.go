//go:build linux

package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

func hookAt(p string) string {
	return `printf '#!/bin/sh\n"%s"\n' "$PROG" > ` + p + ` && chmod +x ` + p
}

// pushAttack is one run that makes sub (a repository with a commit) and a
// remote of it whose hook the user's git push runs.
type pushAttack struct{ name, attack string }

// runPushAttacks runs each attack once without moat (git push in sub must
// run the hook) and once with the audit after it (it must not).
func runPushAttacks(t *testing.T, cases []pushAttack) {
	runGitAttacks(t, cases, func(s *scene) string { return s.repo }, func(s *scene) bool {
		return s.userGit(filepath.Join(s.repo, "sub"), "push", "-q", "origin", "HEAD:refs/heads/x")
	}, "git push ran the hidden repository's hook")
}

// runGitAttacks runs each attack (a shell script, in the directory at
// gives) once without moat, where ran (the user's git, running the plant)
// must report true, and once with the audit after it, where it must not
// (what says what it did then).
func runGitAttacks(t *testing.T, cases []pushAttack, at func(*scene) string, ran func(*scene) bool, what string) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScene(t)
			s.begin()
			s.sh(at(s), tc.attack)
			if !ran(s) {
				t.Fatal("the attack does not work without moat")
			}
			s = newScene(t)
			s.begin()
			s.audit()
			s.begin()
			s.sh(at(s), tc.attack)
			rep := s.audit()
			if ran(s) {
				t.Fatalf("ESCAPE: %s after the audit (%+v)", what, rep.Findings)
			}
		})
	}
}

// Found by an attack pass (41): a bare repository hidden inside a module's or worktree's git
// directory (not the module's git directory itself), pushed to through
// remote.*.url: one run, no staging.
func TestAuditRemoteHiddenUnderModulesOrWorktrees(t *testing.T) {
	runPushAttacks(t, []pushAttack{
		{"under .git/modules/m", `git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git init -q --bare .git/modules/m && git init -q --bare .git/modules/m/x/evil.git && ` + hookAt(".git/modules/m/x/evil.git/hooks/pre-receive") + ` && git remote add origin "$PWD/.git/modules/m/x/evil.git"`},
		{"under .git/worktrees/w", `git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && mkdir -p .git/worktrees/w && git init -q --bare .git/worktrees/w/evil.git && ` + hookAt(".git/worktrees/w/evil.git/hooks/pre-receive") + ` && git remote add origin "$PWD/.git/worktrees/w/evil.git"`},
		{"a module's own dir named directly", `git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git init -q --bare .git/modules/m && mkdir -p .git/modules/m/objects/pack && git init -q --bare .git/modules/m/objects/pack/evil.git && ` + hookAt(".git/modules/m/objects/pack/evil.git/hooks/pre-receive") + ` && git remote add origin "$PWD/.git/modules/m/objects/pack/evil.git"`},
		{"inside a bare repository's objects/pack (walk skips it)", `git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && cd .. && git init -q --bare store && git init -q --bare store/objects/pack/evil.git && ` + hookAt("store/objects/pack/evil.git/hooks/pre-receive") + ` && cd sub && git remote add origin "$PWD/../store/objects/pack/evil.git"`},
	})
}

// Found by an attack pass (41): a .git symlink inside a directory moved in during the run, leading
// to a repository staged (inside another .git) in an earlier run.
func TestAuditDotGitSymlinkMovedInWithItsDirectory(t *testing.T) {
	runStaged(t, []stagedCase{{".git symlink moved in with its directory", nil,
		`git init -q --bare .git/stash/evil && git config -f .git/stash/evil/config core.bare false && git config -f .git/stash/evil/config core.fsmonitor "$PROG" && mkdir -p .git/stash/proj && ln -s "$REPO/.git/stash/evil" .git/stash/proj/.git`,
		`mv .git/stash/proj proj`,
		func(s *scene) bool { return s.userGit(filepath.Join(s.repo, "proj"), "status") }}})
}

// Found by an attack pass (41), against a check of the pointer's owner (reverted for it): A .git file (read-only during the run, as
// moat's mounts make every .git file) of another user than the audit's,
// unchanged, whose target the sandbox swaps for a repository it staged in
// an earlier run (inside .git, where the walk does not go).
func TestAuditPointerRetargetedBySandbox(t *testing.T) {
	testutil.RequireRoot(t) // another user's pointer

	for _, protect := range []bool{true, false} {
		t.Run(map[bool]string{true: "protected", false: "unprotected"}[protect], func(t *testing.T) {
			s := newScene(t)
			b := filepath.Join(s.w, "b")
			dotgit := filepath.Join(b, ".git")
			setup := func(s *scene) {
				// The other user's worktree, pointing at a harmless repository.
				s.sh(s.repo, `git init -q --bare .git/stash/t && mkdir -p ../b && printf 'gitdir: ../repo/.git/stash/t\n' > ../b/.git`)
				must(t, os.Lchown(dotgit, 1013, 1013))
				if protect {
					s.protected[dotgit] = true
				}
			}
			run1 := `git init -q --bare .git/stash/pre && git config -f .git/stash/pre/config core.bare false && git config -f .git/stash/pre/config core.fsmonitor "$PROG"`
			run2 := `mv .git/stash/t .git/stash/t.old && mv .git/stash/pre .git/stash/t`
			setup(s)
			time.Sleep(1100 * time.Millisecond)
			s.begin()
			s.audit()
			s.begin()
			s.sh(s.repo, run1)
			s.audit()
			time.Sleep(30 * time.Millisecond)
			s.begin()
			s.sh(s.repo, run2)
			rep := s.audit()
			if s.userGit(b, "status") {
				t.Fatalf("ESCAPE: git status in %s ran the staged fsmonitor (findings %d: %+v)", b, len(rep.Findings), rep.Findings)
			}
		})
	}
}

// The same, each run older than the next by more than the change time's
// granularity.
func TestAuditDotGitSymlinkMovedInWithItsDirectorySlow(t *testing.T) {
	run1 := `git init -q --bare .git/stash/evil && git config -f .git/stash/evil/config core.bare false && git config -f .git/stash/evil/config core.fsmonitor "$PROG" && mkdir -p .git/stash/proj && ln -s "$REPO/.git/stash/evil" .git/stash/proj/.git`
	run2 := `mv .git/stash/proj proj`
	s := newScene(t)
	s.begin()
	s.audit()
	time.Sleep(2100 * time.Millisecond)
	s.begin()
	s.sh(s.repo, run1)
	s.audit()
	time.Sleep(2100 * time.Millisecond)
	s.begin()
	s.sh(s.repo, run2)
	s.audit()
	if s.userGit(filepath.Join(s.repo, "proj"), "status") {
		t.Fatal("ESCAPE: a .git symlink moved in with its directory led git to a staged repository")
	}
}

// Found by an attack pass (41), against judging a moved-in directory by where its paths lead (reverted for it): The user's own config includes a file (or the
// user's global core.hooksPath names a directory) in the writable tree
// whose directory does not exist when the run starts. An earlier run left
// plain data elsewhere in the tree (a config, a hook: never judged where
// no git reads them); this run makes the directory (moved in, as new),
// with a symlink in it leading to that data.
func TestAuditThroughSymlinkInNewDirectory(t *testing.T) {
	runStaged(t, []stagedCase{
		{"the user's include",
			func(s *scene) {
				s.protected[filepath.Join(s.repo, ".git", "config")] = true
				s.git(s.repo, "config", "include.path", "../cfgdir/git/extra.cfg")
			},
			`mkdir -p ../stage && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../stage/extra.cfg`,
			`mkdir cfgdir && ln -s "$W/stage" cfgdir/git`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
		{"the user's global hooksPath",
			func(s *scene) {
				s.write(filepath.Join(s.home, ".gitconfig"), "[core]\n\thooksPath = "+filepath.Join(s.w, "hk", "git", "h")+"\n")
			},
			`mkdir -p ../stage/h && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../stage/h/pre-commit && chmod +x ../stage/h/pre-commit`,
			`mkdir ../hk && ln -s "$W/stage" ../hk/git`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
	})
}

// Found by an attack pass (41): a packed-refs that is a symlink (made in an earlier run, to a file
// of harmless refs), the file it leads to given replace refs in this run.
func TestAuditSymlinkedPackedRefs(t *testing.T) {
	run1 := `git commit -q --allow-empty -m two && printf '# pack-refs with: peeled fully-peeled \n%s refs/tags/t\n' "$(git rev-parse HEAD)" > .git/refs-data && ln -s refs-data .git/packed-refs`
	run2 := `printf '%s refs/replace/%s\n' "$(git rev-parse HEAD~1)" "$(git rev-parse HEAD)" >> .git/refs-data`
	planted := func(s *scene) bool {
		cmd := exec.Command("git", "for-each-ref", "refs/replace")
		cmd.Dir, cmd.Env = s.repo, s.env()
		out, _ := cmd.CombinedOutput()
		s.t.Logf("for-each-ref: %s", out)
		return strings.Contains(string(out), "refs/replace/")
	}
	runStaged(t, []stagedCase{{"packed-refs a symlink", nil, run1, run2, planted}})
}

// Found by an attack pass (41), cross-user: during the run, another user (no sandbox) makes a
// repository of its own whose hooks directory is a symlink to the
// victim's (unchanged) hooks directory, or whose .git is a symlink to the
// victim's .git with a retargeted way: the victim's hook must stay.
func TestAuditOtherUsersHooksSymlink(t *testing.T) {
	s := newScene(t)
	victim := filepath.Join(s.w, "private", "victim")
	s.git(s.w, "init", "-q", "private/victim")
	s.write(filepath.Join(victim, ".git", "hooks", "pre-commit"), "#!/bin/sh\necho victim's own hook\n")
	time.Sleep(1100 * time.Millisecond)
	s.begin()
	s.audit()
	s.begin()
	s.sh(s.w, `git init -q att && rm -rf att/.git/hooks && ln -s "$W/private/victim/.git/hooks" att/.git/hooks`)
	rep := s.audit()
	if _, err := os.Stat(filepath.Join(victim, ".git", "hooks", "pre-commit")); err != nil {
		t.Errorf("ESCAPE: the victim's own hook (unchanged) was taken out: %v\n%+v", err, rep.Findings)
	}
}

// Checked by an attack pass (41): a repository moved in during the
// run whose hooks / config / commondir lead (symlink) outside the moved
// directory, to data staged in an earlier run.
func TestAuditMovedInRepositoryLeadsOutside(t *testing.T) {
	runStaged(t, []stagedCase{
		{"hooks symlink", nil,
			`mkdir -p ../data/h && ` + hookAt("../data/h/pre-commit") + ` && mkdir -p .git/stash && git init -q .git/stash/p && rm -rf .git/stash/p/.git/hooks && ln -s "$W/data/h" .git/stash/p/.git/hooks && mkdir -p p0 && mv .git/stash/p/.git p0/`,
			`mv p0/.git sub-git && mkdir sub && mv sub-git sub/.git`,
			func(s *scene) bool {
				return s.userGit(filepath.Join(s.repo, "sub"), "commit", "-q", "--allow-empty", "-m", "x")
			}},
		{"config symlink", nil,
			`mkdir -p ../data && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../data/cfg && git init -q .git/stash/p && rm .git/stash/p/.git/config && ln -s "$W/data/cfg" .git/stash/p/.git/config`,
			`mv .git/stash/p sub`,
			func(s *scene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
		{"hooks dir deeper: hooks -> data, data/x is a symlink into staging", nil,
			`mkdir -p ../data && git init -q .git/stash/p && mkdir -p .git/stash/p/.git/h2 && ` + hookAt(".git/stash/p/.git/h2/pre-commit") + ` && git -C .git/stash/p config core.hooksPath .git/h2`,
			`mv .git/stash/p sub`,
			func(s *scene) bool {
				return s.userGit(filepath.Join(s.repo, "sub"), "commit", "-q", "--allow-empty", "-m", "x")
			}},
	})
}
