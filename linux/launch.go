//go:build linux

package linux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/bpf/cgroup"
	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/internal/planted"
	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/linux/journal"
	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/linux/seccomp"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// launcher is one sandbox, from planning to clean-up (an enforce.Process).
// Its lifecycle is one list of steps: prepare, start (plan and stage 2 in
// parallel), sync (plan sent, eBPF attached, command released), then Wait;
// terminate on any failure; Close once, whatever happened.
type launcher struct {
	l     *enforce.Launch
	pol   *policy.Policy
	nons  bool // the no-namespace tier
	trace func(string)
	progs *sharedPrograms // the enforcer's loaded eBPF set, or nil (newKernelFilter); non-nil: a long-lived supervisor
	// stdioCopy copies between the caller's files and the pipes the
	// command got in their place (stdio.go), nil if none.
	stdioCopy *stdioCopy

	// made by prepare
	planR, planW *os.File
	sync         *os.File // supervisor's end of the SEQPACKET socket
	childSync    *os.File
	syncConn     syscall.RawConn // sync's, in Go's poller
	kf           *kernelFilter
	dg           *cgroup.Group // the run's cgroup in one delegated to this user (no eBPF)
	goR, goW     *os.File      // the command waits for a byte before exec (eBPF)
	lock         *os.File      // the cgroup's lock, kept by init
	cgroupFD     int
	joined       bool // stage 2 joined its cgroups during the user-namespace handshake

	// made by planning
	fp  *fsPlan
	jr  *journal.Journal
	ctx context.Context // the launch's: a wait for the journal's lock gives up with it
	// asWorker runs the plan's looks and makes and removes the placeholders
	// with the client's credentials (moatd), on the calling thread.
	asWorker *ascred.Borrower
	plan     *nsinit.Plan
	net      *network
	tmpDir   string // the no-namespace tier's TMPDIR
	dirs     *resolver
	planErr  error
	planned  chan struct{}
	// attached delivers the eBPF attach result (nil channel: no eBPF).
	attached chan error
	abort    chan struct{}

	cmd     *exec.Cmd
	readers sync.WaitGroup

	// Reads of hidden paths: the sentinels made, the watches stage 2 made
	// (wd -> hidden path) and its inotify instance.
	sentinels   []string
	sentReady   bool // the sentinels' directory was swept and made
	watchMu     sync.Mutex
	watchPath   map[int]string
	inotifyFD   int    // 0: none
	watchBuf    []byte // drainWatches' buffer, under watchMu
	watchStop   chan struct{}
	holder      int           // pid sharing the instance (holdInotify), 0: none
	holderReady chan struct{} // closed once holdInotify is done

	ready     chan struct{} // closed once the mounts are done or the launch failed
	readyOnce sync.Once

	mu         sync.Mutex
	setupErr   error
	exitStatus *unix.WaitStatus
	skipped    []enforce.Skip

	observed atomic.Bool
	writes   atomic.Int64
	// killed: Kill ended the run (without a pid namespace init then exits
	// without a word of the command, which had run).
	killed atomic.Bool
	closed atomic.Bool

	exe string // this moat binary (ssh's ProxyCommand inside)

	// spares are the enforcer's (a long-lived supervisor's), nil if none;
	// spare is the one this launch took.
	spares *spares
	spare  *spare
	fits   bool // a spare fits this launch: Close has the next one made

	// Resource limits: the effective values, the cgroups that hold them
	// (root), and the counters at the start.
	eff      policy.Limits
	lim      *limiter
	limStart counters

	// A session (MODE_SESSION): requests go to stage 2 on sessionW; each
	// command's messages reach its handle.
	session  bool
	sessionR *os.File // stage 2's end (fd 7)
	sessionW *os.File
	sessMu   sync.Mutex
	nextID   uint32
	cmds     map[uint32]*sessionCmd
	ended    chan struct{} // closed when the message reader stops
	// reaped is closed once the session's stage 2 is waited for, with its
	// state in reapedState (what a session lost under load says of it).
	reaped      chan struct{}
	reapedState *os.ProcessState
}

func (ln *launcher) step(what string) {
	if ln.trace != nil {
		ln.trace(what)
	}
}

// journalDir is the journal this launch's placeholders go through. moatd
// keeps one per client uid: a journal's global lock is held until a
// sandbox's stage 2 reports its mounts, and stage 2 runs as the client by
// then, so a client that stops its own stage 2 holds that lock; with a
// journal of its own it holds up only its own runs.
func (ln *launcher) journalDir() string {
	dir := filepath.Join(ln.l.StateDir, "journal")
	if id := ln.l.As; id != nil {
		return filepath.Join(dir, "uid-"+strconv.Itoa(id.Uid))
	}
	return dir
}

