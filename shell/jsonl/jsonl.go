// Package jsonl drives a shell.Session with the JSON-lines protocol of
// docs/SESSION.md: one JSON request per line in (run, background, read,
// kill, preview_edit, close), one JSON event per line out (started,
// output, progress, backgrounded, finished, read, edit, ok, error,
// closed). docs/session.schema.json describes both.
//
// What scripts can rely on: every request is an object with "id" and
// "op"; each command's last event is an object with the same "id",
// "event": "finished", "exit_code" (a number), "is_error", "message" (a
// string or null), "output", "output_file" (a path or null), "cwd" and
// "violations". A request that is not valid gets an "error" event naming
// the field, and the stream goes on.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/moat-sandbox/moat/internal/jsonin"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell"
)

// Limits of the protocol.
const (
	// MaxLineBytes is the longest request line; longer lines get an error
	// event and are skipped.
	MaxLineBytes = 1 << 20
	// DefaultStreamBytes is how much of a command's output is streamed in
	// "output" events (Server.StreamBytes).
	DefaultStreamBytes = 1 << 20
	maxIDLen           = 256
)

// Server serves one session over JSON lines.
type Server struct {
	// Session runs the commands. Serve closes it when the input ends, on
	// "close", or when its context ends. Either Session or Backend is
	// required.
	Session *shell.Session
	// Backend runs the commands when Session is nil (see Backend); Serve
	// closes it as it would close Session.
	Backend Backend
	// StreamBytes caps the output streamed in "output" events, per
	// command; after that only "progress" events come (the whole output is
	// still in "finished"). If 0, DefaultStreamBytes; if negative, no
	// "output" events.
	StreamBytes int64
	// Logger receives debug logs. If nil, nothing is logged.
	Logger *slog.Logger
}

// Serve reads requests from r and writes events to w until the input ends,
// a "close" request, or ctx ends. At the end of the input it waits for
// commands running in the foreground, then kills those in the background;
// "close" and ctx kill everything at once. Every accepted command gets its
// "finished" event; the last event is "closed". The error is ctx's, or a
// failure to read r or write w. After "close" or ctx, Serve returns without
// waiting for a read of r that is under way.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	sess := s.Backend
	if s.Session != nil {
		sess = SessionBackend(s.Session)
	}
	if sess == nil {
		return errors.New("jsonl: Server.Session and Server.Backend are nil")
	}
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &conn{srv: s, sess: sess, log: log, out: newWriter(w), active: map[string]bool{}}
	stream := s.StreamBytes
	if stream == 0 {
		stream = DefaultStreamBytes
	}
	c.stream = stream

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		readErr <- readLines(r, lines, stop, func() {
			c.out.event(errorEvent(nil, "", fmt.Sprintf("request line longer than %d bytes", MaxLineBytes)))
		})
	}()
	var closeID json.RawMessage
	var err error
loop:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break loop
			}
			if id, isClose := c.handle(ctx, line); isClose {
				closeID = id
				c.sess.Close()
				break loop
			}
		case <-ctx.Done():
			err = ctx.Err()
			c.sess.Close()
			break loop
		}
	}
	close(stop)
	if closeID == nil && err == nil {
		// End of input: let the foreground finish, then end the rest.
		c.fg.Wait()
		c.sess.Close()
	}
	c.all.Wait()
	select {
	case e := <-readErr:
		if e != nil && err == nil {
			err = e
		}
	default:
	}
	ev := map[string]any{"id": rawOrNull(closeID), "event": "closed"}
	c.out.event(ev)
	if werr := c.out.err(); werr != nil && err == nil {
		err = werr
	}
	return err
}

