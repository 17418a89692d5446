package gitguard

import (
	"os/user"
	"path/filepath"
	"testing"
)

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
