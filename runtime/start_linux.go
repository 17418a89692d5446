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

// ServerFallback is why MOAT_SERVER was set but this moat run was not
// handed to that server before the Go runtime started (a terminal, no
// server, a process state the server does not share), "" otherwise; quiet
// when the reason is not worth a note.
func ServerFallback() (why string, quiet bool) { return nsinit.ServerNote() }

// StartRlimitNofile is RLIMIT_NOFILE as this process was started with it,
// before the Go runtime raised its soft limit to the hard one; ok is false
// if unknown (a build without cgo).
func StartRlimitNofile() (cur, max uint64, ok bool) { return nsinit.StartNofile() }
