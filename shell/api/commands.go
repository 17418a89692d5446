package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/internal/lazyre"
	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/api/client"
	"github.com/moat-sandbox/moat/shell/jsonl"
)

// validID is what a client may name a command: it is a path segment.
var validID = lazyre.New(`^[A-Za-z0-9._-]{1,64}$`)

// runCommand runs a command (POST /v1/sessions/{session}/commands): in the
// foreground as a stream of NDJSON events until "finished" (the request's
// context ending kills it), in the foreground with only the finished event
// (?stream=false), or in the background (202, at once).
func (s *Server) runCommand(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.session(r)
	if err != nil {
		return err
	}
	stream := true
	switch q := r.URL.Query().Get("stream"); q {
	case "", "true", "1":
	case "false", "0":
		stream = false
	default:
		return errorf(http.StatusBadRequest, "stream", "stream must be true or false, not %q", q)
	}
	var req client.CommandRequest
	if err := decodeBody(w, r, s.cfg.MaxRequestBytes, &req, false); err != nil {
		return err
	}
	if strings.TrimSpace(req.Command) == "" {
		return errorf(http.StatusBadRequest, "command", "command is required: a non-empty string")
	}
	if req.ID != "" && !validID.MatchString(req.ID) {
		return errorf(http.StatusBadRequest, "id", "id must be 1 to 64 of A-Z a-z 0-9 . _ -")
	}
	if req.TimeoutMS < 0 {
		return errorf(http.StatusBadRequest, "timeout_ms", "timeout_ms must not be negative")
	}
	if !ss.acquire() {
		return errorf(http.StatusTooManyRequests, "", "the session holds %d commands, the most this server allows: wait for one, or read or kill a background one", cap(ss.slots))
	}
	if err := ss.charge(); err != nil {
		<-ss.slots
		return err
	}
	sr := shell.Request{ID: req.ID, Command: req.Command, Background: req.Background,
		Timeout: time.Duration(min(req.TimeoutMS, int64(shell.DefaultMaxTimeout/time.Millisecond))) * time.Millisecond,
		// An API client backgrounds a command by asking; a foreground
		// command streams until it ends.
		AutoBackground: -1}
	switch {
	case req.Background:
		return s.startBackground(w, ss, sr)
	case stream:
		return s.runStreaming(w, r, ss, sr)
	default:
		return s.runQuiet(w, r, ss, sr)
	}
}

