package jsonl

import (
	"github.com/moat-sandbox/moat/shell"
)

// Events builds the events of one command (started, output, progress,
// backgrounded, finished) in the shapes of docs/session.schema.json. The
// JSON-lines server and the local API (shell/api) both stream them, so a
// host reads the same objects from either.
type Events struct {
	// ID is the command's id as the events carry it: the request's id
	// (a JSON value) here, the command's id (a string) in the API.
	ID any
	// StreamBytes caps the output sent in "output" events, as
	// Server.StreamBytes does: 0 is DefaultStreamBytes, negative none.
	StreamBytes int64
	// Emit sends one event. Required. Hooks calls it from the command's
	// callbacks, which never overlap each other.
	Emit func(map[string]any)

	streamed int64
	cut      bool
}

// Hooks sets sr's Started and Progress callbacks to emit "started",
// "output" and "progress" events.
func (e *Events) Hooks(sr *shell.Request) {
	limit := e.StreamBytes
	if limit == 0 {
		limit = DefaultStreamBytes
	}
	background := sr.Background
	sr.Started = func(s shell.Started) {
		e.Emit(map[string]any{"id": e.ID, "event": "started", "command": s.Command, "cwd": s.Cwd, "kind": s.Kind,
			"background": background})
	}
	sr.Progress = func(p shell.Progress) {
		if p.Chunk != "" {
			e.output(p, limit)
			return
		}
		ev := map[string]any{"id": e.ID, "event": "progress", "elapsed_ms": p.Elapsed.Milliseconds(), "bytes": p.Bytes, "lines": p.Lines}
		if e.cut {
			ev["stream_truncated"] = true
		}
		e.Emit(ev)
	}
}

// output emits a chunk of output, up to limit bytes in all; past it the
// progress events say the stream was cut (the whole output is still in
// "finished").
func (e *Events) output(p shell.Progress, limit int64) {
	if limit <= 0 || e.streamed >= limit {
		e.cut = true
		return
	}
	chunk := p.Chunk
	if rest := limit - e.streamed; int64(len(chunk)) > rest {
		chunk, e.cut = chunk[:runeStart(chunk, int(rest))], true
	}
	e.streamed += int64(len(chunk))
	if chunk != "" {
		e.Emit(map[string]any{"id": e.ID, "event": "output", "data": chunk, "bytes": p.Bytes, "lines": p.Lines})
	}
}

// Backgrounded emits the event of a command that moved to the background
// (r is what Run returned then).
func (e *Events) Backgrounded(r shell.Result) {
	e.Emit(map[string]any{"id": e.ID, "event": "backgrounded", "reason": r.Backgrounded, "message": r.Message})
}

// Finished emits the command's last event (see FinishedEvent).
func (e *Events) Finished(r shell.Result, err error, cwd string) {
	e.Emit(FinishedEvent(e.ID, r, err, cwd))
}

// FinishedEvent is a command's "finished" event: r in the schema's shape,
// with "error" set to err's text. When nothing ran (r has no id), the exit
// code is -1, the message is the error's and the working directory is cwd.
func FinishedEvent(id any, r shell.Result, err error, cwd string) map[string]any {
	ev := map[string]any{
		"id": id, "event": "finished",
		"exit_code": r.ExitCode, "is_error": r.IsError, "message": strOrNull(r.Message),
		"output": r.Output, "output_file": strOrNull(r.OutputFile), "cwd": r.Cwd,
		"violations": violations(r.Violations),
		"signal":     r.Signal, "timed_out": r.TimedOut, "interrupted": r.Interrupted,
		"output_bytes": r.OutputBytes, "output_lines": r.OutputLines, "truncated": r.Truncated, "binary": r.Binary,
		"image": nil, "hints": hints(r.Hints), "notes": strs(r.Notes), "kind": r.Kind,
		"backgrounded": strOrNull(r.Backgrounded), "refused": nil, "error": nil,
		"duration_ms": r.Duration.Milliseconds(),
	}
	if r.Kind == "" {
		ev["kind"] = "none"
	}
	if r.Image != nil {
		ev["image"] = map[string]any{"media_type": r.Image.MediaType, "data": r.Image.Data, "width": r.Image.Width, "height": r.Image.Height}
	}
	if r.Refused != nil {
		ev["refused"] = map[string]any{"decision": r.Refused.Verdict.String(), "reason": r.Refused.Reason, "rule": strOrNull(r.Refused.Rule)}
	}
	if err != nil {
		ev["error"] = err.Error()
		if r.ID == "" { // nothing ran
			ev["exit_code"], ev["is_error"], ev["message"] = -1, true, err.Error()
			ev["cwd"] = cwd
		}
	}
	return ev
}
