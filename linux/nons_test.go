//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReadRules(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/secret/keep", "a/open", "b"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "a/file"), []byte("x"), 0o644)
	hidden := filepath.Join(root, "a/secret")
	keep := filepath.Join(hidden, "keep")
	v := &view{denyRead: []rule{{path: hidden, source: "test"}, {path: filepath.Join(root, "missing"), source: "test"}},
		allowRead: []rule{{path: keep, source: "test"}}}
	dirs, trees := readRules(v)
	for _, want := range []string{"/", root, filepath.Join(root, "a")} {
		if !slices.Contains(dirs, want) {
			t.Errorf("ancestor %s must be listable: %v", want, dirs)
		}
	}
	for _, want := range []string{filepath.Join(root, "a/open"), filepath.Join(root, "a/file"), filepath.Join(root, "b"), keep} {
		if !slices.Contains(trees, want) {
			t.Errorf("%s must be readable: %v", want, trees)
		}
	}
	for _, p := range append(dirs, trees...) {
		if p == hidden {
			t.Errorf("the hidden path is granted: %v %v", dirs, trees)
		}
	}
	if d, tr := readRules(&view{}); d != nil || tr != nil {
		t.Errorf("nothing hidden, no rules: %v %v", d, tr)
	}
}

// A hidden path's entry listed under another spelling is not granted: in a
// case-folding directory (ext4's +F) the rule's "SECRET" is listed as
// "secret", one file, and the grant on it by its inode read the hidden
// file under both names (attack pass 84). This kernel has no case folding:
// a hard link in the same directory is the second name, the same file the
// listing shows. A name equal but for case that is another file is granted.
func TestReadRulesOtherSpelling(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "Other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hidden := filepath.Join(root, "a/SECRET")
	if err := os.WriteFile(hidden, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(hidden, filepath.Join(root, "a/secret")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "a/Secret"), []byte("another file"), 0o644)
	os.MkdirAll(filepath.Join(root, "A"), 0o755) // another directory, named as the way's but for case
	_, trees := readRules(&view{denyRead: []rule{{path: hidden, source: "test"}}})
	if slices.Contains(trees, filepath.Join(root, "a/secret")) {
		t.Errorf("the hidden file is granted under another spelling: %v", trees)
	}
	for _, want := range []string{filepath.Join(root, "a/Secret"), filepath.Join(root, "A"), filepath.Join(root, "Other")} {
		if !slices.Contains(trees, want) {
			t.Errorf("%s, another file, must be readable: %v", want, trees)
		}
	}
}
