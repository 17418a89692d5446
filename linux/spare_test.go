//go:build linux

package linux

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/runtime/enforce"
)

// fakeSpare is a spare whose process is a sleep: take's checks, without a
// stage 2.
func fakeSpare(t *testing.T, flags uintptr, made time.Time) *spare {
	t.Helper()
	mounts, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", testutil.SleepMarker(300))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	sp := &spare{cmd: cmd, init: cmd.Process.Pid, initFD: os.NewFile(uintptr(fd), "pidfd"), planW: w, flags: flags, mounts: mounts, made: made, state: serverState()}
	ln := &launcher{}
	if err := ln.makeChannels(); err != nil {
		t.Fatal(err)
	}
	ln.planR.Close()
	ln.planW.Close()
	ln.childSync.Close()
	sp.sync, sp.syncConn = ln.sync, ln.syncConn
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return sp
}

// TestSpareTake: a spare serves only a launch of its clone flags, one
// launch, and not once it is older than spareMaxAge; a stale one is ended.
func TestSpareTake(t *testing.T) {
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNET)
	s := &spares{}
	sp := fakeSpare(t, flags, time.Now())
	s.sp = sp
	if got, why := s.take(unix.CLONE_NEWUSER); got != nil || why != "other namespaces" {
		t.Fatalf("a spare with other clone flags: take = %v, %q", got, why)
	}
	if got, _ := s.take(flags); got != sp {
		t.Fatalf("take = %v, want the spare", got)
	}
	if got, why := s.take(flags); got != nil || why != "" {
		t.Fatalf("one spare taken twice: take = %v, %q", got, why)
	}
	old := fakeSpare(t, flags, time.Now().Add(-spareMaxAge-time.Second))
	s.sp = old
	if got, why := s.take(flags); got != nil || why != "too old" {
		t.Fatalf("a spare older than spareMaxAge: take = %v, %q", got, why)
	}
	if !exited(old.cmd, 10*time.Second) {
		t.Fatal("the stale spare still runs")
	}
}

// TestSpareTakeAfterMountChange: a change to the mount table after the
// spare was made (its mount namespace is a copy of the table before it)
// discards it.
func TestSpareTakeAfterMountChange(t *testing.T) {
	testutil.RequireRoot(t)
	flags := uintptr(unix.CLONE_NEWUSER)
	s := &spares{}
	sp := fakeSpare(t, flags, time.Now())
	s.sp = sp
	dir := filepath.Join(t.TempDir(), "m")
	os.Mkdir(dir, 0o755)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	if got, why := s.take(flags); got != nil || why != "the mount table changed" {
		t.Fatalf("a spare made before a mount, taken after it: take = %v, %q", got, why)
	}
	if !exited(sp.cmd, 10*time.Second) {
		t.Fatal("the stale spare still runs")
	}
	// Without a change since it was made, a spare is taken.
	sp2 := fakeSpare(t, flags, time.Now())
	s.sp = sp2
	if got, why := s.take(flags); got != sp2 {
		t.Fatalf("a fresh spare was not taken: %q", why)
	}
}

// exited waits up to d for cmd's process to be gone (reaped by discard).
func exited(cmd *exec.Cmd, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cmd.Process.Signal(syscall.Signal(0)) != nil {
			return true
		}
	}
	return false
}

// TestSpareTakeAfterProcessChange: a spare made before this process's
// limits or scheduling changed (what a stage 2 inherits) is told changed
// (the launch that took it then starts a stage 2 of its own).
func TestSpareTakeAfterProcessChange(t *testing.T) {
	flags := uintptr(unix.CLONE_NEWUSER)
	var old unix.Rlimit
	if err := unix.Prlimit(0, unix.RLIMIT_CORE, nil, &old); err != nil {
		t.Fatal(err)
	}
	if old.Max == 0 {
		t.Skip("RLIMIT_CORE's hard limit is 0: no other soft limit to set")
	}
	sp := fakeSpare(t, flags, time.Now())
	// The soft limit only (a user may raise it back to the hard one).
	other := unix.Rlimit{Cur: 0, Max: old.Max}
	if old.Cur == 0 {
		other.Cur = 1
	}
	if err := unix.Prlimit(0, unix.RLIMIT_CORE, &other, nil); err != nil {
		t.Fatal(err)
	}
	defer unix.Prlimit(0, unix.RLIMIT_CORE, &old, nil)
	if !sp.changed() {
		t.Fatal("a spare made before a limit changed is not told changed")
	}
	unix.Prlimit(0, unix.RLIMIT_CORE, &old, nil)
	if sp.changed() {
		t.Fatal("a spare is told changed with the limits as they were")
	}
}

