package darwin

import (
	"errors"
	"fmt"
	"strconv"
)

// A Seatbelt run cannot set a child's rlimits from Go (os/exec has no such
// attribute on macOS), and setting them on moat itself would limit moat.
// So, when the run has per-process limits, it starts moat's own binary as
//
//	moat __moat_darwin_rlimits FILESIZE CPUSECS /usr/bin/sandbox-exec ARGS...
//
// which sets them (Reexec, first thing in main through runtime.Reexec) and
// execs sandbox-exec: the command inherits them, and moat never runs under
// them. The parsing is here, untagged, so that it is tested everywhere.

// reexecArg is argv[1] of that re-execution.
const reexecArg = "__moat_darwin_rlimits"

// trampoline is the argv that makes moat's binary set r and exec prog
// with args (prog is argv[0] of the exec).
func trampoline(moat string, r rlimits, prog string, args []string) []string {
	out := []string{moat, reexecArg, strconv.FormatInt(r.FileSize, 10), strconv.FormatInt(r.CPUSecs, 10), prog}
	return append(out, args...)
}

// parseTrampoline reads a trampoline's argv: ok is false when args are
// not one (the program runs as usual), err when they are but are
// malformed.
func parseTrampoline(args []string) (r rlimits, argv []string, ok bool, err error) {
	if len(args) < 2 || args[1] != reexecArg {
		return rlimits{}, nil, false, nil
	}
	if len(args) < 5 || args[4] == "" {
		return rlimits{}, nil, true, errors.New("darwin: rlimit re-execution: too few arguments")
	}
	if r.FileSize, err = strconv.ParseInt(args[2], 10, 64); err != nil || r.FileSize < 0 {
		return rlimits{}, nil, true, fmt.Errorf("darwin: rlimit re-execution: file size %q", args[2])
	}
	if r.CPUSecs, err = strconv.ParseInt(args[3], 10, 64); err != nil || r.CPUSecs < 0 {
		return rlimits{}, nil, true, fmt.Errorf("darwin: rlimit re-execution: CPU time %q", args[3])
	}
	return r, args[4:], true, nil
}
