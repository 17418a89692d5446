package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/runtime/settings"
	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/api/client"
	"github.com/moat-sandbox/moat/shell/jsonl"
)

// The CLI's side of moatd (docs/DAEMON.md): when moat runs as a user and
// the daemon answers, moat session --jsonl runs its session there (eBPF
// network layer, cgroup limits, the command as the user); otherwise it runs
// rootless and says why. MOAT_DAEMON=off never uses the daemon,
// MOAT_DAEMON=required refuses to run without it.

// daemonProbeTimeout bounds the health check that decides whether moatd
// is used. A missing daemon fails at once (no socket, or nobody
// listening); the bound is for a daemon that does not answer, and is wide
// enough that a busy machine's daemon is not taken for a missing one (at
// 200 ms, runs fell back to rootless under load).
const daemonProbeTimeout = time.Second

const (
	noteDaemon   = "eBPF network layer and cgroup limits"
	noteRootless = "no eBPF layer, rlimits for limits"
)

// daemonMode is MOAT_DAEMON: auto (unset), off or required.
func daemonMode() (string, error) {
	switch m := os.Getenv("MOAT_DAEMON"); m {
	case "", "auto":
		return "auto", nil
	case "off", "required":
		return m, nil
	default:
		return "", usageError("MOAT_DAEMON=%q: want auto, off or required", m)
	}
}

// probeDaemon asks moatd's health route on sock; the error says why it is
// not usable.
func probeDaemon(ctx context.Context, sock string) (*client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, daemonProbeTimeout)
	defer cancel()
	cl := client.New(sock)
	cl.Peer = client.PeerRoot // moatd is root's; anyone else is not moatd
	if _, err := cl.Health(ctx); err != nil {
		cl.Close()
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		var oe *net.OpError
		if errors.As(err, &oe) {
			err = oe.Err // "connect: no such file or directory"
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: no answer within %v", sock, daemonProbeTimeout)
		}
		return nil, fmt.Errorf("%s: %v", sock, err)
	}
	return cl, nil
}

// chooseDaemon decides whether command (moat session, ...) runs through
// moatd: a client when it does, nil for rootless (after the note on
// stderr). notUsed, if not empty, is why the daemon cannot serve this
// invocation even if it answers (the daemon is then not asked).
func chooseDaemon(ctx context.Context, stderr io.Writer, notUsed string) (*client.Client, string, error) {
	mode, err := daemonMode()
	if err != nil {
		return nil, "", err
	}
	if mode == "off" || os.Geteuid() == 0 {
		return nil, "", nil // root builds its sandboxes itself
	}
	sock := daemonSocket()
	if notUsed != "" {
		if mode == "required" {
			return nil, "", usageError("MOAT_DAEMON=required, but moatd cannot serve this: %s", notUsed)
		}
		fmt.Fprintf(stderr, "moat: moatd not used (%s): running rootless (%s)\n", notUsed, noteRootless)
		return nil, "", nil
	}
	cl, err := probeDaemon(ctx, sock)
	if err != nil {
		if mode == "required" {
			return nil, "", &exitError{code: exitMoatError, err: fmt.Errorf("moatd not reachable (%v) and MOAT_DAEMON=required", err)}
		}
		fmt.Fprintf(stderr, "moat: moatd not reachable (%v): running rootless (%s)\n", err, noteRootless)
		return nil, "", nil
	}
	fmt.Fprintf(stderr, "moat: running through moatd (%s): %s\n", sock, noteDaemon)
	return cl, sock, nil
}

// daemonUnsuited says why the daemon cannot serve these session flags:
// the daemon applies root's policy for the user (users.d) and reads no file
// of the user's, so a session whose policy would come from the user's own
// settings runs rootless, where they apply (never silently dropped).
func daemonUnsuited(f *sessionFlags) string {
	switch {
	case f.settings != "":
		return "--settings: moatd applies root's policy for you, not your settings file"
	case f.bestEffort:
		return "--best-effort: moatd never runs with less than its policy"
	case f.idleTimeout > 0:
		return "--idle-timeout: moatd closes idle sessions itself"
	}
	return userSettingsUnsuited()
}

