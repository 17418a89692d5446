//go:build darwin

package darwin

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Reexec handles moat's binary started by a run to set the command's
// per-process limits: it sets them and becomes sandbox-exec (it returns
// only on failure). handled is false for any other command line. Programs
// reach it through runtime.Reexec, first thing in main.
func Reexec(args []string) (handled bool, err error) {
	r, argv, ok, err := parseTrampoline(args)
	if !ok || err != nil {
		return ok, err
	}
	if r.FileSize > 0 {
		lim := uint64(r.FileSize)
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: lim, Max: lim}); err != nil {
			return true, fmt.Errorf("darwin: RLIMIT_FSIZE: %w", err)
		}
	}
	if r.CPUSecs > 0 {
		secs := uint64(r.CPUSecs)
		if err := unix.Setrlimit(unix.RLIMIT_CPU, &unix.Rlimit{Cur: secs, Max: secs + 1}); err != nil {
			return true, fmt.Errorf("darwin: RLIMIT_CPU: %w", err)
		}
	}
	err = unix.Exec(argv[0], argv, os.Environ())
	return true, fmt.Errorf("darwin: exec %s: %w", argv[0], err)
}
