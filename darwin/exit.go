package darwin

import (
	"os"
	"syscall"

	"github.com/moat-sandbox/moat/runtime/enforce"
)

// exitOf is how the command ended, as the runtime reads it: its status, or
// 128+N when signal N ended it, and the protections the run did not give.
func exitOf(ps *os.ProcessState, skipped []enforce.Skip) *enforce.Exit {
	e := &enforce.Exit{Code: ps.ExitCode(), Skipped: skipped}
	type signaled interface {
		Signaled() bool
		Signal() syscall.Signal
	}
	if ws, ok := ps.Sys().(signaled); ok && ws.Signaled() {
		e.Signal = ws.Signal()
		e.Code = 128 + int(e.Signal)
	}
	return e
}
