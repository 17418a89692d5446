//go:build linux || darwin

package runtime

import (
	"os"
	"path/filepath"
	"testing"
)

// A home that is a symlink (/home/u to /data/u) gives the state directory
// below its target: moat opens the state directory without following a
// symlink, and every run failed ("too many levels of symbolic links",
// attack pass 98). $XDG_STATE_HOME likewise.
func TestDefaultStateDirSymlinkedHome(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o755)
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", link)
	t.Setenv("XDG_STATE_HOME", "")
	if got, want := DefaultStateDir(), filepath.Join(real, ".local", "state", "moat"); got != want {
		t.Errorf("home %s: state directory %s, want %s", link, got, want)
	}
	t.Setenv("XDG_STATE_HOME", link)
	if got, want := DefaultStateDir(), filepath.Join(real, "moat"); got != want {
		t.Errorf("XDG_STATE_HOME %s: state directory %s, want %s", link, got, want)
	}
}
