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
