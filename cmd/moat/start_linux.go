package main

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/linux/nsinit"
)

// sinceStart is how long ago the process's first user code ran (stage 2's C
// constructor, before the Go runtime): MOAT_TRACE's origin. 0 if unknown.
func sinceStart() time.Duration {
	s := nsinit.StartNanos()
	var ts unix.Timespec
	if s == 0 || unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano() - s)
}
