//go:build linux

package privtests

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// cgroup2Mount is where the cgroup2 hierarchy is mounted here: beside the
// v1 controllers (/sys/fs/cgroup/unified) or alone (/sys/fs/cgroup).
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var found []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		for i, x := range fs {
			if x == "-" && i+1 < len(fs) && fs[i+1] == "cgroup2" && len(fs) > 4 {
				found = append(found, fs[4])
			}
		}
	}
	for _, want := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		for _, m := range found {
			if m == want {
				return m
			}
		}
	}
	t.Fatalf("no cgroup2 mount here: %v", found)
	return ""
}

// ownCgroup is this process's cgroup v2 directory.
func ownCgroup(t *testing.T, mnt string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return filepath.Join(mnt, p)
		}
	}
	t.Fatalf("no cgroup v2 line in /proc/self/cgroup:\n%s", b)
	return ""
}

// A sandboxed command cannot move itself out of the run's cgroup, which
// holds its limits and, as root, its eBPF network filter. The target is a
// cgroup this user may move its own processes into: as root a new one at
// the top of the hierarchy, as a user with a delegated cgroup (the
// cgroup v2 machine of privileged-tests/vm) a new one beside moat's. And
// moat refuses to make a kernel filesystem writable: --write
// /sys/fs/cgroup/unified let a command as root leave its cgroup (found by
// this project's review).
func TestCgroupEscape(t *testing.T) {
	f := newFixture(t)
	mnt := cgroup2Mount(t)
	// The refusals hold for every user.
	for _, w := range []string{mnt, "/sys/fs/cgroup", "/proc/self", "/sys/fs/bpf"} {
		if _, err := os.Stat(w); err != nil {
			continue
		}
		r := f.exec(moatBin, "run", "--settings", f.settings, "--write", w, "--", "true")
		if r.code != 125 || !strings.Contains(r.out, "kernel") {
			t.Errorf("--write %s: exit %d, want 125 and why (a kernel filesystem):\n%s", w, r.code, r.out)
		}
	}

	var parent string
	switch {
	case root():
		parent = mnt
	case delegated():
		// Once moat has run, this process is in a leaf of the delegated
		// cgroup, moat-leaf: the target goes beside it.
		parent = ownCgroup(t, mnt)
		if filepath.Base(parent) == "moat-leaf" {
			parent = filepath.Dir(parent)
		}
	default:
		t.Log("this user may write no cgroup here (the v1 controllers are root's, cgroup2 is not delegated): the escape cannot be tried, only the refusals above")
		return
	}
	target := filepath.Join(parent, fmt.Sprintf("moat-escape-%d", time.Now().UnixNano()))
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatalf("make the target cgroup: %v", err)
	}
	t.Cleanup(func() { os.Remove(target) })
	script := "echo $$ > " + target + "/cgroup.procs && grep -q '^0::/.*moat-escape' /proc/self/cgroup && echo ESCAPED; cat /proc/self/cgroup"

	got := f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c", script)
	if strings.Contains(got.out, "ESCAPED") {
		t.Errorf("ESCAPE under moat: the command moved itself into %s:\n%s", target, got.out)
	}
	if !strings.Contains(got.out, "0::/") {
		t.Errorf("the command did not run under moat (exit %d):\n%s", got.code, got.out)
	}
	// Without moat the same user moves its own process there.
	base := f.exec("/bin/sh", "-c", script)
	if !strings.Contains(base.out, "ESCAPED") {
		t.Errorf("the move must work without moat (or this test cannot fail):\n%s", base.out)
	}

	// Nor can it change its own cgroup's limits (the files are its user's
	// when the cgroup is delegated), which the same user can do to a
	// cgroup it owns. (cgroup.max.descendants: a limit every cgroup v2
	// has, with or without controllers.)
	raise := func(cg string) string {
		return "echo 7 > " + cg + "/cgroup.max.descendants && grep -qx 7 " + cg + "/cgroup.max.descendants && echo ESCAPED"
	}
	got = f.exec(moatBin, "run", "--settings", f.limitSettings(map[string]any{"pids": 64}), "--", "/bin/sh", "-c",
		raise(mnt+"$(sed -n 's/^0:://p' /proc/self/cgroup)")+"; cat /proc/self/cgroup")
	if strings.Contains(got.out, "ESCAPED") {
		t.Errorf("ESCAPE under moat: the command changed its own cgroup's limit:\n%s", got.out)
	}
	if !strings.Contains(got.out, "0::/") {
		t.Errorf("the command did not run under moat (exit %d):\n%s", got.code, got.out)
	}
	if base := f.exec("/bin/sh", "-c", raise(target)); !strings.Contains(base.out, "ESCAPED") {
		t.Errorf("changing a cgroup's limit must work without moat (or this test cannot fail):\n%s", base.out)
	}
}

