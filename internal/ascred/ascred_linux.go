//go:build linux

// Package ascred runs file-system work with another user's credentials on
// one thread of a root process: moatd checks and creates what a client
// names as the client would, so that a client cannot make root open,
// create or remove a file that the client itself could not.
package ascred

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Do runs fn on an OS thread whose file-system uid and gid are uid and gid
// and whose supplementary groups are groups. Only the thread changes
// (setfsuid, setfsgid and the raw setgroups syscall are per thread); the
// thread is never given back to Go's scheduler: it ends with fn's
// goroutine, so no other goroutine ever runs with these credentials or
// with half-restored ones. A non-zero fsuid also drops the file
// capabilities (CAP_DAC_OVERRIDE, CAP_FOWNER, ...) from the thread's
// effective set, and the thread drops every other capability too (for a
// user other than root): the kernel checks fn's file operations, and its
// looks into /proc, as it would the user's.
func Do(uid, gid int, groups []int, fn func() error) error {
	if uid < 0 || gid < 0 {
		return fmt.Errorf("ascred: invalid uid %d or gid %d", uid, gid)
	}
	errc := make(chan error, 1)
	goOffMain(func() {
		// locked, never unlocked: the thread exits with us
		if err := become(uid, gid, groups); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	})
	return <-errc
}

func become(uid, gid int, groups []int) error {
	gs := make([]uint32, 0, len(groups)+1)
	for _, g := range groups {
		gs = append(gs, uint32(g))
	}
	var p unsafe.Pointer
	if len(gs) == 0 {
		gs = append(gs, uint32(gid)) // setgroups(0, NULL) is fine too, but keep a valid pointer
	}
	p = unsafe.Pointer(&gs[0])
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(gs)), uintptr(p), 0); e != 0 {
		return fmt.Errorf("ascred: setgroups: %w", e)
	}
	unix.RawSyscall(unix.SYS_SETFSGID, uintptr(gid), 0, 0)
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(uid), 0, 0)
	// setfsuid and setfsgid report no error: read the values back.
	cu, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
	cg, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0)
	if int(cu) != uid || int(cg) != gid {
		return fmt.Errorf("ascred: could not take uid %d gid %d (have %d %d)", uid, gid, cu, cg)
	}
	if uid != 0 {
		// A non-zero fsuid drops only the file capabilities: the thread
		// kept CAP_SYS_PTRACE, which /proc/PID/cwd, root, exe and fd/N
		// check, and followed another user's (root's) links for the
		// client (found by an attack pass). Every capability goes.
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("ascred: drop the thread's capabilities: %w", err)
		}
	}
	return nil
}

// DoCapless runs fn on an OS thread of this process's own ids without any
// capability: the kernel then judges fn's file operations as it judges a
// root sandbox's command, whose user namespace maps root alone (another
// user's 0700 directory is closed to it). The thread exits with fn.
func DoCapless(fn func() error) error {
	errc := make(chan error, 1)
	goOffMain(func() {
		// locked, never unlocked: the thread exits with us
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			errc <- fmt.Errorf("ascred: drop the thread's capabilities: %w", err)
			return
		}
		errc <- fn()
	})
	return <-errc
}

// goOffMain runs fn on a new goroutine locked to an OS thread that is not
// the process's main thread; fn never unlocks it, so the thread exits with
// fn. The main thread's credentials are the process's in /proc/PID/status
// (what moat serve and moatd compare a peer with), and a goroutine that
// ends locked there wedges it with what it left: a thread of this package
// that landed on it (Go runs goroutines on the main thread too) left the
// whole process looking capless, and every peer was refused ("confined
// otherwise than the server", found by a CI run, 2026-11-29). On the main
// thread, the goroutine keeps it locked (so that fn's runs elsewhere) and
// lets it go once fn has ended.
func goOffMain(fn func()) {
	go func() {
		runtime.LockOSThread()
		if !OnMainThread() {
			fn()
			return
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread()
			fn()
		}()
		<-done
		runtime.UnlockOSThread()
	}()
}

// OnMainThread reports whether the calling goroutine runs on the process's
// main thread (lock it first for the answer to hold).
func OnMainThread() bool { return unix.Gettid() == unix.Getpid() }

