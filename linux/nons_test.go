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