// prepare makes what stage 2 is started with.
func (ln *launcher) prepare() error {
	if err := checkAs(ln.l, ln.pol, ln.nons); err != nil {
		return err
	}
	if err := checkProjectBinding(ln.pol, ln.nons); err != nil {
		return err
	}
	st := ln.l.StateDir
	if err := os.MkdirAll(st, 0o700); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if err := journal.SweepDir(ln.journalDir()); err != nil {
		ln.l.Log.Debug("sweep", "err", err)
	}
	var err error
	if ln.session {
		sfds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socketpair: %w", sys.Named("socketpair", err))
		}
		// Requests carry a command's environment: let them be large.
		_ = unix.SetsockoptInt(sfds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
		ln.sessionW = os.NewFile(uintptr(sfds[0]), "moat-session")
		ln.sessionR = os.NewFile(uintptr(sfds[1]), "moat-session-child")
		ln.cmds = map[uint32]*sessionCmd{}
	}
	// As root, the sandbox starts in a cgroup of its own that eBPF filters.
	ln.cgroupFD = -1
	kfErr := kernelFilterSupported(filepath.Join(st, "cache"))
	if ln.pol.Net.Shared && kfErr != nil {
		return &enforce.UnsupportedFeatureError{Feature: "eBPF network confinement", Need: "moat.shareNetwork runs the command in the host's network namespace, which only eBPF can confine", Err: kfErr}
	}
	if kfErr == nil {
		if ln.kf, err = newKernelFilter(ln.progs); err != nil {
			return err
		}
	}
	if err := ln.prepareLimits(); err != nil {
		return err
	}
	if ln.fits = ln.spareFits(); ln.fits {
		var why string
		if ln.spare, why = ln.spares.take(cloneFlags(ln.pol)); why != "" {
			ln.step("spare stage 2 not taken: " + why)
		}
	}
	if ln.spare == nil {
		if err := ln.makeChannels(); err != nil {
			return err
		}
	} else {
		ln.planW, ln.sync, ln.syncConn = ln.spare.planW, ln.spare.sync, ln.spare.syncConn
	}
	grp := ln.runGroup()
	if grp == nil {
		return nil
	}
	if clone3Works() {
		ln.cgroupFD = grp.FD()
	}
	if ln.kf != nil {
		if ln.goR, ln.goW, err = os.Pipe(); err != nil {
			return fmt.Errorf("pipe: %w", err)
		}
	}
	// fd 6 is the cgroup's lock: init keeps it (and so does the clean-up it
	// runs if moat dies), so a later moat's stale-cgroup sweep never kills
	// a sandbox that is still cleaning up.
	lockFD, err := unix.FcntlInt(uintptr(grp.FD()), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return fmt.Errorf("dup the cgroup lock: %w", err)
	}
	ln.lock = os.NewFile(uintptr(lockFD), "moat-cgroup-lock")
	return nil
}

// makeChannels makes the plan's pipe and the socket to stage 2.
func (ln *launcher) makeChannels() error {
	var err error
	if ln.planR, ln.planW, err = os.Pipe(); err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	// This end is non-blocking, in Go's poller: the reader parks instead
	// of holding a thread in recvmsg for the whole run (a thread the
	// runtime's monitor must take a P back from, which keeps the monitor
	// waking every 20 µs a little longer), and Close ends a read. Stage
	// 2's end blocks.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("socketpair: %w", sys.Named("socketpair", err))
	}
	if err := unix.SetNonblock(fds[1], false); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return fmt.Errorf("socketpair: %w", sys.Named("fcntl", err))
	}
	ln.sync = os.NewFile(uintptr(fds[0]), "moat-sync")
	ln.childSync = os.NewFile(uintptr(fds[1]), "moat-sync-child")
	if ln.syncConn, err = ln.sync.SyscallConn(); err != nil {
		return fmt.Errorf("socketpair: %w", err)
	}
	return nil
}

// spareFits: a launch a spare stage 2 can serve (spare.go), in a
// long-lived supervisor: the user's own sandbox, in namespaces, no session,
// and no cgroup to join (as root the eBPF one and the v1 limit cgroups, or
// a cgroup delegated to the user). A spare joins them by pid, a move that
// waits for an RCU grace period (8-15 ms here, against the 3-4 ms a spare
// saves), where a stage 2 of the run's own starts in its cgroup
// (CLONE_INTO_CGROUP) and moves itself into the v1 ones (mapUserns).
func (ln *launcher) spareFits() bool {
	return ln.spares != nil && !ln.nons && !ln.session && ln.l.As == nil &&
		ln.runGroup() == nil && (ln.lim == nil || ln.lim.v2)
}

// joinSpare moves a process of a spare stage 2 into the run's cgroups: the
// eBPF or delegated one, and the v1 limit cgroups.
func (ln *launcher) joinSpare(pid int) error {
	if g := ln.runGroup(); g != nil {
		if err := g.Add(pid); err != nil {
			return fmt.Errorf("move the sandbox into its cgroup: %w", err)
		}
	}
	return ln.lim.add(pid)
}

// runGroup is the run's cgroup v2: the eBPF filter's as root, one in the
// cgroup delegated to this user, or nil.
func (ln *launcher) runGroup() *cgroup.Group {
	if ln.kf != nil {
		return ln.kf.group
	}
	return ln.dg
}

// memoryByRlimit: a memory limit is set and no cgroup holds it (the
// rlimit holds a process's own memory, not a tmpfs's pages, a memfd's or
// System V shared memory's: moat bounds those itself).
func (ln *launcher) memoryByRlimit() bool {
	return ln.eff.Memory > 0 && !ln.lim.holds("memory")
}

// memoryBound is the memory limit the settings set (not moat's default,
// half the machine), where an rlimit holds it: memfds and System V IPC are
// then bounded too (seccomp.Options.MemoryBound); 0 otherwise. Under the
// default, a guard against a runaway process rather than a bound, memfds
// work (browsers and their test drivers need them).
func (ln *launcher) memoryBound() int64 {
	if ln.pol.Limits.Memory > 0 && ln.memoryByRlimit() {
		return ln.eff.Memory
	}
	return 0
}

