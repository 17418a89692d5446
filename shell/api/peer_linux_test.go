//go:build linux

package api

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// connectWithGroups connects to the unix socket at path from an OS thread
// whose supplementary groups are groups (root only: setgroups is per
// thread in the kernel; the thread exits with its goroutine, never used
// again), and returns the accepted end's peerGroups.
func connectWithGroups(t *testing.T, l *net.UnixListener, path string, groups []uint32) []int {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with us
		p := unsafe.Pointer(nil)
		if len(groups) > 0 {
			p = unsafe.Pointer(&groups[0])
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(p), 0); e != 0 {
			errc <- e
			return
		}
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
		errc <- err
		// Held open until the server side has read its peer.
		var b [1]byte
		unix.Read(fd, b[:])
		unix.Close(fd)
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	c, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := peerGroups(c)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The daemon's clients get their own process's groups (SO_PEERGROUPS), as
// many as they have, and none when they have none: not the user
// database's.
func TestPeerGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// This process's own groups.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := peerGroups(s)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := unix.Getgroups()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("this process's groups: %v, want %v", got, want)
	}

	testutil.RequireRoot(t)
	many := make([]uint32, 200) // more than the first buffer holds
	for i := range many {
		many[i] = uint32(60000 + i)
	}
	for _, gs := range [][]uint32{many, {4242}, {}} {
		got := connectWithGroups(t, l, path, gs)
		want := make([]int, len(gs))
		for i, g := range gs {
			want[i] = int(g)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("a peer with %d groups: peerGroups says %d: %v", len(want), len(got), got)
		}
	}
}

// TestProcRlimits: the limits read from /proc/PID/limits are getrlimit's.
func TestProcRlimits(t *testing.T) {
	got, err := procRlimits(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for r := range got {
		var rl unix.Rlimit
		if err := unix.Getrlimit(r, &rl); err != nil {
			t.Fatal(err)
		}
		if got[r] != [2]uint64{rl.Cur, rl.Max} {
			t.Errorf("resource %d: read %v, getrlimit %v", r, got[r], rl)
		}
	}
}
