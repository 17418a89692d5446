package planted

import (
	"os"
	"path/filepath"
	"testing"
)

// An allowUnixSockets entry is resolved when the sandbox starts, the
// symlinks on its way followed only outside the trees the command may
// write: one planted in a writable tree stays a name (on Linux the broker
// then refuses to follow it; on macOS the profile makes it read-only).
func TestResolveOutsideWritable(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(root, "ro")
	rw := filepath.Join(root, "rw")
	run := filepath.Join(root, "run")
	for _, d := range []string{ro, rw, run, filepath.Join(rw, "real")} {
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
	must(os.Symlink(run, filepath.Join(ro, "varrun")))        // the system's /var/run -> /run
	must(os.Symlink("real", filepath.Join(rw, "planted")))    // in the writable tree
	must(os.Symlink(rw, filepath.Join(ro, "to-rw")))          // a read-only link into the tree
	must(os.Symlink("../run", filepath.Join(ro, "relative"))) // relative, outside
	writable := func(dir string) bool { return dir == rw || within(dir, rw) }
	for _, tc := range []struct{ in, want string }{
		{ro + "/varrun/docker.sock", run + "/docker.sock"},
		{ro + "/relative/x.sock", run + "/x.sock"},
		{rw + "/planted/app.sock", rw + "/planted/app.sock"},
		{ro + "/to-rw/planted/app.sock", rw + "/planted/app.sock"},
		{ro + "/missing/dir/a.sock", ro + "/missing/dir/a.sock"},
		{ro + "/../run/b.sock", run + "/b.sock"},
	} {
		if got := ResolveOutsideWritable(tc.in, writable); got != tc.want {
			t.Errorf("ResolveOutsideWritable(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
