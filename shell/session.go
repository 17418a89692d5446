package shell

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/permissions"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Defaults of a Config's durations.
const (
	DefaultTimeout          = 2 * time.Minute
	DefaultMaxTimeout       = 10 * time.Minute
	DefaultAutoBackground   = 15 * time.Second
	DefaultSnapshotTimeout  = 10 * time.Second
	DefaultProgressInterval = time.Second
)

// Errors of a Session.
var (
	ErrClosed        = errors.New("shell: session closed")
	ErrUnknownID     = errors.New("shell: no such command")
	ErrDuplicateID   = errors.New("shell: a command with this id is still known")
	ErrNotForeground = errors.New("shell: the command is not running in the foreground")
)

// Config configures a Session. Runner and Dir are required; every other
// field has a working zero value.
type Config struct {
	// Runner starts the session's processes, inside its sandbox. Required.
	Runner Runner
	// Dir is the session's start directory inside the sandbox (absolute).
	// Commands start there; the tracked working directory falls back to
	// it when the directory it names is deleted. Required.
	Dir string
	// Shell is the shell commands run in. If nil, Detector{}.Detect().
	Shell Provider
	// Env is the environment every process starts with. If nil, only the
	// variables the session sets (SHELL, GIT_EDITOR=true,
	// GIT_OPTIONAL_LOCKS=0 and, unless
	// NoHints, CLAUDECODE=1) and those the Runner adds.
	Env []string
	// NoSnapshot runs every command in a login shell instead of sourcing a
	// snapshot (what the seeds fall back to when the snapshot fails).
	NoSnapshot bool
	// Ripgrep is an rg binary inside the sandbox for the snapshot's rg shim
	// (defined when the user's shell has no rg). If empty, no shim.
	Ripgrep string
	// Prefix is a program the whole command string is handed to (see
	// PrefixFromEnv). If empty, none.
	Prefix string
	// MaxOutput is the most characters of output returned inline; longer
	// output is saved to a file and previewed. If 0, DefaultMaxOutput; at
	// most MaxOutputUpperLimit.
	MaxOutput int
	// PreviewBytes is the size of the preview of saved output. If 0,
	// DefaultPreviewBytes.
	PreviewBytes int
	// OutputDir is the directory on the host where long output is saved.
	// It must not be writable from inside the sandbox. If empty, a new
	// directory under the user's cache directory (readable by sandboxed
	// commands, writable only by the host), removed by Close.
	OutputDir string
	// MaxFileBytes caps a saved output file. If 0, DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxSavedBytes caps the saved output of the session on disk: before
	// a new file is made, the oldest are removed until the new one's
	// MaxFileBytes fits. If 0, DefaultMaxSavedBytes.
	MaxSavedBytes int64
	// Timeout is a command's default timeout; MaxTimeout caps the timeout a
	// request asks for. If 0, DefaultTimeout and DefaultMaxTimeout.
	Timeout, MaxTimeout time.Duration
	// AutoBackground moves a foreground command that is still running
	// after this long to the background, and returns. If 0,
	// DefaultAutoBackground; if negative, never.
	AutoBackground time.Duration
	// SnapshotTimeout bounds taking the snapshot. If 0,
	// DefaultSnapshotTimeout.
	SnapshotTimeout time.Duration
	// ProgressInterval is how often Request.Progress is called while no
	// output comes. If 0, DefaultProgressInterval.
	ProgressInterval time.Duration
	// NoHints turns the hints protocol off: CLAUDECODE=1 is not set and
	// hint tags stay in the output.
	NoHints bool
	// Engine classifies commands for display (search, read, list, silent)
	// and recognises sed edits. If nil, an engine without rules.
	Engine *permissions.Engine
	// Gate, if set, is asked before a command runs: a verdict other than
	// Allow refuses it (Result.Refused). If nil, every command is run:
	// deciding is then the caller's job.
	Gate func(ctx context.Context, command, cwd string) policy.Decision
	// Logger receives debug logs. If nil, nothing is logged.
	Logger *slog.Logger
}