// prepareLimits resolves the limits and makes the cgroups that hold them.
func (ln *launcher) prepareLimits() error {
	ln.eff = ln.pol.Limits.Effective(totalMemory())
	v2dir := ""
	if ln.kf != nil {
		v2dir = ln.kf.group.Path()
	} else if d := delegatedFor(ln.eff); d != "" {
		// A user whose cgroup was delegated to it: the run gets a cgroup
		// there, as root's runs get the eBPF one.
		g, err := delegatedGroup(d, limitControllers(ln.eff))
		if err != nil {
			return &enforce.SetupError{Step: "resource limits (the delegated cgroup " + d + ")", Err: err}
		}
		ln.dg, v2dir = g, g.Path()
	}
	lm, err := newLimiter(ln.eff, v2dir, "run-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err != nil {
		return &enforce.SetupError{Step: "resource limits", Err: err}
	}
	ln.lim = lm
	if ln.eff.CPU > 0 && !lm.holds("cpu") {
		if !ln.pol.BestEffort {
			return &enforce.UnsupportedFeatureError{Feature: "a CPU rate limit (moat.limits.cpu)", Need: "only a cgroup can throttle a rate, and moat may write none here: run as root, or as a user whose cgroup v2 is delegated to it (systemd-run --user --scope -p Delegate=yes moat ...), or drop moat.limits.cpu, or --best-effort to run without it"}
		}
		ln.skipped = append(ln.skipped, enforce.Skip{Protection: enforce.ProtectionLimitCPU, Reason: "the CPU rate limit (no cgroup moat may write)"})
	}
	if ln.eff.Pids > 0 && !lm.holds("pids") && os.Geteuid() == 0 && !ln.nons {
		// The kernel exempts root from RLIMIT_NPROC: as root only a cgroup
		// holds a process count (a fork bomb ran unbounded where the
		// cgroupfs is read-only, as in Docker: found by an attack pass).
		if !ln.pol.BestEffort {
			return &enforce.UnsupportedFeatureError{Feature: "a process limit (moat.limits.pids) as root", Need: "the kernel exempts root from RLIMIT_NPROC, so only a cgroup can hold it, and none is writable here (a read-only cgroupfs): give moat a writable cgroup, set moat.limits.pids to \"unlimited\" (a container's own pids limit then holds the tree), or --best-effort to run without it"}
		}
		ln.skipped = append(ln.skipped, enforce.Skip{Protection: enforce.ProtectionLimitPids, Reason: "the process limit (as root only a cgroup holds it, and none is writable here)"})
	}
	ln.limStart = lm.counters()
	return nil
}

// start plans while stage 2 starts, then sends it the plan and releases the
// command. When it returns nil the command runs; on error the caller
// terminates and closes.
func (ln *launcher) start() error {
	ln.step("run")
	ln.planned = make(chan struct{})
	go func() {
		defer close(ln.planned)
		ln.planErr = ln.makePlan()
	}()
	if ln.kf != nil {
		// The eBPF filter loads while stage 2 starts and mounts; the
		// command waits for it just before exec (fd 5).
		ln.attached = make(chan error, 1)
		ln.abort = make(chan struct{})
		go ln.attachFilter()
	}
	var startErr error
	// A spare's process state is compared with this process's beside the
	// plan (0.1-0.2 ms here, off the critical path): a spare found stale
	// then is ended and the run starts a stage 2 of its own, and the pipes
	// of stdio stay open here until that is known.
	var spareState chan bool
	if sp := ln.spare; sp != nil {
		spareState = make(chan bool, 1)
		go func() { spareState <- !sp.changed() }()
		err := ln.spare.join(ln.joinSpare)
		if err == nil {
			err = ln.spare.sendStdio(ln.l.Stdio, ln.goR, ln.lock)
		}
		if err == nil {
			ln.cmd = ln.spare.cmd
			ln.joined = true
			ln.step("spare stage 2 taken")
			ln.l.Log.Debug("spare stage 2 taken", "pid", ln.cmd.Process.Pid)
		} else {
			// It is gone (killed, out of memory), or could not join the
			// run's cgroups: a stage 2 of the run's own.
			ln.l.Log.Debug("spare stage 2", "err", err)
			sp := ln.spare
			ln.spare, ln.planW, ln.sync, ln.syncConn = nil, nil, nil, nil
			go sp.discard()
			if startErr = ln.makeChannels(); startErr == nil {
				startErr = ln.startStage2()
			}
		}
	} else {
		startErr = ln.startStage2()
	}
	if spareState == nil {
		ln.stdioCopy.started() // stage 2 holds the pipes' ends now
	}
	ln.childSync.Close()
	ln.planR.Close()
	if ln.sessionR != nil {
		ln.sessionR.Close()
	}
	ln.step("stage 2 started")
	<-ln.planned
	ln.step("plan ready")
	if spareState != nil {
		if ok := <-spareState; !ok && ln.spare != nil && startErr == nil {
			ln.step("spare stage 2 not taken: this process changed (its limits, cgroup or scheduling)")
			sp := ln.spare
			ln.spare, ln.planW, ln.sync, ln.syncConn, ln.cmd, ln.joined = nil, nil, nil, nil, nil, false
			go sp.discard() // (it has the descriptors, never the plan: it exits)
			if startErr = ln.makeChannels(); startErr == nil {
				startErr = ln.startStage2()
			}
			ln.childSync.Close()
			ln.planR.Close()
		}
		ln.stdioCopy.started()
	}
	switch {
	case startErr != nil && ln.planErr != nil:
		return ln.planErr
	case startErr != nil:
		return ln.startError(startErr)
	case ln.planErr != nil:
		return ln.planErr
	}
	if err := ln.ctx.Err(); err != nil {
		return err // given up while planning (moatd: the client went away)
	}
	return ln.release()
}

