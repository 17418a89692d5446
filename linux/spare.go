//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/runtime/enforce"
)

// A spare is a stage 2 a long-lived supervisor (moat serve) starts before
// the run that takes it: the exec of moat's binary, the user namespace and
// its maps, the mount, pid, ipc, uts and network namespaces and the fork of
// init, about 4 ms of a run's critical path here, are done between runs.
// Its init waits for the run's descriptors 0, 1, 2 (nsinit.ReqStdio), then
// for the plan as any stage 2 does; nothing in it depends on the run until
// then. A spare serves one run only, and only the user's own sandbox in
// namespaces, not a session; a run with cgroups (as root the eBPF one and
// the limits', a delegated one) moves both of its processes into them
// before init is given anything to start.
//
// It is only as old as spareMaxAge, and a change to the supervisor's mount
// table since it was made (mount, unmount, a propagated mount: the kernel's
// event on /proc/self/mountinfo) discards it: its mount namespace is a copy
// of the table as it was, and the plan, made from the host's table when a
// run comes, must describe the namespace stage 2 mounts in.
type spare struct {
	cmd  *exec.Cmd
	init int // init's pid (the relay's child; cmd's own without a pid namespace)
	// initFD is a pidfd of init, opened while init was known to be the
	// relay's child: it says when init has ended, after which its pid may
	// be any other process's (join must then move nothing).
	initFD   *os.File
	planW    *os.File
	sync     *os.File
	syncConn syscall.RawConn
	flags    uintptr
	// mounts is /proc/self/mountinfo, opened before the spare was started
	// (a raw descriptor: in Go's poller, epoll would consume the change).
	mounts int
	made   time.Time
	state  string // serverState when it was started
}

// spareMaxAge bounds how long a spare waits for a run.
const spareMaxAge = 30 * time.Second

// spares is an enforcer's spare (at most one) and its making.
type spares struct {
	mu     sync.Mutex
	sp     *spare
	making bool
	closed bool
	timer  *time.Timer
	// made counts the spares made and taken (tests).
	made, taken int
}

