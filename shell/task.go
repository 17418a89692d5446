package shell

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// task is one command of a session, from start to collected result.
type task struct {
	s   *Session
	id  string
	req Request

	// Set before the process starts.
	kind     string // set by start, before the process starts
	tracked  string // the working directory it was started in
	snapshot bool   // it sources the snapshot
	notes    []string
	start    time.Time
	proc     Process

	filter hintFilter // used by Write (never concurrently) and then by wait
	cap    *capture
	rep    *capBuffer

	progMu sync.Mutex // serialises Progress calls
	carry  []byte     // an incomplete UTF-8 sequence held back from Progress

	moveCh chan string   // a request to move to the background
	done   chan struct{} // closed once result is set

	mu          sync.Mutex
	finished    bool
	background  string // why it runs in the background, or ""
	interrupted bool
	timedOut    bool
	timeout     time.Duration
	readOff     int64
	result      Result
}

func newTask(s *Session, req Request) *task {
	t := &task{s: s, id: req.ID, req: req, moveCh: make(chan string, 1), done: make(chan struct{}),
		rep: &capBuffer{max: maxReportBytes}, kind: "none"}
	t.filter.off = s.cfg.NoHints
	t.cap = &capture{
		memMax:  max(4*s.cfg.MaxOutput+4, 64<<10),
		fileMax: s.cfg.MaxFileBytes,
		spill:   func() (*os.File, error) { return s.outputFile(t.id) },
	}
	return t
}

// Write receives the process's merged output (Proc.Output).
func (t *task) Write(p []byte) (int, error) {
	if out := t.filter.write(p); len(out) > 0 {
		t.cap.write(out)
		t.emit(out, false)
	}
	return len(p), nil
}

// emit passes output to Progress, holding back an incomplete UTF-8
// sequence at the end until the rest arrives (or the stream ends).
func (t *task) emit(chunk []byte, final bool) {
	if t.req.Progress == nil || t.req.Background {
		return
	}
	t.progMu.Lock()
	defer t.progMu.Unlock()
	t.mu.Lock()
	bg := t.background != ""
	t.mu.Unlock()
	if bg {
		return
	}
	data := append(t.carry, chunk...)
	cut := len(data)
	if !final {
		cut = completeUTF8(data)
	}
	t.carry = append([]byte(nil), data[cut:]...)
	if cut == 0 {
		return
	}
	n, lines := t.cap.counts()
	t.req.Progress(Progress{ID: t.id, Chunk: string(data[:cut]), Bytes: n, Lines: lines, Elapsed: time.Since(t.start)})
}

// tick is a periodic Progress call, skipped while one is under way: the
// wait loop that calls it also ends the command at its timeout, and a
// Progress call blocked on a client that stopped reading had kept it from
// ever getting there (found by an attack pass).
func (t *task) tick() {
	if t.req.Progress == nil {
		return
	}
	if !t.progMu.TryLock() {
		return
	}
	defer t.progMu.Unlock()
	n, lines := t.cap.counts()
	t.req.Progress(Progress{ID: t.id, Bytes: n, Lines: lines, Elapsed: time.Since(t.start)})
}

// completeUTF8 returns the length of b without a trailing incomplete
// UTF-8 sequence.
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// wait waits for the process and sets the result.
func (t *task) wait() {
	ex, err := t.proc.Wait()
	if rest := t.filter.flush(); len(rest) > 0 {
		t.cap.write(rest)
		t.emit(rest, false)
	}
	t.emit(nil, true)
	t.mu.Lock()
	t.finished = true
	t.mu.Unlock()
	t.result = t.s.finish(t, ex, err)
	close(t.done)
}

// toBackground moves the task to the background unless it has finished.
func (t *task) toBackground(reason string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished || t.background != "" {
		return false
	}
	t.background = reason
	return true
}

// process returns the started process, or nil.
func (t *task) process() Process {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.proc
}

// kill kills the process tree; timedOut says why.
func (t *task) kill(timedOut bool) error {
	t.mu.Lock()
	if !t.finished {
		if timedOut {
			t.timedOut = true
		} else {
			t.interrupted = true
		}
	}
	p := t.proc
	t.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Kill()
}