// startStage2 clones stage 2: the binary again, as moat-init, in the new
// namespaces (none in the no-namespace tier), into the run's cgroup.
func (ln *launcher) startStage2() error {
	// fds 3 (plan), 4 (sync), 5 (go, with eBPF), 6 (cgroup lock), 7 (session).
	extra := []*os.File{ln.planR, ln.childSync, ln.goR, ln.lock}
	if ln.session {
		extra = append(extra, ln.sessionR)
	}
	for len(extra) > 0 && extra[len(extra)-1] == nil {
		extra = extra[:len(extra)-1]
	}
	// No namespace flag here: stage 2 makes its namespaces itself (see
	// enter_namespaces in nsinit.c), so that Go starts it with a vfork-style
	// clone; a clone with CLONE_NEWUSER would copy this process's whole
	// address space.
	var flags uintptr
	if !ln.nons {
		flags = cloneFlags(ln.pol)
	}
	var env []string
	if id := ln.l.As; id != nil && id.Umask != nil {
		// moatd's client's umask, not the daemon's: stage 2 takes it
		// first thing (its files and the command's are the client's).
		env = append(env, fmt.Sprintf("%s=%o", nsinit.EnvUmask, *id.Umask&0o777))
	}
	cmd, err := spawnStage2(ln.l.Stdio, extra, ln.cgroupFD, flags, false, env...)
	if err != nil {
		return err
	}
	ln.cmd = cmd
	// Only stage 2 holds its end now: its exit ends what is read below.
	ln.childSync.Close()
	if ln.nons {
		return nil
	}
	return ln.mapUserns()
}

// spawnStage2 starts moat's binary as stage 2 with stdio and the extra
// descriptors from fd 3, into the cgroup cgroupFD (-1: this one's), to make
// the namespaces of flags (0: none); a spare waits for its stdio.
func spawnStage2(stdio [3]*os.File, extra []*os.File, cgroupFD int, flags uintptr, spare bool, env ...string) (*exec.Cmd, error) {
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{nsinit.Argv0},
		Env:         []string{nsinit.EnvVar + "=1"},
		Stdin:       stdio[0],
		Stdout:      stdio[1],
		Stderr:      stdio[2],
		ExtraFiles:  extra,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, UseCgroupFD: cgroupFD >= 0, CgroupFD: cgroupFD},
	}
	if flags != 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%x", nsinit.EnvNSFlags, flags))
	}
	if spare {
		cmd.Env = append(cmd.Env, nsinit.EnvSpare+"=1")
	}
	cmd.Env = append(cmd.Env, env...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd, nil
}

// mapUserns answers stage 2's MsgUserns: the uid and gid maps of its new
// user namespace (the caller's own ids; with Launch.As, the client's uid and
// each of its groups), the limit cgroups joined while stage 2 waits (so init,
// forked next, starts in them), and the ids stage 2 takes. A stage 2 that
// could not make the namespace says why (an errno best effort reacts to).
func (ln *launcher) mapUserns() error {
	m, err := nsinit.ReadMessageConn(ln.syncConn)
	if err != nil {
		return fmt.Errorf("stage 2 ended before its user namespace: %w", err)
	}
	m.CloseFDs()
	ln.step("stage 2 in its user namespace")
	switch m.Type {
	case nsinit.MsgUserns:
	case nsinit.MsgError:
		return fmt.Errorf("%s: %w", m.Text, syscall.Errno(m.B))
	default:
		return fmt.Errorf("stage 2 sent message %d before its user namespace", m.Type)
	}
	pid := strconv.Itoa(ln.cmd.Process.Pid)
	write := func(file, data string) error {
		if err := os.WriteFile("/proc/"+pid+"/"+file, []byte(data), 0); err != nil {
			return fmt.Errorf("write the sandbox's %s: %w", file, err)
		}
		return nil
	}
	uid, gid := os.Getuid(), os.Getgid()
	groups := []int{gid}
	ids := []byte(nil)
	if id := ln.l.As; id != nil {
		// moatd: the client's uid and each of its groups map to
		// themselves, so the sandbox has exactly the client's groups and
		// none of root's; stage 2 takes those ids inside.
		uid, gid, groups = id.Uid, id.Gid, identityGroups(id)
		if ids, err = nsinit.IDs(uid, gid, groups); err != nil {
			return err
		}
	} else {
		if err := write("setgroups", "deny"); err != nil {
			return err
		}
		ids, _ = nsinit.IDs(-1, -1, nil)
	}
	var gm strings.Builder
	for _, g := range groups {
		fmt.Fprintf(&gm, "%d %d 1\n", g, g)
	}
	if err := write("uid_map", fmt.Sprintf("%d %d 1\n", uid, uid)); err != nil {
		return err
	}
	if err := write("gid_map", gm.String()); err != nil {
		return err
	}
	ln.step("maps written")
	if g := ln.runGroup(); g != nil && ln.cgroupFD < 0 {
		if err := g.Add(ln.cmd.Process.Pid); err != nil {
			return fmt.Errorf("move the sandbox into its cgroup: %w", err)
		}
	}
	// Stage 2 moves itself into the v1 limit cgroups, through these
	// (nsinit.c, join_cgroups: 8-15 ms less a root run here).
	tasks, err := ln.lim.taskFiles()
	if err != nil {
		return err
	}
	defer func() {
		for _, f := range tasks {
			f.Close()
		}
	}()
	ln.joined = true
	ln.step("cgroups joined")
	if id := ln.l.As; id != nil {
		// Before stage 2 forks anything: what it starts inherits them.
		if err := clientPriority(ln.cmd.Process.Pid, id); err != nil {
			return err
		}
	}
	var rights []byte
	if len(tasks) > 0 {
		fds := make([]int, len(tasks))
		for i, f := range tasks {
			fds[i] = int(f.Fd())
		}
		rights = unix.UnixRights(fds...)
	}
	var serr error
	err = ln.syncConn.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), ids, rights, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		return !errors.Is(serr, unix.EAGAIN)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("answer stage 2: %w", sys.Named("sendmsg", err))
	}
	return nil
}

