//go:build linux

package ascred

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// Borrow gives the calling thread a user's file-system credentials and no
// effective capability for fn, and its own back after: the violation
// observer's thread borrows moatd's client's for each look it takes on the
// client's behalf (attack pass 58), and then reads the command's memory
// and answers the kernel as root again.
func TestBorrow(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	locked := filepath.Join(dir, "locked")
	if err := os.MkdirAll(filepath.Join(locked, "in"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var before, inside, after [2]unix.CapUserData
	if err := unix.Capget(&hdr, &before[0]); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	var asUser error
	ran, restored := Borrow(65534, 65534, []int{65534}, func() {
		asUser = unix.Lstat(filepath.Join(locked, "in"), &st)
		h := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		unix.Capget(&h, &inside[0])
	})
	if !ran || !restored {
		t.Fatalf("Borrow: ran %v, restored %v", ran, restored)
	}
	if asUser == nil {
		t.Errorf("fn looked into a directory only root may search")
	}
	if inside[0].Effective != 0 || inside[1].Effective != 0 {
		t.Errorf("fn ran with effective capabilities %#x %#x", inside[0].Effective, inside[1].Effective)
	}
	if err := unix.Lstat(filepath.Join(locked, "in"), &st); err != nil {
		t.Errorf("the thread is not root's again: %v", err)
	}
	if err := unix.Capget(&hdr, &after[0]); err != nil || after != before {
		t.Errorf("capabilities %+v after, %+v before (%v)", after, before, err)
	}
	if fsuid, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0); fsuid != 0 {
		t.Errorf("fsuid %d after", fsuid)
	}
	if gs, err := getgroups(); err != nil || len(gs) == 1 && gs[0] == 65534 {
		t.Errorf("groups %v after (%v)", gs, err)
	}
}

// The main thread's credentials are the process's in /proc/PID/status
// (what moat serve and moatd compare each peer with). Go runs goroutines
// on the main thread too, and one of this package's that landed there and
// ended locked wedged it with what it left: the process looked capless and
// every peer was refused. Many calls leave the process's status as it was.
func TestMainThreadKeepsItsCredentials(t *testing.T) {
	testutil.RequireRoot(t)
	status := func() string {
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "Uid") || strings.HasPrefix(l, "Gid") || strings.HasPrefix(l, "Groups") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	before := status()
	for i := 0; i < 300; i++ {
		DoCapless(func() error { return nil })
		Do(65534, 65534, nil, func() error { return nil })
		if w, err := NewWorker(65534, 65534, nil); err == nil {
			w.Do(func() error { return nil })
			w.Close()
		}
	}
	time.Sleep(50 * time.Millisecond)
	if after := status(); after != before {
		t.Fatalf("the process's credentials changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// A Borrower runs each function on the caller's thread with the user's
// credentials (moatd's plan of a client's sandbox, and its placeholders),
// and the thread is the caller's own again after: the next look as root
// succeeds where the user's fails, and a file made inside is the user's.
func TestBorrower(t *testing.T) {
	testutil.RequireRoot(t)
	dir, err := os.MkdirTemp("/var/tmp", "ascred-") // a parent the user may search
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	locked := filepath.Join(dir, "locked")
	if err := os.MkdirAll(filepath.Join(locked, "in"), 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := NewBorrower(65534, 65534, []int{65534})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		var st unix.Stat_t
		if err := b.Do(func() error { return unix.Lstat(filepath.Join(locked, "in"), &st) }); err == nil {
			t.Fatalf("call %d: the user looked into a directory only root may search", i)
		}
		if err := unix.Lstat(filepath.Join(locked, "in"), &st); err != nil {
			t.Fatalf("call %d: the thread is not root's again: %v", i, err)
		}
		made := filepath.Join(dir, "made")
		if err := b.Do(func() error { return os.WriteFile(made, nil, 0o600) }); err != nil {
			t.Fatal(err)
		}
		if err := unix.Lstat(made, &st); err != nil || st.Uid != 65534 {
			t.Errorf("call %d: a file made inside is uid %d's (%v), want the user's", i, st.Uid, err)
		}
		os.Remove(made)
	}
	if _, err := NewBorrower(-1, 0, nil); err == nil {
		t.Errorf("a Borrower of uid -1")
	}
}