// mountsChanged reports whether the mount table changed since f was opened
// (or last polled): poll on /proc/self/mountinfo reports POLLPRI then.
func mountsChanged(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
	n, err := sys.RetryValue(func() (int, error) { return unix.Poll(p, 0) })
	return err != nil || n > 0 && p[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0
}

// take hands the spare for flags to a launch, or nil and why not: none
// (""), another's flags, too old, or the mount table changed.
func (s *spares) take(flags uintptr) (*spare, string) {
	s.mu.Lock()
	sp := s.sp
	if sp == nil {
		s.mu.Unlock()
		return nil, ""
	}
	if sp.flags != flags {
		s.mu.Unlock()
		return nil, "other namespaces"
	}
	s.sp = nil
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.mu.Unlock()
	why := ""
	switch {
	case time.Since(sp.made) > spareMaxAge:
		why = "too old"
	case mountsChanged(sp.mounts):
		why = "the mount table changed"
	}
	unix.Close(sp.mounts)
	sp.mounts = -1
	if why == "" && sp.ended() {
		why = "it ended (killed, or out of memory)"
	}
	if why != "" {
		go sp.discard()
		return nil, why
	}
	s.mu.Lock()
	s.taken++
	s.mu.Unlock()
	return sp, ""
}

// refill makes a spare for flags in the background, unless one is being
// made or a fresh one for these flags waits; one for other flags is
// replaced.
func (s *spares) refill(flags uintptr) {
	s.mu.Lock()
	if s.closed || s.making || s.sp != nil && s.sp.flags == flags {
		s.mu.Unlock()
		return
	}
	old := s.sp
	s.sp = nil
	s.making = true
	s.mu.Unlock()
	if old != nil {
		old.discard()
	}
	go func() {
		sp, err := startSpare(flags)
		s.mu.Lock()
		s.making = false
		if err != nil || s.closed || s.sp != nil {
			s.mu.Unlock()
			if sp != nil {
				sp.discard()
			}
			return
		}
		s.sp = sp
		s.made++
		s.timer = time.AfterFunc(spareMaxAge, func() {
			s.mu.Lock()
			if s.sp != sp {
				s.mu.Unlock()
				return
			}
			s.sp, s.timer = nil, nil
			s.mu.Unlock()
			sp.discard()
		})
		s.mu.Unlock()
	}()
}

// close discards the spare; none is made after it.
func (s *spares) close() {
	s.mu.Lock()
	s.closed = true
	sp := s.sp
	s.sp = nil
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.mu.Unlock()
	if sp != nil {
		sp.discard()
	}
}

// counts are the spares made and taken so far.
func (s *spares) counts() (made, taken int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.made, s.taken
}

// discard ends a spare no run took: its init reads EOF where it waits for
// the descriptors and exits, and is reaped.
func (sp *spare) discard() {
	sp.planW.Close()
	sp.sync.Close()
	if sp.mounts >= 0 {
		unix.Close(sp.mounts)
		sp.mounts = -1
	}
	if sp.initFD != nil {
		sp.initFD.Close()
	}
	_ = sp.cmd.Process.Kill()
	_ = sp.cmd.Wait()
}

// serverState is what a stage 2 inherits from this process that its user
// may change from outside it while it runs (prlimit, renice, chrt, ionice,
// taskset, choom, a move to another cgroup), as moat serve compares a
// caller's with its own (shell/api sameProcess): a spare started before
// such a change would carry the old value into the run, where a stage 2
// started for the run would have the new one. "" if it cannot be read,
// which no spare matches.
//
// It is the calling thread's: nice value, scheduling, I/O priority, CPU
// affinity, personality and v1 cgroups are a thread's own, and a child
// inherits those of the thread that cloned it (startSpare holds its thread
// for both). The main thread's (/proc/self) let a spare started from a
// thread reniced alone be taken once the threads agreed again, its command
// at that thread's priority (attack pass 102).
func serverState() string {
	var b strings.Builder
	for _, f := range []string{"/proc/thread-self/cgroup", "/proc/thread-self/oom_score_adj", "/proc/thread-self/personality"} {
		t, err := os.ReadFile(f)
		if err != nil {
			return ""
		}
		b.Write(t)
	}
	st, err := os.ReadFile("/proc/thread-self/stat")
	if err != nil {
		return ""
	}
	// nice, rt_priority and policy: the 19th, 40th and 41st fields.
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	if len(f) < 39 {
		return ""
	}
	fmt.Fprintf(&b, "%s %s %s\n", f[16], f[37], f[38])
	prio, _, e := unix.Syscall(unix.SYS_IOPRIO_GET, 1 /* IOPRIO_WHO_PROCESS */, 0, 0)
	if e != 0 {
		return ""
	}
	var cpus unix.CPUSet
	if unix.SchedGetaffinity(0, &cpus) != nil {
		return ""
	}
	fmt.Fprintf(&b, "%d %v\n", prio, cpus)
	for i := 0; i < 16; i++ { // RLIM_NLIMITS
		var l unix.Rlimit
		if unix.Prlimit(0, i, nil, &l) != nil {
			return ""
		}
		fmt.Fprintf(&b, "%d %d ", l.Cur, l.Max)
	}
	return b.String()
}

// changed reports whether this process changed since the spare started,
// in what a stage 2 inherits (serverState): the launch that took it then
// starts a stage 2 of its own (start, beside the plan).
func (sp *spare) changed() bool { return serverState() != sp.state }

// startSpare starts a spare stage 2 with the clone flags flags: the user's
// own sandbox (its uid and gid mapped to themselves, setgroups denied), no
// cgroup to join.
func startSpare(flags uintptr) (*spare, error) {
	// One thread for the state and the clone: the spare is what this
	// thread is (serverState).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mounts, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/proc/self/mountinfo", Err: err}
	}
	state := serverState()
	if state == "" {
		unix.Close(mounts)
		return nil, errors.New("this process's state is unknown")
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		unix.Close(mounts)
		return nil, err
	}
	defer null.Close()
	ln := &launcher{l: &enforce.Launch{}, cgroupFD: -1}
	if err := ln.makeChannels(); err != nil {
		unix.Close(mounts)
		return nil, err
	}
	cmd, err := spawnStage2([3]*os.File{null, null, null}, []*os.File{ln.planR, ln.childSync}, -1, flags, true)
	ln.planR.Close()
	ln.childSync.Close()
	if err != nil {
		ln.planW.Close()
		ln.sync.Close()
		unix.Close(mounts)
		return nil, err
	}
	sp := &spare{cmd: cmd, planW: ln.planW, sync: ln.sync, syncConn: ln.syncConn, flags: flags, mounts: mounts, made: time.Now(), state: state}
	ln.cmd = cmd
	if err := ln.mapUserns(); err != nil {
		sp.discard()
		return nil, err
	}
	// Init says when it waits: forked, so that a run that must move the
	// sandbox into its cgroups moves both processes, before init has any
	// child of its own.
	m, err := nsinit.ReadMessageConn(ln.syncConn)
	if err == nil {
		m.CloseFDs()
		if m.Type != nsinit.MsgSpare {
			err = fmt.Errorf("message %d (%s)", m.Type, m.Text)
		}
	}
	if err == nil {
		sp.init, sp.initFD, err = spareInit(cmd.Process.Pid, flags)
	}
	if err != nil {
		sp.discard()
		return nil, fmt.Errorf("a spare stage 2: %w", err)
	}
	return sp, nil
}