// joinCgroups moves stage 2 into the run's cgroups it did not start in: the
// eBPF one without clone3 (CLONE_INTO_CGROUP), and the v1 limit cgroups.
func (ln *launcher) joinCgroups(pid int) error {
	if g := ln.runGroup(); g != nil && ln.cgroupFD < 0 {
		if err := g.Add(pid); err != nil {
			return fmt.Errorf("move the sandbox into its cgroup: %w", err)
		}
	}
	return ln.lim.add(pid)
}

// clientPriority gives stage 2 (pid, single-threaded, waiting for its
// ids) moatd's client's nice value and oom_score_adj where they are above
// its own (the daemon's): a user cannot lower its nice value, nor its
// oom_score_adj below what a privileged process set (systemd's
// OOMScoreAdjust=), and a client at nice 15 ran its commands at the
// daemon's 0 (attack pass 105, TestDaemonAttackClientNiceEscaped).
func clientPriority(pid int, id *enforce.Identity) error {
	if id.Nice != nil {
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid)
		if err != nil {
			return fmt.Errorf("the sandbox's nice value: %w", err)
		}
		if *id.Nice > 20-prio {
			if err := unix.Setpriority(unix.PRIO_PROCESS, pid, *id.Nice); err != nil {
				return fmt.Errorf("the sandbox's nice value: %w", err)
			}
		}
	}
	if id.OOMScoreAdj != nil {
		file := "/proc/" + strconv.Itoa(pid) + "/oom_score_adj"
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("the sandbox's oom_score_adj: %w", err)
		}
		if own, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || *id.OOMScoreAdj > own {
			if err := os.WriteFile(file, []byte(strconv.Itoa(*id.OOMScoreAdj)), 0); err != nil {
				return fmt.Errorf("the sandbox's oom_score_adj: %w", err)
			}
		}
	}
	return nil
}

// checkAs refuses what a sandbox for another user (Launch.As) cannot do
// safely: it needs root, the namespaces (the no-namespace tier would run
// the command with the supervisor's ids), and no unix-socket broker (the
// supervisor, as root, would find and open those sockets for the client,
// past directories it cannot search).
func checkAs(l *enforce.Launch, pol *policy.Policy, nons bool) error {
	id := l.As
	if id == nil {
		return nil
	}
	switch {
	case os.Geteuid() != 0:
		return errors.New("enforce.Launch.As: only root may start a sandbox for another user")
	case id.Uid <= 0 || id.Gid < 0:
		return fmt.Errorf("enforce.Launch.As: uid %d gid %d: a sandbox for another user runs as a non-root user", id.Uid, id.Gid)
	case slices.Contains(id.Groups, 0) || id.Gid == 0:
		return fmt.Errorf("enforce.Launch.As: uid %d is in group 0 (root): moatd serves no such user", id.Uid)
	case nons:
		return &enforce.UnsupportedFeatureError{Feature: "the no-namespace tier for another user", Need: "moatd runs a client's sandbox only with every namespace (it would otherwise run with root's credentials)"}
	case len(pol.Net.AllowUnixSockets) > 0 && !pol.Net.AllowAllUnixSockets:
		return errors.New("moat.allowUnixSockets (network.allowUnixSockets): through moatd, the supervisor would find and open these sockets as root for the client, past directories it cannot search: not supported; use allowAllUnixSockets (connections then made as the client) or run moat rootless")
	}
	return nil
}

// checkProjectBinding refuses a project's allowLocalBinding where the
// host's network is shared (the no-namespace tier, moat.shareNetwork): a
// repository's server would listen on the host's ports, not in the
// sandbox's own network namespace.
func checkProjectBinding(pol *policy.Policy, nons bool) error {
	if !pol.Net.AllowLocalBinding || !pol.Net.LocalBindingByProject || !nons && !pol.Net.Shared {
		return nil
	}
	return errors.New("allowLocalBinding comes from the project's settings, and this sandbox shares the host's network (the no-namespace tier or moat.shareNetwork): a repository's server would listen on the host's ports; set it in your own settings (~/.claude/settings.json) or pass --settings")
}

