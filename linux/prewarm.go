//go:build linux

package linux

import "os"

// Prewarm does the one-time probes a fresh process's first launch would
// otherwise do on its critical path, so that a caller may run it on a
// goroutine of its own while it reads its flags and settings (the second
// core is idle then). Go's first use of its process API checks that pidfds
// work, which forks and reaps a child (0.1-0.25 ms here), and it happens in
// stage 2's spawn, while the plan waits for the processor the spawn holds
// (docs/PERFORMANCE.md, nineteenth session). Each probe is behind a
// sync.Once: a launch that comes first waits for it, none is done twice.
func Prewarm() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Release()
	}
	landlockABI()
}
