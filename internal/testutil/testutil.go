// Package testutil holds helpers shared by moat's tests: requirements that
// skip with a reason, or fail under MOAT_REQUIRE_PRIVILEGED=1 (as CI runs).
package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Strict reports whether a missing privilege or kernel feature must fail
// the test instead of skipping it (CI sets MOAT_REQUIRE_PRIVILEGED=1).
func Strict() bool { return os.Getenv("MOAT_REQUIRE_PRIVILEGED") == "1" }

// Unavailable skips the test, or fails it under MOAT_REQUIRE_PRIVILEGED=1.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if Strict() {
		t.Fatalf("required but unavailable (MOAT_REQUIRE_PRIVILEGED=1): "+format, args...)
	}
	t.Skipf(format, args...)
}

// RequireRoot runs the test only as root. A root-only test is simply not
// part of an unprivileged run: it skips there even in strict mode.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("root-only test")
	}
}

// RequireUnprivileged runs the test only as a non-root user.
func RequireUnprivileged(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("unprivileged-only test")
	}
}

// SleepMarker returns a sleep argument (whole seconds plus a fraction
// unique to this test process and call) so that "sleep <marker>" names
// this test's process and no other on a busy machine: tests that look for
// leftovers match it exactly.
func SleepMarker(seconds int) string {
	n := markerSeq.Add(1)
	return fmt.Sprintf("%d.%07d%03d", seconds, os.Getpid()%10000000, n%1000)
}

var markerSeq atomic.Int64

// MoatBinary returns the moat CLI under test: $MOAT_BIN, or one built from
// this checkout (once per test binary) into dir.
func MoatBinary(dir string) (string, error) {
	if b := os.Getenv("MOAT_BIN"); b != "" {
		return b, nil
	}
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
		out := filepath.Join(dir, "moat")
		cmd := exec.Command("go", "build", "-o", out, "./cmd/moat")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build moat: %v\n%s", err, b)
			return
		}
		built = out
	})
	return built, buildErr
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// Deps lists the non-standard packages that pkgs (import paths or
// patterns relative to the test's package directory) depend on, for
// GOOS=goos ("" for the host's). It skips the test without a go command.
func Deps(t testing.TB, goos string, pkgs ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	args := append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, pkgs...)
	cmd := exec.Command(gobin, args...)
	if goos != "" {
		cmd.Env = append(os.Environ(), "GOOS="+goos)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %v: %v\n%s", pkgs, err, out)
	}
	return strings.Fields(string(out))
}

// Imports lists what the package in the test's directory imports directly
// (its non-test files), for GOOS=goos ("" for the host's).
func Imports(t testing.TB, goos string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command(gobin, "list", "-f", `{{join .Imports "\n"}}`, ".")
	if goos != "" {
		cmd.Env = append(os.Environ(), "GOOS="+goos)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// Forbid fails the test for every dependency of the package in the test's
// directory that is forbidden or below a forbidden path.
func Forbid(t testing.TB, forbidden ...string) {
	t.Helper()
	for _, dep := range Deps(t, "", ".") {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("depends on %s", dep)
			}
		}
	}
}

// Hangs waits for cmd, started, to end, and reports whether it hung
// instead: a thread of it waits in the open of a named pipe
// (wait_for_partner, fifo_open's wait, as Linux's /proc/PID/task/TID/wchan
// names it: seen at once, where waiting out the timeout made each case
// that hangs cost that long), or it still runs after timeout. A hung cmd
// is killed and waited for.
func Hangs(cmd *exec.Cmd, timeout time.Duration) bool {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	deadline := time.After(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return false
		case <-deadline:
		case <-tick.C:
			if !inFifoOpen(cmd.Process.Pid) {
				continue
			}
		}
		cmd.Process.Kill()
		<-done
		return true
	}
}

func inFifoOpen(pid int) bool {
	ws, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/wchan")
	for _, w := range ws {
		if b, err := os.ReadFile(w); err == nil && (string(b) == "wait_for_partner" || string(b) == "fifo_open") {
			return true
		}
	}
	return false
}
