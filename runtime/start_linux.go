package runtime

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/linux/nsinit"
)

// SinceStart is how long ago the process's first user code ran (stage 2's
// C constructor, before the Go runtime started): MOAT_TRACE's origin. 0 if
// unknown (a build without cgo).
func SinceStart() time.Duration {
	s := nsinit.StartNanos()
	var ts unix.Timespec
	if s == 0 || unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano() - s)
}
