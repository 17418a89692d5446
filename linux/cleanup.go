//go:build linux

package linux

import (
	"fmt"
	"os"

	"github.com/moat-sandbox/moat/linux/journal"
)

// cleanupArg is the argv[1] with which a sandbox's init re-execs the
// supervisor's binary after the supervisor died: it removes the mount points
// the dead supervisor created (see package journal).
const cleanupArg = "__moat-cleanup"

func init() {
	if len(os.Args) == 4 && os.Args[1] == cleanupArg {
		if err := journal.Recover(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintf(os.Stderr, "moat: clean-up after the supervisor died: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}