// Request is one command to run.
type Request struct {
	// ID names the command for Background, Read, Wait and Kill. If empty,
	// one is made up. It must not name a command the session still holds.
	ID string
	// Command is the command line, as the agent wrote it.
	Command string
	// Timeout kills the command after this long in the foreground. If 0,
	// Config.Timeout; at most Config.MaxTimeout. A command in the
	// background has no timeout.
	Timeout time.Duration
	// Background starts the command in the background (the seeds'
	// run_in_background): Run returns at once.
	Background bool
	// AutoBackground overrides Config.AutoBackground for this command (0:
	// the session's; negative: never).
	AutoBackground time.Duration
	// Progress, if set, is called with output as it comes and every
	// Config.ProgressInterval, until the command finishes or moves to the
	// background. Calls never overlap; a slow callback slows the command's
	// output down.
	Progress func(Progress)
	// Subagent: hints are removed from the output but not returned (the
	// seeds record them for the main agent only).
	Subagent bool
	// Started, if set, is called once the process has started, before Run
	// waits for it.
	Started func(Started)
	// DecidedIn, if set, is the working directory the command was judged
	// (and perhaps approved) in: if the session's is another when it
	// starts (a concurrent command's cd while the user was asked), it does
	// not run, and the result says so.
	DecidedIn string
}

// Started describes a command whose process has started.
type Started struct {
	ID, Command string
	// Cwd is the working directory it started in; Kind its display class.
	Cwd, Kind string
}

// Progress reports a running command.
type Progress struct {
	ID string
	// Chunk is output since the last call, hints removed; "" for a
	// periodic call. A chunk never ends inside a UTF-8 sequence.
	Chunk string
	// Bytes and Lines count the output so far.
	Bytes, Lines int64
	Elapsed      time.Duration
}

// Background reasons (Result.Backgrounded).
const (
	BackgroundRequested = "requested" // Request.Background
	BackgroundUser      = "user"      // Session.Background
	BackgroundAuto      = "auto"      // after the auto-background budget
)

// Result is a command's outcome as an agent host sees it.
type Result struct {
	ID      string `json:"id"`
	Command string `json:"command"`
	// ExitCode is the exit status, 128+N after signal N; -1 when the
	// command has not finished (moved to the background) or never ran.
	ExitCode int  `json:"exit_code"`
	Signal   int  `json:"signal,omitempty"`
	TimedOut bool `json:"timed_out,omitempty"`
	// Interrupted: killed by Kill, the context or Close.
	Interrupted bool `json:"interrupted,omitempty"`
	// IsError is the exit-code semantics' verdict (see Interpret).
	IsError bool `json:"is_error"`
	// Message is the verdict's note ("No matches found"), or "".
	Message string `json:"message,omitempty"`
	// Output is the merged output with hints removed, or the preview of
	// saved output, followed by the <sandbox_violations> block if any.
	Output string `json:"output"`
	// OutputFile is the host file holding the whole output, or "".
	OutputFile string `json:"output_file,omitempty"`
	// OutputBytes and OutputLines count the whole output.
	OutputBytes int64 `json:"output_bytes"`
	OutputLines int64 `json:"output_lines"`
	// Truncated: OutputFile holds only the first MaxFileBytes.
	Truncated bool   `json:"truncated,omitempty"`
	Binary    bool   `json:"binary,omitempty"`
	Image     *Image `json:"image,omitempty"`
	// Cwd is the session's working directory after the command.
	Cwd string `json:"cwd"`
	// Notes say what the session did on its own: a working directory
	// recovered, a snapshot retaken, an environment change not kept.
	Notes      []string           `json:"notes,omitempty"`
	Violations []policy.Violation `json:"violations"`
	Hints      []Hint             `json:"hints,omitempty"`
	// Kind is the display class: search, read, list, silent or none.
	Kind string `json:"kind"`
	// Backgrounded says why the command runs in the background
	// (BackgroundRequested, BackgroundUser, BackgroundAuto), or "".
	Backgrounded string `json:"backgrounded,omitempty"`
	// BackgroundID is set while the command runs in the background: pass
	// it to Read, Wait and Kill.
	BackgroundID string `json:"background_id,omitempty"`
	// Refused is the Gate's decision when it refused the command.
	Refused  *policy.Decision `json:"refused,omitempty"`
	Duration time.Duration    `json:"duration_ns"`
}