// acquire takes a command slot, if one is free.
func (ss *session) acquire() bool {
	select {
	case ss.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// release gives back a command's slot of the session and its slot of
// the daemon (charge).
func (ss *session) release() {
	<-ss.slots
	if ss.srv == nil {
		return
	}
	ss.mu.Lock()
	give := !ss.gone
	if give {
		ss.held -= commandSlots
	}
	ss.mu.Unlock()
	if give {
		ss.srv.giveSlots(ss.owner, commandSlots)
	}
}

// charge counts a command's descriptors in the daemon against its
// owner's share (takeSlots); a closed session charges nothing.
func (ss *session) charge() error {
	if ss.srv == nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.gone {
		return nil
	}
	if err := ss.srv.takeSlots(ss.owner, commandSlots, "a command"); err != nil {
		return err
	}
	ss.held += commandSlots
	return nil
}

// submit registers the command in the shell, with an id of the session's
// if it has none.
func (ss *session) submit(sr *shell.Request) (func(context.Context) (shell.Result, error), error) {
	pick := sr.ID == ""
	for {
		if pick {
			ss.mu.Lock()
			ss.nextID++
			sr.ID = "c" + strconv.Itoa(ss.nextID)
			ss.mu.Unlock()
		}
		run, err := ss.sh.Session.Submit(*sr)
		if pick && errors.Is(err, shell.ErrDuplicateID) {
			continue // a client named a command like ours
		}
		switch {
		case errors.Is(err, shell.ErrDuplicateID):
			return nil, errorf(http.StatusConflict, "id", "the session still holds a command %q", sr.ID)
		case errors.Is(err, shell.ErrClosed):
			return nil, errorf(http.StatusConflict, "session", "the session is closed")
		case err != nil:
			return nil, errorf(http.StatusBadRequest, "command", "%v", err)
		}
		return run, nil
	}
}

// runStreaming runs a foreground command and streams its events.
func (s *Server) runStreaming(w http.ResponseWriter, r *http.Request, ss *session, sr shell.Request) error {
	out := &eventWriter{w: w, rc: http.NewResponseController(w)}
	ev := &jsonl.Events{Emit: out.event}
	ev.Hooks(&sr)
	run, err := ss.submitFree(&sr)
	if err != nil {
		return err
	}
	defer ss.release()
	ev.ID = sr.ID // before run: the hooks are only called from it
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	out.flush()
	res, err := run(r.Context()) // the client going away kills the command
	ev.Finished(res, err, ss.sh.Session.Cwd())
	s.log.Debug("command finished", "session", ss.id, "command", sr.ID, "exit", res.ExitCode, "err", err)
	return nil
}

// runQuiet runs a foreground command and answers its finished event.
func (s *Server) runQuiet(w http.ResponseWriter, r *http.Request, ss *session, sr shell.Request) error {
	run, err := ss.submitFree(&sr)
	if err != nil {
		return err
	}
	defer ss.release()
	res, err := run(r.Context())
	writeJSON(w, http.StatusOK, jsonl.FinishedEvent(sr.ID, res, err, ss.sh.Session.Cwd()))
	return nil
}

// submitFree is submit, giving the slot back when it fails.
func (ss *session) submitFree(sr *shell.Request) (func(context.Context) (shell.Result, error), error) {
	run, err := ss.submit(sr)
	if err != nil {
		ss.release()
	}
	return run, err
}

// startBackground starts a command in the background and answers at once:
// 202 with its id, or 200 with its result when it did not start (refused
// by the gate). The slot is given back when its result is collected.
func (s *Server) startBackground(w http.ResponseWriter, ss *session, sr shell.Request) error {
	run, err := ss.submitFree(&sr)
	if err != nil {
		return err
	}
	// Registered before it runs: a read right after this answer finds it.
	bc := &bgCommand{done: make(chan struct{})}
	ss.mu.Lock()
	ss.bg[sr.ID] = bc
	ss.mu.Unlock()
	res, err := run(context.Background())
	if err != nil || res.BackgroundID == "" {
		ss.forget(sr.ID)
		writeJSON(w, http.StatusOK, client.RawCommandStatus{ID: sr.ID, Result: finishedEvent(sr.ID, res, err, ss)})
		return nil
	}
	go func() {
		bc.res, bc.err = ss.sh.Session.Wait(context.Background(), sr.ID)
		close(bc.done)
	}()
	s.log.Debug("command started in the background", "session", ss.id, "command", sr.ID)
	writeJSON(w, http.StatusAccepted, client.RawCommandStatus{ID: sr.ID, Running: true})
	return nil
}

// forget drops a background command the API held and frees its slot.
func (ss *session) forget(id string) {
	ss.mu.Lock()
	_, held := ss.bg[id]
	delete(ss.bg, id)
	ss.mu.Unlock()
	if held {
		ss.release()
	}
}

// readCommand answers a command's output since the last read and, once
// it has finished, its result (GET .../commands/{command}). A background
// command's result is given once: the session then forgets it.
func (s *Server) readCommand(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.session(r)
	if err != nil {
		return err
	}
	id := r.PathValue("command")
	rr, rerr := ss.sh.Session.Read(id)
	ss.mu.Lock()
	bc := ss.bg[id]
	ss.mu.Unlock()
	if bc == nil {
		if rerr != nil {
			return errorf(http.StatusNotFound, "command", "no command %q in session %s", id, ss.id)
		}
		// A foreground command: its result comes on its own stream.
		writeJSON(w, http.StatusOK, client.RawCommandStatus{ID: id, Running: rr.Running, Output: rr.Output, More: rr.More})
		return nil
	}
	if rerr == nil && rr.Running {
		writeJSON(w, http.StatusOK, client.RawCommandStatus{ID: id, Running: true, Output: rr.Output, More: rr.More})
		return nil
	}
	// Finished: the waiter collects the result at once.
	st, err := ss.collect(r.Context(), id, bc)
	if err != nil {
		return err
	}
	st.Output = rr.Output
	writeJSON(w, http.StatusOK, st)
	return nil
}

// collect waits for a background command's waiter and hands its result
// out, once.
func (ss *session) collect(ctx context.Context, id string, bc *bgCommand) (client.RawCommandStatus, error) {
	select {
	case <-bc.done:
	case <-ctx.Done():
		return client.RawCommandStatus{}, ctx.Err()
	}
	ss.mu.Lock()
	mine := ss.bg[id] == bc
	ss.mu.Unlock()
	if !mine {
		return client.RawCommandStatus{}, errorf(http.StatusNotFound, "command", "command %q was collected by another request", id)
	}
	ss.forget(id)
	return client.RawCommandStatus{ID: id, Result: finishedEvent(id, bc.res, bc.err, ss)}, nil
}

// killCommand kills a command (DELETE .../commands/{command}). For a
// background command it waits for it and answers its result; a foreground
// command's result comes on its stream (202).
func (s *Server) killCommand(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.session(r)
	if err != nil {
		return err
	}
	id := r.PathValue("command")
	kerr := ss.sh.Session.Kill(id)
	ss.mu.Lock()
	bc := ss.bg[id]
	ss.mu.Unlock()
	if bc == nil {
		if kerr != nil {
			return errorf(http.StatusNotFound, "command", "no command %q in session %s", id, ss.id)
		}
		writeJSON(w, http.StatusAccepted, client.RawCommandStatus{ID: id, Running: true})
		return nil
	}
	st, err := ss.collect(r.Context(), id, bc)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// finishedEvent is the "finished" event of a result, every field of it
// (the shape of docs/session.schema.json, as the stream's last event).
func finishedEvent(id string, res shell.Result, err error, ss *session) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if merr := enc.Encode(jsonl.FinishedEvent(id, res, err, ss.sh.Session.Cwd())); merr != nil {
		b, _ := json.Marshal(map[string]any{"id": id, "event": "finished", "exit_code": -1, "is_error": true,
			"message": "encoding the result failed", "error": fmt.Sprintf("encoding the result: %v", merr)})
		return b
	}
	return bytes.TrimSpace(buf.Bytes())
}

// eventWriter writes NDJSON events to a response, flushing each; after the
// first write error (the client went away) it drops them.
type eventWriter struct {
	mu  sync.Mutex
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

// StreamWriteTimeout bounds one write of a streamed event: a client that
// stops reading gets no more of the stream (the command runs on, its
// result kept for GET), instead of holding the command's output, its
// timeout, the session's close and the server's shutdown (found by an
// attack pass).
var StreamWriteTimeout = 30 * time.Second

func (e *eventWriter) event(ev map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // one line, ">" and "&" as they are
	enc.SetEscapeHTML(false)
	err := enc.Encode(ev)
	if err == nil {
		_ = e.rc.SetWriteDeadline(time.Now().Add(StreamWriteTimeout))
		_, err = e.w.Write(buf.Bytes())
	}
	if err == nil {
		err = e.rc.Flush()
	}
	e.err = err
}

// (flush is the stream's last write: bounded the same way.)

func (e *eventWriter) flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		_ = e.rc.SetWriteDeadline(time.Now().Add(StreamWriteTimeout))
		e.err = e.rc.Flush()
	}
}
