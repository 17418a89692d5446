//go:build linux

package privtests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// The container cases, emulated on this machine: moat doctor names the
// tier moat gets in each, moat.minimumTier holds, and the attacks of that
// tier fail.

type doctorReport struct {
	Tier, Refusal, BestEffortTier, BestEffortError string
	BestEffortSkips                                []string
	Checks                                         []struct {
		Name string
		OK   bool
		Fix  string
	}
}

func (f *fixture) doctor(run func(bin string, args ...string) result, extra ...string) (doctorReport, result) {
	f.t.Helper()
	got := run(moatBin, append([]string{"doctor", "--json"}, extra...)...)
	var rep doctorReport
	start := strings.Index(got.out, "{")
	if start < 0 || json.Unmarshal([]byte(got.out[start:]), &rep) != nil {
		f.t.Fatalf("moat doctor --json (exit %d):\n%s", got.code, got.out)
	}
	return rep, got
}

func (r doctorReport) check(name string) (ok bool, fix string, found bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c.OK, c.Fix, true
		}
	}
	return false, "", false
}

// moatSettings writes settings with a moat section.
func (f *fixture) moatSettings(moat map[string]any) string {
	f.t.Helper()
	b, _ := json.Marshal(map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{f.work}, "denyWrite": []string{}},
		"moat":       moat,
	})
	p := filepath.Join(f.root, fmt.Sprintf("moat-%d.json", time.Now().UnixNano()))
	must(f.t, os.WriteFile(p, b, 0o644))
	return p
}

// On this host: every layer.
func TestDoctorHost(t *testing.T) {
	f := makeFixture(t)
	rep, got := f.doctor(f.exec)
	if got.code != 0 || rep.Tier != "full" || rep.BestEffortTier != "full" {
		t.Errorf("moat doctor on the host: exit %d, %+v\n%s", got.code, rep, got.out)
	}
	if ok, _, found := rep.check("user namespaces"); !ok || !found {
		t.Errorf("user namespaces must be reported working: %+v", rep.Checks)
	}
}

// A Docker-like seccomp filter refuses user namespaces: moat run refuses,
// --best-effort gets the no-namespace tier, doctor says both and the fix;
// with moat.minimumTier "full" even --best-effort refuses, and nothing runs.
func TestDoctorNoUserns(t *testing.T) {
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock: the no-namespace tier has nothing to confine with")
	}
	f := makeFixture(t)
	rep, got := f.doctor(f.noUserns)
	if got.code != 1 || rep.Tier != "unavailable" || rep.BestEffortTier != "no-namespace" {
		t.Errorf("moat doctor without user namespaces: exit %d, %+v\n%s", got.code, rep, got.out)
	}
	if ok, fix, _ := rep.check("user namespaces"); ok || !strings.Contains(fix, "seccomp") {
		t.Errorf("the missing user namespaces must be named with a fix: %+v", rep.Checks)
	}
	strict := f.moatSettings(map[string]any{"minimumTier": "full"})
	ran := filepath.Join(f.work, "ran")
	run := f.noUserns(moatBin, "run", "--best-effort", "--settings", strict, "--", self, "write", ran, "x")
	if run.code != 125 || !strings.Contains(run.out, "minimumTier") {
		t.Errorf("below moat.minimumTier, --best-effort must refuse (exit 125, naming it): exit %d\n%s", run.code, run.out)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran below the minimum tier")
	}
	rep, _ = f.doctor(f.noUserns, "--settings", strict)
	if rep.BestEffortTier != "unavailable" || !strings.Contains(rep.BestEffortError, "minimumTier") {
		t.Errorf("doctor must apply moat.minimumTier: %+v", rep)
	}
	// The same settings where the tier is there: it runs.
	if run := f.exec(moatBin, "run", "--best-effort", "--settings", strict, "--", self, "write", ran, "x"); run.code != 0 {
		t.Errorf("at the full tier moat.minimumTier must not refuse: exit %d\n%s", run.code, run.out)
	}
}

// inContainer runs bin args in a mount namespace made like a container's:
// if maskProc, /proc/sys read-only and masks over /proc files (a new procfs
// is then refused in a user namespace); if roCgroups, the cgroups
// read-only.
func (f *fixture) inContainer(maskProc, roCgroups bool) func(bin string, args ...string) result {
	wrap := containerWrap(maskProc, roCgroups)
	return func(bin string, args ...string) result {
		f.t.Helper()
		return f.exec(wrap[0], append(append(append([]string(nil), wrap[1:]...), bin), args...)...)
	}
}