// runUnsuited is daemonUnsuited for moat run.
func runUnsuited(f *runFlags, controlFD bool) string {
	switch {
	case f.settings != "":
		return "--settings: moatd applies root's policy for you, not your settings file"
	case f.bestEffort:
		return "--best-effort: moatd never runs with less than its policy"
	case controlFD:
		return "--control-fd: moatd takes no network-list updates"
	case f.debug:
		return "--debug: moatd's logs are its own"
	}
	return userSettingsUnsuited()
}

// userSettingsUnsuited says why settings files of the user's keep the CLI
// rootless (where they apply), or "".
func userSettingsUnsuited() string {
	_, srcs, err := settings.Load(settings.Options{Check: runtime.SettingsCheck("")})
	if err != nil {
		return "your settings: " + err.Error()
	}
	for _, s := range srcs {
		if s.Level != settings.LevelManaged {
			return "your settings " + s.File + " apply only rootless: moatd applies root's policy for you"
		}
	}
	return ""
}

// daemonRun is moat run through moatd: the command in a sandbox of the
// daemon's, in this working directory, with this process's environment
// and descriptors, and its signals forwarded. It returns the command's exit
// status as moat run's.
func daemonRun(ctx context.Context, cl *client.Client, f runFlags, argv []string, stderr io.Writer) error {
	cwd, err := os.Getwd()
	if err != nil {
		return &exitError{code: exitMoatError, err: err}
	}
	req := client.RunRequest{Argv: argv, Env: os.Environ(), Cwd: cwd, TimeoutMS: f.timeout.Milliseconds()}
	for _, w := range f.write {
		if w == "" || strings.ContainsRune(w, 0) {
			return usageError("--write needs a path")
		}
		req.Write = append(req.Write, absPath(cwd, w))
	}
	sigs, stop := catchSignals()
	defer stop()
	stdin := os.Stdin
	if f.noStdin {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return &exitError{code: exitMoatError, err: err}
		}
		defer null.Close()
		stdin = null
	}
	end, err := cl.RunAttached(ctx, req, [3]*os.File{stdin, os.Stdout, os.Stderr}, sigs)
	if err != nil {
		var ae *client.Error
		if errors.As(err, &ae) {
			return &exitError{code: exitMoatError, err: fmt.Errorf("moatd refused the run: %s", daemonErrorText(ae))}
		}
		return &exitError{code: exitMoatError, err: fmt.Errorf("moatd: %w", err)}
	}
	for _, n := range end.Notes {
		fmt.Fprintf(stderr, "moat: note: %s\n", n)
	}
	if end.Event == "error" {
		return &exitError{code: end.ExitCode, err: fmt.Errorf("moatd: %s", end.Error)}
	}
	for _, sk := range end.Skipped {
		fmt.Fprintf(stderr, "moat: best effort: not enforced: %s\n", sk)
	}
	for _, w := range end.Warnings {
		fmt.Fprintf(stderr, "moat: warning: %s\n", w)
	}
	if len(end.Violations) > 0 {
		var vs []policy.Violation
		if err := json.Unmarshal(end.Violations, &vs); err != nil {
			fmt.Fprintf(stderr, "moat: moatd's violation report: %v\n", err)
		}
		fmt.Fprint(stderr, policy.Annotate(vs))
	}
	if end.TimedOut {
		fmt.Fprintf(stderr, "moat: timed out after %v: the process tree was killed\n", time.Duration(end.TimeoutMS)*time.Millisecond)
	}
	if end.ExitCode != 0 {
		return &exitError{code: end.ExitCode}
	}
	return nil
}

