//go:build unix

package darwin

import (
	"os/exec"
	"reflect"
	"syscall"
	"testing"

	"github.com/moat-sandbox/moat/runtime/enforce"
)

// TestExitOf: a run's exit is the command's status, 128+N for signal N,
// with what the run skipped (Process.Wait gives it to the runtime as it
// is).
func TestExitOf(t *testing.T) {
	skip := []enforce.Skip{{Protection: enforce.ProtectionViolations, Reason: "r"}}
	for _, c := range []struct {
		script string
		code   int
		sig    syscall.Signal
	}{
		{"exit 0", 0, 0},
		{"exit 3", 3, 0},
		{"kill -KILL $$", 137, syscall.SIGKILL},
		{"kill -TERM $$", 143, syscall.SIGTERM},
	} {
		cmd := exec.Command("/bin/sh", "-c", c.script)
		_ = cmd.Run()
		e := exitOf(cmd.ProcessState, skip)
		if e.Code != c.code || e.Signal != c.sig || !reflect.DeepEqual(e.Skipped, skip) {
			t.Errorf("%s: %+v, want code %d signal %v", c.script, e, c.code, c.sig)
		}
	}
}
