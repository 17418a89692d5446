//go:build linux || darwin

package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckAncestorsSymlinkSpelling: a state directory reached through a
// symlink is judged where the link leads too: a plain spelling is judged
// in one walk, one through a symlink (at the end, or above) also as it
// resolves, and a directory anyone may write (not sticky) there is
// refused.
func TestCheckAncestorsSymlinkSpelling(t *testing.T) {
	dir, err := os.MkdirTemp("/var/tmp", "moat-ancestors-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777) // not sticky: anyone may rename what is in it
	os.MkdirAll(filepath.Join(open, "state"), 0o700)
	safe := filepath.Join(dir, "safe", "state")
	os.MkdirAll(safe, 0o700)
	os.Symlink(filepath.Join(open, "state"), filepath.Join(dir, "link"))
	os.Symlink(open, filepath.Join(dir, "linkdir"))
	if err := checkAncestors(safe); err != nil {
		t.Errorf("%s: %v", safe, err)
	}
	for _, p := range []string{filepath.Join(dir, "link"), filepath.Join(dir, "linkdir", "state"), filepath.Join(open, "state")} {
		if err := checkAncestors(p); err == nil || !strings.Contains(err.Error(), "is writable by others") {
			t.Errorf("%s: %v; want it refused for %s, writable by others", p, err, open)
		}
	}
	// A missing state directory (made later) in a safe place.
	if err := checkAncestors(filepath.Join(dir, "safe", "new")); err != nil {
		t.Errorf("missing state directory in a safe place: %v", err)
	}
}