// Writable reports whether the user can write the directory or file at
// path, checked as the user: path is opened with the user's credentials
// (O_PATH, no magic links), then access(W_OK) on the opened file. It
// returns the opened file's real path, which the caller should use in
// place of path (a symlink swapped later changes nothing).
func Writable(uid, gid int, groups []int, path string) (real string, err error) {
	err = Do(uid, gid, groups, func() error {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS})
		if err == unix.ENOSYS {
			fd, err = unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer unix.Close(fd)
		// faccessat2 on the O_PATH fd with AT_EMPTY_PATH, checked with the
		// thread's fs ids (AT_EACCESS: effective = fs ids here).
		if err := unix.Faccessat2(fd, "", unix.W_OK, unix.AT_EMPTY_PATH|unix.AT_EACCESS); err != nil {
			return fmt.Errorf("%s: not writable by uid %d: %w", path, uid, err)
		}
		real, err = readlinkFD(fd)
		return err
	})
	return real, err
}

// Usable reports whether the user can search the directory at path (for a
// working directory), checked as Writable is, and returns its real path.
func Usable(uid, gid int, groups []int, path string) (real string, err error) {
	err = Do(uid, gid, groups, func() error {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS})
		if err == unix.ENOSYS {
			fd, err = unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer unix.Close(fd)
		if err := unix.Faccessat2(fd, "", unix.X_OK, unix.AT_EMPTY_PATH|unix.AT_EACCESS); err != nil {
			return fmt.Errorf("%s: not usable by uid %d: %w", path, uid, err)
		}
		real, err = readlinkFD(fd)
		return err
	})
	return real, err
}

func readlinkFD(fd int) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd), buf)
	if err != nil {
		return "", fmt.Errorf("resolve: %w", err)
	}
	return string(buf[:n]), nil
}

// Worker is one OS thread with a user's file-system credentials that runs
// many functions: Do starts a thread for each call (0.1-0.2 ms: the
// thread's creation, setgroups, and its exit), which a launch that makes
// and removes a dozen placeholders paid a dozen times. Like Do's, the
// thread never returns to Go's scheduler: it exits at Close.
type Worker struct {
	fns  chan func()
	once sync.Once
}

// NewWorker starts a worker thread with fsuid uid, fsgid gid and the
// supplementary groups groups.
func NewWorker(uid, gid int, groups []int) (*Worker, error) {
	if uid < 0 || gid < 0 {
		return nil, fmt.Errorf("ascred: invalid uid %d or gid %d", uid, gid)
	}
	w := &Worker{fns: make(chan func())}
	errc := make(chan error, 1)
	goOffMain(func() {
		// locked, never unlocked: the thread exits with us
		if err := become(uid, gid, groups); err != nil {
			errc <- err
			return
		}
		errc <- nil
		for fn := range w.fns {
			fn()
		}
	})
	if err := <-errc; err != nil {
		return nil, err
	}
	return w, nil
}

// Do runs fn on the worker's thread and returns its error. It must not be
// called after Close.
func (w *Worker) Do(fn func() error) error {
	errc := make(chan error, 1)
	w.fns <- func() { errc <- fn() }
	return <-errc
}

// Close ends the worker's thread (idempotent; nothing for a nil Worker).
func (w *Worker) Close() {
	if w != nil {
		w.once.Do(func() { close(w.fns) })
	}
}

// Borrow runs fn on the calling thread with the file-system credentials
// Do gives its thread (fsuid uid, fsgid gid, the supplementary groups
// groups) and no effective capability, then gives the thread its own back.
// The caller must hold the thread (runtime.LockOSThread) from before the
// call to after it. It costs a few system calls where a Worker's round
// trip costs two thread wake-ups (the violation observer, which looks up
// each path a command writes, went from 20 to 100 µs a path with one).
// The permitted capabilities stay, so that they can be made effective
// again; fn must start no thread and hand nothing to another goroutine
// that acts on its behalf (Go makes a new thread from a locked one through
// its template thread, never by cloning it).
//
// ran says fn ran (false: the credentials could not be taken, and the
// thread keeps its own). restored false says the thread's own could not
// be put back whole: the caller must then never unlock the thread (Go
// ends a locked thread whose goroutine returns still locked), so that no
// other goroutine runs with what is left.
func Borrow(uid, gid int, groups []int, fn func()) (ran, restored bool) {
	if uid < 0 || gid < 0 {
		return false, true
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var own [2]unix.CapUserData
	if err := unix.Capget(&hdr, &own[0]); err != nil {
		return false, true
	}
	ownGroups, err := getgroups()
	if err != nil {
		return false, true
	}
	ownUid, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
	ownGid, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0)
	restore := func() bool {
		h := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		if err := unix.Capset(&h, &own[0]); err != nil {
			return false
		}
		unix.RawSyscall(unix.SYS_SETFSUID, ownUid, 0, 0)
		unix.RawSyscall(unix.SYS_SETFSGID, ownGid, 0, 0)
		cu, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
		cg, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0)
		if cu != ownUid || cg != ownGid {
			return false
		}
		if setgroups(ownGroups) != nil {
			return false
		}
		var now [2]unix.CapUserData
		h = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		return unix.Capget(&h, &now[0]) == nil && now == own
	}
	if err := setgroups(groups); err != nil {
		return false, restore()
	}
	unix.RawSyscall(unix.SYS_SETFSGID, uintptr(gid), 0, 0)
	unix.RawSyscall(unix.SYS_SETFSUID, uintptr(uid), 0, 0)
	cu, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
	cg, _, _ := unix.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0)
	if int(cu) != uid || int(cg) != gid {
		return false, restore()
	}
	// No effective capability (CAP_SYS_PTRACE opens other users'
	// /proc links, CAP_DAC_READ_SEARCH reads past modes), for uid 0
	// too (root's own sandbox's command is root without any: the
	// violation observer looks as it); the permitted ones stay, for
	// restore.
	none := own
	none[0].Effective, none[1].Effective = 0, 0
	h := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capset(&h, &none[0]); err != nil {
		return false, restore()
	}
	fn()
	return true, restore()
}