// Session runs an agent's commands in one sandbox session, the way the
// seeds' Bash tool does. It is safe for concurrent use.
type Session struct {
	cfg    Config
	shell  Provider
	engine *permissions.Engine
	log    *slog.Logger

	mu       sync.Mutex
	cwd      string
	env      map[string]EnvChange // the session's environment changes
	tasks    map[string]*task
	nextID   int
	closed   bool
	outDir   string      // created lazily
	ownedDir bool        // outDir was made by the session: Close removes it
	saved    []savedFile // the files of saved output, oldest first

	snapMu   sync.Mutex
	snapText []byte // the snapshot, once taken: the host's copy, handed to each command
	snapOK   bool
	snapDone bool // tried once
	snapNote string
}

// New checks cfg and returns a session. The snapshot is taken by the first
// command (or by Snapshot).
func New(cfg Config) (*Session, error) {
	if cfg.Runner == nil {
		return nil, errors.New("shell: Config.Runner is nil")
	}
	if !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("shell: Config.Dir %q is not an absolute path", cfg.Dir)
	}
	cfg.Dir = filepath.Clean(cfg.Dir)
	s := &Session{cfg: cfg, cwd: cfg.Dir, env: map[string]EnvChange{}, tasks: map[string]*task{}}
	s.shell = cfg.Shell
	if s.shell == nil {
		p, err := Detector{}.Detect()
		if err != nil {
			return nil, err
		}
		s.shell = p
	}
	s.engine = cfg.Engine
	if s.engine == nil {
		e, err := permissions.New(policy.Permissions{}, permissions.Options{})
		if err != nil {
			return nil, err
		}
		s.engine = e
	}
	s.log = cfg.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.cfg.MaxOutput <= 0 {
		s.cfg.MaxOutput = DefaultMaxOutput
	}
	s.cfg.MaxOutput = min(s.cfg.MaxOutput, MaxOutputUpperLimit)
	if s.cfg.PreviewBytes <= 0 {
		s.cfg.PreviewBytes = DefaultPreviewBytes
	}
	if s.cfg.MaxFileBytes <= 0 {
		s.cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if s.cfg.MaxSavedBytes <= 0 {
		s.cfg.MaxSavedBytes = DefaultMaxSavedBytes
	}
	if s.cfg.Timeout <= 0 {
		s.cfg.Timeout = DefaultTimeout
	}
	if s.cfg.MaxTimeout <= 0 {
		s.cfg.MaxTimeout = DefaultMaxTimeout
	}
	s.cfg.Timeout = min(s.cfg.Timeout, s.cfg.MaxTimeout)
	if s.cfg.AutoBackground == 0 {
		s.cfg.AutoBackground = DefaultAutoBackground
	}
	if s.cfg.SnapshotTimeout <= 0 {
		s.cfg.SnapshotTimeout = DefaultSnapshotTimeout
	}
	if s.cfg.ProgressInterval <= 0 {
		s.cfg.ProgressInterval = DefaultProgressInterval
	}
	return s, nil
}

// Shell returns the session's shell.
func (s *Session) Shell() Provider { return s.shell }

// Timeout returns a command's default timeout (Config.Timeout, or
// DefaultTimeout; at most Config.MaxTimeout).
func (s *Session) Timeout() time.Duration { return s.cfg.Timeout }

// Cwd returns the tracked working directory.
func (s *Session) Cwd() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cwd
}

// Env returns the session's environment changes: the variables commands
// exported (with their values) or unset (Unset), in name order.
func (s *Session) Env() []EnvChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.envLocked()
}

func (s *Session) envLocked() []EnvChange {
	out := make([]EnvChange, 0, len(s.env))
	for _, e := range s.env {
		out = append(out, e)
	}
	sortEnv(out)
	return out
}