// identityGroups are the primary and supplementary groups of id, once
// each, the primary first.
func identityGroups(id *enforce.Identity) []int {
	out := []int{id.Gid}
	for _, g := range id.Groups {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// observerAs is whom the violation observer looks as (o.look): moatd's
// client; root without capabilities for root's own sandbox, whose command
// is root without any (its user namespace maps root alone), where the
// observer, root with every capability, looked past other users' modes:
// a refused write named the target of a symlink in another user's 0700
// directory, or said whether a file there existed, in the report of a
// command that may not look there (attack pass 111,
// TestObserverLooksAsRootsCommand); nil for a user's own sandbox, whose
// observer is that user.
func (ln *launcher) observerAs() *enforce.Identity {
	if ln.l.As != nil || os.Geteuid() != 0 {
		return ln.l.As
	}
	gs, _ := os.Getgroups()
	return &enforce.Identity{Uid: 0, Gid: os.Getgid(), Groups: gs, Name: "root"}
}

// ids are the uid and gid the sandbox's processes run as.
func (ln *launcher) ids() (uid, gid int) {
	if id := ln.l.As; id != nil {
		return id.Uid, id.Gid
	}
	return os.Getuid(), os.Getgid()
}

// startError says why stage 2 could not start: no user namespace here is
// what best effort reacts to.
func (ln *launcher) startError(err error) error {
	var errno syscall.Errno
	if !ln.nons && errors.As(err, &errno) && (errno == unix.EPERM || errno == unix.EACCES || errno == unix.EINVAL || errno == unix.ENOSPC || errno == unix.EUSERS) {
		return &enforce.UnsupportedFeatureError{
			Feature: "user namespaces",
			Need:    "moat runs nothing unconfined; --best-effort runs the command with Landlock and seccomp only, and says what that leaves out",
			Err:     fmt.Errorf("%w: %w", enforce.ErrNoUserNamespace, err),
		}
	}
	return fmt.Errorf("start the sandbox: %w", err)
}

// release sends the plan and, with eBPF, lets the command exec once the
// filter is attached; then the supervisor reads stage 2's messages.
func (ln *launcher) release() error {
	if !ln.joined {
		// Without namespaces (no user-namespace handshake), stage 2 joins
		// its cgroups here, while it still waits for its plan: nothing
		// runs outside them.
		if err := ln.joinCgroups(ln.cmd.Process.Pid); err != nil {
			return err
		}
	}
	if _, err := ln.planW.Write(ln.plan.Bytes()); err != nil {
		return fmt.Errorf("send the plan to stage 2: %w", err)
	}
	ln.planW.Close()
	if ln.attached != nil {
		err := <-ln.attached
		ln.attached = nil
		if err != nil {
			return err // goW closes in terminate: the command gives up before exec
		}
		if _, err := ln.goW.Write([]byte{'g'}); err != nil {
			return fmt.Errorf("release the command: %w", err)
		}
		ln.goW.Close()
		ln.step("eBPF attached")
	}
	ln.ended = make(chan struct{})
	ln.readers.Add(1)
	go func() {
		defer ln.readers.Done()
		err := ln.readMessages()
		ln.markReady()
		ln.endSession(err)
		close(ln.ended)
	}()
	return nil
}

// attachFilter attaches the eBPF programs: at once with the sandbox's own
// network namespace, once the plan (the host addresses the command may
// reach) is known when it shares the host's.
func (ln *launcher) attachFilter() {
	shared := ln.pol.Net.Shared || ln.nons
	if !shared {
		// The sandbox's own network namespace: the only destinations are
		// the proxy's listeners inside it, fixed addresses, so the
		// programs load (the verifier: a few ms) while the plan is made.
		err := ln.kf.attach(proxyListenerAddrs(), false, ln.pol.Net.AllowLocalBinding, ln.l.Report)
		ln.step("eBPF loaded")
		ln.attached <- err
		return
	}
	<-ln.planned
	select {
	case <-ln.abort:
		ln.attached <- errors.New("launch abandoned")
		return
	default:
	}
	if ln.planErr != nil {
		ln.attached <- ln.planErr
		return
	}
	err := ln.kf.attach(ln.net.kernelAllow(), shared, ln.pol.Net.AllowLocalBinding, ln.l.Report)
	ln.step("eBPF loaded")
	ln.attached <- err
}

// terminate ends a launch that failed part way: stage 2 killed and
// reaped, the planning and the eBPF attach waited for.
func (ln *launcher) terminate() {
	if ln.planW != nil {
		ln.planW.Close() // stage 2 reads an empty plan and exits
	}
	if ln.goW != nil {
		ln.goW.Close()
	}
	if ln.cmd != nil && ln.cmd.ProcessState == nil {
		_ = ln.cmd.Process.Kill()
		_ = ln.cmd.Wait()
	}
	if ln.planned != nil {
		<-ln.planned
	}
	if ln.attached != nil {
		close(ln.abort)
		<-ln.attached
		ln.attached = nil
	}
	ln.sync.Close()
	ln.readers.Wait()
}

// Wait waits for init (and so for the whole process tree), then for the
// last messages.
func (ln *launcher) Wait() (*enforce.Exit, error) {
	err := ln.cmd.Wait()
	ln.step("init reaped")
	ln.stdioCopy.wait() // the command's output, to its last byte, before its exit is told
	// Every process of the sandbox is gone once init is reaped, so the
	// socket reaches EOF after the last message: read them all first.
	done := make(chan struct{})
	go func() { ln.readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		ln.sync.Close()
		<-done
	}
	if ln.jr != nil {
		ln.jr.Unlock() // the sandbox failed before its mounts were in place
	}
	if ln.kf != nil {
		ln.kf.flush()
	}
	ln.drainWatches() // reads of hidden paths, to the last
	ln.mu.Lock()
	setupErr, st := ln.setupErr, ln.exitStatus
	ln.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case setupErr != nil && st == nil:
		return nil, setupErr
	case err != nil && !errors.As(err, &ee):
		return nil, fmt.Errorf("wait for the sandbox: %w", err)
	}
	if setupErr != nil {
		var xe *enforce.ExecError
		if errors.As(setupErr, &xe) || st.Exited() && st.ExitStatus() == 125 {
			return nil, setupErr
		}
	}
	exit := &enforce.Exit{Skipped: ln.skipped}
	defer func() {
		var used time.Duration
		if ps := ln.cmd.ProcessState; ps != nil {
			used = ps.UserTime() + ps.SystemTime()
		}
		for _, v := range append(ln.lim.violations(ln.limStart), exitViolation(exit, ln.eff, used)...) {
			ln.l.Report(v)
		}
	}()
	switch {
	case st != nil && st.Signaled():
		exit.Signal = st.Signal()
		exit.Code = 128 + int(exit.Signal)
	case st != nil:
		exit.Code = st.ExitStatus()
	default:
		// init ended without reporting the command: it was killed.
		ws, _ := ln.cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			exit.Signal = ws.Signal()
		case ln.killed.Load():
			// Without a pid namespace Kill closes init's line to its
			// supervisor: init kills the tree and exits, saying nothing
			// of the command, which may well have run (the git audit
			// must follow: found by an attack pass, a timeout let a
			// planted core.fsmonitor stay).
			exit.Signal = syscall.SIGKILL
		default:
			return nil, &enforce.SetupError{Step: "the sandbox's init exited without running the command"}
		}
		exit.Code = 128 + int(exit.Signal)
	}
	return exit, nil
}

