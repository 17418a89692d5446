//go:build linux

package linux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

var (
	_ enforce.SessionEnforcer = (*Enforcer)(nil)
	_ enforce.Readier         = (*session)(nil)
)

// StartSession builds one sandbox for many commands: stage 2 sets up the
// namespaces and the filesystem once, then serves requests on its session
// socket, starting each command under a reaper of its own (a subreaper that
// ends everything the command started), confined as a single command is.
func (e *Enforcer) StartSession(ctx context.Context, l *enforce.Launch) (enforce.Session, error) {
	if l.Terminal != nil {
		return nil, errors.New("a session has no terminal: its commands get descriptors")
	}
	if !nsinit.Linked {
		return nil, &enforce.UnsupportedFeatureError{Feature: "a sandbox stage 2", Need: "this moat was built without cgo: build it with CGO_ENABLED=1 (make build)"}
	}
	if l.Mode == enforce.NoNamespaces && landlockABI() == 0 {
		return nil, &enforce.UnsupportedFeatureError{Feature: "Landlock", Need: "without user namespaces moat confines commands with Landlock, and this kernel has none", Err: enforce.ErrNoUserNamespace}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ln, err := e.launch(ctx, l, func(ln *launcher) { ln.session = true })
	if err != nil {
		return nil, err
	}
	s := &session{ln: ln, done: make(chan struct{})}
	ln.reaped = make(chan struct{})
	go func() {
		ln.reapedState, _ = ln.cmd.Process.Wait()
		close(ln.reaped)
		<-ln.ended
		close(s.done)
	}()
	return s, nil
}

// session is a started session sandbox (an enforce.Session).
type session struct {
	ln       *launcher
	done     chan struct{}
	closeOne sync.Once
	closeErr error
}

func (s *session) Exec(c *enforce.Command) (enforce.Process, error) { return s.ln.exec(c) }
func (s *session) Footprint() enforce.Footprint                     { return s.ln.Footprint() }
func (s *session) SyncNetwork(allowed []string) error               { return s.ln.SyncNetwork(allowed) }
func (s *session) Done() <-chan struct{}                            { return s.done }

// Ready implements enforce.Readier: it waits until the session's stage 2
// has built the filesystem (or failed to: a container that refuses a new
// /proc says so only then), as a run's launch does.
func (s *session) Ready() error { return s.ln.Ready() }

// Close ends the session: closing the request socket makes the session's
// server kill every command and exit, init then exits and the pid namespace
// ends; what the launch made on the host is released.
func (s *session) Close() error {
	s.closeOne.Do(func() {
		ln := s.ln
		ln.sessMu.Lock()
		if ln.sessionW != nil {
			ln.sessionW.Close()
			ln.sessionW = nil
		}
		ln.sessMu.Unlock()
		select {
		case <-s.done:
		default:
			// Init ends with the server; wait for it, and make sure.
			waited := make(chan struct{})
			go func() { <-s.done; close(waited) }()
			select {
			case <-waited:
			case <-time.After(5 * time.Second):
				_ = ln.cmd.Process.Signal(unix.SIGKILL)
				<-s.done
			}
		}
		if ln.jr != nil {
			ln.jr.Unlock()
		}
		if ln.kf != nil {
			ln.kf.flush()
		}
		s.closeErr = ln.Close()
	})
	return s.closeErr
}

// sessionCmd is one command of a session (an enforce.Process).
type sessionCmd struct {
	ln     *launcher
	id     uint32
	report func(policy.Violation)
	writes atomic.Int64

	limStart counters

	once sync.Once
	done chan struct{}
	exit *enforce.Exit
	err  error

	stdio *stdioCopy // stdio.go
}

// exec asks the session's server to start c.
func (ln *launcher) exec(c *enforce.Command) (enforce.Process, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return nil, errors.New("no command")
	}
	for _, f := range c.Stdio {
		if f == nil {
			return nil, errors.New("a session command needs its three descriptors")
		}
	}
	stdio, fd3, sc, err := pipeStdio(c.Stdio, c.FD3, nil) // stdio.go: the server's own descriptors (a moatd session takes none of its client's)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			sc.abort()
		}
	}()
	dir := c.Dir
	if dir == "" {
		dir = ln.pol.Cwd
	}
	report := c.Report
	if report == nil {
		report = ln.l.Report
	}
	ln.sessMu.Lock()
	defer ln.sessMu.Unlock()
	if ln.sessionW == nil {
		return nil, errors.New("the session is closed")
	}
	select {
	case <-ln.ended:
		return nil, errors.New("the session has ended")
	default:
	}
	ln.nextID++
	h := &sessionCmd{ln: ln, id: ln.nextID, report: report, done: make(chan struct{}), limStart: ln.lim.counters(), stdio: sc}
	req := nsinit.RunRequest(h.id, dir, c.Argv, ln.commandEnv(c.Env), execFlags(c.Argv[0]), fd3 != nil)
	fds := []int{int(stdio[0].Fd()), int(stdio[1].Fd()), int(stdio[2].Fd())}
	if fd3 != nil {
		fds = append(fds, int(fd3.Fd()))
	}
	ln.cmds[h.id] = h
	if err := unix.Sendmsg(int(ln.sessionW.Fd()), req, unix.UnixRights(fds...), nil, 0); err != nil {
		delete(ln.cmds, h.id)
		if errors.Is(err, unix.EMSGSIZE) {
			return nil, fmt.Errorf("the command's arguments and environment are too large for a session request (%d bytes)", len(req))
		}
		return nil, fmt.Errorf("send the command to the session: %w", sys.Named("sendmsg", err))
	}
	started = true
	sc.started() // the session holds the pipes' ends now
	return h, nil
}