// The host's kernel filesystems mounted below a writable root (a chroot's
// proc, a cgroup2 mounted in a build directory) stay read-only: the
// writable bind carried them read-write, and root wrote the host's sysctls
// and left its cgroup through them (found by an attack pass). Without a
// mount namespace (the no-namespace tier) such a root is refused, --write
// / among them (Landlock granted the whole of /proc and /sys).
//
// make test runs it alone (the Makefile's ALONE): its --write / run's git
// audit judges every tree on the host, other tests' plants among them.
func TestKernelMountsInWritableRoot(t *testing.T) {
	testutil.RequireRoot(t) // mounting them takes root
	f := newFixture(t)
	w := filepath.Join(f.root, "w")
	cg, p := filepath.Join(w, "cg"), filepath.Join(w, "p")
	for _, d := range []string{cg, p} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, unix.Mount("none", cg, "cgroup2", 0, ""))
	t.Cleanup(func() { unix.Unmount(cg, unix.MNT_DETACH) })
	must(t, unix.Mount("proc", p, "proc", 0, ""))
	t.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
	// The host's message queues (the sandbox has an IPC namespace of its
	// own): a queue made through this mount was the host's (found by an
	// attack pass).
	mq := filepath.Join(w, "mq")
	must(t, os.MkdirAll(mq, 0o755))
	must(t, unix.Mount("none", mq, "mqueue", 0, ""))
	t.Cleanup(func() { unix.Unmount(mq, unix.MNT_DETACH) })
	queue := filepath.Join(mq, fmt.Sprintf("moat-test-%d", time.Now().UnixNano()))
	t.Cleanup(func() { os.Remove(queue) })

	// Leave the run's cgroup for the hierarchy's root; write a sysctl (its
	// own value back: the host is not changed).
	knob := p + "/sys/vm/swappiness"
	script := "echo $$ > " + cg + "/cgroup.procs && grep -qx '0::/' /proc/self/cgroup && echo ESCAPED-CGROUP; " +
		"v=$(cat " + knob + ") && echo $v > " + knob + " && echo ESCAPED-SYSCTL; " +
		"touch " + queue + "; [ -e " + queue + " ] && echo ESCAPED-MQUEUE; cat /proc/self/cgroup"
	for _, argv := range [][]string{
		{"run", "--settings", f.settings, "--write", w, "--", "/bin/sh", "-c", script},
		{"run", "--settings", f.settings, "--write", "/", "--", "/bin/sh", "-c", script},
	} {
		var got result
		if viaSession() {
			got = f.inSessionVia(nil, []string{"--settings", f.settings, "--write", argv[4]}, argv[6:])
		} else {
			got = f.exec(moatBin, argv...)
		}
		if strings.Contains(got.out, "ESCAPED") {
			t.Errorf("ESCAPE under moat (--write %s): a kernel filesystem below a writable root was writable:\n%s", argv[4], got.out)
		}
		if !strings.Contains(got.out, "0::/") {
			t.Errorf("--write %s: the command did not run under moat (exit %d):\n%s", argv[4], got.code, got.out)
		}
		// The git audit does not walk a kernel filesystem (it read the
		// proc mount's process directories and warned about each).
		if strings.Contains(got.out, "/fdinfo") {
			t.Errorf("--write %s: the git audit walked a proc mount:\n%s", argv[4], got.out)
		}
	}
	if _, err := os.Stat(queue); err == nil {
		t.Errorf("ESCAPE under moat: the command made a message queue of the host's (%s)", queue)
	}
	base := f.exec("/bin/sh", "-c", script)
	if !strings.Contains(base.out, "ESCAPED-CGROUP") || !strings.Contains(base.out, "ESCAPED-SYSCTL") || !strings.Contains(base.out, "ESCAPED-MQUEUE") {
		t.Errorf("without moat root moves itself, writes the sysctl and makes a queue (or this test cannot fail):\n%s", base.out)
	}

	// The no-namespace tier refuses such a root, and /.
	for _, root := range []string{w, "/"} {
		got := f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--write", root, "--", "/bin/sh", "-c", script)
		if strings.Contains(got.out, "ESCAPED") {
			t.Errorf("ESCAPE in the no-namespace tier (--write %s):\n%s", root, got.out)
		}
		if got.code != 125 || !strings.Contains(got.out, "kernel filesystem") {
			t.Errorf("no-namespace tier, --write %s: exit %d, want 125 naming the kernel filesystem:\n%s", root, got.code, got.out)
		}
	}
}