// TestSpareJoinAfterInitEnded: a spare whose init ended while it waited
// (killed, out of memory) is not joined to a run's cgroups nor taken. Its
// pid is free then, and another process may hold it: join wrote that pid
// to the run's cgroup.procs and moved an unrelated process into the run's
// eBPF and limit cgroups, where it stayed after the run and the next
// moat's stale-cgroup sweep killed it (attack pass 102).
func TestSpareJoinAfterInitEnded(t *testing.T) {
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET)
	sp, err := startSpare(flags)
	if err != nil {
		t.Skipf("no spare stage 2 here: %v", err)
	}
	taken := false
	defer func() {
		if !taken {
			sp.discard()
		}
	}()
	if sp.init == sp.cmd.Process.Pid {
		t.Fatal("a spare with a pid namespace: init is the relay")
	}
	if err := unix.Kill(sp.init, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The relay reaps init and exits: init's pid is free from then on.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(sp.cmd.Process.Pid) + "/stat")
		if err == nil && strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the spare's relay did not exit after its init was killed: %s", b)
		}
	}
	var moved []int
	err = sp.join(func(pid int) error { moved = append(moved, pid); return nil })
	if err == nil || slices.Contains(moved, sp.init) {
		t.Fatalf("join of a spare whose init ended: err %v, moved %v (init was %d): the pid may be another process's now", err, moved, sp.init)
	}
	s := &spares{sp: sp}
	taken = true // take ends a spare it does not hand out
	if got, why := s.take(flags); got != nil || why == "" {
		if got != nil {
			got.discard()
		}
		t.Fatalf("a spare whose init ended was taken: %v, %q", got, why)
	}
}

// TestSpareMadeOnAnotherThread: a spare inherits the nice value,
// scheduling, I/O priority, CPU affinity and v1 cgroups of the thread that
// started it, not the main thread's. One started from a thread reniced
// alone (renice -p TID; moat serve refuses callers only while its threads
// differ) carried that thread's priority into a later run once the threads
// agreed again: a caller at nice 0 had its command at nice -10 (attack
// pass 102). Here a thread at nice +5 starts the spare: it is told changed
// to a thread at this process's nice value.
func TestSpareMadeOnAnotherThread(t *testing.T) {
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID)
	mine, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	type made struct {
		sp  *spare
		err error
	}
	ch := make(chan made, 1)
	go func() {
		// The thread ends with this goroutine (locked, never unlocked),
		// so its nice value goes with it.
		runtime.LockOSThread()
		if err := unix.Setpriority(unix.PRIO_PROCESS, 0, 20-mine+5); err != nil {
			ch <- made{err: err}
			return
		}
		sp, err := startSpare(flags)
		ch <- made{sp, err}
	}()
	m := <-ch
	if m.err != nil {
		t.Skipf("no spare stage 2 here: %v", m.err)
	}
	sp := m.sp
	defer sp.discard()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(sp.init) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if f[16] == strconv.Itoa(20-mine) {
		t.Fatalf("the spare's init has this thread's nice value (%s): the premise failed", f[16])
	}
	if !sp.changed() {
		t.Fatalf("a spare at nice %s, started by a thread reniced alone, is not told changed to a thread at nice %d: a run would take it", f[16], 20-mine)
	}
}

// TestSpareTakenNotStartedEnded: a launch that took a spare and failed
// before it started (prepare's later steps) ends it on Close: its relay is
// this process's child and was never reaped (a zombie of moat serve's, and
// its pidfd open, for each such failure).
func TestSpareTakenNotStartedEnded(t *testing.T) {
	sp, err := startSpare(uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID))
	if err != nil {
		t.Skipf("no spare stage 2 here: %v", err)
	}
	ln := &launcher{l: &enforce.Launch{}, spare: sp, cgroupFD: -1}
	ln.planW, ln.sync, ln.syncConn = sp.planW, sp.sync, sp.syncConn
	ln.Close()
	if sp.cmd.ProcessState == nil {
		sp.discard()
		t.Fatal("a spare taken by a launch that never started was not ended by its Close: its relay is left unreaped")
	}
}
