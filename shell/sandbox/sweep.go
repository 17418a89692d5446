package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SweepOutput removes the saved output a process that is gone left in
// stateDir: the sessions' directories "output/PID-NANOS" (Open makes one
// a session, and its Close removes it) whose process no longer runs, or
// whose pid now belongs to a process started after the directory was
// made. A session's output is bounded (shell.DefaultMaxSavedBytes) while
// its process lives; moatd killed (SIGKILL, the OOM killer, a stop that
// timed out) left every session's, up to 256 MB each, root's files
// outside every user's quota, for good: each daemon's start calls this
// (found by attack pass 60; TestSweepOutput).
func SweepOutput(stateDir string) error {
	dir := filepath.Join(stateDir, "output")
	es, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range es {
		pid, made, ok := outputDirName(e.Name())
		if !ok || !e.IsDir() || processSince(pid, made) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// outputDirName parses "PID-NANOS", the name Open gives a session's
// output directory.
func outputDirName(name string) (int, time.Time, bool) {
	p, n, ok := strings.Cut(name, "-")
	if !ok {
		return 0, time.Time{}, false
	}
	pid, err1 := strconv.Atoi(p)
	ns, err2 := strconv.ParseInt(n, 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return 0, time.Time{}, false
	}
	return pid, time.Unix(0, ns), true
}

// processSince reports whether process pid runs and, where its start time
// can be read (Linux), started no later than made: the process that made
// the directory, not another that has its pid now.
func processSince(pid int, made time.Time) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	if err := p.Signal(syscall.Signal(0)); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	start, ok := processStart(pid)
	return !ok || !start.After(made.Add(time.Second))
}

// processStart is when pid started, from /proc (field 22 of its stat, in
// clock ticks after boot, and the boot time of /proc/stat); false where
// there is no /proc.
func processStart(pid int) (time.Time, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}, false
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing parenthesis (field 3 is the first there).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return time.Time{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	st, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			// USER_HZ is 100 on every Linux architecture moat builds for.
			return time.Unix(boot, 0).Add(time.Duration(ticks) * (time.Second / 100)), true
		}
	}
	return time.Time{}, false
}