// containerWrap is inContainer's emulation as the program and arguments
// that go before the program to run.
func containerWrap(maskProc, roCgroups bool) []string {
	script := "set -e\n"
	if maskProc {
		script += `mount --bind -o ro /proc/sys /proc/sys
for p in /proc/timer_list /proc/sched_debug /proc/keys; do [ -e "$p" ] && mount --bind /dev/null "$p"; done
`
	}
	if roCgroups {
		// (Docker mounts the whole cgroupfs read-only: the v1 controllers
		// and, beside them, the cgroup2 hierarchy.)
		script += `for c in memory pids cpu cpu,cpuacct unified; do d=/sys/fs/cgroup/$c; [ -d "$d" ] && [ ! -L "$d" ] && mount --bind -o ro "$d" "$d"; done
[ -f /sys/fs/cgroup/cgroup.controllers ] && mount --bind -o ro /sys/fs/cgroup /sys/fs/cgroup
`
	}
	script += `exec "$@"`
	return []string{"unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh"}
}

// A container that masks /proc: moat run refuses (naming
// enableWeakerNestedSandbox), --best-effort gets the host-proc tier and
// says what it leaves out, and the attacks of that tier still fail.
func TestDoctorMaskedProc(t *testing.T) {
	testutil.RequireRoot(t) // the emulation mounts on the host's side
	if _, err := exec.LookPath("unshare"); err != nil {
		testutil.Unavailable(t, "no unshare(1)")
	}
	f := makeFixture(t)
	ctr := f.inContainer(true, false)
	rep, got := f.doctor(ctr)
	if got.code != 1 || rep.Tier != "unavailable" || !strings.Contains(rep.Refusal, "procfs") || rep.BestEffortTier != "host-proc" {
		t.Fatalf("moat doctor in a container that masks /proc: exit %d, %+v\n%s", got.code, rep, got.out)
	}
	if run := ctr(moatBin, "run", "--settings", f.settings, "--", "true"); run.code != 125 || !strings.Contains(run.out, "enableWeakerNestedSandbox") {
		t.Errorf("moat run must refuse and name the switch: exit %d\n%s", run.code, run.out)
	}
	bestEffort := func(args ...string) result {
		return ctr(moatBin, append([]string{"run", "--best-effort", "--settings", f.settings, "--", self}, args...)...)
	}
	f.attackWith(bestEffort, []string{"writable-kernel-files"}, nil)
	f.attackWith(bestEffort, []string{"write", f.target, "x"}, func() { must(t, os.WriteFile(f.target, []byte(targetText), 0o644)) })
	if got := bestEffort("unshare-user"); got.escaped() {
		t.Errorf("ESCAPE: a user namespace in the host-proc tier:\n%s", got.out)
	}

	// A session sandbox steps down the same way: the container refuses
	// the new /proc only once stage 2 mounts, after StartSession returned.
	// (A session's shell finds the attack helper inside the sandbox, where
	// the host's /tmp, and the go tool's build directory, is hidden.)
	helper, err := copyExecutable(self, filepath.Join(f.root, "attack"))
	must(t, err)
	wrap := containerWrap(true, false)
	inSession := func(flags []string, args ...string) result {
		return f.inSessionVia(wrap, append([]string{"--settings", f.settings}, flags...), append([]string{helper}, args...))
	}
	if got := inSession(nil, "writable-kernel-files"); got.code != 125 || !strings.Contains(got.out, "enableWeakerNestedSandbox") {
		t.Errorf("moat session must refuse and name the switch: exit %d\n%s", got.code, got.out)
	}
	bestEffortSession := func(args ...string) result { return inSession([]string{"--best-effort"}, args...) }
	if got := bestEffortSession("writable-kernel-files"); !strings.Contains(got.out, "not enforced: proc:") {
		t.Errorf("moat session --best-effort must say it shows the host's /proc: exit %d\n%s", got.code, got.out)
	}
	f.attackWith(bestEffortSession, []string{"writable-kernel-files"}, nil)
	f.attackWith(bestEffortSession, []string{"write", f.target, "x"}, func() { must(t, os.WriteFile(f.target, []byte(targetText), 0o644)) })
	if got := bestEffortSession("unshare-user"); got.escaped() {
		t.Errorf("ESCAPE: a user namespace in a host-proc session:\n%s", got.out)
	}
}