// sessionMessage hands a command's message to its handle.
func (ln *launcher) sessionMessage(m nsinit.Message) {
	id := uint32(m.A)
	ln.sessMu.Lock()
	h := ln.cmds[id]
	ln.sessMu.Unlock()
	if h == nil {
		m.CloseFDs() // a command already finished (a second report)
		return
	}
	switch m.Type {
	case nsinit.MsgCmdStarted:
		m.CloseFDs()
	case nsinit.MsgCmdNotify:
		if len(m.FDs) != 1 {
			m.CloseFDs()
			return
		}
		o := &observer{fd: m.FDs[0], view: ln.fp.view, report: h.report, unixAllow: unixAllow(ln.pol, ln.fp.view), connectInside: ln.connectInside, tcpPorts: ln.landlockTCPPorts(), dirs: ln.dirs, as: ln.observerAs(), noMetadata: ln.nons && os.Geteuid() == 0, nonsUser: ln.nons && os.Geteuid() != 0}
		if ln.pol.Violations {
			o.writes = &h.writes
			o.also = &ln.writes
			ln.observed.Store(true)
		}
		go o.serve()
	case nsinit.MsgCmdExit:
		ws := syscall.WaitStatus(m.B)
		e := &enforce.Exit{Code: ws.ExitStatus()}
		if ws.Signaled() {
			e.Signal = ws.Signal()
			e.Code = 128 + int(e.Signal)
		}
		us, _ := strconv.ParseInt(m.Text, 10, 64) // the tree's CPU time
		ln.finishCmdUsed(h, e, nil, time.Duration(us)*time.Microsecond)
		m.CloseFDs()
	case nsinit.MsgCmdExecFail:
		ln.finishCmd(h, nil, &enforce.ExecError{Path: m.Text, Err: syscall.Errno(m.B)})
		m.CloseFDs()
	case nsinit.MsgCmdError:
		ln.finishCmd(h, nil, &enforce.SetupError{Step: m.Text, Err: syscall.Errno(m.B)})
		m.CloseFDs()
	}
}

func (ln *launcher) finishCmd(h *sessionCmd, e *enforce.Exit, err error) {
	ln.finishCmdUsed(h, e, err, 0)
}

