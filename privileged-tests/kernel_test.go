//go:build linux

package privtests

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// As root, uid 0 in the sandbox is the host's root for the permission
// checks of /proc/sys: the kernel's knobs must be read-only inside.
func TestKernelKnobsAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t)
	for _, knob := range []string{"/proc/sys/vm/panic_on_oom", "/proc/sys/kernel/printk_ratelimit", "/proc/sys/net/core/somaxconn"} {
		if _, err := os.Stat(knob); err != nil {
			continue
		}
		f.attack([]string{"proc-write", knob}, nil)
	}
}

// Nothing in /proc (but the command's own processes) or /sys is writable
// inside, as root: the whole tree is checked, not a list.
func TestNoWritableKernelFilesAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t)
	f.attack([]string{"writable-kernel-files"}, nil)
}

// The device nodes in moat's /dev are the host's inodes: their mode and
// times are the host's. As root, chmod 0600 /dev/null in the sandbox made
// the host's /dev/null unusable for every other user (found by an attack
// pass); moat binds them read-only (opening them for writing needs no
// write access to the mount), and they still work.
func TestDeviceNodesReadOnly(t *testing.T) {
	f := newFixture(t)
	f.attack([]string{"dev-meta"}, nil)
	r := f.exec(moatBin, "run", "--settings", f.settings, "-c", "echo x > /dev/null && head -c 4 /dev/zero | od -An -tx1 && head -c 4 /dev/urandom > /dev/null && echo ok")
	if r.code != 0 || !strings.Contains(r.out, "00 00 00 00") || !strings.Contains(r.out, "ok") {
		t.Fatalf("moat's /dev must keep working (exit %d):\n%s", r.code, r.out)
	}
}

// The sandbox's init keeps its limits and priority: a command of the same
// uid lowered its descriptor limit (prlimit --pid 1), and init is what ends
// the tree and removes the placeholders when the supervisor dies (found by
// an attack pass). Without moat the same calls work on a process of the
// user's.
func TestInitKeepsItsLimits(t *testing.T) {
	f := newFixture(t)
	for _, mode := range []string{"prlimit-pid", "renice-pid"} {
		got := f.sandboxed(mode, "1")
		if got.escaped() {
			t.Errorf("ESCAPE under moat: %s 1\n%s", mode, got.out)
		} else if !strings.Contains(got.out, "blocked:") {
			t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
		}
		victim := exec.Command("sleep", "30")
		must(t, victim.Start())
		base := f.direct(mode, strconv.Itoa(victim.Process.Pid))
		victim.Process.Kill()
		victim.Wait()
		if !base.escaped() {
			t.Errorf("without moat %s must work on a process of the user's:\n%s", mode, base.out)
		}
	}
}

// personality(ADDR_NO_RANDOMIZE) would turn ASLR off for what the command
// runs next.
func TestPersonality(t *testing.T) {
	f := newFixture(t)
	f.attack([]string{"personality"}, nil)
}

// Socket families nothing here needs cannot be created. Each family is
// attacked under moat only if this user can create it without moat.
func TestSocketFamilies(t *testing.T) {
	f := newFixture(t)
	fams := []struct{ fam, typ, proto int }{
		{unix.AF_VSOCK, unix.SOCK_STREAM, 0},
		{unix.AF_ALG, unix.SOCK_SEQPACKET, 0},
		{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_KOBJECT_UEVENT},
		{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT},
		{unix.AF_PACKET, unix.SOCK_DGRAM, 0},
		{unix.AF_KEY, unix.SOCK_RAW, 2},
		{unix.AF_XDP, unix.SOCK_RAW, 0},
		{unix.AF_TIPC, unix.SOCK_RDM, 0},
	}
	tried := 0
	for _, x := range fams {
		args := []string{"socket", fmt.Sprint(x.fam), fmt.Sprint(x.typ), fmt.Sprint(x.proto)}
		if !f.direct(args...).escaped() {
			continue // this kernel or user cannot create it anyway
		}
		tried++
		got := f.sandboxed(args...)
		if got.escaped() {
			t.Errorf("ESCAPE under moat: %v\n%s", args, got.out)
		}
	}
	if tried == 0 {
		testutil.Unavailable(t, "no test family can be created here without moat")
	}
	// What is needed still works.
	for _, x := range [][3]int{{unix.AF_INET, unix.SOCK_STREAM, 0}, {unix.AF_INET6, unix.SOCK_DGRAM, 0}, {unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}} {
		args := []string{"socket", fmt.Sprint(x[0]), fmt.Sprint(x[1]), fmt.Sprint(x[2])}
		if got := f.sandboxed(args...); !got.escaped() && !strings.Contains(got.out, "address family not supported") {
			t.Errorf("a needed socket is refused under moat: %v\n%s", args, got.out)
		}
	}
}

// The same without user namespaces: /proc is the host's, and Landlock
// grants no write there.
func TestNoUsernsKernelKnobsAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock")
	}
	f := makeFixture(t)
	f.attackWith(f.bestEffort, []string{"proc-write", "/proc/sys/vm/panic_on_oom"}, nil)
}
