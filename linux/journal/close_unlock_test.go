//go:build linux

package journal

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Security review: a launch that fails after its first placeholder and
// before its stage 2 reports its mounts (stage 2 killed by the client, whose
// uid it runs as by then; the plan's write then fails) calls Close with the
// global lock still held. Close must release it: in moatd the journal is
// shared by every user, and the lock stays held until Go's garbage
// collector happens to finalize the *os.File (about two minutes), blocking
// every other user's runs and sessions meanwhile.
func TestCloseWhileLockedReleasesTheGlobalLock(t *testing.T) {
	dir, tree := setup(t)
	j, err := Begin(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Create(filepath.Join(tree, ".vscode"), Dir, ""); err != nil {
		t.Fatal(err)
	}
	// No Unlock: the mounts were never reported.
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "journal.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("after Close, the journal's global lock is still held (%v): the next run, of any user, waits for the garbage collector", err)
	}
}