// procEnv is the environment of every process.
func (s *Session) procEnv() []string {
	env := append([]string(nil), s.cfg.Env...)
	set := func(k, v string) {
		for i, kv := range env {
			if strings.HasPrefix(kv, k+"=") {
				env[i] = k + "=" + v
				return
			}
		}
		env = append(env, k+"="+v)
	}
	set("SHELL", s.shell.Path())
	if !hasVar(env, "GIT_EDITOR") {
		set("GIT_EDITOR", "true")
	}
	if !hasVar(env, "GIT_OPTIONAL_LOCKS") {
		// git status and the other commands moat calls read-only then
		// never refresh .git/index (docs/DECISIONS.md).
		set("GIT_OPTIONAL_LOCKS", "0")
	}
	// git takes a directory of the working tree with HEAD, objects/ and
	// refs/ for a bare repository and runs what its config names: `cd evil
	// && git diff --no-index a b`, judged read-only, ran a cloned tree's
	// diff.external (found by attack pass 49). A bare repository is used
	// only when named (--git-dir, GIT_DIR), as git's own hardening advises;
	// added after any configuration the environment already gives.
	// GIT_CONFIG_PARAMETERS, not GIT_CONFIG_KEY_n, which the environment
	// filter takes for a credential (*KEY*).
	const bare = "'safe.bareRepository'='explicit'"
	if v, ok := baseValue(env, "GIT_CONFIG_PARAMETERS"); ok && v != "" {
		set("GIT_CONFIG_PARAMETERS", v+" "+bare)
	} else {
		set("GIT_CONFIG_PARAMETERS", bare)
	}
	if !s.cfg.NoHints {
		set("CLAUDECODE", "1")
	}
	return env
}

func hasVar(env []string, k string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}

// Snapshot takes the shell snapshot now, if it was not taken yet. Commands
// do this themselves; a host may call it at the start of a session to pay
// the cost early. An error means commands will run in login shells (the
// seeds' fallback).
func (s *Session) Snapshot(ctx context.Context) error {
	if s.cfg.NoSnapshot {
		return nil
	}
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	s.ensureSnapshotLocked(ctx)
	if !s.snapOK {
		return errors.New("shell snapshot: " + s.snapNote)
	}
	return nil
}

// snapshot returns the snapshot's text, nil for a login shell.
func (s *Session) snapshot(ctx context.Context) []byte {
	if s.cfg.NoSnapshot {
		return nil
	}
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	s.ensureSnapshotLocked(ctx)
	if !s.snapOK {
		return nil
	}
	return s.snapText
}

// ensureSnapshotLocked takes the snapshot once. It is taken before the
// session's first command starts (every command waits for it here), so no
// command of the session runs beside the script that takes it; it is never
// taken again.
func (s *Session) ensureSnapshotLocked(ctx context.Context) {
	if s.snapDone {
		return // taken, or failed once: login shells from now on
	}
	s.snapDone = true
	text, err := s.takeSnapshot(ctx)
	if err != nil {
		s.snapOK, s.snapText, s.snapNote = false, nil, err.Error()
		s.log.Debug("shell snapshot failed; commands run in login shells", "err", err)
		return
	}
	s.snapOK, s.snapText, s.snapNote = true, text, ""
	s.log.Debug("shell snapshot taken", "bytes", len(text))
}

// maxSnapshotBytes caps the snapshot's text.
const maxSnapshotBytes = 4 << 20

// takeSnapshot runs the snapshot script through the Runner and returns
// the text it wrote.
func (s *Session) takeSnapshot(ctx context.Context) ([]byte, error) {
	spec := SnapshotSpec{Ripgrep: s.cfg.Ripgrep}
	out := &capBuffer{max: 4096}
	rep := &capBuffer{max: maxSnapshotBytes + 64}
	// The snapshot serves the whole session: the command that happens to
	// take it must not cut it short.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.SnapshotTimeout)
	defer cancel()
	p, err := s.cfg.Runner.Start(ctx, Proc{
		Argv:   s.shell.Argv(s.shell.SnapshotScript(spec), true),
		Env:    s.procEnv(),
		Dir:    s.cfg.Dir,
		Output: out,
		Report: rep,
	})
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	type waited struct {
		ex  Exit
		err error
	}
	ch := make(chan waited, 1)
	go func() { ex, err := p.Wait(); ch <- waited{ex, err} }()
	var w waited
	select {
	case w = <-ch:
	case <-ctx.Done():
		p.Kill()
		<-ch
		return nil, fmt.Errorf("timed out after %v", s.cfg.SnapshotTimeout)
	}
	if w.err != nil {
		return nil, w.err
	}
	if w.ex.Code != 0 || w.ex.Signal != 0 {
		o, _ := out.bytes()
		return nil, fmt.Errorf("exit status %d: %s", w.ex.Code, policy.Sanitize(strings.TrimSpace(string(o))))
	}
	b, over := rep.bytes()
	if over {
		return nil, fmt.Errorf("the snapshot is larger than %d MB", maxSnapshotBytes>>20)
	}
	return parseSnapshot(b)
}