// Signal forwards sig to init, which passes it to the command.
func (ln *launcher) Signal(sig syscall.Signal) error { return ln.cmd.Process.Signal(sig) }

// SyncNetwork (enforce.NetworkSyncer): sharing the host's network, the
// eBPF allow-list holds the loopback destinations the command reaches
// directly; a live update sets it before the proxy's rules change. In the
// sandbox's own network namespace it holds the proxy's listeners only.
func (ln *launcher) SyncNetwork(allowed []string) error {
	if ln.kf == nil || ln.net == nil || !(ln.pol.Net.Shared || ln.nons) {
		return nil
	}
	ln.kf.mu.Lock()
	f := ln.kf.filter
	ln.kf.mu.Unlock()
	if f == nil {
		return errors.New("the eBPF filter is not attached yet: try the update again")
	}
	return f.SetAllowed(ln.net.kernelAllowOf(allowed))
}

// Kill ends the whole process tree: init's death ends the pid namespace;
// without one, init sees its supervisor's end close and kills every
// descendant itself.
func (ln *launcher) Kill() error {
	ln.killed.Store(true)
	if ln.nons {
		var err error
		if cerr := ln.syncConn.Control(func(fd uintptr) { err = unix.Shutdown(int(fd), unix.SHUT_WR) }); cerr != nil {
			return cerr
		}
		return err
	}
	return ln.cmd.Process.Signal(unix.SIGKILL)
}

// Footprint is what the command could write.
func (ln *launcher) Footprint() enforce.Footprint {
	fp := enforce.Footprint{Observed: ln.observed.Load(), Wrote: ln.writes.Load() > 0}
	if ln.fp == nil {
		return fp
	}
	fp.WritableRoots = ln.hostWritableRoots()
	v := ln.fp.view
	fp.ReadOnly = func(p string) bool { ok, _ := v.writable(p); return !ok }
	fp.Hidden = func(p string) bool { ok, _ := v.readable(p); return !ok }
	fp.ReadOnlyPaths = append(fp.ReadOnlyPaths, ln.fp.protected...)
	if jr := ln.jr; jr != nil {
		fp.Placeholder = jr.Holds
	}
	for _, list := range [][]rule{v.denyWrite, v.denyRead, v.protect} {
		for _, r := range list {
			fp.ReadOnlyPaths = append(fp.ReadOnlyPaths, r.path)
		}
	}
	return fp
}

// hostWritableRoots are the host directories the command can write (not
// the run's own /tmp, not moat's state).
func (ln *launcher) hostWritableRoots() []string {
	v := ln.fp.view
	var roots []string
	for _, r := range dedupe(append([]rule(nil), v.allowWrite...)) {
		if lstatKind(r.path) != 'd' || within(r.path, ln.l.StateDir) {
			continue
		}
		if v.privateTmp && within(r.path, "/tmp") {
			continue // the run's own /tmp: gone with it
		}
		if ln.tmpDir != "" && within(r.path, ln.tmpDir) {
			continue
		}
		roots = append(roots, r.path)
	}
	return roots
}

// Close releases what the launch made on the host, once.
func (ln *launcher) Close() error {
	if !ln.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	ln.stdioCopy.started() // (a run that never started: the copying ends)
	for _, f := range []*os.File{ln.planR, ln.planW, ln.sync, ln.childSync, ln.goR, ln.goW, ln.lock, ln.sessionR, ln.sessionW} {
		if f != nil {
			f.Close()
		}
	}
	if ln.spare != nil && ln.cmd == nil {
		// Taken, never started (prepare failed after take): its relay is
		// this process's child, to be reaped, and its pidfd closed.
		ln.spare.discard()
	}
	if ln.net != nil {
		ln.net.close()
		ln.step("network closed")
	}
	// The placeholders go while the watches, the sentinels and the
	// cgroups do: the sandbox is gone (its init reaped), and each is a
	// string of system calls of its own (together 1-3 ms here).
	var jrErr error
	jrDone := make(chan struct{})
	go func() {
		defer close(jrDone)
		if ln.jr != nil {
			jrErr = ln.jr.Close()
			ln.step("placeholders removed")
		}
		if ln.asWorker != nil {
			ln.asWorker.Close() // after the journal: it removes the placeholders as the client
		}
	}()
	ln.closeWatches()
	ln.step("watches closed")
	// The cgroups (limits, eBPF) hold nothing of the sandbox's any more:
	// its init was reaped, and the refusals were flushed before the
	// violations were read. A long-lived supervisor (moatd, moat serve)
	// removes them after answering (about a millisecond here); a run of
	// its own removes them before it exits.
	cgroups := func() {
		ln.lim.destroy()
		if ln.kf != nil {
			ln.kf.close()
		}
		if ln.dg != nil {
			if err := ln.dg.Remove(); err != nil {
				ln.dg.Close() // the next run's sweep removes it
			}
		}
	}
	if ln.progs != nil {
		go cgroups()
	} else {
		cgroups()
		if ln.kf != nil {
			ln.step("eBPF cgroup removed")
		}
	}
	if ln.tmpDir != "" {
		if err := removeRunTree(ln.tmpDir); err != nil {
			errs = append(errs, fmt.Errorf("remove the command's TMPDIR %s: %w", ln.tmpDir, err))
		}
	}
	<-jrDone
	if jrErr != nil {
		errs = append(errs, jrErr)
	}
	if ln.fits {
		// The next launch's stage 2 starts now, between runs.
		ln.spares.refill(cloneFlags(ln.pol))
	}
	return errors.Join(errs...)
}

