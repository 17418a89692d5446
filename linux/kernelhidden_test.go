//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// A denyRead path the kernel already keeps from the user's own sandbox
// needs no mask, but only outside the writable trees: there the mask also
// keeps the command from renaming or removing it.
func TestPlanDropsMasksTheKernelHolds(t *testing.T) {
	root := canon(t, t.TempDir())
	work := filepath.Join(root, "work")
	mkTree(t, root, "work/", "work/closed.key", "outside/closed.key", "outside/open.key")
	pol := &policy.Policy{Cwd: work, Home: filepath.Join(root, "home")}
	pol.FS.AllowWrite = []policy.PathRule{{Path: work}}
	for _, p := range []string{"work/closed.key", "outside/closed.key", "outside/open.key"} {
		pol.FS.DenyRead = append(pol.FS.DenyRead, policy.PathRule{Path: filepath.Join(root, p)})
	}
	closed := func(paths []string) []bool {
		res := make([]bool, len(paths))
		for i, p := range paths {
			res[i] = filepath.Base(p) == "closed.key"
		}
		return res
	}
	fp, err := makeFSPlan(planInput{pol: pol, exposeRO: []string{work}, kernelHides: closed})
	if err != nil {
		t.Fatal(err)
	}
	var hidden []string
	for _, r := range fp.view.denyRead {
		rel, _ := filepath.Rel(root, r.path)
		hidden = append(hidden, rel)
	}
	slices.Sort(hidden)
	if want := []string{"outside/open.key", "work/closed.key"}; !slices.Equal(hidden, want) {
		t.Errorf("masked %v, want %v", hidden, want)
	}
}

// kernelHidden counts what this process may neither read nor write (a
// file) or neither list nor search (a directory), of another user's only.
func TestKernelHidden(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	d := filepath.Join(dir, "d")
	l := filepath.Join(dir, "l")
	for _, err := range []error{os.WriteFile(f, nil, 0), os.Mkdir(d, 0), os.Symlink(f, l)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	defer os.Chmod(d, 0o700)
	uid := os.Getuid()
	// As their owner: never counted, whatever their mode.
	if got := kernelHidden(uid)([]string{f, d, l}); slices.Contains(got, true) {
		t.Errorf("the user's own paths counted as hidden: %v", got)
	}
	// As another user's: root may read them all; a user may not.
	got := kernelHidden(uid + 1)([]string{f, d, l, filepath.Join(dir, "missing")})
	want := []bool{uid != 0, uid != 0, false, false}
	if !slices.Equal(got, want) {
		t.Errorf("kernelHidden as another uid: %v, want %v", got, want)
	}
}
