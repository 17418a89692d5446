package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// POST /v1/run is moat run through the server: one command in a sandbox of
// its own, whose stdio are the caller's own descriptors. HTTP cannot carry
// descriptors, so the request upgrades its connection (client.RunUpgrade):
// the caller sends its fds 0, 1 and 2 in one SCM_RIGHTS message, then
// signal lines; the server answers one client.RunEnd line when the command
// has ended. Closing the connection kills the command. No gate decides the
// command: like moat run, it is the caller's own explicit command line,
// and it runs with the caller's own ids in the sandbox (the daemon adds
// only the root-only layers: the eBPF filter and the cgroup limits).

// fdWait bounds the wait for the caller's descriptors after the upgrade.
const fdWait = 10 * time.Second

// runConfig is what a run needs besides its descriptors.
type runConfig struct {
	pol   *policy.Policy
	notes []string
	as    *enforce.Identity
}

func (s *Server) runAttached(w http.ResponseWriter, r *http.Request) error {
	if !strings.EqualFold(r.Header.Get("Upgrade"), client.RunUpgrade) {
		return errorf(http.StatusBadRequest, "", "POST /v1/run passes descriptors over its connection: send it with \"Connection: Upgrade\" and \"Upgrade: %s\" (client.RunAttached)", client.RunUpgrade)
	}
	var req client.RunRequest
	if err := decodeBody(w, r, s.cfg.MaxRequestBytes, &req, false); err != nil {
		return err
	}
	rc, err := s.runConfig(r, req)
	if err != nil {
		return err
	}
	owner := s.owner(r)
	if err := s.reserve(owner, false); err != nil {
		return err
	}
	// Shutdown sets closed under s.mu before it waits for the runs: a run
	// counts itself under the same lock, or is refused.
	// A user runs at most as many commands this way as it may hold
	// sessions (MaxSessionsPerUser), so one user cannot take every slot.
	s.mu.Lock()
	if s.closed {
		s.pending--
		s.mu.Unlock()
		return errorf(http.StatusServiceUnavailable, "", "the server is shutting down")
	}
	if d := s.cfg.Daemon; d != nil && s.runsOf[owner] >= d.MaxSessionsPerUser {
		s.pending--
		s.mu.Unlock()
		return errorf(http.StatusTooManyRequests, "", "you have %d commands running through POST /v1/run, the most the daemon allows a user: wait for one to end", d.MaxSessionsPerUser)
	}
	// Its descriptors in the daemon, against the user's share of them.
	if err := s.takeSlots(owner, runSlots, "a run"); err != nil {
		s.pending--
		s.mu.Unlock()
		return err
	}
	s.runsOf[owner]++
	s.runs.Add(1)
	s.mu.Unlock()
	defer func() {
		s.giveSlots(owner, runSlots)
		s.mu.Lock()
		s.pending--
		if s.runsOf[owner]--; s.runsOf[owner] <= 0 {
			delete(s.runsOf, owner)
		}
		s.mu.Unlock()
		s.runs.Done()
	}()
	uc, brw, err := upgrade(w, client.RunUpgrade)
	if uc == nil {
		return err
	}
	defer uc.Close()
	var wmu sync.Mutex // the run's end and its terminal are written apart
	end := func(e client.RunEnd) {
		b, _ := json.Marshal(e)
		wmu.Lock()
		defer wmu.Unlock()
		_, _ = uc.Write(append(b, '\n'))
	}
	// A command with a terminal gets a pty; its master goes back to the
	// client, which relays it to its terminal: the daemon never writes to
	// a client's terminal (a terminal nobody reads would hold the writing
	// thread for ever).
	onTerminal := func(master *os.File) {
		defer master.Close()
		b, _ := json.Marshal(client.RunEnd{Event: client.RunTerminal})
		wmu.Lock()
		defer wmu.Unlock()
		_ = uc.SetWriteDeadline(time.Now().Add(fdWait))
		defer uc.SetWriteDeadline(time.Time{})
		_, _, _ = uc.WriteMsgUnix(append(b, '\n'), unix.UnixRights(int(master.Fd())), nil)
	}
	stdio, err := receiveStdio(uc)
	if err != nil {
		end(client.RunEnd{Event: "error", ExitCode: 125, Error: err.Error()})
		return nil
	}
	defer func() {
		for _, f := range stdio {
			f.Close()
		}
	}()
	// The connection now carries signal lines; its end kills the command.
	ctx, cancel := context.WithCancel(s.runsCtx)
	defer cancel()
	sigs := make(chan os.Signal, 16)
	go func() {
		defer cancel() // the connection's end kills the command
		readSignalLines(brw.Reader, sigs)
	}()
	s.log.Debug("run", "argv", req.Argv, "uid", owner)
	start := time.Now()
	trace := func(phase string) {
		s.log.Debug("run phase", "phase", phase, "ms", float64(time.Since(start).Microseconds())/1000)
	}
	res, err := runtime.Run(ctx, runtime.Request{Policy: rc.pol, Argv: req.Argv, Env: req.Env,
		Stdin: stdio[0], Stdout: stdio[1], Stderr: stdio[2], StateDir: s.cfg.StateDir,
		Logger: s.cfg.Logger, Signals: sigs, As: rc.as, Trace: trace, OnTerminal: onTerminal, Enforcer: s.cfg.Enforcer})
	if err != nil {
		code := 125
		var xe *enforce.ExecError
		if errors.As(err, &xe) {
			code = xe.ExitCode()
		}
		end(client.RunEnd{Event: "error", ExitCode: code, Error: err.Error(), Notes: rc.notes})
		return nil
	}
	e := client.RunEnd{Event: "exit", ExitCode: res.ExitCode, TimedOut: res.TimedOut, Warnings: res.Warnings, Notes: rc.notes}
	if res.TimedOut {
		e.TimeoutMS = rc.pol.Limits.Timeout.Milliseconds()
	}
	if vs := rc.pol.Reported(req.Argv, res.Violations); len(vs) > 0 {
		e.Violations, _ = json.Marshal(vs)
	}
	for _, sk := range res.Skipped {
		e.Skipped = append(e.Skipped, sk.String())
	}
	end(e)
	return nil
}