// foreground waits for the command in Run: until it finishes, times out,
// or moves to the background.
func (t *task) foreground(ctx context.Context) (Result, error) {
	s := t.s
	if t.req.Background && t.toBackground(BackgroundRequested) {
		return t.backgroundResult(BackgroundRequested), nil
	}
	timeout := t.req.Timeout
	if timeout <= 0 {
		timeout = s.cfg.Timeout
	}
	timeout = min(timeout, s.cfg.MaxTimeout)
	t.mu.Lock()
	t.timeout = timeout
	t.mu.Unlock()
	auto := t.req.AutoBackground
	if auto == 0 {
		auto = s.cfg.AutoBackground
	}
	if f := strings.Fields(t.req.Command); len(f) > 0 && f[0] == "sleep" {
		auto = -1 // the seeds never auto-background sleep
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var autoC <-chan time.Time
	if auto > 0 {
		at := time.NewTimer(auto)
		defer at.Stop()
		autoC = at.C
	}
	var tickC <-chan time.Time
	if t.req.Progress != nil {
		tk := time.NewTicker(s.cfg.ProgressInterval)
		defer tk.Stop()
		tickC = tk.C
	}
	timeoutC := timer.C
	ctxDone := ctx.Done()
	for {
		select {
		case <-t.done:
			s.forget(t.id)
			return t.result, ctx.Err()
		case <-timeoutC:
			timeoutC, autoC = nil, nil
			t.kill(true)
		case <-autoC:
			if t.toBackground(BackgroundAuto) {
				return t.backgroundResult(BackgroundAuto), nil
			}
			autoC = nil
		case reason := <-t.moveCh:
			if t.toBackground(reason) {
				return t.backgroundResult(reason), nil
			}
		case <-ctxDone:
			ctxDone, timeoutC, autoC = nil, nil, nil
			t.kill(false)
		case <-tickC:
			t.tick()
		}
	}
}

// backgroundResult is what Run returns for a command that goes on in the
// background.
func (t *task) backgroundResult(reason string) Result {
	msg := fmt.Sprintf("Command running in background with ID: %s", t.id)
	if reason == BackgroundAuto {
		msg = fmt.Sprintf("Command was still running after %v and was moved to the background with ID: %s", t.s.autoBudget(t.req), t.id)
	}
	n, lines := t.cap.counts()
	return Result{ID: t.id, Command: t.req.Command, ExitCode: -1, Message: msg, Cwd: t.s.Cwd(), Kind: t.kind,
		Notes: t.notes, Violations: []policy.Violation{}, Backgrounded: reason, BackgroundID: t.id,
		OutputBytes: n, OutputLines: lines, Duration: time.Since(t.start)}
}

func (s *Session) autoBudget(req Request) time.Duration {
	if req.AutoBackground > 0 {
		return req.AutoBackground
	}
	return s.cfg.AutoBackground
}

// read returns output since the last read, and the result once finished.
func (t *task) read() ReadResult {
	finished := false
	select {
	case <-t.done: // the result is set
		finished = true
	default:
	}
	t.mu.Lock()
	off := t.readOff
	t.mu.Unlock()
	max := t.s.cfg.MaxOutput
	b := t.cap.readAt(off, 4*max)
	cut := 0
	for n := 0; cut < len(b) && n < max; n++ {
		if !utf8.FullRune(b[cut:]) {
			break // the rest of the sequence is not there yet
		}
		_, w := utf8.DecodeRune(b[cut:])
		cut += w
	}
	b = b[:cut]
	// A '<' and the first letters of one of moat's tags at the end of this
	// part wait for the next, where the rest of the name lands (or for the
	// end of the output): split between two reads, the tag kept its '<' in
	// the first and the second had none to take off (attack pass 83).
	// A part that is all a tag's possible start (a '<' and more blanks or
	// dashes than a read takes) cannot wait: the next read would begin at
	// the same '<' and wait again, for good, the command's result too
	// (attack pass 86, TestReadPastLongTagStart). When more output follows
	// it, its bracket is taken off, as Defang takes a tag's.
	skip := 0
	full := off+int64(len(b)) < t.cap.kept()
	if !finished || full {
		if k := policy.TagCutAt(string(b)); k > 0 || k == 0 && !full {
			b = b[:k]
		} else if k == 0 {
			skip = policy.BracketLen(string(b))
		}
	}
	t.mu.Lock()
	t.readOff += int64(len(b))
	more := t.readOff < t.cap.kept()
	t.mu.Unlock()
	rr := ReadResult{ID: t.id, Output: policy.Defang(string(b[skip:])), More: more, Running: !finished}
	if finished && !more {
		r := t.result
		rr.Result = &r
	}
	return rr
}

// kept is how much output the capture holds.
func (c *capture) kept() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file != nil {
		return c.fileBytes
	}
	return int64(len(c.mem))
}