// daemonErrorText is a refusal of the daemon's, with the field at fault.
func daemonErrorText(e *client.Error) string {
	if e.Field != "" {
		return fmt.Sprintf("%s (%s)", e.Message, e.Field)
	}
	return e.Message
}

// openDaemonSession opens a session in moatd for moat session --jsonl: in
// the client's working directory, with its --write paths, gate, mode and
// timeout.
func openDaemonSession(ctx context.Context, cl *client.Client, f *sessionFlags) (*moatdBackend, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, &exitError{code: exitMoatError, err: err}
	}
	req := client.SessionRequest{Gate: f.gate, Mode: f.mode, TimeoutMS: f.timeout.Milliseconds(), Cwd: cwd}
	for _, w := range f.write {
		if w == "" || strings.ContainsRune(w, 0) {
			return nil, usageError("--write needs a path")
		}
		req.Write = append(req.Write, absPath(cwd, w))
	}
	s, err := cl.CreateSession(ctx, req)
	if err != nil {
		return nil, &exitError{code: exitMoatError, err: fmt.Errorf("moatd refused the session: %v", err)}
	}
	b := &moatdBackend{cl: cl, sid: s.ID, mode: f.mode, cwd: s.Cwd, cmds: map[string]*remoteCmd{}}
	// The session lives as long as this process: a connection of its own
	// holds it, and the daemon closes the session when that connection
	// closes (this process killed, even with SIGKILL).
	var hold context.Context
	hold, b.unhold = context.WithCancel(context.Background())
	go func() { _ = cl.HoldSession(hold, s.ID) }()
	return b, nil
}

// moatdBackend is a jsonl.Backend whose commands run in a session of
// moatd, through the local API: a run request is POST .../commands, whose
// NDJSON events are the JSON-lines events (the same jsonl.Events build
// both) with the request's id put back; read, kill and close are the
// matching routes. A command in the background is started with
// "background": true and read until it has finished (its output kept for
// the next read request).
//
// Not available through the daemon (an error says so): auto_background_ms
// (the API's foreground commands never move to the background on their
// own), moving a running command to the background, preview_edit.
type moatdBackend struct {
	cl   *client.Client
	sid  string
	mode string

	mu     sync.Mutex
	cwd    string
	next   int
	cmds   map[string]*remoteCmd // by the request's id
	closed bool

	closeOnce sync.Once
	closeErr  error
	unhold    context.CancelFunc // ends the connection that holds the session
}

// remoteCmd is a command of the bridge.
type remoteCmd struct {
	api        string // its id in the daemon's session
	background bool

	// req serializes the reads and the kill of a background command: the
	// daemon gives its result to one of them.
	req    sync.Mutex
	mu     sync.Mutex
	unread strings.Builder // output read from the daemon, not yet by a read request
	result json.RawMessage
	done   chan struct{}
}

func (rc *remoteCmd) deliver(res json.RawMessage) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	select {
	case <-rc.done:
	default:
		rc.result = res
		close(rc.done)
	}
}

func (rc *remoteCmd) finished() bool {
	select {
	case <-rc.done:
		return true
	default:
		return false
	}
}

// opTimeout bounds a read, kill or close request to the daemon.
const opTimeout = 2 * time.Minute