// spareInit is the pid of the init a spare's stage 2 (pid) forked: its
// only child, or itself without a pid namespace; and a pidfd of it, opened
// while it is that child (read again after the open), so that the pidfd
// is init's and not that of a process given its pid after it ended.
func spareInit(pid int, flags uintptr) (int, *os.File, error) {
	p := strconv.Itoa(pid)
	child := func() (int, error) {
		if flags&unix.CLONE_NEWPID == 0 {
			return pid, nil // this process's own child: its pid is held until it is reaped
		}
		b, err := os.ReadFile("/proc/" + p + "/task/" + p + "/children")
		if err != nil {
			return 0, err
		}
		f := strings.Fields(string(b))
		if len(f) != 1 {
			return 0, fmt.Errorf("stage 2 has %d children, not its init", len(f))
		}
		return strconv.Atoi(f[0])
	}
	init, err := child()
	if err != nil {
		return 0, nil, err
	}
	fd, err := sys.RetryValue(func() (int, error) { return unix.PidfdOpen(init, 0) })
	if err != nil {
		return 0, nil, sys.Named("pidfd_open", err)
	}
	f := os.NewFile(uintptr(fd), "moat-spare-init")
	if again, err := child(); err != nil || again != init {
		f.Close()
		return 0, nil, fmt.Errorf("the init of stage 2 (pid %d) ended as it started", init)
	}
	return init, f, nil
}

// ended reports whether the spare's init has ended (its pidfd is readable
// then): its pid is free, and may be another process's.
func (sp *spare) ended() bool {
	if sp.initFD == nil {
		return true
	}
	p := []unix.PollFd{{Fd: int32(sp.initFD.Fd()), Events: unix.POLLIN}}
	n, err := sys.RetryValue(func() (int, error) { return unix.Poll(p, 0) })
	return err != nil || n > 0
}

// join moves the spare's two processes into the run's cgroups (as a
// stage 2 of the run's own starts in them): done before init has a child.
// A cgroup takes pids, not pidfds: init is moved only while its pidfd says
// it runs, so that a spare whose init ended (killed, out of memory) does not
// move the process that holds its pid now into the run's cgroups, where it
// would stay, filtered and limited, past the run, until the next moat's
// stale-cgroup sweep killed it (attack pass 102). The relay is this
// process's child: its pid is held until it is reaped (discard).
func (sp *spare) join(add func(pid int) error) error {
	if sp.ended() {
		return errors.New("the spare stage 2's init has ended")
	}
	for _, pid := range []int{sp.cmd.Process.Pid, sp.init} {
		if err := add(pid); err != nil {
			return err
		}
		if sp.init == sp.cmd.Process.Pid {
			break
		}
	}
	if sp.ended() {
		// It ended while it was moved: what the pid named is unknown.
		return errors.New("the spare stage 2's init ended as it joined the run's cgroups")
	}
	return nil
}

// sendStdio hands the run's descriptors to the spare's init (ReqStdio): it
// fails when the spare is gone.
func (sp *spare) sendStdio(stdio [3]*os.File, goR, lock *os.File) error {
	fds := []int{int(stdio[0].Fd()), int(stdio[1].Fd()), int(stdio[2].Fd())}
	var flags uint32
	if goR != nil {
		fds, flags = append(fds, int(goR.Fd())), flags|nsinit.ReqStdioGo
	}
	if lock != nil {
		fds, flags = append(fds, int(lock.Fd())), flags|nsinit.ReqStdioLock
	}
	rights := unix.UnixRights(fds...)
	var serr error
	err := sp.syncConn.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), nsinit.StdioRequest(flags), rights, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		return !errors.Is(serr, unix.EAGAIN)
	})
	runtime.KeepAlive(stdio)
	runtime.KeepAlive(goR)
	runtime.KeepAlive(lock)
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("hand the run's descriptors to a spare stage 2: %w", sys.Named("sendmsg", err))
	}
	return nil
}