func (ln *launcher) setErr(err error) {
	ln.mu.Lock()
	if ln.setupErr == nil {
		ln.setupErr = err
	}
	ln.mu.Unlock()
	ln.markReady()
}

// markReady wakes Ready: the mounts are done, or the launch failed, or the
// messages ended.
func (ln *launcher) markReady() {
	ln.readyOnce.Do(func() {
		if ln.ready != nil {
			close(ln.ready)
		}
	})
}

// Ready implements enforce.Readier.
func (ln *launcher) Ready() error {
	if ln.ready == nil {
		return nil
	}
	<-ln.ready
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return ln.setupErr
}

// cloneFlags are the namespaces of stage 2: all but the network's when the
// command shares the host's network (moat.shareNetwork, eBPF-confined).
func cloneFlags(pol *policy.Policy) uintptr {
	f := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if !pol.Net.Shared {
		f |= unix.CLONE_NEWNET
	}
	return f
}

// clone3Works reports whether clone3 is callable: seccomp filters such as
// Docker's default answer it with ENOSYS so that callers fall back to
// clone, and Go's CLONE_INTO_CGROUP start needs it. A NULL, zero-size
// call is refused by the kernel itself with EINVAL and creates nothing.
func clone3Works() bool {
	_, _, errno := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
	return errno != unix.ENOSYS
}

// seccompOptions are the variable parts of the command's filter.
// memoryByRlimit: an rlimit holds the memory limit (no cgroup); memoryBound:
// the limit the settings set, where an rlimit holds it, which does not
// count a memfd's pages nor System V IPC's; 0 otherwise.
func seccompOptions(pol *policy.Policy, nons, session, memoryByRlimit, landlockTCP bool, memoryBound int64) seccomp.Options {
	broker := len(pol.Net.AllowUnixSockets) > 0 && !pol.Net.AllowAllUnixSockets
	unixOK := broker || pol.Net.AllowAllUnixSockets
	// No socket listens without allowLocalBinding where none may (no unix
	// sockets), or where the host's network is shared (a TCP listen never
	// bound would serve on the host's addresses; the filter cannot tell it
	// from a unix one). In the sandbox's own network namespace a unix
	// server listens, and so could a TCP one, reachable from inside only.
	noListen := !pol.Net.AllowLocalBinding && (!unixOK || pol.Net.Shared || nons)
	// As root without a mount namespace nothing but seccomp keeps the
	// command from changing the modes, owners, times and attributes of the
	// system's files (they are root's; Landlock does not govern these calls).
	noMeta := nons && os.Geteuid() == 0
	// As a user without a mount namespace the observer makes those changes
	// for the command (metabroker.go): notified whether or not violations
	// are reported (with moat.violations off nothing was checked).
	brokerMeta := nons && os.Geteuid() != 0
	// Where the host's network is shared, a source route or an IPv6
	// routing header would send a connect's packets to another host than
	// the one eBPF (or Landlock) judged (seccomp.Options.NoSourceRoute).
	return seccomp.Options{AllowUnix: pol.Net.AllowAllUnixSockets, UnixBroker: broker, Notify: pol.Violations, NoListen: noListen, NoMetadata: noMeta, NoNamespaces: nons, NotifyMetadata: brokerMeta, MemoryBound: memoryBound,
		NoGrowsDown: memoryByRlimit, Session: session && !nons, NoFastOpen: landlockTCP, NoSourceRoute: pol.Net.Shared || nons}
}

// unixAllow resolves allowUnixSockets when the sandbox starts: the
// symlinks on the way are followed then (the user's and the system's,
// /var/run -> /run), but none in a directory the command may write, where
// an earlier command may have planted one: from there on the path is taken
// by its letters, and the socket there is pinned (its inode as found now:
// a command could rename or hard-link another socket over it). The broker
// opens these with no symlink followed.
func unixAllow(pol *policy.Policy, v *view) []allowedSock {
	var out []allowedSock
	for _, r := range pol.Net.AllowUnixSockets {
		writable := false
		p := planted.ResolveOutsideWritable(filepath.Clean(r.Path), func(dir string) bool {
			if v != nil && v.access(dir) == accRW {
				writable = true
			}
			return writable
		})
		a := allowedSock{path: p, pinned: writable}
		var st unix.Stat_t
		if writable && unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
			a.present, a.dev, a.ino = true, uint64(st.Dev), st.Ino
		}
		out = append(out, a)
	}
	return out
}

// allowedSock is an allowUnixSockets entry as the broker checks it.
type allowedSock struct {
	path string
	// pinned: the path lies in a tree the command may write; present: a
	// socket was there when the sandbox started, and only that one (dev,
	// ino) is the entry's. One made during the run (the command's own
	// server) is taken as it is.
	pinned, present bool
	dev, ino        uint64
}

// matches reports whether st (what the entry's path leads to now) is the
// entry's socket.
func (a allowedSock) matches(st *unix.Stat_t) bool {
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return false
	}
	return !a.pinned || !a.present || (uint64(st.Dev) == a.dev && st.Ino == a.ino)
}

// mergeEnv sets each "K=V" of add in env, replacing what env had.
func mergeEnv(env, add []string) []string {
	idx := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		idx[k] = i
	}
	for _, kv := range add {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			env[i] = kv
			continue
		}
		idx[k] = len(env)
		env = append(env, kv)
	}
	return env
}