func (b *moatdBackend) Submit(ctx context.Context, c jsonl.Command) (func(context.Context, func()) map[string]any, error) {
	if c.AutoBackground > 0 {
		return nil, errors.New("auto_background_ms is not available through moatd: its foreground commands run until they end or time out (start a long one with background: true)")
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, shell.ErrClosed
	}
	if b.cmds[c.ID] != nil {
		b.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", shell.ErrDuplicateID, c.ID)
	}
	b.next++
	rc := &remoteCmd{api: "j" + strconv.Itoa(b.next), background: c.Background, done: make(chan struct{})}
	b.cmds[c.ID] = rc
	cwd := b.cwd
	b.mu.Unlock()
	req := client.CommandRequest{ID: rc.api, Command: c.Command, TimeoutMS: c.Timeout.Milliseconds()}
	if !c.Background {
		st, err := b.cl.Stream(ctx, b.sid, req)
		if err != nil {
			b.forget(c.ID)
			return nil, fmt.Errorf("moatd: %w", err)
		}
		return func(context.Context, func()) map[string]any {
			defer b.forget(c.ID)
			defer st.Close()
			return b.stream(c, st)
		}, nil
	}
	kind := "none"
	if d, err := b.cl.Decide(ctx, client.DecideRequest{Command: c.Command, Cwd: cwd, Mode: b.mode}); err == nil && d.Kind != "" {
		kind = d.Kind
	}
	st, err := b.cl.StartRaw(ctx, b.sid, req)
	if err != nil {
		b.forget(c.ID)
		return nil, fmt.Errorf("moatd: %w", err)
	}
	return func(_ context.Context, backgrounded func()) map[string]any {
		defer b.forget(c.ID)
		if !st.Running { // it did not start (refused by the gate)
			return b.finished(c, st.Result, nil)
		}
		// The events a background command of this process has.
		c.Emit(map[string]any{"id": c.EventID, "event": "started", "command": c.Command, "cwd": cwd, "kind": kind, "background": true})
		c.Emit(map[string]any{"id": c.EventID, "event": "backgrounded", "reason": shell.BackgroundRequested,
			"message": "Command running in background with ID: " + c.ID})
		backgrounded()
		return b.wait(c, rc)
	}, nil
}

// stream passes a foreground command's events on, with the request's id.
func (b *moatdBackend) stream(c jsonl.Command, st *client.EventStream) map[string]any {
	for {
		line, err := st.Next()
		if err != nil {
			return b.finished(c, nil, err)
		}
		ev, err := decodeEvent(line)
		if err != nil {
			return b.finished(c, nil, err)
		}
		if ev["event"] == "finished" {
			return b.finished(c, line, nil)
		}
		if ev["event"] == "output" && c.StreamBytes < 0 {
			continue
		}
		ev["id"] = c.EventID
		c.Emit(ev)
	}
}