// Run runs one command. It returns when the command finishes, or when it
// moves to the background (then Result.BackgroundID is set and ExitCode
// is -1). The error is for what kept the command from running or being
// waited for; a command that fails is not an error. When ctx ends, the
// command is killed and Run returns its result with ctx's error.
func (s *Session) Run(ctx context.Context, req Request) (Result, error) {
	run, err := s.Submit(req)
	if err != nil {
		return Result{}, err
	}
	return run(ctx)
}

// Submit registers a command without running it: from now on its id is
// known to Read, Kill, Background and Wait (a Kill before it starts keeps
// it from running for long; a Background moves it as soon as it starts).
// The returned function runs it, as Run does, and must be called once.
// Run is Submit followed by that call; Submit lets a caller that runs
// commands in goroutines accept requests about them at once.
func (s *Session) Submit(req Request) (func(context.Context) (Result, error), error) {
	if strings.TrimSpace(req.Command) == "" {
		return nil, errors.New("shell: empty command")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if req.ID == "" {
		for {
			s.nextID++
			req.ID = "c" + strconv.Itoa(s.nextID)
			if _, taken := s.tasks[req.ID]; !taken {
				break
			}
		}
	} else if _, taken := s.tasks[req.ID]; taken {
		return nil, fmt.Errorf("%w: %q", ErrDuplicateID, req.ID)
	}
	t := newTask(s, req)
	s.tasks[req.ID] = t // reserve the id
	return t.run, nil
}

// run starts the task and waits for it in the foreground.
func (t *task) run(ctx context.Context) (Result, error) {
	s := t.s
	s.mu.Lock()
	cwd := s.cwd
	env := s.envLocked()
	s.mu.Unlock()
	if d := t.req.DecidedIn; d != "" && d != cwd {
		s.forget(t.id)
		return Result{ID: t.id, Command: t.req.Command, ExitCode: -1, IsError: true, Cwd: cwd, Kind: t.kind, Violations: []policy.Violation{},
			Message: "Command not run: it was judged in " + d + ", and the session's working directory is now " + cwd + " (another command changed it meanwhile); run it again to have it judged there"}, nil
	}
	res, err := s.start(ctx, t, cwd, env)
	if err != nil || res != nil {
		s.forget(t.id)
		if res != nil {
			return *res, nil
		}
		return Result{ID: t.id, Command: t.req.Command, ExitCode: -1, IsError: true, Message: err.Error(), Cwd: cwd,
			Kind: t.kind, Violations: []policy.Violation{}}, err
	}
	return t.foreground(ctx)
}

// start classifies, gates, builds and starts the command. A non-nil
// Result means it was refused.
func (s *Session) start(ctx context.Context, t *task, cwd string, env []EnvChange) (*Result, error) {
	dec := s.engine.DecideContext(ctx, permissions.Request{Command: t.req.Command, Cwd: cwd})
	t.kind = dec.Kind
	if s.cfg.Gate != nil {
		d := s.cfg.Gate(ctx, t.req.Command, cwd)
		if d.Verdict != policy.Allow {
			d = d.Final()
			return &Result{ID: t.id, Command: t.req.Command, ExitCode: -1, IsError: true,
				Message: "Command not run: " + d.String(), Cwd: cwd, Kind: t.kind,
				Violations: []policy.Violation{}, Refused: &d}, nil
		}
	}
	snap := s.snapshot(ctx)
	spec := BuildSpec{Shell: s.shell, Command: t.req.Command, Env: env, Prefix: s.cfg.Prefix}
	if snap != nil {
		spec.Snapshot = snapshotInput
	}
	if cwd != s.cfg.Dir {
		spec.Dir = cwd
	}
	t.tracked = cwd
	b, err := BuildCommand(spec)
	if err != nil {
		return nil, err
	}
	t.snapshot = snap != nil
	t.start = time.Now()
	p, err := s.cfg.Runner.Start(ctx, Proc{
		Argv:   s.shell.Argv(b.Final, snap == nil), // no snapshot: a login shell
		Env:    CarryEnv(s.procEnv(), env),
		Dir:    s.cfg.Dir,
		Stdin:  snap,
		Output: t,
		Report: t.rep,
	})
	if err != nil {
		return nil, fmt.Errorf("shell: start: %w", err)
	}
	s.log.Debug("command started", "id", t.id, "cmd", t.req.Command, "cwd", cwd)
	t.mu.Lock()
	t.proc = p
	killed := t.interrupted // Kill came while it started
	t.mu.Unlock()
	go t.wait()
	if t.req.Started != nil {
		t.req.Started(Started{ID: t.id, Command: t.req.Command, Cwd: cwd, Kind: t.kind})
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if killed || closed {
		t.kill(false)
	}
	return nil, nil
}

// forget drops a task from the session and closes its output file (the
// file stays).
func (s *Session) forget(id string) {
	s.mu.Lock()
	t := s.tasks[id]
	delete(s.tasks, id)
	s.mu.Unlock()
	if t != nil {
		t.cap.close(false)
	}
}

func (s *Session) task(id string) (*task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownID, id)
	}
	return t, nil
}