// readLines sends r's lines (without the newline) until EOF, skipping
// blank lines and lines longer than MaxLineBytes (reported by tooLong).
func readLines(r io.Reader, lines chan<- []byte, stop <-chan struct{}, tooLong func()) error {
	defer close(lines)
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !skipping {
			buf = append(buf, chunk...)
			if len(buf) > MaxLineBytes+1 {
				buf, skipping = nil, true
				tooLong()
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if !skipping {
			if line := bytes.TrimSpace(buf); len(line) > 0 {
				select {
				case lines <- append([]byte(nil), line...):
				case <-stop:
					return nil
				}
			}
		}
		buf, skipping = buf[:0], false
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// conn is the state of one Serve call.
type conn struct {
	srv    *Server
	sess   Backend
	log    *slog.Logger
	out    *writer
	stream int64

	mu     sync.Mutex
	active map[string]bool // ids of commands not finished yet
	fg     sync.WaitGroup  // commands in the foreground
	all    sync.WaitGroup  // every command's goroutine
}

// request is a decoded request; fields are checked by op.
type request struct {
	id    json.RawMessage
	key   string // the id as a session id
	op    string
	f     map[string]json.RawMessage
	field string // the field a decoding error is about
}

// opFields returns the fields an op takes besides "id" and "op".
func opFields(op string) ([]string, bool) {
	switch op {
	case "run":
		return []string{"command", "timeout_ms", "background", "auto_background_ms", "subagent"}, true
	case "background":
		return []string{"target", "command", "timeout_ms", "auto_background_ms", "subagent"}, true
	case "read", "kill":
		return []string{"target"}, true
	case "preview_edit":
		return []string{"command"}, true
	case "close":
		return nil, true
	}
	return nil, false
}

// handle processes one line. It reports the id of a close request.
func (c *conn) handle(ctx context.Context, line []byte) (json.RawMessage, bool) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(line, &f); err != nil || f == nil {
		c.out.event(errorEvent(nil, "", "the request is not a JSON object"))
		return nil, false
	}
	id, key, err := readID(f["id"])
	if err != nil {
		c.out.event(errorEvent(nil, "id", err.Error()))
		return nil, false
	}
	// A key given twice (encoding/json keeps the last: a filter that keeps
	// the first judges another command than runs), bytes that are not
	// UTF-8 and lone surrogates (decoded as U+FFFD: a command runs with
	// characters its sender never wrote) are refused (found by an attack
	// pass). The keys are the map's: compared as written.
	var je *jsonin.Error
	if err := jsonin.Check(line, false); errors.As(err, &je) {
		if je.Field == "id" || jsonin.Check(id, false) != nil {
			id = nil // which one, or not one to write back
		}
		c.out.event(errorEvent(id, je.Field, je.Msg))
		return nil, false
	}
	var op string
	if err := json.Unmarshal(f["op"], &op); err != nil || f["op"] == nil {
		c.out.event(errorEvent(id, "op", `"op" must be one of run, background, read, kill, preview_edit, close`))
		return nil, false
	}
	allowed, ok := opFields(op)
	if !ok {
		c.out.event(errorEvent(id, "op", fmt.Sprintf("unknown op %q (want run, background, read, kill, preview_edit or close)", op)))
		return nil, false
	}
	for name := range f {
		if name == "id" || name == "op" {
			continue
		}
		known := false
		for _, a := range allowed {
			known = known || a == name
		}
		if !known {
			c.out.event(errorEvent(id, name, fmt.Sprintf("unknown field %q for op %q", name, op)))
			return nil, false
		}
	}
	req := &request{id: id, key: key, op: op, f: f}
	switch op {
	case "run":
		c.run(ctx, req, false)
	case "background":
		if f["target"] != nil && f["command"] != nil {
			c.out.event(errorEvent(id, "target", `give either "target" (a running command to move) or "command" (a command to start), not both`))
			return nil, false
		}
		if f["target"] == nil {
			c.run(ctx, req, true)
			return nil, false
		}
		for _, n := range []string{"timeout_ms", "auto_background_ms", "subagent"} {
			if f[n] != nil {
				c.out.event(errorEvent(id, n, fmt.Sprintf("%q goes with \"command\", not with \"target\"", n)))
				return nil, false
			}
		}
		if target, ok := c.target(req); ok {
			if err := c.sess.Background(target); err != nil {
				c.out.event(errorEvent(id, "target", err.Error()))
			} else {
				c.out.event(map[string]any{"id": id, "event": "ok", "op": op, "target": target})
			}
		}
	case "read":
		if target, ok := c.target(req); ok {
			rr, err := c.sess.Read(target)
			if err != nil {
				c.out.event(errorEvent(id, "target", err.Error()))
				return nil, false
			}
			c.out.event(map[string]any{"id": id, "event": "read", "target": target, "output": rr.Output, "more": rr.More, "running": rr.Running})
		}
	case "kill":
		if target, ok := c.target(req); ok {
			if err := c.sess.Kill(target); err != nil {
				c.out.event(errorEvent(id, "target", err.Error()))
			} else {
				c.out.event(map[string]any{"id": id, "event": "ok", "op": op, "target": target})
			}
		}
	case "preview_edit":
		cmd, ok := c.command(req)
		if !ok {
			return nil, false
		}
		fe, err := c.sess.PreviewEdit(ctx, cmd)
		if err != nil {
			c.out.event(errorEvent(id, "command", err.Error()))
			return nil, false
		}
		ev := map[string]any{"id": id, "event": "edit", "edit": nil}
		if fe != nil {
			ev["edit"] = map[string]any{"file": fe.Edit.File, "path": fe.Path, "pattern": fe.Edit.Pattern,
				"replacement": fe.Edit.Replacement, "flags": fe.Edit.Flags, "extended": fe.Edit.Extended, "diff": fe.Diff}
		}
		c.out.event(ev)
	case "close":
		return id, true
	}
	return nil, false
}

// readID accepts a non-empty string or an integer.
func readID(raw json.RawMessage) (json.RawMessage, string, error) {
	if raw == nil {
		return nil, "", errors.New(`"id" is required: a string or an integer`)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" || len(s) > maxIDLen {
			return nil, "", fmt.Errorf(`"id" must be 1 to %d characters`, maxIDLen)
		}
		return raw, s, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err == nil {
		if _, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
			return raw, n.String(), nil
		}
	}
	return nil, "", errors.New(`"id" must be a string or an integer`)
}

func (c *conn) target(req *request) (string, bool) {
	_, key, err := readID(req.f["target"])
	if err != nil {
		c.out.event(errorEvent(req.id, "target", `"target" is required: the id of a command`))
		return "", false
	}
	return key, true
}

func (c *conn) command(req *request) (string, bool) {
	var cmd string
	if err := json.Unmarshal(req.f["command"], &cmd); err != nil || req.f["command"] == nil || cmd == "" {
		c.out.event(errorEvent(req.id, "command", `"command" is required: a non-empty string`))
		return "", false
	}
	return cmd, true
}

// number reads an optional integer field.
func (c *conn) number(req *request, name string, least int64) (int64, bool) {
	raw := req.f[name]
	if raw == nil {
		return 0, true
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil || n < least {
		c.out.event(errorEvent(req.id, name, fmt.Sprintf("%q must be an integer of at least %d", name, least)))
		return 0, false
	}
	// Milliseconds that would overflow a time.Duration mean "very long".
	return min(n, int64(math.MaxInt64/time.Millisecond)), true
}

func (c *conn) flag(req *request, name string) (bool, bool) {
	raw := req.f[name]
	if raw == nil {
		return false, true
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		c.out.event(errorEvent(req.id, name, fmt.Sprintf("%q must be true or false", name)))
		return false, false
	}
	return b, true
}

// run validates a run (or background) request and starts the command.
func (c *conn) run(ctx context.Context, req *request, background bool) {
	cmd, ok := c.command(req)
	if !ok {
		return
	}
	timeout, ok := c.number(req, "timeout_ms", 0)
	if !ok {
		return
	}
	auto, ok := c.number(req, "auto_background_ms", -1)
	if !ok {
		return
	}
	bg, ok := c.flag(req, "background")
	if !ok {
		return
	}
	sub, ok := c.flag(req, "subagent")
	if !ok {
		return
	}
	c.mu.Lock()
	if c.active[req.key] {
		c.mu.Unlock()
		c.out.event(errorEvent(req.id, "id", fmt.Sprintf("a command with id %q is still running", req.key)))
		return
	}
	c.active[req.key] = true
	c.mu.Unlock()
	sc := Command{ID: req.key, EventID: req.id, Command: cmd, Timeout: time.Duration(timeout) * time.Millisecond,
		Background: background || bg, Subagent: sub, StreamBytes: c.stream, Emit: c.out.event}
	if auto < 0 {
		sc.AutoBackground = -1
	} else {
		sc.AutoBackground = time.Duration(auto) * time.Millisecond
	}
	// Register the command in the session now, so that a read, kill or
	// background request right behind this one finds it.
	run, err := c.sess.Submit(ctx, sc)
	if err != nil {
		c.mu.Lock()
		delete(c.active, req.key)
		c.mu.Unlock()
		c.out.event(FinishedEvent(req.id, shell.Result{}, err, c.sess.Cwd()))
		return
	}
	c.fg.Add(1)
	c.all.Add(1)
	go c.command1(ctx, req.key, run)
}

// command1 runs one command and writes its events.
func (c *conn) command1(ctx context.Context, key string, run func(context.Context, func()) map[string]any) {
	defer c.all.Done()
	fgDone := sync.OnceFunc(c.fg.Done)
	defer fgDone()
	fin := run(ctx, fgDone)
	// The id is free again once its finished event is out.
	c.mu.Lock()
	delete(c.active, key)
	c.mu.Unlock()
	c.out.event(fin)
}

// runeStart moves i back to the start of a UTF-8 sequence.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

func violations(vs []policy.Violation) []policy.Violation {
	if vs == nil {
		return []policy.Violation{}
	}
	return vs
}

func hints(hs []shell.Hint) []map[string]string {
	out := []map[string]string{}
	for _, h := range hs {
		out = append(out, h.Attrs)
	}
	return out
}

func strs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func strOrNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func rawOrNull(r json.RawMessage) any {
	if r == nil {
		return nil
	}
	return r
}

func errorEvent(id json.RawMessage, field, msg string) map[string]any {
	return map[string]any{"id": rawOrNull(id), "event": "error", "field": strOrNull(field), "error": msg}
}

// writer writes one event per line; the first write error sticks.
type writer struct {
	mu  sync.Mutex
	enc *json.Encoder
	e   error
}

func newWriter(w io.Writer) *writer {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &writer{enc: enc}
}

func (w *writer) event(ev map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.e != nil {
		return
	}
	if id, ok := ev["id"].(json.RawMessage); ok && id == nil {
		ev["id"] = nil
	}
	w.e = w.enc.Encode(ev)
}

func (w *writer) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.e
}