// A container whose cgroups are read-only, as root: the limits fall to
// rlimits (as for an unprivileged user), doctor says so, a CPU rate is
// refused, and a fork bomb is still held.
func TestDoctorReadOnlyCgroups(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		testutil.Unavailable(t, "no unshare(1)")
	}
	f := makeFixture(t)
	ctr := f.inContainer(false, true)
	rep, got := f.doctor(ctr)
	if ok, fix, found := rep.check("cgroups (limits)"); !found || ok || fix == "" {
		t.Errorf("read-only cgroups must be reported with a fix: %+v\n%s", rep.Checks, got.out)
	}
	// No cgroup for the run, so no eBPF layer: doctor says so, and moat
	// runs with the network namespace alone, as without eBPF (every run
	// was refused: found on the cgroup v2 machine of make test-vm).
	if ok, _, found := rep.check("eBPF network filter (root)"); !found || ok {
		t.Errorf("the eBPF layer needs a cgroup for the run, and none can be made: %+v\n%s", rep.Checks, got.out)
	}
	// As root no rlimit holds a process count (the kernel exempts root
	// from RLIMIT_NPROC: a fork bomb ran unbounded, found by an attack
	// pass): moat refuses, says why, and runs with the limit off or with
	// best effort, saying what it skipped.
	limited := f.moatSettings(map[string]any{"limits": map[string]any{"pids": 64}})
	if run := ctr(moatBin, "run", "--settings", limited, "--", "true"); run.code != 125 || !strings.Contains(run.out, "moat.limits.pids") {
		t.Errorf("a process limit no cgroup can hold as root must be refused: exit %d\n%s", run.code, run.out)
	}
	if run := ctr(moatBin, "run", "--best-effort", "--settings", limited, "--", "true"); run.code != 0 || !strings.Contains(run.out, "process limit") {
		t.Errorf("--best-effort runs without the process limit and says so: exit %d\n%s", run.code, run.out)
	}
	unlimited := f.moatSettings(map[string]any{"limits": map[string]any{"pids": "unlimited"}})
	if run := ctr(moatBin, "run", "--settings", unlimited, "--", "sh", "-c", "grep 'Max data size' /proc/self/limits"); run.code != 0 || strings.Contains(run.out, "unlimited") {
		t.Errorf("with read-only cgroups the memory limit falls to RLIMIT_DATA: exit %d\n%s", run.code, run.out)
	}
	cpu := f.moatSettings(map[string]any{"limits": map[string]any{"cpu": 0.5, "pids": "unlimited"}})
	if run := ctr(moatBin, "run", "--settings", cpu, "--", "true"); run.code != 125 || !strings.Contains(run.out, "moat.limits.cpu") {
		t.Errorf("a CPU rate no cgroup can hold must be refused: exit %d\n%s", run.code, run.out)
	}
}

const denyMountsEnv = "MOAT_TEST_DENY_MOUNTS"

// noMounts runs bin args with every mount operation refused.
func (f *fixture) noMounts(bin string, args ...string) result {
	f.t.Helper()
	return f.execEnv(append(f.env(), denyMountsEnv+"=1"), self, append([]string{bin}, args...)...)
}

// A container that allows user namespaces but refuses mounts (AppArmor's
// docker-default with seccomp unconfined): moat run refuses, naming it;
// --best-effort gets the no-namespace tier, whose attacks fail.
func TestDoctorNoMounts(t *testing.T) {
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock: the no-namespace tier has nothing to confine with")
	}
	f := makeFixture(t)
	if got := f.noMounts(self, "unshare-user"); !got.escaped() {
		t.Fatalf("the emulation must leave user namespaces allowed:\n%s", got.out)
	}
	rep, got := f.doctor(f.noMounts)
	if got.code != 1 || rep.Tier != "unavailable" || !strings.Contains(rep.Refusal, "mounts") || rep.BestEffortTier != "no-namespace" {
		t.Fatalf("moat doctor where mounts are refused: exit %d, %+v\n%s", got.code, rep, got.out)
	}
	if run := f.noMounts(moatBin, "run", "--settings", f.settings, "--", "true"); run.code != 125 || !strings.Contains(run.out, "mounts") {
		t.Errorf("moat run must refuse and say mounts are refused: exit %d\n%s", run.code, run.out)
	}
	bestEffort := func(args ...string) result {
		return f.noMounts(moatBin, append([]string{"run", "--best-effort", "--settings", f.settings, "--", self}, args...)...)
	}
	f.attackWith(bestEffort, []string{"write", f.target, "x"}, func() { must(t, os.WriteFile(f.target, []byte(targetText), 0o644)) })
	f.attackWith(bestEffort, []string{"read", f.secret}, nil)
}

// Reading a hidden file is refused (it reads as empty) and reported, for a
// denyRead file, a file in a default secrets directory and a listing of
// that directory; other reads are not reported. Without moat each read
// gets the secret.
func TestHiddenReadsReported(t *testing.T) {
	f := newFixture(t)
	key := filepath.Join(f.home, ".ssh", "id_ed25519")
	for _, tc := range []struct {
		args   []string
		target string
		names  bool // the listing shows names (a default secrets directory's, empty)
	}{
		{[]string{"read", f.secret}, f.secret, false},
		{[]string{"read", key}, key, false},
		{[]string{"list", filepath.Dir(key)}, filepath.Dir(key), true},
	} {
		got := f.sandboxed(tc.args...)
		if (got.escaped() && !tc.names) || strings.Contains(got.out, secretText) {
			t.Errorf("ESCAPE: %v under moat:\n%s", tc.args, got.out)
		}
		if !strings.Contains(got.out, "deny file-read "+tc.target+" (") {
			t.Errorf("%v: the read is not reported:\n%s", tc.args, got.out)
		}
		if base := f.direct(tc.args...); !base.escaped() {
			t.Errorf("%v must succeed without moat:\n%s", tc.args, base.out)
		}
	}
	if got := f.sandboxed("read", f.target); !got.escaped() || strings.Contains(got.out, "deny file-read") {
		t.Errorf("a readable file must read, unreported:\n%s", got.out)
	}
}
