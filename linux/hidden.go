//go:build linux

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Reads of hidden paths (denyRead and the default secrets) are reported
// without any cost to other reads: stage 2 puts an inotify watch on each
// mask (R_WATCH) and hands the instance to the supervisor (MsgInotify),
// which turns IN_OPEN events into violations. A hidden directory is an
// empty read-only tmpfs (opening it, or what is in it, is seen: listing
// it, not a lookup of a name it does not hold); a hidden file is an empty
// read-only file of its own, a sentinel (reading it gives nothing, and is
// seen).

// sentinelRoot holds the launches' sentinels.
func sentinelRoot(stateDir string) string { return filepath.Join(stateDir, "sentinel") }

// sentinel makes the sentinel for a hidden file: an empty file, mode 0444,
// under moat's state directory (never writable from a sandbox), named for
// this process. The files sit in one directory that stays: removing a
// directory made moments before waits for a synchronous discard of its
// block on a filesystem mounted with discard (0.6 ms and more a run here),
// removing an empty file does not.
func (ln *launcher) sentinel(hidden string) (string, error) {
	root := sentinelRoot(ln.l.StateDir)
	if !ln.sentReady {
		sweepSentinels(root)
		if err := os.MkdirAll(root, 0o700); err != nil {
			return "", err
		}
		ln.sentReady = true
	}
	f, err := os.CreateTemp(root, strconv.Itoa(os.Getpid())+"-s-")
	if err != nil {
		return "", err
	}
	f.Close()
	ln.sentinels = append(ln.sentinels, f.Name())
	return f.Name(), os.Chmod(f.Name(), 0o444)
}

// sweepSentinels removes the sentinels (and the per-launch directories of
// older versions) a day old or more: their moat was killed before it
// removed them. Removing one under a session that still runs is harmless:
// the mount keeps the file.
func sweepSentinels(root string) {
	es, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range es {
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// watched records stage 2's watch descriptor for R_WATCH record rec.
func (ln *launcher) watched(rec, wd int) {
	path, ok := ln.plan.Watched(rec)
	if !ok {
		return
	}
	ln.watchMu.Lock()
	if ln.watchPath == nil {
		ln.watchPath = map[int]string{}
	}
	ln.watchPath[wd] = path
	ln.watchMu.Unlock()
}

// startWatches takes stage 2's inotify instance: its events are read at
// the end of each command (drainWatches) and every quarter second while
// the sandbox lives.
func (ln *launcher) startWatches(fd int) {
	ln.watchMu.Lock()
	if ln.closed.Load() || ln.inotifyFD > 0 {
		ln.watchMu.Unlock()
		unix.Close(fd)
		return
	}
	ln.inotifyFD = fd
	ln.watchStop = make(chan struct{})
	stop := ln.watchStop
	if ln.progs == nil {
		// A supervisor of one run exits after it: a holder pays the
		// teardown instead of its exit. A long-lived one (NewShared)
		// closes in a goroutine of its own (releaseInotify).
		ln.holderReady = make(chan struct{})
		go ln.holdInotify(fd, ln.holderReady)
	}
	ln.watchMu.Unlock()
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				ln.drainWatches()
			}
		}
	}()
}

// drainWatches reports every open of a hidden path queued so far.
func (ln *launcher) drainWatches() {
	ln.watchMu.Lock()
	defer ln.watchMu.Unlock()
	if ln.inotifyFD <= 0 || ln.l.Report == nil {
		return
	}
	if ln.watchBuf == nil {
		ln.watchBuf = make([]byte, 16*(unix.SizeofInotifyEvent+unix.PathMax))
	}
	buf := ln.watchBuf
	for {
		n, err := sys.RetryValue(func() (int, error) { return unix.Read(ln.inotifyFD, buf) })
		if err != nil || n <= 0 {
			return // EAGAIN: nothing more queued
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			end := off + unix.SizeofInotifyEvent + int(ev.Len)
			if end > n {
				break
			}
			name := unix.ByteSliceToString(buf[off+unix.SizeofInotifyEvent : end])
			off = end
			path, ok := ln.watchPath[int(ev.Wd)]
			if !ok || ev.Mask&unix.IN_OPEN == 0 {
				continue
			}
			if name != "" {
				path = filepath.Join(path, name)
			}
			ln.l.Report(policy.Violation{Kind: policy.FileViolation, Op: "read", Target: path,
				Rule: "hidden: denyRead or a default secret; the sandbox sees it empty"})
		}
	}
}

// closeWatches stops the reads' reports and removes the sentinels.
func (ln *launcher) closeWatches() {
	ln.drainWatches()
	ln.watchMu.Lock()
	if ln.watchStop != nil {
		close(ln.watchStop)
		ln.watchStop = nil
	}
	fd := ln.inotifyFD
	ln.inotifyFD = 0
	ln.watchMu.Unlock()
	if fd > 0 {
		ln.releaseInotify(fd)
	}
	for _, f := range ln.sentinels {
		if err := os.Remove(f); err != nil {
			ln.l.Log.Debug("sentinels", "err", fmt.Sprint(err))
		}
	}
	ln.sentinels = nil
}

// An inotify instance with watches is torn down synchronously by the
// kernel (its mark reaper's delay and an SRCU grace period: 7 to 20 ms
// measured on this machine kind), in whichever process drops the last
// reference, also at exit. So a holder, a child that only sleeps, shares
// the instance from the moment it arrives (off the run's critical path);
// at the end this process closes its copy at once and kills the holder,
// which pays the teardown while nobody waits. The holder dies with moat
// (parent-death signal); without one, the close is synchronous. A
// long-lived supervisor (NewShared: moatd, moat serve), which does not exit
// after the run, starts no holder (an exec a run): a goroutine of its own
// closes the instance and waits out the teardown there.

// holdInotify starts the holder for fd; done is closed when it is known
// whether there is one.
func (ln *launcher) holdInotify(fd int, done chan<- struct{}) {
	defer close(done)
	null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(null)
	// moat's own binary in its C holder mode (no dynamic loader, no Go
	// runtime: about half of sleep's CPU on this project's VMs), else sleep.
	type holder struct {
		path string
		argv []string
		env  []string
	}
	var holders []holder
	if nsinit.Linked {
		holders = append(holders, holder{"/proc/self/exe", []string{nsinit.HoldArgv0}, []string{nsinit.EnvVar + "=hold"}})
	}
	for _, sleep := range []string{"/bin/sleep", "/usr/bin/sleep"} {
		holders = append(holders, holder{sleep, []string{"sleep", "86400"}, nil})
	}
	for _, h := range holders {
		pid, err := syscall.ForkExec(h.path, h.argv, &syscall.ProcAttr{
			Env:   h.env,
			Files: []uintptr{uintptr(null), uintptr(null), uintptr(null), uintptr(fd)},
			Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
		})
		if err == nil {
			ln.watchMu.Lock()
			ln.holder = pid
			ln.watchMu.Unlock()
			return
		}
	}
}

// releaseInotify closes this process's copy of the instance and ends the
// holder, without waiting for the kernel's teardown.
func (ln *launcher) releaseInotify(fd int) {
	if ln.progs != nil {
		go unix.Close(fd)
		return
	}
	if ln.holderReady != nil {
		<-ln.holderReady
	}
	unix.Close(fd)
	ln.watchMu.Lock()
	pid := ln.holder
	ln.holder = 0
	ln.watchMu.Unlock()
	if pid > 0 {
		_ = unix.Kill(pid, unix.SIGKILL)
		go func() {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, 0, nil)
		}()
	}
}
