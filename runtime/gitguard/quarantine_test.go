//go:build linux || darwin

package gitguard

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A plant in a tree on another filesystem than moat's state is copied into
// the quarantine. Ten sparse 64 MiB hooks in a tmpfs tree, which cost
// their writer nothing, took 640 MB of the home's disk at each run: every
// zero was written (attack pass 58). The copy keeps the holes, and the
// bytes.
func TestQuarantineCopyKeepsHoles(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "hook")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20
	for _, off := range []int64{0, 1 << 20, size - 5} {
		if _, err := f.WriteAt([]byte("hook\n"), off); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	var st unix.Stat_t
	if err := unix.Stat(src, &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 > 8<<20 {
		t.Skipf("this filesystem made no holes (%d bytes allocated)", st.Blocks*512)
	}
	pfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pfd)
	dest := filepath.Join(t.TempDir(), "001-hook")
	if err := copyAt(pfd, "hook", dest); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(src)
	got, _ := os.ReadFile(dest)
	if !bytes.Equal(got, want) {
		t.Fatalf("the copy differs from the original (%d bytes, %d)", len(got), len(want))
	}
	if err := unix.Stat(dest, &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 > 8<<20 {
		t.Errorf("the quarantine's copy of a sparse 64 MiB file takes %d MiB of disk", st.Blocks*512>>20)
	}
}
