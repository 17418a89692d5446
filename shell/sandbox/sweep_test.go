//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A session's saved output is in moat's state, "output/PID-NANOS", removed
// when the session closes. moatd SIGKILLed left every session's there for
// good (up to 256 MB a session, root's files outside every user's quota):
// the daemon's start now removes the directories of processes that are
// gone, and those whose pid another process took since, and keeps a live
// process's (attack pass 60).
func TestSweepOutput(t *testing.T) {
	state := t.TempDir()
	out := filepath.Join(state, "output")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	dirs := map[string]bool{ // name: kept
		fmt.Sprintf("%d-%d", gone.Process.Pid, now.UnixNano()):               false, // its process is gone
		fmt.Sprintf("%d-%d", os.Getpid(), now.UnixNano()):                    true,  // this process's
		fmt.Sprintf("%d-%d", os.Getpid(), now.Add(-48*time.Hour).UnixNano()): false, // made before this process started: its pid reused
		"notes": true, // not a session's
	}
	for name := range dirs {
		if err := os.MkdirAll(filepath.Join(out, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, name, "c1-0000.txt"), []byte("long output"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := SweepOutput(state); err != nil {
		t.Fatal(err)
	}
	for name, kept := range dirs {
		_, err := os.Stat(filepath.Join(out, name))
		if kept && err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
		if !kept && err == nil {
			t.Errorf("%s is still there: the saved output of a process that is gone", name)
		}
	}
	if err := SweepOutput(filepath.Join(state, "none")); err != nil {
		t.Errorf("a state without output: %v", err)
	}
}
