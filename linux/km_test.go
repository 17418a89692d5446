//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// The mount table is read again when it changes: a kernel filesystem
// mounted below a writable root after an earlier plan is found.
func TestKernelMountsUnderSeesNewMounts(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	roots := []rule{{path: dir, source: "test"}}
	if got, err := kernelMountsUnder(roots, false); err != nil || len(got) != 0 {
		t.Fatalf("before the mount: %v %v", got, err)
	}
	cg := filepath.Join(dir, "cg")
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("none", cg, "cgroup2", 0, ""); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(cg, unix.MNT_DETACH)
	got, err := kernelMountsUnder(roots, false)
	if err != nil || len(got) != 1 || got[0] != cg {
		t.Fatalf("after the mount: %v %v, want [%s]", got, err, cg)
	}
	if _, err := kernelMountsUnder(roots, true); err == nil {
		t.Fatal("the no-namespace tier must refuse a root that holds a kernel filesystem")
	}
	unix.Unmount(cg, unix.MNT_DETACH)
	if got, err := kernelMountsUnder(roots, false); err != nil || len(got) != 0 {
		t.Fatalf("after the unmount: %v %v", got, err)
	}
}

func BenchmarkKernelMountsUnder(b *testing.B) {
	roots := []rule{{path: "/var/tmp/x", source: "x"}, {path: "/home/u/.cache", source: "y"}}
	for i := 0; i < b.N; i++ {
		if _, err := kernelMountsUnder(roots, false); err != nil {
			b.Fatal(err)
		}
	}
}
