//go:build linux

package privtests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// limitSettings writes the fixture's settings with moat.limits.
func (f *fixture) limitSettings(limits map[string]any) string {
	f.t.Helper()
	b, _ := json.Marshal(map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{f.work}, "denyWrite": []string{}},
		"moat":       map[string]any{"limits": limits},
	})
	p := filepath.Join(f.root, fmt.Sprintf("limits-%d.json", time.Now().UnixNano()))
	must(f.t, os.WriteFile(p, b, 0o644))
	return p
}

// limitAttack runs an attack under a limit (it must be held) and without
// moat (it must run to the end); as root, where a cgroup holds the limit,
// moat must also report it.
func (f *fixture) limitAttack(limits map[string]any, report string, args ...string) result {
	f.t.Helper()
	got := f.sandboxedWith(f.limitSettings(limits), args...)
	if got.escaped() {
		f.t.Errorf("the limit did not hold: %v\n%s", args, got.out)
	} else if !strings.Contains(got.out, "blocked:") {
		f.t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
	}
	if report != "" && !strings.Contains(got.out, report) {
		f.t.Errorf("moat did not report %q:\n%s", report, got.out)
	}
	// The control runs up to three times: the CPU rate attack's share of
	// a CPU is the machine's to give, and a moment of heavy load (CI's
	// other suites) left a spinner without moat 11% of a CPU.
	base := f.direct(args...)
	for try := 1; try < 3 && !base.escaped(); try++ {
		base = f.direct(args...)
	}
	if !base.escaped() {
		f.t.Errorf("the attack must run to the end without moat (or this test cannot fail): %v\n%s", args, base.out)
	}
	return got
}

func root() bool { return os.Geteuid() == 0 }

// delegated: this user's cgroup v2 is delegated to it, so a cgroup holds
// its limits as root's do (privileged-tests/vm sets it: this project's
// machine kind has no such cgroup; moat must then use it, or the tests
// fail).
func delegated() bool { return !root() && os.Getenv("MOAT_EXPECT_CGROUP") == "delegated" }

// cgroupHeld: a cgroup holds the run's limits here.
func cgroupHeld() bool { return root() || delegated() }

// cgroupOnly is a report only a cgroup can give (the kernel counts refused
// forks and OOM kills there; an rlimit's refusals are seen by the process
// alone).
func cgroupOnly(s string) string {
	if cgroupHeld() {
		return s
	}
	return ""
}

func TestLimitForkBomb(t *testing.T) {
	f := newFixture(t)
	f.limitAttack(map[string]any{"pids": 64}, cgroupOnly("limit pids 64 reached"), "forkbomb", "200")
}

func TestLimitMemoryBalloon(t *testing.T) {
	f := newFixture(t)
	// (Not much smaller: rootless, RLIMIT_DATA counts the Go runtime's own
	// reservations, and a Go program under 64 MiB cannot start. Not much
	// larger either: in make test-vm's emulated machine each MiB filled
	// costs.)
	got := f.limitAttack(map[string]any{"memory": "128MiB"}, cgroupOnly("limit memory 128 MiB reached"), "balloon", "512")
	// moat itself lived to print the command's status.
	if got.code != 1 {
		t.Errorf("moat's exit = %d, want the attack's 1:\n%s", got.code, got.out)
	}
}

// A memory limit holds what the command stores outside its processes'
// own memory too: files in the sandbox's /tmp and /dev/shm (tmpfs pages),
// a memfd, System V shared memory. A cgroup counts all of them; rootless,
// where RLIMIT_DATA holds the limit and counts none of them, moat bounds
// each tmpfs by the limit and seccomp refuses memfds and System V segments
// past it (an attack pass stored 1.8 GiB in /tmp under a 64 MiB limit).
func TestLimitMemoryStores(t *testing.T) {
	f := newFixture(t)
	limits := map[string]any{"memory": "128MiB"} // (TestLimitMemoryBalloon says why this size)
	for _, c := range []struct {
		name, sandboxed, direct string
		rlimitOnly              bool // a check of the limit, not a fill: a cgroup counts the pages instead
	}{
		{"tmp", "file:/tmp", "file:" + f.work, false},
		{"dev-shm", "file:/dev/shm", "file:/dev/shm", false},
		{"memfd", "memfd", "memfd", false},
		{"sysv-shm", "shm", "shm", false},
		{"grows-down mapping", "growsdown", "growsdown", false},
		{"main stack", "stack", "stack", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.rlimitOnly && cgroupHeld() {
				t.Skip("a cgroup holds the memory limit here, and counts the stack's pages")
			}
			got := f.sandboxedWith(f.limitSettings(limits), "storefill", c.sandboxed, "256")
			// (With a cgroup, its OOM kill may take the attack's parent
			// instead of the child that stores: pages in a tmpfs or a
			// memfd are no process's. The report says it ran and hit the
			// limit.)
			oomKilled := cgroupHeld() && strings.Contains(got.out, "limit memory 128 MiB reached")
			if got.escaped() {
				t.Errorf("256 MiB stored under a 128 MiB limit:\n%s", got.out)
			} else if !strings.Contains(got.out, "blocked:") && !oomKilled {
				t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
			} else if r := cgroupOnly("limit memory 128 MiB reached"); r != "" && !strings.Contains(got.out, r) {
				t.Errorf("moat did not report %q:\n%s", r, got.out)
			}
			if base := f.direct("storefill", c.direct, "256"); !base.escaped() {
				t.Errorf("the store must fill without moat (or this test cannot fail):\n%s", base.out)
			}
		})
	}
}

