//go:build linux

package linux

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// A phase trace of one launch, printed on stderr when MOAT_TRACE=1: where
// the start-up time goes (docs/PERFORMANCE.md).
var (
	traceOn    = os.Getenv("MOAT_TRACE") == "1"
	traceStart = time.Now()
	traceMu    sync.Mutex
	traceLog   []string
)

func trace(what string) {
	if !traceOn {
		return
	}
	traceMu.Lock()
	traceLog = append(traceLog, fmt.Sprintf("%8.3f ms  %s", float64(time.Since(traceStart).Microseconds())/1000, what))
	traceMu.Unlock()
}

func traceFlush() {
	if !traceOn {
		return
	}
	traceMu.Lock()
	defer traceMu.Unlock()
	for _, l := range traceLog {
		fmt.Fprintln(os.Stderr, "moat trace:", l)
	}
	traceLog = nil
}
