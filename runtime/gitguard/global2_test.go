package gitguard

// Plants through the user's global git configuration that the audit let
// stay, found by attack pass 47 (its tests are in global_test.go's shape:
// each plant first made without moat, then with the audit after it).

import (
	"os"
	"os/user"
	"path/filepath"
	"testing"
)

// TestAuditGlobalConfigFileInTree: the user's own global config files
// (~/.config/git/config, $XDG_CONFIG_HOME/git/config) lying in a
// writable tree were read as the user's, never judged: moat's mounts
// reserve ~/.config/git only where ~/.config exists, and nothing of
// $XDG_CONFIG_HOME, so a command that made either file (a writable home
// without ~/.config, XDG_CONFIG_HOME in a dotfiles tree) had its
// core.fsmonitor run by the user's next git status in any repository
// (found by attack pass 47).
func TestAuditGlobalConfigFileInTree(t *testing.T) {
	runGlobal(t, []globalCase{
		{"~/.config/git/config made in a writable home without ~/.config",
			func(s *scene) { s.home = filepath.Join(s.w, "home"); must(t, os.MkdirAll(s.home, 0o755)) },
			`mkdir -p ../home/.config/git && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../home/.config/git/config`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
		{"$XDG_CONFIG_HOME/git/config made in the tree",
			func(s *scene) { s.xdg = filepath.Join(s.w, "dots") },
			`mkdir -p ../dots/git && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../dots/git/config`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
		{"$XDG_CONFIG_HOME/git/config of the user's, changed in the tree",
			func(s *scene) {
				s.xdg = filepath.Join(s.w, "dots")
				s.write(filepath.Join(s.xdg, "git", "config"), "[user]\n\tname = me\n")
			},
			`printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> ../dots/git/config`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
	})
}

// TestAuditGlobalConfigFileInTreeUsersOwn: the user's own config in the
// tree, unchanged, is left as it is, and what it names still counts.
func TestAuditGlobalConfigFileInTreeUsersOwn(t *testing.T) {
	s := newScene(t)
	s.xdg = filepath.Join(s.w, "dots")
	own := "[core]\n\tpager = less -R\n\thooksPath = " + filepath.Join(s.w, "team", "hooks") + "\n"
	s.write(filepath.Join(s.xdg, "git", "config"), own)
	s.begin()
	s.audit()
	s.begin()
	s.sh(s.repo, `mkdir -p ../team/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../team/hooks/pre-commit && chmod +x ../team/hooks/pre-commit`)
	rep := s.audit()
	if b, _ := os.ReadFile(filepath.Join(s.xdg, "git", "config")); string(b) != own {
		t.Errorf("the user's own config was changed:\n%s", b)
	}
	if s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") {
		t.Fatalf("ESCAPE: the hook in the hooks directory the user's config names stayed (findings %+v)", rep.Findings)
	}
}

// TestAuditLateHooksPathInEarlierRoot: a core.hooksPath (or
// init.templateDir) set by a global include lying in one writable tree,
// naming a directory in a tree the audit had walked before, was never
// judged: the late value was judged only in the tree of the include and
// in trees walked after it (found by attack pass 47: --write A --write B,
// B/team.cfg included by ~/.gitconfig setting core.hooksPath = A/x/hooks,
// A/x missing when the run began so the mounts could reserve nothing).
func TestAuditLateHooksPathInEarlierRoot(t *testing.T) {
	setup := func(key, rel string) func(s *scene) {
		return func(s *scene) {
			a, b := filepath.Join(s.root, "a"), filepath.Join(s.root, "b")
			must(t, os.MkdirAll(a, 0o755))
			s.write(filepath.Join(b, "team.cfg"), key+" = "+filepath.Join(a, rel)+"\n")
			s.write(filepath.Join(s.home, ".gitconfig"), "[include]\n\tpath = "+filepath.Join(b, "team.cfg")+"\n")
			s.roots = []string{a, s.w, b}
		}
	}
	clone := func(s *scene) bool {
		c := filepath.Join(s.outside, "clone")
		os.RemoveAll(c)
		return s.userGit(s.outside, "clone", "-q", s.repo, c)
	}
	runGlobal(t, []globalCase{
		{"core.hooksPath", setup("[core]\n\thooksPath", "x/hooks"),
			`mkdir -p ../../a/x/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../../a/x/hooks/pre-commit && chmod +x ../../a/x/hooks/pre-commit`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
		{"init.templateDir", setup("[init]\n\ttemplateDir", "y/tmpl"),
			`mkdir -p ../../a/y/tmpl/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../../a/y/tmpl/hooks/post-checkout && chmod +x ../../a/y/tmpl/hooks/post-checkout`,
			clone},
	})
}

// TestAuditGlobalTemplateDirPastLimit: the audit judged at most 10000
// files of the user's template directory, in name order, and left the
// rest (reported as not checked, but in place): a command that could
// write there (the mounts hold a template path through a symlink, or one
// whose parent was missing, not) made a directory of 10001 files (symlinks) sorting
// first and then the template's commondir, which git init copied into the
// next new repository, whose git status then read the common directory's
// config (core.fsmonitor) the command had made outside any repository
// (found by attack pass 47).
func TestAuditGlobalTemplateDirPastLimit(t *testing.T) {
	setup := func(s *scene) {
		s.write(filepath.Join(s.home, ".gitconfig"), "[init]\n\ttemplateDir = "+filepath.Join(s.w, "tmpl")+"\n")
		s.write(filepath.Join(s.w, "tmpl", "description"), "the user's template\n")
	}
	initThenStatus := func(s *scene) bool {
		n := filepath.Join(s.outside, "new")
		os.RemoveAll(n)
		s.userGit(s.outside, "init", "-q", n)
		return s.userGit(n, "status")
	}
	runGlobal(t, []globalCase{
		{"commondir past 10000 files", setup,
			`mkdir -p ../evil/objects ../evil/refs ../tmpl/aaa && printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "%s"\n' "$PROG" > ../evil/config && mkdir ../many && (cd ../many && seq 1 10001 | xargs touch) && rmdir ../tmpl/aaa && cp -rs "$W/many" ../tmpl/aaa && echo "$W/evil" > ../tmpl/commondir`,
			initThenStatus},
	})
}

// TestConfigPathOtherUsersHome: git reads "~name/..." in a config path
// (include.path, core.hooksPath, init.templateDir) as in name's home
// directory, never as a relative path.
func TestConfigPathOtherUsersHome(t *testing.T) {
	u, err := user.Current()
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		t.Skip("no user entry")
	}
	if got, want := ConfigPath("~"+u.Username+"/x/y", "/base", "/home/other"), filepath.Join(u.HomeDir, "x", "y"); got != want {
		t.Errorf("~%s/x/y: %q, want %q", u.Username, got, want)
	}
	if got := ConfigPath("~"+u.Username, "/base", ""); got != filepath.Clean(u.HomeDir) {
		t.Errorf("~%s: %q, want %q", u.Username, got, u.HomeDir)
	}
	if got := ConfigPath("~no-such-user-moat47/x", "/base", "/home/me"); got != "" {
		t.Errorf("an unknown user: %q, want \"\"", got)
	}
}

// TestAuditGlobalIncludeOtherUsersHome: the user's global config includes
// a file written as ~name/... (its own name, as in a dotfiles setup shared
// across machines); the file lies in a writable tree and the command
// appended a core.fsmonitor to it. The audit took the value for a relative
// path and never judged the file (found by attack pass 47).
func TestAuditGlobalIncludeOtherUsersHome(t *testing.T) {
	u, err := user.Current()
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		t.Skip("no user entry")
	}
	if real, err := filepath.EvalSymlinks(u.HomeDir); err != nil || real != filepath.Clean(u.HomeDir) {
		t.Skip("the user's home directory is missing or a symlink")
	}
	runGlobal(t, []globalCase{
		{"include.path = ~name/...",
			func(s *scene) {
				rel, err := filepath.Rel(u.HomeDir, filepath.Join(s.w, "dots", "git.cfg"))
				must(t, err)
				s.write(filepath.Join(s.w, "dots", "git.cfg"), "[user]\n\tname = me\n")
				s.write(filepath.Join(s.home, ".gitconfig"), "[include]\n\tpath = ~"+u.Username+"/"+rel+"\n")
			},
			`printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> ../dots/git.cfg`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
	})
}

// TestAuditGitConfigEnvironment: the user's environment names the global
// configuration (GIT_CONFIG_GLOBAL) or the template directory
// (GIT_TEMPLATE_DIR, which git clone and git init copy from before
// init.templateDir) in a writable tree: moat run is given that
// environment, the sandboxed command inherits it, and the user's git
// reads the same. Neither was known to the audit (found by attack pass
// 47).
func TestAuditGitConfigEnvironment(t *testing.T) {
	runGlobal(t, []globalCase{
		{"a core.fsmonitor appended to $GIT_CONFIG_GLOBAL",
			func(s *scene) {
				s.gitGlobal = filepath.Join(s.w, "dots", "gitconfig")
				s.write(s.gitGlobal, "[user]\n\tname = me\n")
			},
			`printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> ../dots/gitconfig`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
		{"a post-checkout hook in $GIT_TEMPLATE_DIR",
			func(s *scene) {
				s.gitTemplates = filepath.Join(s.w, "tmpl")
				s.write(filepath.Join(s.gitTemplates, "description"), "the user's template\n")
			},
			`mkdir -p ../tmpl/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../tmpl/hooks/post-checkout && chmod +x ../tmpl/hooks/post-checkout`,
			func(s *scene) bool {
				c := filepath.Join(s.outside, "clone")
				os.RemoveAll(c)
				return s.userGit(s.outside, "clone", "-q", s.repo, c)
			}},
	})
}

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

// TestAuditGlobalRelativeHooksPathNoRepositoryYet: the user's global
// core.hooksPath is relative (.githooks: each repository's own hooks
// directory). A hook the command put in a repository of the tree is taken
// out, but one it put in a directory that was no repository yet stayed,
// and ran on the user's first commit after git init there (a project the
// agent scaffolded; found by attack pass 47).
func TestAuditGlobalRelativeHooksPathNoRepositoryYet(t *testing.T) {
	initCommit := func(s *scene) bool {
		p := filepath.Join(s.w, "proj")
		s.userGit(p, "init", "-q")
		s.userGit(p, "add", "main.py")
		return s.userGit(p, "commit", "-q", "-m", "init")
	}
	setup := func(s *scene) {
		s.write(filepath.Join(s.home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n")
	}
	runGlobal(t, []globalCase{
		{"a hook in a directory that is no repository yet", setup,
			`mkdir -p ../proj/.githooks && echo 'print(1)' > ../proj/main.py && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../proj/.githooks/pre-commit && chmod +x ../proj/.githooks/pre-commit`,
			initCommit},
		{"the hooks directory a symlink to another directory", setup,
			`mkdir -p ../proj/h && echo 'print(1)' > ../proj/main.py && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../proj/h/pre-commit && chmod +x ../proj/h/pre-commit && ln -s h ../proj/.githooks`,
			initCommit},
	})
}

// TestAuditGlobalRelativeTemplateDir: a relative init.templateDir is
// taken by git init in the directory it makes a repository of (git 2.39
// looks it up from there): a template the command put in a directory of
// the tree ran its hook on the user's git init there (found by attack
// pass 47).
func TestAuditGlobalRelativeTemplateDir(t *testing.T) {
	runGlobal(t, []globalCase{
		{"a template in a directory that is no repository yet",
			func(s *scene) {
				s.write(filepath.Join(s.home, ".gitconfig"), "[init]\n\ttemplateDir = .git-template\n")
			},
			`mkdir -p ../proj/.git-template/hooks && echo 'print(1)' > ../proj/main.py && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../proj/.git-template/hooks/pre-commit && chmod +x ../proj/.git-template/hooks/pre-commit`,
			func(s *scene) bool {
				p := filepath.Join(s.w, "proj")
				s.userGit(p, "init", "-q")
				s.userGit(p, "add", "main.py")
				return s.userGit(p, "commit", "-q", "-m", "init")
			}},
	})
}