// Background moves a command running in the foreground to the background
// (the seeds' user-initiated Ctrl+B): its Run returns with BackgroundID
// set, and the command goes on.
func (s *Session) Background(id string) error {
	t, err := s.task(id)
	if err != nil {
		return err
	}
	t.mu.Lock()
	fg := !t.finished && t.background == "" && !t.req.Background
	t.mu.Unlock()
	if !fg {
		return ErrNotForeground
	}
	select {
	case t.moveCh <- BackgroundUser:
	default: // already asked
	}
	return nil
}

// ReadResult is what Read returns.
type ReadResult struct {
	ID string `json:"id"`
	// Output is output since the last Read (hints removed), up to
	// Config.MaxOutput characters; More says more is waiting.
	Output string `json:"output"`
	More   bool   `json:"more,omitempty"`
	// Running is true until the command has finished.
	Running bool `json:"running"`
	// Result is set once the command has finished and all its output was
	// read. The session keeps the command until Wait collects it.
	Result *Result `json:"result,omitempty"`
}

// Read returns a command's output since the last Read, and its result once
// it has finished and its output was all read. It does not release the
// command: Wait does (or Close).
func (s *Session) Read(id string) (ReadResult, error) {
	t, err := s.task(id)
	if err != nil {
		return ReadResult{}, err
	}
	return t.read(), nil
}

// Wait waits for a command to finish and returns its result; the session
// then forgets it. ctx ending stops the wait, not the command.
func (s *Session) Wait(ctx context.Context, id string) (Result, error) {
	t, err := s.task(id)
	if err != nil {
		return Result{}, err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	s.forget(id)
	return t.result, nil
}

// Kill kills a command (foreground or background) and its process tree.
func (s *Session) Kill(id string) error {
	t, err := s.task(id)
	if err != nil {
		return err
	}
	return t.kill(false)
}

// TaskInfo describes a command the session holds.
type TaskInfo struct {
	ID           string        `json:"id"`
	Command      string        `json:"command"`
	Running      bool          `json:"running"`
	Backgrounded string        `json:"backgrounded,omitempty"`
	Elapsed      time.Duration `json:"elapsed_ns"`
	OutputBytes  int64         `json:"output_bytes"`
}

// Tasks lists the commands the session holds: running ones, and finished
// background ones whose result was not collected yet.
func (s *Session) Tasks() []TaskInfo {
	s.mu.Lock()
	ts := make([]*task, 0, len(s.tasks))
	for _, t := range s.tasks {
		ts = append(ts, t)
	}
	s.mu.Unlock()
	out := make([]TaskInfo, 0, len(ts))
	for _, t := range ts {
		if t.process() == nil {
			continue // not started yet
		}
		n, _ := t.cap.counts()
		// Running until the result is made, not only until the process
		// is reaped: a read on the listing's word then gets the result.
		running := true
		select {
		case <-t.done:
			running = false
		default:
		}
		t.mu.Lock()
		info := TaskInfo{ID: t.id, Command: t.req.Command, Running: running, Backgrounded: t.background,
			Elapsed: time.Since(t.start), OutputBytes: n}
		t.mu.Unlock()
		out = append(out, info)
	}
	sortTasks(out)
	return out
}

// Close kills every command, waits for them, and removes the output
// directory the session created. The session cannot be used afterwards.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ts := make([]*task, 0, len(s.tasks))
	for _, t := range s.tasks {
		ts = append(ts, t)
	}
	s.mu.Unlock()
	var started []*task
	for _, t := range ts {
		if t.process() != nil {
			t.kill(false)
			started = append(started, t)
		}
	}
	for _, t := range started {
		<-t.done
	}
	for _, t := range ts {
		t.cap.close(false)
	}
	s.mu.Lock()
	dir, owned := s.outDir, s.ownedDir
	s.mu.Unlock()
	if owned && dir != "" {
		return os.RemoveAll(dir)
	}
	return nil
}

