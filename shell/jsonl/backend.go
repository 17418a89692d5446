package jsonl

import (
	"context"
	"time"

	"github.com/moat-sandbox/moat/shell"
)

// Backend runs the commands a Server is asked for. The Server parses and
// checks the requests, tracks ids and writes the events; the Backend runs
// the commands. Server.Session (a *shell.Session in this process) is one;
// moat's bridge to moatd (cmd/moat), which runs them in the daemon through
// the local API, is another.
type Backend interface {
	// Submit registers a command (a read, kill or background request
	// right behind this one must find it) and returns the function that
	// runs it. run emits the command's events but the last (started,
	// output, progress, backgrounded) through c.Emit, calls backgrounded
	// when the command moves to the background, and returns its
	// "finished" event (FinishedEvent's shape, "id" c.EventID). A Submit
	// error means nothing ran.
	Submit(ctx context.Context, c Command) (run func(ctx context.Context, backgrounded func()) map[string]any, err error)
	// Background moves a running foreground command to the background.
	Background(id string) error
	// Read returns a command's output since the last read.
	Read(id string) (shell.ReadResult, error)
	// Kill kills a command; its finished event still comes from run.
	Kill(id string) error
	// PreviewEdit is the edit a sed -i command would make (nil if none).
	PreviewEdit(ctx context.Context, command string) (*shell.FileEdit, error)
	// Cwd is the session's working directory now.
	Cwd() string
	// Close kills every command and ends the session; it may be called
	// more than once.
	Close() error
}

// Command is a run or background request, checked.
type Command struct {
	// ID is the request's id as a string: the command's name in the
	// session. EventID is the id as the events carry it (a JSON value).
	ID      string
	EventID any
	Command string
	// Timeout is the request's timeout_ms (0: the session's).
	Timeout    time.Duration
	Background bool
	// AutoBackground is auto_background_ms: 0 the session's, negative
	// never.
	AutoBackground time.Duration
	Subagent       bool
	// StreamBytes caps the output of "output" events (Server.StreamBytes).
	StreamBytes int64
	// Emit writes one event.
	Emit func(map[string]any)
}

// sessionBackend runs commands in a shell.Session of this process.
type sessionBackend struct{ s *shell.Session }

// SessionBackend is the Backend of a shell.Session (what Server.Session
// uses).
func SessionBackend(s *shell.Session) Backend { return sessionBackend{s} }

func (b sessionBackend) Submit(_ context.Context, c Command) (func(context.Context, func()) map[string]any, error) {
	sr := shell.Request{ID: c.ID, Command: c.Command, Timeout: c.Timeout, Background: c.Background,
		AutoBackground: c.AutoBackground, Subagent: c.Subagent}
	ev := &Events{ID: c.EventID, StreamBytes: c.StreamBytes, Emit: c.Emit}
	ev.Hooks(&sr)
	run, err := b.s.Submit(sr)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, backgrounded func()) map[string]any {
		res, err := run(ctx)
		if err == nil && res.BackgroundID != "" && res.ExitCode == -1 && res.Refused == nil {
			ev.Backgrounded(res)
			backgrounded()
			res, err = b.s.Wait(context.Background(), res.BackgroundID)
		}
		return FinishedEvent(c.EventID, res, err, b.s.Cwd())
	}, nil
}

func (b sessionBackend) Background(id string) error               { return b.s.Background(id) }
func (b sessionBackend) Read(id string) (shell.ReadResult, error) { return b.s.Read(id) }
func (b sessionBackend) Kill(id string) error                     { return b.s.Kill(id) }
func (b sessionBackend) Cwd() string                              { return b.s.Cwd() }
func (b sessionBackend) Close() error                             { return b.s.Close() }
func (b sessionBackend) PreviewEdit(ctx context.Context, command string) (*shell.FileEdit, error) {
	return b.s.PreviewEdit(ctx, command)
}
