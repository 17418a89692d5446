//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/internal/testutil"
	"golang.org/x/sys/unix"
)

// A command cannot requeue the waiters of a futex shared with processes
// outside the sandbox (attack pass 80). A shared futex is named by the
// file and offset it lies in, and FUTEX_CMP_REQUEUE needs only to read
// the word: a command that mapped a file it may only read moved the
// waiter of a process of the user's outside (this test) to a futex of its
// own, and the owner's wake reached nothing: that process would have
// waited forever. The same attack works without moat.
func TestSharedFutexRequeue(t *testing.T) {
	f := makeFixture(t)
	lock, own := filepath.Join(f.outside, "futex-lock"), filepath.Join(f.work, "futex-own")
	for _, p := range []string{lock, own} {
		must(t, os.WriteFile(p, make([]byte, 4096), 0o644))
	}
	lockMap, err := mapShared(lock, true)
	must(t, err)
	ownMap, err := mapShared(own, true)
	must(t, err)
	wake := func(m []byte) int {
		n, _, _ := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&m[0])), 1 /* FUTEX_WAKE */, 1<<31-1, 0, 0, 0)
		return int(n)
	}
	// attack starts a waiter on lock's futex, runs the attack, then wakes
	// lock's futex as its owner would: it reports whether the waiter woke.
	attack := func(run func(...string) result) (result, bool) {
		woke := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// A signal to this thread (SIGCHLD, Go's preemption) ends the
			// wait with EINTR: it waits again; only a wake ends it.
			ts := unix.Timespec{Sec: 30}
			sys.Retry(func() error {
				_, _, e := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&lockMap[0])), 0 /* FUTEX_WAIT */, 0, uintptr(unsafe.Pointer(&ts)), 0, 0)
				if e != 0 {
					return e
				}
				return nil
			})
			close(woke)
		}()
		time.Sleep(300 * time.Millisecond) // the waiter is queued
		got := run("futex-requeue", lock, own)
		wake(lockMap)
		select {
		case <-woke:
			return got, true
		case <-time.After(2 * time.Second):
			wake(ownMap) // where the attack moved it
			<-woke
			return got, false
		}
	}
	check := func(t *testing.T, sandboxed func(...string) result) {
		got, woke := attack(sandboxed)
		if !woke || got.escaped() {
			t.Errorf("ESCAPE under moat: the waiter outside was moved (woke on its own futex: %v):\n%s", woke, got.out)
		} else if !strings.Contains(got.out, "blocked:") {
			t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
		} else if !viaSession() && !strings.Contains(got.out, "shared futex") {
			t.Errorf("the refused requeue must be reported:\n%s", got.out)
		}
		if base, woke := attack(f.direct); woke || !base.escaped() {
			t.Errorf("the attack must work without moat (woke: %v):\n%s", woke, base.out)
		}
	}
	t.Run("namespaces", func(t *testing.T) {
		testutil.RequireUserns(t)
		check(t, f.sandboxed)
	})
	if landlockABI() > 0 && !viaSession() {
		t.Run("no-namespace tier", func(t *testing.T) { check(t, f.bestEffort) })
	}
}