// outputFile creates a file for a command's long output, in the output
// directory (created on first use, mode 0700). O_EXCL: the name is new,
// never a link.
func (s *Session) outputFile(id string) (*os.File, error) {
	s.mu.Lock()
	dir := s.outDir
	if dir == "" {
		var err error
		dir, err = s.makeOutputDir()
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		s.outDir = dir
	}
	if !s.makeRoom() {
		s.mu.Unlock()
		return nil, fmt.Errorf("the session's saved output is at its limit (%d MB, commands still writing theirs)", s.cfg.MaxSavedBytes>>20)
	}
	name := filepath.Join(dir, fileSafe(id)+"-"+randomHex(4)+".txt")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		sf := savedFile{name: name}
		if t := s.tasks[id]; t != nil {
			sf.done = t.done
		}
		s.saved = append(s.saved, sf)
	}
	s.mu.Unlock()
	return f, err
}

// savedFile is a file of saved output; done is closed once its command
// ended (nil: not known, taken as ended).
type savedFile struct {
	name string
	done <-chan struct{}
}

func (f savedFile) running() bool {
	if f.done == nil {
		return false
	}
	select {
	case <-f.done:
		return false
	default:
		return true
	}
}

// makeRoom removes the session's oldest saved output until a new file of
// MaxFileBytes fits in MaxSavedBytes, and reports whether it does (s.mu
// held). A command still running has its whole MaxFileBytes counted, and
// its file is never removed (removing an open file frees nothing). Output
// kept for ever, 64 MB a command, filled the disk of moatd's state (root's,
// beyond the users' quotas: found by an attack pass), and so did commands
// writing at once.
func (s *Session) makeRoom() bool {
	var total int64
	sizes := make([]int64, len(s.saved))
	for i, f := range s.saved {
		if f.running() {
			sizes[i] = s.cfg.MaxFileBytes
		} else if fi, err := os.Stat(f.name); err == nil {
			sizes[i] = fi.Size()
		}
		total += sizes[i]
	}
	kept := s.saved[:0]
	for i, f := range s.saved {
		if total+s.cfg.MaxFileBytes > s.cfg.MaxSavedBytes && !f.running() {
			os.Remove(f.name)
			total -= sizes[i]
			continue
		}
		kept = append(kept, f)
	}
	s.saved = kept
	return total+s.cfg.MaxFileBytes <= s.cfg.MaxSavedBytes
}