func TestLimitCPURate(t *testing.T) {
	f := newFixture(t)
	if !cgroupHeld() {
		// Only a cgroup throttles a rate: rootless, moat refuses the
		// policy rather than run without it.
		got := f.sandboxedWith(f.limitSettings(map[string]any{"cpu": 0.05}), "spin", "0.1")
		if got.code != 125 || !strings.Contains(got.out, "moat.limits.cpu") {
			t.Errorf("a CPU rate moat cannot hold must be refused (exit 125), got %d:\n%s", got.code, got.out)
		}
		return
	}
	f.limitAttack(map[string]any{"cpu": 0.05}, "limit cpu 0.05 CPUs reached", "spin", "1.5")
}

func TestLimitCPUTime(t *testing.T) {
	f := newFixture(t)
	// The attack counts CPU time, not wall time: on a busy machine a
	// spinner of 6 wall seconds got less than the limit.
	got := f.sandboxedWith(f.limitSettings(map[string]any{"cpuTime": "1s"}), "burn", "3")
	if got.escaped() || got.code != 128+9 || !strings.Contains(got.out, "limit cpuTime 1s reached") {
		t.Errorf("a 1s CPU time limit must kill a burner of 3s of CPU and say so, got exit %d:\n%s", got.code, got.out)
	}
	if base := f.direct("burn", "2"); !base.escaped() {
		t.Errorf("the burner must run to the end without moat:\n%s", base.out)
	}
}

func TestLimitFileSize(t *testing.T) {
	f := newFixture(t)
	big := filepath.Join(f.work, "big")
	f.limitAttack(map[string]any{"fileSize": "1MiB"}, "", "bigfile", big, "8")
	// A program that does not ignore SIGXFSZ dies of it, and moat says why.
	got := f.exec(moatBin, "run", "--settings", f.limitSettings(map[string]any{"fileSize": "1MiB"}), "-c", "head -c 8388608 /dev/zero > "+big)
	if got.code != 128+25 || !strings.Contains(got.out, "limit fileSize 1 MiB reached") {
		t.Errorf("head writing 8 MiB past a 1 MiB limit: exit %d, want 153 and the report:\n%s", got.code, got.out)
	}
	if fi, err := os.Stat(big); err != nil || fi.Size() > 1<<20 {
		t.Errorf("the file grew past the limit: %v %v", fi, err)
	}
}

// With no settings, the default limits apply: the process count, memory
// (half the machine, at most 16 GiB) and file size a laptop user would
// pick. (A 4096-process fork bomb takes a minute on this machine kind, so
// the test reads the limits rather than hitting them.)
func TestLimitDefaults(t *testing.T) {
	f := newFixture(t)
	cgFile := filepath.Join(f.work, "cgroup")
	script := "cat /proc/self/limits; cat /proc/self/cgroup > " + cgFile + "; sleep 3"
	done := make(chan result, 1)
	go func() {
		done <- f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c", script)
	}()
	var cgroups string
	for i := 0; i < 100 && cgroups == ""; i++ {
		time.Sleep(50 * time.Millisecond)
		if b, err := os.ReadFile(cgFile); err == nil && strings.Contains(string(b), "\n") {
			cgroups = string(b)
		}
	}
	if cgroupHeld() {
		// The cgroups hold the process count and memory.
		want := map[string]string{"pids": "4096", "memory": ""}
		for _, line := range strings.Split(cgroups, "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			switch parts[1] {
			case "pids":
				if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/pids", parts[2], "pids.max")); err == nil {
					want["pids"] = "got " + strings.TrimSpace(string(b))
				}
			case "memory":
				if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")); err == nil {
					want["memory"] = "got " + strings.TrimSpace(string(b))
				}
			case "":
				mnt := cgroup2Mount(t)
				if b, err := os.ReadFile(filepath.Join(mnt, parts[2], "pids.max")); err == nil {
					want["pids"] = "got " + strings.TrimSpace(string(b))
				}
				if b, err := os.ReadFile(filepath.Join(mnt, parts[2], "memory.max")); err == nil {
					want["memory"] = "got " + strings.TrimSpace(string(b))
				}
			}
		}
		if want["pids"] != "got 4096" {
			t.Errorf("pids.max of the run's cgroup: %q, want 4096 (cgroups:\n%s)", want["pids"], cgroups)
		}
		if !strings.HasPrefix(want["memory"], "got ") || want["memory"] == "got max" || want["memory"] == "got 9223372036854771712" {
			t.Errorf("the run's memory limit: %q, want half the machine (cgroups:\n%s)", want["memory"], cgroups)
		}
	}
	got := <-done
	if got.code != 0 {
		t.Fatalf("exit %d:\n%s", got.code, got.out)
	}
	limit := func(name string) string {
		for _, l := range strings.Split(got.out, "\n") {
			if strings.HasPrefix(l, name) {
				return strings.Fields(strings.TrimPrefix(l, name))[0]
			}
		}
		return "?"
	}
	if v := limit("Max file size"); v != "17179869184" {
		t.Errorf("RLIMIT_FSIZE = %s, want 16 GiB:\n%s", v, got.out)
	}
	if !cgroupHeld() {
		if v := limit("Max processes"); v != "4096" {
			t.Errorf("RLIMIT_NPROC = %s, want 4096:\n%s", v, got.out)
		}
		if v := limit("Max data size"); v == "unlimited" {
			t.Errorf("RLIMIT_DATA unlimited: no memory limit:\n%s", got.out)
		}
	}
}
