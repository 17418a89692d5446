package glob

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A directory ReadDir cannot list is a match of its own when Unreadable is
// set (deny rules hide it whole), and matches nothing otherwise.
func TestUnreadableDirectory(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"open", "shut"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "open", "a.pem"), nil, 0o644)
	readDir := func(dir string) ([]os.DirEntry, error) {
		if filepath.Base(dir) == "shut" {
			return nil, ErrUnreadable
		}
		return os.ReadDir(dir)
	}
	for _, tc := range []struct {
		unreadable bool
		want       []string
	}{
		{true, []string{"open/a.pem", "shut"}},
		{false, []string{"open/a.pem"}},
	} {
		w := Walker{Depth: -1, Unreadable: tc.unreadable, ReadDir: readDir}
		got, err := w.Expand(filepath.Join(root, "**", "*.pem"))
		if err != nil {
			t.Fatal(err)
		}
		var rel []string
		for _, g := range got {
			r, _ := filepath.Rel(root, g)
			rel = append(rel, r)
		}
		slices.Sort(rel)
		if !slices.Equal(rel, tc.want) {
			t.Errorf("Unreadable %v: %v, want %v", tc.unreadable, rel, tc.want)
		}
	}
}
