package gitguard

import (
	"os"
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