// finish turns how the process ended into the command's Result, and
// updates the session from a foreground command's side channel.
func (s *Session) finish(t *task, ex Exit, waitErr error) Result {
	t.mu.Lock()
	bg, interrupted, timedOut, timeout := t.background, t.interrupted, t.timedOut, t.timeout
	t.mu.Unlock()
	b, over := t.rep.bytes()
	r, complete, perr := parseCommandReport(b)
	notes := append([]string(nil), t.notes...)
	if perr == nil {
		notes = append(notes, s.noteSnapshot(t, r)...)
	}
	moved := perr == nil && r.has(recCwdMoved)
	if bg == "" && waitErr == nil {
		// A background command's directory and environment changes are
		// not the session's (the seeds do the same).
		notes = append(notes, s.applyReport(t, r, reportState{complete: complete, err: perr, over: over, signal: ex.Signal})...)
	} else if moved {
		notes = append(notes, s.movedBack(t))
	}
	out := t.cap.render(s.cfg.MaxOutput, s.cfg.PreviewBytes)
	res := Result{ID: t.id, Command: t.req.Command, ExitCode: ex.Code, Signal: ex.Signal,
		TimedOut: timedOut || ex.TimedOut, Interrupted: interrupted && !timedOut,
		Output: out.text, OutputFile: out.file, Truncated: out.truncated, Binary: out.binary, Image: out.image,
		Kind: t.kind, Backgrounded: bg, Duration: time.Since(t.start), Cwd: s.Cwd(),
		Violations: append([]policy.Violation{}, ex.Violations...)}
	res.OutputBytes, res.OutputLines = t.cap.counts()
	if bg != "" {
		res.BackgroundID = t.id
	}
	switch {
	case waitErr != nil:
		res.ExitCode, res.IsError = -1, true
		res.Message = "The sandbox failed to run the command: " + waitErr.Error()
	case moved && ex.Signal == 0:
		res.ExitCode, res.IsError = -1, true
		res.Message = "Command not run: its working directory " + t.tracked + " is no longer the directory it was judged in (a symbolic link now stands there or above it); run it again to have it judged where the session is now"
	case timedOut:
		res.IsError, res.Message = true, fmt.Sprintf("Command timed out after %v", timeout)
	case ex.TimedOut:
		res.IsError, res.Message = true, "Command was ended by the sandbox's time limit"
	case interrupted:
		res.IsError, res.Message = true, "Command was interrupted"
	case ex.Signal != 0:
		res.IsError, res.Message = true, fmt.Sprintf("Command was killed by signal %d", ex.Signal)
	default:
		in := Interpret(t.req.Command, ex.Code, s.shell.Variant())
		res.IsError, res.Message = in.IsError, in.Message
	}
	// The command's own output cannot pass for moat's block: render took
	// the '<' off its tags (policy.Defang), not off moat's notice around it.
	if a := policy.Annotate(ex.Violations); a != "" {
		if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
			res.Output += "\n"
		}
		res.Output += a
	}
	if !t.req.Subagent {
		res.Hints = t.filter.hints
	}
	res.Notes = notes
	s.log.Debug("command finished", "id", t.id, "cmd", t.req.Command, "exit", res.ExitCode, "is_error", res.IsError)
	return res
}

func sortEnv(e []EnvChange) {
	sort.Slice(e, func(i, j int) bool { return e[i].Name < e[j].Name })
}

func sortTasks(ts []TaskInfo) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].ID < ts[j].ID })
}