// getgroups is the calling thread's supplementary groups (the raw system
// call: per thread).
func getgroups() ([]uint32, error) {
	n, _, e := unix.RawSyscall(unix.SYS_GETGROUPS, 0, 0, 0)
	if e != 0 {
		return nil, e
	}
	gs := make([]uint32, int(n)+1) // +1: a valid pointer when there are none
	n, _, e = unix.RawSyscall(unix.SYS_GETGROUPS, uintptr(len(gs)), uintptr(unsafe.Pointer(&gs[0])), 0)
	if e != 0 {
		return nil, e
	}
	return gs[:n], nil
}

// setgroups sets the calling thread's supplementary groups (the raw system
// call: per thread, where Go's syscall.Setgroups changes every thread).
func setgroups[T int | uint32](groups []T) error {
	gs := make([]uint32, 0, len(groups)+1)
	for _, g := range groups {
		gs = append(gs, uint32(g))
	}
	n := len(gs)
	gs = append(gs, 0) // a valid pointer when there are none
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(n), uintptr(unsafe.Pointer(&gs[0])), 0); e != 0 {
		return fmt.Errorf("ascred: setgroups: %w", e)
	}
	return nil
}

// Borrower runs functions with a user's file-system credentials on the
// calling goroutine's thread (Borrow), where a Worker hands each one to a
// thread of its own: a Worker's round trip is two thread wake-ups and two
// hand-offs of Go's scheduler to and from a locked thread, 50-150 µs on a
// two-CPU VM, and moatd's plan of a client's sandbox took some 80 of them
// (a look at each protected name, each placeholder's hold, make and pin):
// 3-6 ms a run. Borrow costs a dozen system calls.
type Borrower struct {
	uid, gid int
	groups   []int
}

// NewBorrower returns a Borrower of uid's credentials (fsuid uid, fsgid
// gid, the supplementary groups groups).
func NewBorrower(uid, gid int, groups []int) (*Borrower, error) {
	if uid < 0 || gid < 0 {
		return nil, fmt.Errorf("ascred: invalid uid %d or gid %d", uid, gid)
	}
	return &Borrower{uid: uid, gid: gid, groups: slices.Clone(groups)}, nil
}

// Do runs fn on this thread with the credentials, held (LockOSThread) from
// before to after, and returns its error. fn must start no goroutine that
// acts on its behalf (one runs with this process's own credentials). A
// thread whose own credentials could not be put back whole may run
// nothing more of this process, and the goroutine that called Do could go
// on only with what is left (root's files made with the client's fsuid,
// say): the process ends then, at once, without running anything more
// (a can't-happen: the restore is capset, setfsuid and setgroups back to
// what the thread had).
func (b *Borrower) Do(fn func() error) error {
	runtime.LockOSThread()
	if OnMainThread() {
		// The main thread's credentials are the process's in
		// /proc/PID/status, which moat serve and moatd compare their
		// peers with (TestMainThreadKeepsItsCredentials): not lent, even
		// for a moment. A thread of its own, this once.
		runtime.UnlockOSThread()
		return Do(b.uid, b.gid, b.groups, fn)
	}
	var err error
	ran, restored := Borrow(b.uid, b.gid, b.groups, func() { err = fn() })
	if !restored {
		fmt.Fprintf(os.Stderr, "ascred: a thread's own credentials could not be restored after borrowing uid %d's: exiting\n", b.uid)
		os.Exit(70)
	}
	runtime.UnlockOSThread()
	if !ran {
		return fmt.Errorf("ascred: cannot take uid %d's credentials", b.uid)
	}
	return err
}

// Close does nothing (a Borrower holds no thread).
func (b *Borrower) Close() {}
