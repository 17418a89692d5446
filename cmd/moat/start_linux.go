package main

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/linux"
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

// dropHolder ends the inotify holder moat's constructor forked for a run
// this process will not make itself (moatd makes it).
func dropHolder() {
	nsinit.DropHolder()
	nsinit.DropStage2()
}

// preload starts, for root's `moat run`, loading the run's eBPF programs
// while the command line, the settings and the plan are worked out (the
// verifier's time then no longer holds the command back).
func preload(args []string) {
	if len(args) > 1 && args[1] == "run" && os.Geteuid() == 0 {
		linux.PreloadKernelFilter()
	}
}
