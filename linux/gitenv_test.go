//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// The files and directories the user's environment names for git
// ($XDG_CONFIG_HOME/git, $GIT_CONFIG_GLOBAL, $GIT_CONFIG_SYSTEM,
// $GIT_TEMPLATE_DIR), and what a $GIT_CONFIG_GLOBAL file names, are never
// writable: each lying in a writable tree was the command's to change,
// and the user's next git status or clone ran what it planted there (found
// by attack pass 47).
func TestPlanProtectsGitEnvironment(t *testing.T) {
	root := canon(t, t.TempDir())
	work := filepath.Join(root, "work")
	mkTree(t, root, "work/dots/gitconfig", "work/dots/system", "work/tmpl/description", "work/xdg/", "work/team/", "home/")
	if err := os.WriteFile(filepath.Join(work, "dots", "gitconfig"), []byte("[core]\n\thooksPath = "+filepath.Join(work, "team", "hooks")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := &policy.Policy{Cwd: work, Home: filepath.Join(root, "home")}
	pol.FS.AllowWrite = []policy.PathRule{{Path: work}}
	fp, err := makeFSPlan(planInput{pol: pol, exposeRO: []string{work}, xdgConfigHome: filepath.Join(work, "xdg"),
		gitConfigGlobal: filepath.Join(work, "dots", "gitconfig"), gitConfigSystem: filepath.Join(work, "dots", "system"),
		gitTemplateDir: filepath.Join(work, "tmpl")})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"xdg/git", "dots/gitconfig", "dots/system", "tmpl", "team/hooks"} {
		if !slices.Contains(fp.protected, filepath.Join(work, p)) {
			t.Errorf("%s is not protected: %v", p, fp.protected)
		}
	}
}

// What the user's git configuration names through a symlink of the
// user's (a template directory ~/link/tmpl, ~/link leading into the
// writable tree) is protected where it leads: the mount was planned for
// the path as written, outside the tree, and the command wrote a hook in
// the template (found by attack pass 47).
func TestPlanProtectsGlobalPathsThroughSymlinks(t *testing.T) {
	root := canon(t, t.TempDir())
	work := filepath.Join(root, "work")
	home := filepath.Join(root, "home")
	mkTree(t, root, "work/tmpl/description", "work/hooks/", "work/inc", "home/")
	if err := os.Symlink(work, filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	cfg := "[init]\n\ttemplateDir = ~/link/tmpl\n[core]\n\thooksPath = ~/link/hooks\n[include]\n\tpath = ~/link/inc\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := &policy.Policy{Cwd: work, Home: home}
	pol.FS.AllowWrite = []policy.PathRule{{Path: work}}
	fp, err := makeFSPlan(planInput{pol: pol, exposeRO: []string{work}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"tmpl", "hooks", "inc"} {
		if !slices.Contains(fp.protected, filepath.Join(work, p)) {
			t.Errorf("%s is not protected: %v", p, fp.protected)
		}
	}
}