func (s *Session) makeOutputDir() (string, error) {
	if s.cfg.OutputDir != "" {
		dir := filepath.Clean(s.cfg.OutputDir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("output directory %s is not a directory", dir)
		}
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	base = filepath.Join(base, "moat", "shell-output")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(base, "session-")
	if err != nil {
		return "", err
	}
	s.ownedDir = true
	return dir, nil
}

// reportState is what finish knows of a command's report besides its
// records.
type reportState struct {
	complete bool  // the exit trap wrote it to its end
	err      error // not exactly the shell's records: refused whole
	over     bool  // larger than maxReportBytes
	signal   int   // the shell died by this signal
}

// applyReport updates the session from a foreground command's side
// channel: the working directory and the environment. It returns notes. A
// report is believed only whole, as the shell writes it, from a shell that
// exited (not killed by a signal): a program the command ran wrote a
// forged report through /proc/$PPID/fd/N and killed its shell, and the
// session took / as its working directory and a PATH of the program's
// (found by an attack pass). Otherwise the session keeps its working
// directory and environment, and says so.
func (s *Session) applyReport(t *task, r report, st reportState) []string {
	var notes []string
	if st.over {
		return append(notes, "The command's report of its working directory and environment was too large: the session keeps its working directory ("+s.Cwd()+") and environment.")
	}
	if st.err != nil {
		return append(notes, "The command's report of its working directory and environment was not its shell's (something else wrote on its side channel): the session keeps its working directory ("+s.Cwd()+") and environment.")
	}
	if r.has(recCwdMoved) {
		return append(notes, s.movedBack(t))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.has(recCwdMissing) {
		// The command ran in the start directory: the session goes back
		// there, whatever else the report says.
		notes = append(notes, fmt.Sprintf("The working directory %s no longer exists; the command ran in %s instead.", t.tracked, s.cfg.Dir))
		s.cwd = s.cfg.Dir
	}
	switch {
	case st.signal != 0:
		return append(notes, fmt.Sprintf("The command's shell was killed by signal %d: its working directory and environment were not taken; the session keeps %s and its environment.", st.signal, s.cwd))
	case !st.complete:
		return append(notes, fmt.Sprintf("The command's shell did not report its working directory and environment (it was replaced by exec, or could not write): the session keeps %s and its environment.", s.cwd))
	}
	if cwd, ok := r.cwd(); ok {
		s.cwd = cwd
	} else {
		// pwd -P failed: the command removed its own directory (or made it
		// unreadable).
		notes = append(notes, fmt.Sprintf("The working directory could not be read after the command (was it deleted?); the session is back in %s.", s.cfg.Dir))
		s.cwd = s.cfg.Dir
	}
	before, okB := parseExports(r[recEnvBefore], s.shell.Variant())
	after, okA := parseExports(r[recEnvAfter], s.shell.Variant())
	if !okB || !okA {
		return notes
	}
	delta := envDelta(before, after)
	if len(delta) == 0 {
		return notes
	}
	next := make(map[string]EnvChange, len(s.env)+len(delta))
	for k, v := range s.env {
		next[k] = v
	}
	for _, d := range delta {
		if d.Unset {
			if _, inBase := baseValue(s.cfg.Env, d.Name); !inBase {
				delete(next, d.Name) // back to what the base environment says: absent
				continue
			}
		} else if v, inBase := baseValue(s.cfg.Env, d.Name); inBase && v == d.Value {
			delete(next, d.Name)
			continue
		}
		next[d.Name] = d
	}
	size := 0
	for _, e := range next {
		size += len(e.Name) + len(e.Value) + 16
	}
	if len(next) > maxEnvVars || size > maxEnvBytes {
		notes = append(notes, fmt.Sprintf("Environment changes were not kept: the session's exported variables would exceed %d variables or %s.", maxEnvVars, formatSize(maxEnvBytes)))
		return notes
	}
	s.env = next
	return notes
}

// movedBack puts the session back in its start directory after a command
// found its working directory replaced by a link (and did not run).
func (s *Session) movedBack(t *task) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cwd == t.tracked {
		s.cwd = s.cfg.Dir
	}
	return fmt.Sprintf("The working directory %s now leads elsewhere (a symbolic link stands there or above it): the command was not run, and the session is back in %s.", t.tracked, s.cfg.Dir)
}

func baseValue(env []string, k string) (string, bool) {
	v, ok := "", false
	for _, kv := range env {
		if name, val, found := strings.Cut(kv, "="); found && name == k {
			v, ok = val, true
		}
	}
	return v, ok
}

// noteSnapshot says when the command could not read the snapshot.
func (s *Session) noteSnapshot(t *task, r report) []string {
	if t.snapshot && r.has(recSnapshotMissing) {
		return []string{"The shell snapshot could not be read: the command ran without the user's aliases and functions."}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func fileSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 48 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "out"
	}
	return b.String()
}