// finishCmdUsed ends a command whose tree used the CPU time used.
func (ln *launcher) finishCmdUsed(h *sessionCmd, e *enforce.Exit, err error, used time.Duration) {
	ln.sessMu.Lock()
	delete(ln.cmds, h.id)
	ln.sessMu.Unlock()
	h.once.Do(func() {
		ln.drainWatches() // reads of hidden paths while it ran
		if ln.kf != nil {
			// The eBPF filter's refusals so far reach the command still
			// running (the ring buffer is read asynchronously).
			ln.kf.flush()
		}
		if e != nil {
			// (A session's commands share its limits: what the cgroups
			// refused while this one ran is reported to it.)
			for _, v := range append(ln.lim.violations(h.limStart), exitViolation(e, ln.eff, used)...) {
				h.report(v)
			}
		}
		h.exit, h.err = e, err
		close(h.done)
	})
}

// endSession fails the commands still waiting when the sandbox is gone.
func (ln *launcher) endSession(readErr error) {
	if !ln.session {
		return
	}
	ln.sessMu.Lock()
	hs := make([]*sessionCmd, 0, len(ln.cmds))
	for _, h := range ln.cmds {
		hs = append(hs, h)
	}
	closed := ln.sessionW == nil
	ln.sessMu.Unlock()
	if len(hs) > 0 && !closed {
		// Nobody closed the session, yet its sandbox ended (or its
		// channel failed) under running commands: say how, so that a
		// session lost under load can be told from one that was closed.
		// Stage 2's own end, as its wait status says (its outer process
		// ends as init does: "exit status 137" is init seeing its
		// supervisor's end close, "signal: killed" a SIGKILL from
		// outside), waited for a moment: the channel's EOF can come first.
		status := "still running after 2s"
		select {
		case <-ln.reaped:
			status = "not reported"
			if st := ln.reapedState; st != nil {
				status = st.String()
			}
		case <-time.After(2 * time.Second):
		}
		// How the session's server ended, as its init saw it (init reports
		// it before it exits), and any setup error: what the load test's
		// rare lost session needs to be told apart (killed, crashed,
		// exited, or init itself gone first).
		server := "not reported"
		ln.mu.Lock()
		if ws := ln.exitStatus; ws != nil {
			switch {
			case ws.Signaled():
				server = "killed by " + ws.Signal().String()
			case ws.Exited():
				server = fmt.Sprintf("exited %d", ws.ExitStatus())
			default:
				server = fmt.Sprintf("status %#x", uint32(*ws))
			}
		}
		setupErr := ln.setupErr
		ln.mu.Unlock()
		ln.l.Log.Warn("session sandbox ended with commands running; they are reported killed",
			"commands", len(hs), "channel", fmt.Sprint(readErr), "stage2", status, "server", server, "setup", fmt.Sprint(setupErr))
	}
	for _, h := range hs {
		ln.finishCmd(h, &enforce.Exit{Code: 128 + int(unix.SIGKILL), Signal: unix.SIGKILL}, nil)
	}
}

func (h *sessionCmd) Wait() (*enforce.Exit, error) {
	<-h.done
	h.stdio.wait() // its output, to the last byte (its processes are gone)
	return h.exit, h.err
}

func (h *sessionCmd) Signal(sig syscall.Signal) error {
	h.ln.sessMu.Lock()
	defer h.ln.sessMu.Unlock()
	if h.ln.sessionW == nil {
		return errors.New("the session is closed")
	}
	select {
	case <-h.done:
		return nil
	default:
	}
	return unix.Sendmsg(int(h.ln.sessionW.Fd()), nsinit.SignalRequest(h.id, int(sig)), nil, nil, 0)
}

// Kill ends the command and everything it started (its reaper kills them).
func (h *sessionCmd) Kill() error { return h.Signal(unix.SIGKILL) }

// Footprint is the session's, with this command's own writes.
func (h *sessionCmd) Footprint() enforce.Footprint {
	fp := h.ln.Footprint()
	fp.Wrote = h.writes.Load() > 0
	return fp
}

func (h *sessionCmd) Close() error { return nil }
