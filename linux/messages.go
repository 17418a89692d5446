//go:build linux

package linux

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/runtime/enforce"
)

// readMessages handles what stage 2 sends until the socket closes.
func (ln *launcher) readMessages() error {
	for {
		m, err := nsinit.ReadMessageConn(ln.syncConn)
		if err != nil {
			return err
		}
		ln.handle(m)
	}
}

// handle acts on one message from stage 2; every descriptor it carries is
// either taken or closed.
func (ln *launcher) handle(m nsinit.Message) {
	switch m.Type {
	case nsinit.MsgError:
		step := ""
		if m.A >= 0 && int(m.A) < len(ln.plan.Desc) {
			step = ln.plan.Desc[m.A]
		}
		ln.setErr(setupError(step, syscall.Errno(m.B), m.Text, ln.plan.IsProc(int(m.A)), ln.plan.IsMount(int(m.A))))
		m.CloseFDs()
	case nsinit.MsgExecFail:
		ln.setErr(&enforce.ExecError{Path: m.Text, Err: syscall.Errno(m.B)})
		m.CloseFDs()
	case nsinit.MsgExit:
		ln.step("command exited")
		ws := unix.WaitStatus(m.A)
		ln.mu.Lock()
		ln.exitStatus = &ws
		ln.mu.Unlock()
		m.CloseFDs()
	case nsinit.MsgListen:
		if err := ln.net.serve(m.FDs); err != nil {
			ln.setErr(&enforce.SetupError{Step: "the proxy's listeners", Err: err})
		}
	case nsinit.MsgWatch:
		ln.watched(int(m.A), int(m.B))
		m.CloseFDs()
	case nsinit.MsgInotify:
		if len(m.FDs) != 1 {
			m.CloseFDs()
			return
		}
		ln.startWatches(m.FDs[0])
	case nsinit.MsgMounted:
		ln.step("mounts done")
		if ln.jr != nil {
			ln.jr.Unlock()
		}
		ln.markReady()
		m.CloseFDs()
	case nsinit.MsgChild:
		ln.step("init running, command forked")
		m.CloseFDs()
	case nsinit.MsgPTY:
		if len(m.FDs) != 1 || ln.l.OnTerminal == nil {
			m.CloseFDs()
			return
		}
		ln.l.OnTerminal(os.NewFile(uintptr(m.FDs[0]), "pty-master"))
	case nsinit.MsgNotify:
		ln.step("seccomp loaded, exec")
		if len(m.FDs) != 1 {
			m.CloseFDs()
			return
		}
		o := &observer{fd: m.FDs[0], view: ln.fp.view, report: ln.l.Report, unixAllow: unixAllow(ln.pol, ln.fp.view), connectInside: ln.connectInside, tcpPorts: ln.landlockTCPPorts(), dirs: ln.dirs, as: ln.observerAs(), noMetadata: ln.nons && os.Geteuid() == 0, nonsUser: ln.nons && os.Geteuid() != 0}
		if ln.pol.Violations {
			o.writes = &ln.writes
			ln.observed.Store(true)
		}
		go o.serve()
	case nsinit.MsgCmdStarted, nsinit.MsgCmdExit, nsinit.MsgCmdNotify, nsinit.MsgCmdExecFail, nsinit.MsgCmdError:
		ln.sessionMessage(m)
	default:
		m.CloseFDs()
	}
}

// setupError turns stage 2's report of a failed step into a typed error; a
// refused procfs is what best effort reacts to (a container that masks
// /proc).
func setupError(step string, errno syscall.Errno, text string, procfs, mount bool) error {
	err := &enforce.SetupError{Step: text, Err: errno}
	if step != "" && step != text {
		err.Step = text + " (" + step + ")"
	}
	switch {
	case errno != 0 && procfs:
		return &enforce.UnsupportedFeatureError{Feature: "a new procfs", Need: "enableWeakerNestedSandbox (or --best-effort) shows the host's /proc instead", Err: &procfsError{err}}
	case mount && (errno == syscall.EPERM || errno == syscall.EACCES):
		return &enforce.UnsupportedFeatureError{Feature: "mounts in the sandbox's user namespace",
			Need: "a security profile that allows them (Docker: --security-opt apparmor=unconfined; docs/CONTAINERS.md), or --best-effort for the no-namespace tier",
			Err:  &mountsError{err}}
	}
	return err
}

// mountsError is a refused mount: errors.Is(err, enforce.ErrNoMounts).
type mountsError struct{ err *enforce.SetupError }

func (e *mountsError) Error() string        { return e.err.Error() }
func (e *mountsError) Unwrap() error        { return e.err }
func (e *mountsError) Is(target error) bool { return target == enforce.ErrNoMounts }

// procfsError is a refused procfs: errors.Is(err, enforce.ErrNoProcfs).
type procfsError struct{ err *enforce.SetupError }

func (e *procfsError) Error() string        { return e.err.Error() }
func (e *procfsError) Unwrap() error        { return e.err }
func (e *procfsError) Is(target error) bool { return target == enforce.ErrNoProcfs }
