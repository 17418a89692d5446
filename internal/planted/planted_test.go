package planted

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func within(p, base string) bool { return p == base || strings.HasPrefix(p, base+"/") }

// TestFindLink: the first symlink on the way of a path that lies strictly
// inside a writable tree, spelled as written or through a symlinked
// directory outside the trees; a symlink outside every tree, or a tree's
// own top, is the user's.
func TestFindLink(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "work")
	home := filepath.Join(root, "home")
	for _, d := range []string{filepath.Join(work, "real"), home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(home, filepath.Join(work, "out")))     // planted in the tree
	must(os.Symlink(work, filepath.Join(root, "alias")))   // the user's, outside
	must(os.Symlink("real", filepath.Join(work, "rel")))   // planted, relative
	must(os.Symlink(work, filepath.Join(root, "toplink"))) // a tree named through its own link
	inside := func(n string) (string, bool) {
		if n != work && within(n, work) {
			return work, true
		}
		return "", false
	}
	for _, c := range []struct {
		path, link, to string
	}{
		{work + "/out", work + "/out", home},
		{work + "/out/x/y", work + "/out", home},
		{root + "/alias/out", work + "/out", home}, // through a symlinked directory outside the trees
		{work + "/rel/a", work + "/rel", work + "/real"},
		{work + "/real/a", "", ""},
		{root + "/alias/real", "", ""},
		{root + "/toplink", "", ""},
		{work + "/missing/out", "", ""},
		{"relative/out", "", ""},
	} {
		l := FindLink(c.path, "test", inside, filepath.EvalSymlinks)
		switch {
		case c.link == "" && l != nil:
			t.Errorf("%s: %v", c.path, l)
		case c.link != "" && l == nil:
			t.Errorf("%s: no link found, want %s", c.path, c.link)
		case l != nil && (l.Link != c.link || l.To != c.to || l.Tree != work):
			t.Errorf("%s: %+v, want link %s to %s", c.path, l, c.link, c.to)
		}
	}
}
