//go:build linux

package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestMain lets the test binary act as a moat that creates a cgroup and
// then dies without removing it (MOAT_CGROUP_TEST_OWNER=<parent dir>).
// ownerGroup keeps the owner process's Group (and its lock) alive.
var ownerGroup *Group

func TestMain(m *testing.M) {
	if dir := os.Getenv("MOAT_CGROUP_TEST_OWNER"); dir != "" {
		g, err := (&Manager{Dir: dir}).Create("")
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(g.Path())
		// Reachable for ever: an unreachable Group's directory is closed
		// by its finalizer, and the lock with it (under load the GC ran
		// and CleanStale removed a "live" cgroup: a CI flake).
		ownerGroup = g
		select {} // hold the lock until killed
	}
	os.Exit(m.Run())
}

func TestFindMount(t *testing.T) {
	const (
		hybrid = `25 1 0:23 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:5 - cgroup2 cgroup2 rw,nsdelegate
27 25 0:25 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
`
		pure = `30 1 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
		odd = `31 1 0:26 / /run/my\040cgroup rw - cgroup2 none rw
`
		both = `40 1 0:26 / /mnt/other rw - cgroup2 none rw
` + pure
	)
	for _, tc := range []struct {
		name, info, want string
	}{
		{"hybrid", hybrid, "/sys/fs/cgroup/unified"},
		{"pure v2", pure, "/sys/fs/cgroup"},
		{"escaped path", odd, "/run/my cgroup"},
		{"prefers the standard place", both, "/sys/fs/cgroup"},
		{"none", "1 0 0:1 / / rw - ext4 /dev/sda rw\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := findMount(strings.NewReader(tc.info))
			if tc.want == "" {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("findMount = %q, %v; want ErrUnsupported", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("findMount = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"moat", "a1b2", "run-1.2_x"} {
		if err := checkName("id", ok); err != nil {
			t.Errorf("checkName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", ".hidden", "a/b", "../x", "a b", strings.Repeat("x", 200)} {
		if err := checkName("id", bad); err == nil {
			t.Errorf("checkName(%q) accepted it", bad)
		}
	}
}

// testManager returns a Manager for a parent cgroup private to this test,
// removed at the end.
func testManager(t *testing.T) *Manager {
	t.Helper()
	testutil.RequireRoot(t)
	m, err := New(fmt.Sprintf("moat-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_")))
	if err != nil {
		testutil.Unavailable(t, "no cgroup2 hierarchy: %v", err)
	}
	t.Cleanup(func() {
		if err := rmdirTree(m.Dir, time.Now().Add(5*time.Second)); err != nil {
			t.Errorf("remove %s: %v", m.Dir, err)
		}
	})
	return m
}

// startIn starts a long sleep inside g with CLONE_INTO_CGROUP.
func startIn(t *testing.T, g *Group) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	if err := cmd.Start(); err != nil {
		testutil.Unavailable(t, "start with CLONE_INTO_CGROUP: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// cgroupOf returns the cgroup2 path of pid relative to the mount.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			return rest
		}
	}
	t.Fatalf("pid %d has no cgroup2 line", pid)
	return ""
}

// waitKilled waits for cmd and checks that SIGKILL ended it.
func waitKilled(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("sleep ended with %v, want SIGKILL", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sleep still running")
	}
}

func TestCreateRemove(t *testing.T) {
	m := testManager(t)
	mnt, _ := Mountpoint()
	g, err := m.Create("")
	if err != nil {
		t.Fatal(err)
	}
	if g.FD() < 0 {
		t.Fatal("no fd")
	}
	if _, err := m.Create(filepath.Base(g.Path())); !errors.Is(err, os.ErrExist) {
		t.Errorf("second Create of the same id = %v, want ErrExist", err)
	}
	cmd := startIn(t, g)
	if got, want := cgroupOf(t, cmd.Process.Pid), strings.TrimPrefix(g.Path(), mnt); got != want {
		t.Fatalf("child is in %q, want %q", got, want)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	waitKilled(t, cmd)
	if _, err := os.Stat(g.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cgroup still there: %v", err)
	}
	if g.FD() != -1 {
		t.Error("FD after Remove is not -1")
	}
	if err := g.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

// TestCreatePrefix: an id ending in "-" is the prefix of a random one.
func TestCreatePrefix(t *testing.T) {
	m := testManager(t)
	a, err := m.Create("4242-")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Remove()
	b, err := m.Create("4242-")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove()
	na, nb := filepath.Base(a.Path()), filepath.Base(b.Path())
	if !strings.HasPrefix(na, "4242-") || len(na) != len("4242-")+16 || na == nb {
		t.Errorf("prefixed ids %q and %q", na, nb)
	}
	if _, err := m.Create(".x-"); err == nil {
		t.Error("a prefix starting with '.' was accepted")
	}
}

// TestRemoveNested removes a cgroup whose process moved into a child
// cgroup of its own.
func TestRemoveNested(t *testing.T) {
	m := testManager(t)
	g, err := m.Create("nested")
	if err != nil {
		t.Fatal(err)
	}
	cmd := startIn(t, g)
	sub := filepath.Join(g.Path(), "inner", "deeper")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(sub, "cgroup.procs"), fmt.Sprint(cmd.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	waitKilled(t, cmd)
	if _, err := os.Stat(g.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cgroup still there: %v", err)
	}
}

// TestKillEach covers kernels without cgroup.kill.
func TestKillEach(t *testing.T) {
	m := testManager(t)
	g, err := m.Create("")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove()
	a, b := startIn(t, g), startIn(t, g)
	if err := killEach(g.Path()); err != nil {
		t.Fatal(err)
	}
	waitKilled(t, a)
	waitKilled(t, b)
	if b, err := os.ReadFile(filepath.Join(g.Path(), "cgroup.freeze")); err == nil && strings.TrimSpace(string(b)) != "0" {
		t.Errorf("cgroup left frozen: %q", b)
	}
}

func TestCleanStale(t *testing.T) {
	m := testManager(t)
	live, err := m.Create("live")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	liveCmd := startIn(t, live)

	// A run whose moat closed the cgroup without removing it.
	closed, err := m.Create("closed")
	if err != nil {
		t.Fatal(err)
	}
	closedCmd := startIn(t, closed)
	closed.Close()

	// A run whose moat was killed: another process holds the lock until
	// SIGKILL.
	owner := exec.Command(os.Args[0], "-test.run=^$")
	owner.Env = append(os.Environ(), "MOAT_CGROUP_TEST_OWNER="+m.Dir)
	out, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, m.Dir) {
		_ = owner.Process.Kill()
		t.Fatalf("owner said %q, %v", line, err)
	}
	crashed := strings.TrimSpace(line)

	// While the owner lives, its cgroup is not stale.
	removed, err := m.CleanStale()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{closed.Path()}; fmt.Sprint(removed) != fmt.Sprint(want) {
		t.Fatalf("CleanStale removed %v, want %v", removed, want)
	}
	waitKilled(t, closedCmd)

	_ = owner.Process.Kill()
	_ = owner.Wait()
	removed, err = m.CleanStale()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{crashed}; fmt.Sprint(removed) != fmt.Sprint(want) {
		t.Fatalf("CleanStale removed %v, want %v", removed, want)
	}

	// The live run is untouched.
	if err := liveCmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("live run's process: %v", err)
	}
	if _, err := os.Stat(live.Path()); err != nil {
		t.Fatal(err)
	}
}

// TestCreateRace runs Create against a concurrent CleanStale loop: every
// Group it returns must still exist and be usable.
func TestCreateRace(t *testing.T) {
	m := testManager(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				_, _ = m.CleanStale()
			}
		}
	}()
	var groups []*Group
	for range 50 {
		g, err := m.Create("")
		if err != nil {
			t.Error(err)
			break
		}
		groups = append(groups, g)
	}
	close(stop)
	<-done
	for _, g := range groups {
		if _, err := os.Stat(filepath.Join(g.Path(), "cgroup.procs")); err != nil {
			t.Errorf("created cgroup is gone: %v", err)
		}
		if err := g.Remove(); err != nil {
			t.Error(err)
		}
	}
}