// wait reads a background command until it has finished (or a kill or
// the session's close has collected its result).
func (b *moatdBackend) wait(c jsonl.Command, rc *remoteCmd) map[string]any {
	delay := 25 * time.Millisecond
	for {
		select {
		case <-rc.done:
			return b.finished(c, rc.result, nil)
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
		if err := b.poll(rc); err != nil {
			return b.finished(c, nil, err)
		}
	}
}

// poll reads a background command's output into rc, and its result once
// it has finished.
func (b *moatdBackend) poll(rc *remoteCmd) error {
	rc.req.Lock()
	defer rc.req.Unlock()
	if rc.finished() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	st, err := b.cl.ReadRaw(ctx, b.sid, rc.api)
	if err != nil {
		return fmt.Errorf("moatd: reading the command: %w", err)
	}
	rc.mu.Lock()
	rc.unread.WriteString(st.Output)
	rc.mu.Unlock()
	if st.Result != nil {
		rc.deliver(st.Result)
	}
	return nil
}

// finished is the command's finished event: the daemon's (raw) with the
// request's id, or one saying what failed.
func (b *moatdBackend) finished(c jsonl.Command, raw json.RawMessage, err error) map[string]any {
	var ev map[string]any
	if err == nil {
		if raw == nil {
			err = errors.New("moatd gave no result")
		} else if ev, err = decodeEvent(raw); err == nil && ev["event"] != "finished" {
			err = fmt.Errorf("moatd: not a finished event: %s", raw)
		}
	}
	if err != nil {
		return jsonl.FinishedEvent(c.EventID, shell.Result{}, err, b.Cwd())
	}
	ev["id"] = c.EventID
	if cwd, ok := ev["cwd"].(string); ok && cwd != "" {
		b.mu.Lock()
		b.cwd = cwd
		b.mu.Unlock()
	}
	if c.Subagent { // hints are removed from the output and not returned
		ev["hints"] = []any{}
	}
	return ev
}

func decodeEvent(line []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var ev map[string]any
	if err := dec.Decode(&ev); err != nil || ev == nil {
		return nil, fmt.Errorf("moatd: bad event %q", line)
	}
	return ev, nil
}

func (b *moatdBackend) cmd(id string) (*remoteCmd, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rc := b.cmds[id]
	if rc == nil {
		return nil, fmt.Errorf("no command %q", id)
	}
	return rc, nil
}

func (b *moatdBackend) forget(id string) {
	b.mu.Lock()
	delete(b.cmds, id)
	b.mu.Unlock()
}

func (b *moatdBackend) Background(string) error {
	return errors.New("moving a running command to the background is not available through moatd (start it with background: true)")
}

func (b *moatdBackend) PreviewEdit(context.Context, string) (*shell.FileEdit, error) {
	return nil, errors.New("preview_edit is not available through moatd")
}

func (b *moatdBackend) Read(id string) (shell.ReadResult, error) {
	rc, err := b.cmd(id)
	if err != nil {
		return shell.ReadResult{}, err
	}
	if !rc.background {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		st, err := b.cl.ReadRaw(ctx, b.sid, rc.api)
		if err != nil {
			return shell.ReadResult{}, fmt.Errorf("moatd: %w", err)
		}
		return shell.ReadResult{ID: id, Output: st.Output, More: st.More, Running: st.Running}, nil
	}
	if err := b.poll(rc); err != nil {
		return shell.ReadResult{}, err
	}
	rc.mu.Lock()
	out := rc.unread.String()
	rc.unread.Reset()
	rc.mu.Unlock()
	return shell.ReadResult{ID: id, Output: out, Running: !rc.finished()}, nil
}

func (b *moatdBackend) Kill(id string) error {
	rc, err := b.cmd(id)
	if err != nil {
		return err
	}
	return b.kill(rc)
}

// kill kills a command in the daemon; a background command's result, which
// the answer holds, goes to its waiter.
func (b *moatdBackend) kill(rc *remoteCmd) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if !rc.background {
		if _, err := b.cl.KillRaw(ctx, b.sid, rc.api); err != nil {
			return fmt.Errorf("moatd: %w", err)
		}
		return nil
	}
	rc.req.Lock()
	defer rc.req.Unlock()
	if rc.finished() {
		return nil
	}
	st, err := b.cl.KillRaw(ctx, b.sid, rc.api)
	if err != nil {
		return fmt.Errorf("moatd: %w", err)
	}
	rc.mu.Lock()
	rc.unread.WriteString(st.Output)
	rc.mu.Unlock()
	rc.deliver(st.Result)
	return nil
}

func (b *moatdBackend) Cwd() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cwd
}

// Close kills the background commands (their results end their waits),
// then closes the daemon's session, which kills the rest.
func (b *moatdBackend) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		var bg []*remoteCmd
		for _, rc := range b.cmds {
			if rc.background {
				bg = append(bg, rc)
			}
		}
		b.mu.Unlock()
		for _, rc := range bg {
			b.kill(rc) // an error: its wait ends with the session's close
		}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := b.cl.CloseSession(ctx, b.sid); err != nil {
			b.closeErr = fmt.Errorf("moatd: closing the session: %w", err)
		}
		b.unhold()
		b.cl.Close()
	})
	return b.closeErr
}

// daemonShell is moat shell's session in moatd: the daemon's decision for
// the user (its policy for you, from users.d) is printed and, for "ask",
// you are asked; the command then runs in the daemon's session. The
// session is opened with gate "deny" (what you approve runs) where the
// daemon allows it; a daemon whose gate is strict runs only what its
// policy allows, and moat shell says so instead of asking.
type daemonShell struct {
	cl     *client.Client
	sid    string
	gate   string
	mode   string
	dir    string
	unhold context.CancelFunc
}

