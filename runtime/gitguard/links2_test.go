//go:build linux

package gitguard

// Plants the audit let stay, found by an attack pass (42) on this
// session's fixes: two its first fixes let through (a remote to a .git
// hidden in a git directory, a pointer retargeted through a symlink off
// its resolved path), two ways another user steered the victim's audit
// again, and older ones (a second symlink on the way to a config or hooks
// directory, a new symlink on a path the user's config names, a hooks
// symlink to a search-only directory, a remote resolved otherwise than
// git's receive-pack resolves it).

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAuditSymlinkOnWay(t *testing.T) {
	runStaged(t, []stagedCase{
		{"global hooksPath, symlink as a middle component",
			func(s *scene) {
				s.write(filepath.Join(s.home, ".gitconfig"), "[core]\n\thooksPath = "+filepath.Join(s.w, "hk", "git", "h")+"\n")
			},
			`mkdir -p ../stage/git/h && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../stage/git/h/pre-commit && chmod +x ../stage/git/h/pre-commit`,
			`ln -s "$W/stage" ../hk`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
		{"user's include, symlink as a middle component",
			func(s *scene) {
				s.protected[filepath.Join(s.repo, ".git", "config")] = true
				s.git(s.repo, "config", "include.path", "../cfgdir/git/extra.cfg")
			},
			`mkdir -p ../stage/git && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../stage/git/extra.cfg`,
			`ln -s "$W/stage" cfgdir`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
	})
}

func TestAuditHuskyHooksPath(t *testing.T) {
	runStaged(t, []stagedCase{
		{"the user's own core.hooksPath .husky/_ (protected config), .husky swapped for a symlink to hooks staged earlier",
			func(s *scene) {
				s.sh(s.repo, `mkdir -p .husky/_ && printf '#!/bin/sh\nexit 0\n' > .husky/_/pre-commit && chmod +x .husky/_/pre-commit && git config core.hooksPath .husky/_`)
			},
			`mkdir -p ../stage/_ && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../stage/_/pre-commit && chmod +x ../stage/_/pre-commit`,
			`mv .husky ../husky.old && ln -s ../stage .husky`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
	})
}

// leadOut skips a component named "..x" (rel starts with ".."): the audit
// acts on the file the symlink leads to, as before pass 41.
func TestAuditLeadOutDotDotName(t *testing.T) {
	for _, name := range []string{"link", "..link"} {
		t.Run(name, func(t *testing.T) {
			s := newScene(t)
			victim := filepath.Join(s.w, "deep", "victim")
			s.git(s.w, "init", "-q", "deep/victim")
			s.git(victim, "config", "alias.st", "status")
			cfg0, _ := os.ReadFile(filepath.Join(victim, ".git", "config"))
			s.git(s.w, "init", "-q", "att/x/y/a")
			s.git(filepath.Join(s.w, "att/x/y/a"), "config", "include.path", filepath.Join(s.w, "att", "fresh", name, "config"))
			time.Sleep(1100 * time.Millisecond)
			s.begin()
			s.audit()
			s.begin()
			must(t, os.MkdirAll(filepath.Join(s.w, "att", "fresh"), 0o755))
			must(t, os.Symlink(filepath.Join(victim, ".git"), filepath.Join(s.w, "att", "fresh", name)))
			rep := s.audit()
			if b, _ := os.ReadFile(filepath.Join(victim, ".git", "config")); string(b) != string(cfg0) {
				t.Errorf("ESCAPE: the victim's own config (unchanged) was rewritten:\n%s\n%+v", b, rep.Findings)
			}
		})
	}
}

// Another user's old repository names, through an old symlink of its own,
// the victim's repository (include / core.hooksPath). The victim's run
// only adds a file to its work tree: the lazy movedIn (inFresh) takes
// att/lnk (the victim's work tree, reached by another path than the
// walk's) for a directory moved in during the run.
func TestAuditLazyMovedInThroughSymlink(t *testing.T) {
	for _, key := range []string{"include.path", "core.hooksPath"} {
		t.Run(key, func(t *testing.T) {
			s := newScene(t)
			victim := filepath.Join(s.w, "victim")
			s.git(s.w, "init", "-q", "victim")
			s.git(victim, "config", "alias.st", "status")
			s.write(filepath.Join(victim, ".git", "hooks", "pre-commit"), "#!/bin/sh\necho victim's own hook\n")
			cfg0, _ := os.ReadFile(filepath.Join(victim, ".git", "config"))
			s.git(s.w, "init", "-q", "att/a")
			must(t, os.Symlink(s.w, filepath.Join(s.w, "att", "lnk")))
			v := filepath.Join(s.w, "att", "lnk", "victim", ".git", "config")
			if key == "core.hooksPath" {
				v = filepath.Join(s.w, "att", "lnk", "victim", ".git", "hooks")
			}
			s.git(filepath.Join(s.w, "att/a"), "config", key, v)
			time.Sleep(1100 * time.Millisecond)
			s.begin()
			s.audit()
			s.begin()
			// The victim's own run: a new file in its work tree.
			s.write(filepath.Join(victim, "notes.txt"), "x\n")
			rep := s.audit()
			if b, _ := os.ReadFile(filepath.Join(victim, ".git", "config")); string(b) != string(cfg0) {
				t.Errorf("ESCAPE: the victim's own config (unchanged) was rewritten:\n%+v", rep.Findings)
			}
			if _, err := os.Stat(filepath.Join(victim, ".git", "hooks", "pre-commit")); err != nil {
				t.Errorf("ESCAPE: the victim's own hook (unchanged) was taken out: %+v", rep.Findings)
			}
		})
	}
}

// A .git file (read-only during the run, as moat keeps every .git file
// it finds) leads through a symlink made earlier; the run retargets the
// symlink (in a directory off the target's path) at a repository staged
// in an earlier run inside a .git directory.
func TestAuditPointerRetargetedSymlinkOffPath(t *testing.T) {
	fsmon := `git init -q --bare .git/stash2/t && git config -f .git/stash2/t/config core.bare false && git config -f .git/stash2/t/config core.fsmonitor "$PROG"`
	runStaged(t, []stagedCase{
		{"symlink off the target's path",
			func(s *scene) {
				s.sh(s.repo, `git init -q --bare .git/stash/t && mkdir -p ../links ../b && ln -s ../repo/.git/stash ../links/lnk && printf 'gitdir: ../links/lnk/t\n' > ../b/.git`)
				s.protected[filepath.Join(s.w, "b", ".git")] = true
			},
			fsmon,
			`ln -sfn ../repo/.git/stash2 ../links/lnk`,
			func(s *scene) bool { return s.userGit(filepath.Join(s.w, "b"), "status") }},
	})
}

// A symlinked config / hooks directory leads through a second symlink
// (links/c), off the physical path: retargeting links/c leaves every
// change time on the new way old (linkedAway compares the directories of
// the physical path only).
func TestAuditLinkedAwayThroughSecondSymlink(t *testing.T) {
	runStaged(t, []stagedCase{
		{"config",
			nil,
			`mkdir sub && cd sub && git init -q && echo x > x && git add x && git commit -qm s && cd .. && mkdir -p D E links && cp sub/.git/config D/config && { cat sub/.git/config; printf '[core]\n\tfsmonitor = "%s"\n' "$PROG"; } > E/config && ln -s ../D links/c && ln -sf ../../links/c/config sub/.git/config`,
			`ln -sfn ../E links/c`,
			func(s *scene) bool { return s.userGit(filepath.Join(s.repo, "sub"), "status") }},
		{"hooks",
			nil,
			`mkdir sub && cd sub && git init -q && echo x > x && git add x && git commit -qm s && cd .. && mkdir -p H H2 links && printf '#!/bin/sh\n"%s"\n' "$PROG" > H2/pre-commit && chmod +x H2/pre-commit && ln -s ../H links/h && rm -rf sub/.git/hooks && ln -s ../../links/h sub/.git/hooks`,
			`ln -sfn ../H2 links/h`,
			func(s *scene) bool {
				return s.userGit(filepath.Join(s.repo, "sub"), "commit", "-q", "--allow-empty", "-m", "x")
			}},
	})
}

// hiddenRemote skips any git directory named .git, also one hidden inside
// another git directory (where the walk never goes).
func TestAuditRemoteToDotGitHiddenInGitDir(t *testing.T) {
	runPushAttacks(t, []pushAttack{
		{"work tree named", `git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git init -q .git/stash/evil && ` + hookAt(".git/stash/evil/.git/hooks/pre-receive") + ` && git remote add origin "$PWD/.git/stash/evil"`},
		{".git named", `git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git init -q .git/stash/evil && ` + hookAt(".git/stash/evil/.git/hooks/pre-receive") + ` && git remote add origin "$PWD/.git/stash/evil/.git"`},
		{"in the cwd repo's .git", `git init -q .git/stash/evil && ` + hookAt(".git/stash/evil/.git/hooks/pre-receive") + ` && git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git remote add origin "$REPO/.git/stash/evil"`},
	})
}

// Two writable roots: the repository in the first, the user's global
// core.hooksPath in the second (no repository there). The new directory on
// the hooks path lies in a root not walked yet when the repository's hooks
// are judged: walkable asks only the root being walked.
func TestAuditLazyMovedInOtherRoot(t *testing.T) {
	for _, audited := range []bool{false, true} {
		s := newScene(t)
		w2 := filepath.Join(s.root, "w2")
		must(t, os.MkdirAll(w2, 0o755))
		s.write(filepath.Join(s.home, ".gitconfig"), "[core]\n\thooksPath = "+filepath.Join(w2, "hk", "git", "h")+"\n")
		audit := func() *Report {
			rep, err := Audit(Options{Roots: []string{s.w, w2}, Since: s.since, Start: s.since, Home: s.home,
				QuarantineDir: filepath.Join(s.root, "q"), CacheDir: filepath.Join(s.root, "cache"),
				Parallel: func(fn func()) error { fn(); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		if audited {
			s.begin()
			audit()
			s.begin()
		}
		s.sh(w2, `mkdir -p stage/h && printf '#!/bin/sh\n"%s"\n' "$PROG" > stage/h/pre-commit && chmod +x stage/h/pre-commit`)
		if audited {
			audit()
			s.begin()
		}
		s.sh(w2, `mkdir hk && ln -s `+w2+`/stage hk/git`)
		var rep *Report
		if audited {
			rep = audit()
		}
		pwned := s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x")
		if !audited && !pwned {
			t.Fatal("the attack does not work without moat")
		}
		if audited && pwned {
			t.Fatalf("ESCAPE: hook through a new directory in the second root (findings %+v)", rep.Findings)
		}
	}
}

// hiddenRemote resolves a local remote as a path joined to the work tree;
// git's receive-pack (enter_repo) expands ~ and tries the suffixes /.git,
// "", .git/.git and .git.
func TestAuditRemoteResolvedAsReceivePack(t *testing.T) {
	for _, tc := range []struct{ name, url string }{
		{"~ expanded", `~/../w/repo/.git/stash/evil.git`},
		{".git suffix added", `$REPO/.git/stash/evil`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attack := `git init -q --bare .git/stash/evil.git && ` + hookAt(".git/stash/evil.git/hooks/pre-receive") + ` && git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git remote add origin "` + tc.url + `"`
			where := func(s *scene) bool {
				return s.userGit(filepath.Join(s.repo, "sub"), "push", "-q", "origin", "HEAD:refs/heads/x")
			}
			s := newScene(t)
			s.sh(s.repo, attack)
			if !where(s) {
				t.Fatal("the attack does not work without moat")
			}
			s = newScene(t)
			s.begin()
			s.audit()
			s.begin()
			s.sh(s.repo, attack)
			rep := s.audit()
			if where(s) {
				t.Fatalf("ESCAPE: git push ran the hidden repository's hook (%+v)", rep.Findings)
			}
		})
	}
}

// A hooks symlink made during the run to a search-only directory holding
// a hook: the audit cannot list it (as its own user), and left both.
func TestAuditSearchOnlyHooksThroughNewSymlink(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("as root the directory can be listed")
	}
	s := newScene(t)
	s.begin()
	s.audit()
	s.begin()
	s.sh(s.repo, `git init -q sub && git -C sub commit -q --allow-empty -m s && mkdir sub/.git/h2 && `+hookAt("sub/.git/h2/pre-commit")+` && chmod 0100 sub/.git/h2 && rm -rf sub/.git/hooks && ln -s h2 sub/.git/hooks`)
	rep := s.audit()
	if s.userGit(filepath.Join(s.repo, "sub"), "commit", "-q", "--allow-empty", "-m", "x") {
		t.Fatalf("ESCAPE: the hook in the search-only directory ran (findings %+v, incomplete %v)", rep.Findings, rep.Incomplete)
	}
}

// hiddenRemote read a remote's URL by its own rules, not git's: git takes
// file://HOST/PATH for /PATH and decodes %XX in a file:// URL, takes a
// URL with neither "/" nor "." for a path (relative to the work tree),
// and follows a remote path that is a file as a .git file (enter_repo's
// read_gitfile). Each led the user's git push to a bare repository hidden
// in .git, whose pre-receive ran, while the audit looked elsewhere (found
// by attack pass 53).
func TestAuditRemoteURLAsGitReadsIt(t *testing.T) {
	mk := `git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git init -q --bare .git/stash/evil.git && ` + hookAt(".git/stash/evil.git/hooks/pre-receive") + ` && `
	runPushAttacks(t, []pushAttack{
		{"file://HOST/PATH", mk + `git remote add origin "file://localhost$PWD/.git/stash/evil.git"`},
		{"percent-encoded file:// URL", mk + `git remote add origin "file://$PWD/.git/st%61sh/evil.git"`},
		{"a file that is a .git file", mk + `printf 'gitdir: .git/stash/evil.git\n' > notes.txt && git remote add origin "$PWD/notes.txt"`},
		{"a bare word, a .git file", mk + `printf 'gitdir: .git/stash/evil.git\n' > mirror && git remote add origin mirror`},
		{"a bare word, a symlink", mk + `ln -s .git/stash/evil.git mirror && git remote add origin mirror`},
		{".. after a symlink", mk + `mkdir .git/stash/a && ln -s .git/stash/a lnk && git remote add origin lnk/../evil.git`},
		{"a directory holding a .git file", mk + `mkdir -p .git/stash/wt && printf 'gitdir: ../evil.git\n' > .git/stash/wt/.git && git remote add origin "$PWD/.git/stash/wt"`},
		{"file:// with a bracketed host", mk + `git remote add origin "file://[x/y]$PWD/.git/stash/evil.git"`},
	})
}

// git submodule update takes modules/NAME for submodule NAME if anything
// is there, NAME (from .gitmodules, the tree's content) holding slashes,
// each component possibly a symlink. The audit judged modules/ to 8
// levels and skipped symlinks: the post-checkout hook of a git directory
// 10 levels down, or behind a symlink to a directory hidden in .git, ran
// on the user's git submodule update in a repository the command cloned
// (found by attack pass 53).
func TestAuditSubmoduleGitDirDeepOrSymlinked(t *testing.T) {
	setup := `git init -q lib && git -C lib commit -q --allow-empty -m l && git init -q app && cd app && git -c protocol.file.allow=always submodule add -q ../lib m && git commit -qm s && git submodule deinit -q -f m && rm -rf .git/modules/m && git -c protocol.file.allow=always clone -q ../lib ../t && `
	runGitAttacks(t, []pushAttack{
		{"10 levels down", setup + `D=a/b/c/d/e/f/g/h/i/j && mkdir -p .git/modules/$D && rmdir .git/modules/$D && mv ../t/.git .git/modules/$D && rm -rf ../t && ` + hookAt(".git/modules/a/b/c/d/e/f/g/h/i/j/hooks/post-checkout") + ` && git config -f .gitmodules --rename-section submodule.m submodule.$D`},
		{"behind a symlink", setup + `mkdir -p .git/stash && mv ../t/.git .git/stash/evil && rm -rf ../t && ` + hookAt(".git/stash/evil/hooks/post-checkout") + ` && ln -s ../stash .git/modules/a && git config -f .gitmodules --rename-section submodule.m submodule.a/evil`},
	}, func(s *scene) string { return s.w }, func(s *scene) bool {
		return s.userGit(filepath.Join(s.w, "app"), "submodule", "update", "--init")
	}, "git submodule update ran the planted hook")
}

// A remote through /proc or /dev/fd: git resolves it in its own process
// (/proc/self/cwd is the work tree of the user's git push), the audit in
// moat's, so it looked elsewhere and the hidden repository's pre-receive
// ran (found by attack pass 53). Such a URL the run set is taken out,
// however it reaches /proc: directly, by enough "..", or through a symlink
// in the tree.
func TestAuditRemoteURLThroughProc(t *testing.T) {
	mk := `git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git init -q --bare .git/stash/evil.git && ` + hookAt(".git/stash/evil.git/hooks/pre-receive") + ` && `
	runPushAttacks(t, []pushAttack{
		{"/proc/self/cwd", mk + `git remote add origin /proc/self/cwd/.git/stash/evil.git`},
		{"/dev/fd", mk + `git remote add origin /dev/fd/../cwd/.git/stash/evil.git`},
		{"enough ..", mk + `git remote add origin "$(echo "$PWD" | sed 's#/[^/]*#../#g')proc/self/cwd/.git/stash/evil.git"`},
		{"a symlink in the tree", mk + `ln -s /proc/self/cwd here && git remote add origin "$PWD/here/.git/stash/evil.git"`},
	})
}
