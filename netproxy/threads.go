package netproxy

import "runtime/debug"

// threadSlotsFor is how many slots fit in a limit of limit OS threads: a
// slot stands for at most one thread (a session's command holds one while
// it runs: its violation observer waits in the kernel), and a quarter of
// the limit, at most 1024, is kept for the rest of the process (Go's
// runtime, goroutines blocked in a system call for a moment, the unix
// socket broker's connects).
func threadSlotsFor(limit int) int {
	keep := min(limit/4, 1024)
	return max(limit-keep, 16)
}

// threadLimit is how many OS threads the process may have: Go's limit
// (debug.SetMaxThreads; past it the runtime ends the process) and, on
// Linux, the pids.max of the process's cgroup and of each above it (a
// thread the kernel refuses ends it too: systemd's TasksMax is one).
func threadLimit() int {
	// SetMaxThreads returns the limit it replaces; a larger one for that
	// moment cannot end the process.
	n := debug.SetMaxThreads(1 << 30)
	debug.SetMaxThreads(n)
	if p := cgroupPidsMax(); p > 0 {
		n = min(n, p)
	}
	return n
}