// upgrade takes the connection over and answers 101 with the protocol
// token. A nil connection: nothing more to do (the error, if any, is the
// answer); otherwise the caller closes it.
func upgrade(w http.ResponseWriter, token string) (*net.UnixConn, *bufio.ReadWriter, error) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be taken over")
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("take over the connection: %w", err)
	}
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		conn.Close()
		return nil, nil, nil // Serve listens on unix sockets only
	}
	_ = uc.SetDeadline(time.Time{})
	if _, err := brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + token + "\r\n\r\n"); err == nil {
		err = brw.Flush()
	}
	if err != nil {
		uc.Close()
		return nil, nil, nil // the client is gone
	}
	return uc, brw, nil
}

// readSignalLines reads {"signal":N} lines until the connection ends and
// passes each signal on; a line that is not one is skipped, and a flood is
// dropped, as the kernel merges pending signals.
func readSignalLines(r io.Reader, sigs chan<- os.Signal) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 256), 4096)
	for sc.Scan() {
		var m struct {
			Signal int `json:"signal"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Signal <= 0 || m.Signal >= 65 {
			continue
		}
		select {
		case sigs <- syscall.Signal(m.Signal):
		default:
		}
	}
}

// maxRunTimeoutMS is the largest timeout_ms of a run: a time.Duration's.
const maxRunTimeoutMS = int64(math.MaxInt64 / time.Millisecond)

// runConfig checks a run request: its command and environment, and its
// policy (the daemon's for the peer, narrowed as a session's is; the
// server's otherwise).
func (s *Server) runConfig(r *http.Request, req client.RunRequest) (runConfig, error) {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return runConfig{}, errorf(http.StatusBadRequest, "argv", "argv must name a command")
	}
	for _, a := range req.Argv {
		if strings.ContainsRune(a, 0) {
			return runConfig{}, errorf(http.StatusBadRequest, "argv", "argv must not contain a NUL byte")
		}
	}
	if req.Env == nil {
		return runConfig{}, errorf(http.StatusBadRequest, "env", "env is required: the command gets the caller's environment, never the server's")
	}
	for _, kv := range req.Env {
		if !strings.Contains(kv, "=") || strings.ContainsRune(kv, 0) {
			return runConfig{}, errorf(http.StatusBadRequest, "env", "each env entry must be NAME=VALUE without a NUL byte")
		}
	}
	if req.TimeoutMS < 0 {
		return runConfig{}, errorf(http.StatusBadRequest, "timeout_ms", "timeout_ms must not be negative")
	}
	if req.TimeoutMS > maxRunTimeoutMS {
		// In nanoseconds it would wrap: 18446744073709552 ms was a
		// timeout of 384 µs (found by an attack pass).
		return runConfig{}, errorf(http.StatusBadRequest, "timeout_ms", "timeout_ms %d is too large (at most %d)", req.TimeoutMS, maxRunTimeoutMS)
	}
	sreq := client.SessionRequest{Cwd: req.Cwd, Write: req.Write}
	var rc runConfig
	if s.cfg.Daemon != nil {
		cfg, notes, err := s.daemonSessionConfig(r, sreq)
		if err != nil {
			return runConfig{}, err
		}
		rc = runConfig{pol: cfg.Policy, notes: notes, as: cfg.As}
	} else {
		cfg, err := s.sessionConfig(sreq)
		if err != nil {
			return runConfig{}, err
		}
		rc = runConfig{pol: cfg.Policy, notes: s.cfg.Notes}
	}
	if t := time.Duration(req.TimeoutMS) * time.Millisecond; t > 0 && (rc.pol.Limits.Timeout == 0 || t < rc.pol.Limits.Timeout) {
		pol := *rc.pol
		pol.Limits.Timeout = t
		rc.pol = &pol
	}
	return rc, nil
}

// receiveStdio reads the caller's three descriptors: one message, one byte
// of data, exactly three descriptors, received close-on-exec.
func receiveStdio(uc *net.UnixConn) ([3]*os.File, error) {
	var out [3]*os.File
	_ = uc.SetReadDeadline(time.Now().Add(fdWait))
	defer uc.SetReadDeadline(time.Time{})
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return out, fmt.Errorf("the caller's descriptors did not come: %w", err)
	}
	var fds []int
	if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for _, m := range msgs {
			if got, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	if n != 1 || len(fds) != 3 || flags&unix.MSG_CTRUNC != 0 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return out, fmt.Errorf("want one message with three descriptors (stdin, stdout, stderr), got %d", len(fds))
	}
	for i, fd := range fds {
		unix.CloseOnExec(fd)
		out[i] = os.NewFile(uintptr(fd), fmt.Sprintf("caller-fd-%d", i))
	}
	return out, nil
}