func openDaemonShell(ctx context.Context, cl *client.Client, f *sessionFlags) (*daemonShell, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, &exitError{code: exitMoatError, err: err}
	}
	req := client.SessionRequest{Gate: "deny", Mode: f.mode, TimeoutMS: f.timeout.Milliseconds(), Cwd: cwd}
	for _, w := range f.write {
		if w == "" || strings.ContainsRune(w, 0) {
			return nil, usageError("--write needs a path")
		}
		req.Write = append(req.Write, absPath(cwd, w))
	}
	s, err := cl.CreateSession(ctx, req)
	var ae *client.Error
	if errors.As(err, &ae) && ae.Field == "gate" {
		req.Gate = "strict" // the daemon's gate is strict: its policy alone decides
		s, err = cl.CreateSession(ctx, req)
	}
	if err != nil {
		return nil, &exitError{code: exitMoatError, err: fmt.Errorf("moatd refused the session: %v", err)}
	}
	d := &daemonShell{cl: cl, sid: s.ID, gate: s.Gate, mode: f.mode, dir: s.Cwd}
	// The session lives as long as this process (see openDaemonSession).
	var hold context.Context
	hold, d.unhold = context.WithCancel(context.Background())
	go func() { _ = cl.HoldSession(hold, s.ID) }()
	return d, nil
}

func (d *daemonShell) ready() string {
	return fmt.Sprintf("moatd session ready in %s (gate %s)", d.dir, d.gate)
}

func (d *daemonShell) cwd() string { return d.dir }

func (d *daemonShell) decide(ctx context.Context, command string) (shellDecision, error) {
	r, err := d.cl.Decide(ctx, client.DecideRequest{Command: command, Cwd: d.dir, Mode: d.mode})
	if err != nil {
		return shellDecision{}, fmt.Errorf("moatd: %w", err)
	}
	v, err := policy.ParseVerdict(r.Decision)
	if err != nil {
		return shellDecision{}, fmt.Errorf("moatd's decision: %w", err)
	}
	out := shellDecision{verdict: v, reason: r.Reason, warnings: r.Warnings, sedEdit: len(r.SedEdit) > 0 && string(r.SedEdit) != "null"}
	if r.Rule != nil {
		out.rule = *r.Rule
	}
	if r.Suggestion != nil {
		out.suggestion = *r.Suggestion
	}
	return out, nil
}

func (d *daemonShell) refusesAsk() string {
	if d.gate == "strict" {
		return "moatd runs only what its policy for you allows (its gate is strict)"
	}
	return ""
}

func (d *daemonShell) preview(context.Context, string) (string, error) {
	return "", errors.New("moatd shows no preview of an edit")
}

func (d *daemonShell) run(ctx context.Context, command string) (shell.Result, error) {
	ev, err := d.cl.RunWait(ctx, d.sid, client.CommandRequest{Command: command})
	if err != nil {
		if ctx.Err() != nil {
			return shell.Result{Command: command, ExitCode: -1, Interrupted: true, Cwd: d.dir}, nil
		}
		return shell.Result{}, fmt.Errorf("moatd: %w", err)
	}
	if ev.Refused != nil {
		return shell.Result{}, fmt.Errorf("moatd's gate (%s) refused it: %s", d.gate, ev.Refused.Reason)
	}
	// The finished event is the session's result, field for field.
	b, err := json.Marshal(ev)
	if err != nil {
		return shell.Result{}, err
	}
	var res shell.Result
	if err := json.Unmarshal(b, &res); err != nil {
		return shell.Result{}, fmt.Errorf("moatd's result: %w", err)
	}
	if res.Cwd != "" {
		d.dir = res.Cwd
	}
	return res, nil
}

func (d *daemonShell) close() {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_ = d.cl.CloseSession(ctx, d.sid)
	d.unhold()
}
