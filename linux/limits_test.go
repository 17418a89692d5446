//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// A v1 limit cgroup left by a killed moat is removed by the next run;
// a young one (a run still starting) is kept.
func TestSweepLimitCgroups(t *testing.T) {
	testutil.RequireRoot(t)
	if cgroups.IsCgroup2UnifiedMode() {
		t.Skip("cgroup v2 host: limits share the eBPF cgroup, swept with it")
	}
	mnt, err := cgroups.FindCgroupMountpoint("", "pids")
	if err != nil {
		testutil.Unavailable(t, "no pids hierarchy: %v", err)
	}
	parent := filepath.Join(mnt, "moat")
	os.MkdirAll(parent, 0o755)
	old, young := filepath.Join(parent, "run-test-old"), filepath.Join(parent, "run-test-young")
	for _, d := range []string{old, young} {
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(d) })
	}
	if err := os.Chtimes(old, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Skipf("cgroupfs keeps its times here: %v", err)
	}
	sweepLimitCgroups(parent)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the stale cgroup is still there: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a young cgroup was removed: %v", err)
	}
}

func TestExitViolation(t *testing.T) {
	eff := policy.Limits{FileSize: 1 << 20, CPUTime: time.Second}
	for _, c := range []struct {
		code, sig int
		used      time.Duration
		want      string
	}{
		{128 + 25, 25, 0, "fileSize"},
		{128 + 25, 0, 0, "fileSize"}, // a shell's child
		{128 + 24, 24, 0, "cpuTime"},
		{128 + 9, 9, 2 * time.Second, "cpuTime"},
		{128 + 9, 9, 0, ""}, // killed, not for CPU time
		{1, 0, 0, ""},
	} {
		vs := exitViolation(&enforce.Exit{Code: c.code, Signal: syscall.Signal(c.sig)}, eff, c.used)
		got := ""
		if len(vs) == 1 {
			got = vs[0].Op
		}
		if got != c.want {
			t.Errorf("exit %d signal %d used %v: %q, want %q", c.code, c.sig, c.used, got, c.want)
		}
	}
}

// The no-namespace tier's RLIMIT_NPROC is the user's count now plus at most
// the policy's limit, and leaves moat a reserve below its own limit.
func TestNonsProcessLimit(t *testing.T) {
	n := nonsProcessLimit(64)
	if n.count == 0 || n.limit < n.count || n.limit-n.count > 64 {
		t.Fatalf("count %d, limit %d: want the count of this user's tasks and at most 64 more", n.count, n.limit)
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &rl) == nil && rl.Cur != unix.RLIM_INFINITY && os.Geteuid() != 0 && n.limit+nonsReserve > rl.Cur && n.limit > n.count {
		t.Fatalf("limit %d leaves less than %d below this process's own %d", n.limit, nonsReserve, rl.Cur)
	}
}
