package jsonl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/internal/hostrun"
)

type event map[string]any

func (e event) str(k string) string { s, _ := e[k].(string); return s }

// harness runs a Server over pipes, with a real bash run on the host by
// hostrun (the tests' stand-in for the session sandbox). Every event is
// checked against docs/session.schema.json.
type harness struct {
	t      *testing.T
	dir    string
	in     *io.PipeWriter
	events chan event
	done   chan error
	schema *schema
}

func newHarness(t *testing.T, mod func(*shell.Config, *Server)) *harness {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	dir := filepath.Join(root, "work")
	os.Mkdir(dir, 0o755)
	cfg := shell.Config{Runner: &hostrun.Runner{}, Dir: dir, Shell: shell.Bash(bash), NoSnapshot: true,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + root}, OutputDir: filepath.Join(root, "out"),
		ProgressInterval: 50 * time.Millisecond}
	srv := &Server{}
	if mod != nil {
		mod(&cfg, srv)
	}
	sess, err := shell.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Session = sess
	h := &harness{t: t, dir: dir, events: make(chan event, 1000), done: make(chan error, 1), schema: loadSchema(t)}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h.in = inW
	go func() {
		err := srv.Serve(context.Background(), inR, outW)
		outW.Close()
		h.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if err := h.schema.validate(line, "event"); err != nil {
				t.Errorf("event does not match the schema: %s: %v", line, err)
			}
			var e event
			if err := json.Unmarshal(line, &e); err != nil {
				t.Errorf("not JSON: %s", line)
			}
			h.events <- e
		}
		close(h.events)
	}()
	t.Cleanup(func() { h.in.Close(); sess.Close() })
	return h
}

func (h *harness) send(lines ...string) {
	h.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(h.in, l+"\n"); err != nil {
			h.t.Fatal(err)
		}
	}
}

// until returns the events up to and including the first one matching.
func (h *harness) until(match func(event) bool) []event {
	h.t.Helper()
	var got []event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-h.events:
			if !ok {
				h.t.Fatalf("the stream ended; events so far: %v", got)
			}
			got = append(got, e)
			if match(e) {
				return got
			}
		case <-timeout:
			h.t.Fatalf("timed out; events so far: %v", got)
		}
	}
}

// wait returns the first event matching.
func (h *harness) wait(match func(event) bool) event {
	h.t.Helper()
	evs := h.until(match)
	return evs[len(evs)-1]
}

func is(id, ev string) func(event) bool {
	return func(e event) bool { return e.str("event") == ev && (id == "*" || idText(e["id"]) == id) }
}

func idText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return ""
}

// finish closes the input and returns the events up to "closed".
func (h *harness) finish() []event {
	h.t.Helper()
	h.in.Close()
	evs := h.until(is("*", "closed"))
	if err := <-h.done; err != nil {
		h.t.Errorf("Serve: %v", err)
	}
	return evs
}

func kinds(evs []event, id string) []string {
	var out []string
	for _, e := range evs {
		if idText(e["id"]) == id {
			out = append(out, e.str("event"))
		}
	}
	return out
}

func without(l []string, drop string) []string {
	var out []string
	for _, s := range l {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

func TestRun(t *testing.T) {
	h := newHarness(t, nil)
	h.send(`{"id":"1","op":"run","command":"pwd"}`)
	evs := h.until(is("1", "finished"))
	if got := strings.Join(without(kinds(evs, "1"), "progress"), " "); got != "started output finished" {
		t.Errorf("events %s", got)
	}
	f := evs[len(evs)-1]
	if f["exit_code"] != 0.0 || f["is_error"] != false || f["message"] != nil || f.str("output") != h.dir+"\n" ||
		f["output_file"] != nil || f.str("cwd") != h.dir || f["violations"] == nil {
		t.Errorf("%v", f)
	}
	if st := evs[0]; st.str("cwd") != h.dir || st.str("command") != "pwd" || st.str("kind") != "none" {
		t.Errorf("started %v", st)
	}
	h.send(`{"id":2,"op":"run","command":"cd /tmp && grep -q nothing /dev/null"}`)
	f = h.wait(is("2", "finished"))
	if f["id"] != 2.0 || f["exit_code"] != 1.0 || f["is_error"] != false || f.str("message") != "No matches found" || f.str("cwd") != "/tmp" {
		t.Errorf("%v", f)
	}
	if last := h.finish(); last[len(last)-1]["id"] != nil {
		t.Errorf("closed at the end of the input has id %v", last[len(last)-1]["id"])
	}
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		line  string
		id    any
		field any
	}{
		{`not json`, nil, nil},
		{`["id","op"]`, nil, nil},
		{`{"op":"run","command":"ls"}`, nil, "id"},
		{`{"id":true,"op":"run","command":"ls"}`, nil, "id"},
		{`{"id":"","op":"run","command":"ls"}`, nil, "id"},
		{`{"id":1.5,"op":"run","command":"ls"}`, nil, "id"},
		{`{"id":"a"}`, "a", "op"},
		{`{"id":"a","op":7}`, "a", "op"},
		{`{"id":"a","op":"fly"}`, "a", "op"},
		{`{"id":"a","op":"run","cmd":"ls"}`, "a", "cmd"},
		{`{"id":"a","op":"run"}`, "a", "command"},
		{`{"id":"a","op":"run","command":""}`, "a", "command"},
		{`{"id":"a","op":"run","command":["ls"]}`, "a", "command"},
		{`{"id":"a","op":"run","command":"ls","timeout_ms":-1}`, "a", "timeout_ms"},
		{`{"id":"a","op":"run","command":"ls","timeout_ms":"5"}`, "a", "timeout_ms"},
		{`{"id":"a","op":"run","command":"ls","timeout_ms":1e30}`, "a", "timeout_ms"},
		{`{"id":"a","op":"run","command":"ls","auto_background_ms":-2}`, "a", "auto_background_ms"},
		{`{"id":"a","op":"run","command":"ls","background":"yes"}`, "a", "background"},
		{`{"id":"a","op":"read"}`, "a", "target"},
		{`{"id":"a","op":"read","target":"nope"}`, "a", "target"},
		{`{"id":"a","op":"kill","target":"nope"}`, "a", "target"},
		{`{"id":"a","op":"background","target":"x","command":"ls"}`, "a", "target"},
		{`{"id":"a","op":"background","target":"x","timeout_ms":5}`, "a", "timeout_ms"},
		{`{"id":"a","op":"background","target":"nope"}`, "a", "target"},
		{`{"id":"a","op":"close","target":"x"}`, "a", "target"},
		{`{"id":"a","op":"preview_edit"}`, "a", "command"},
		{`{"id":"a","op":"run","command":"ls","background":true,"extra":1}`, "a", "extra"},
	}
	h := newHarness(t, nil)
	for _, tc := range tests {
		h.send(tc.line)
		e := h.wait(is("*", "error"))
		if e["id"] != tc.id || e["field"] != tc.field || e.str("error") == "" {
			t.Errorf("%s: %v, want id %v field %v", tc.line, e, tc.id, tc.field)
		}
	}
	h.send(strings.Repeat("x", MaxLineBytes+10))
	if e := h.wait(is("*", "error")); !strings.Contains(e.str("error"), "longer than") {
		t.Errorf("long line: %v", e)
	}
	// The stream goes on.
	h.send(`{"id":"ok","op":"run","command":"echo fine"}`)
	if f := h.wait(is("ok", "finished")); f.str("output") != "fine\n" {
		t.Errorf("%v", f)
	}
	h.finish()
}

// A line encoding/json would read without a word, but not as its sender
// or a filter in front of moat reads it, runs nothing: a key given twice
// (the last won: {"command":"echo first","command":"echo second"} ran the
// second), bytes that are not UTF-8 and lone surrogates (decoded as U+FFFD:
// the command ran with characters nobody wrote). Found by an attack pass.
func TestAmbiguousRequests(t *testing.T) {
	h := newHarness(t, nil)
	marker := filepath.Join(h.dir, "ran")
	for _, tc := range []struct {
		line      string
		id, field any
		msg       string
	}{
		{`{"id":"a","op":"run","command":"true","command":"touch ` + marker + `"}`, "a", "command", "given twice"},
		{`{"id":"b","op":"read","op":"run","command":"touch ` + marker + `"}`, "b", "op", "given twice"},
		{`{"id":"c","id":"d","op":"run","command":"touch ` + marker + `"}`, nil, "id", "given twice"},
		{"{\"id\":\"e\",\"op\":\"run\",\"command\":\"touch " + marker + "\xff\"}", "e", nil, "not valid UTF-8"},
		{`{"id":"f","op":"run","command":"touch ` + marker + `\udc00"}`, "f", nil, "lone surrogate"},
		{"{\"id\":\"\xfe\",\"op\":\"run\",\"command\":\"touch " + marker + "\"}", nil, nil, "not valid UTF-8"},
	} {
		h.send(tc.line)
		e := h.wait(is("*", "error"))
		if e["id"] != tc.id || e["field"] != tc.field || !strings.Contains(e.str("error"), tc.msg) {
			t.Errorf("%s: %v, want id %v field %v %q", tc.line, e, tc.id, tc.field, tc.msg)
		}
	}
	h.send(`{"id":"ok","op":"run","command":"echo fine"}`)
	for _, e := range h.until(is("ok", "finished")) {
		if e.str("event") == "started" && idText(e["id"]) != "ok" {
			t.Errorf("a refused line started a command: %v", e)
		}
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Errorf("a refused line ran: %s exists", marker)
	}
	h.finish()
}

func TestDuplicateID(t *testing.T) {
	h := newHarness(t, nil)
	h.send(`{"id":"x","op":"run","command":"sleep 30","background":true}`, `{"id":"x","op":"run","command":"ls"}`)
	if e := h.wait(is("x", "error")); e.str("field") != "id" {
		t.Errorf("%v", e)
	}
	h.send(`{"id":"k","op":"kill","target":"x"}`)
	h.until(is("x", "finished"))
	// Once finished, the id can be used again.
	h.send(`{"id":"x","op":"run","command":"echo again"}`)
	if f := h.wait(is("x", "finished")); f.str("output") != "again\n" {
		t.Errorf("%v", f)
	}
	h.finish()
}

func TestBackgroundReadKill(t *testing.T) {
	h := newHarness(t, nil)
	h.send(`{"id":"bg","op":"background","command":"echo one; sleep 30"}`)
	evs := h.until(is("bg", "backgrounded"))
	if got := strings.Join(without(kinds(evs, "bg"), "progress"), " "); got != "started backgrounded" || evs[len(evs)-1].str("reason") != "requested" {
		t.Errorf("events %s %v", got, evs)
	}
	var out strings.Builder
	for i := 0; i < 100 && out.String() != "one\n"; i++ {
		h.send(`{"id":"r","op":"read","target":"bg"}`)
		r := h.wait(is("r", "read"))
		if r["running"] != true || r.str("target") != "bg" {
			t.Fatalf("%v", r)
		}
		out.WriteString(r.str("output"))
		time.Sleep(20 * time.Millisecond)
	}
	if out.String() != "one\n" {
		t.Fatalf("read %q", out.String())
	}
	h.send(`{"id":"k","op":"kill","target":"bg"}`)
	evs = h.until(is("bg", "finished"))
	f := evs[len(evs)-1]
	if f["interrupted"] != true || f["is_error"] != true || f.str("backgrounded") != "requested" || f.str("output") != "one\n" {
		t.Errorf("%v", f)
	}
	h.finish()
}

func TestMoveToBackground(t *testing.T) {
	h := newHarness(t, nil)
	h.send(`{"id":"1","op":"run","command":"echo a; sleep 0.5; echo b","auto_background_ms":-1}`)
	h.until(is("1", "output"))
	h.send(`{"id":"m","op":"background","target":"1"}`)
	evs := h.until(is("1", "finished"))
	var sawOK, sawBg bool
	for _, e := range evs {
		sawOK = sawOK || (idText(e["id"]) == "m" && e.str("event") == "ok" && e.str("target") == "1")
		sawBg = sawBg || (idText(e["id"]) == "1" && e.str("event") == "backgrounded" && e.str("reason") == "user")
	}
	f := evs[len(evs)-1]
	if !sawOK || !sawBg || f.str("output") != "a\nb\n" || f.str("backgrounded") != "user" || f["exit_code"] != 0.0 {
		t.Errorf("ok %v backgrounded %v, finished %v", sawOK, sawBg, f)
	}
	h.finish()
}

func TestAutoBackgroundEvent(t *testing.T) {
	h := newHarness(t, nil)
	h.send(`{"id":"1","op":"run","command":"echo a; sleep 0.4; echo b","auto_background_ms":100}`)
	evs := h.until(is("1", "finished"))
	ks := strings.Join(kinds(evs, "1"), " ")
	if !strings.Contains(ks, "backgrounded") || evs[len(evs)-1].str("output") != "a\nb\n" {
		t.Errorf("%s %v", ks, evs[len(evs)-1])
	}
	h.finish()
}

func TestProgressAndStreamLimit(t *testing.T) {
	h := newHarness(t, func(c *shell.Config, s *Server) { s.StreamBytes = 10; c.MaxOutput = 100 })
	h.send(`{"id":"1","op":"run","command":"seq 1 1000; sleep 0.2"}`)
	evs := h.until(is("1", "finished"))
	var streamed strings.Builder
	truncated := false
	for _, e := range evs {
		switch e.str("event") {
		case "output":
			streamed.WriteString(e.str("data"))
		case "progress":
			truncated = truncated || e["stream_truncated"] == true
		}
	}
	f := evs[len(evs)-1]
	if streamed.Len() > 10 || !truncated || f["output_file"] == nil || f["output_lines"] != 1000.0 {
		t.Errorf("streamed %q, truncated %v, finished %v", streamed.String(), truncated, f)
	}
	b, _ := os.ReadFile(f.str("output_file"))
	if strings.Count(string(b), "\n") != 1000 {
		t.Errorf("the output file has %d lines", strings.Count(string(b), "\n"))
	}
	h.finish()
}

func TestCloseKillsEverything(t *testing.T) {
	h := newHarness(t, nil)
	h.send(`{"id":"bg","op":"run","command":"sleep 30","background":true}`, `{"id":"fg","op":"run","command":"sleep 30","auto_background_ms":-1}`)
	h.until(is("fg", "started"))
	start := time.Now()
	h.send(`{"id":"c","op":"close"}`)
	evs := h.until(is("*", "closed"))
	if time.Since(start) > 5*time.Second {
		t.Error("close waited for the commands")
	}
	for _, id := range []string{"bg", "fg"} {
		k := kinds(evs, id)
		if len(k) == 0 || k[len(k)-1] != "finished" {
			t.Errorf("%s: %v", id, k)
		}
	}
	if c := evs[len(evs)-1]; c.str("id") != "c" {
		t.Errorf("%v", c)
	}
	if err := <-h.done; err != nil {
		t.Error(err)
	}
}

func TestEndOfInput(t *testing.T) {
	h := newHarness(t, nil)
	h.send(`{"id":"bg","op":"run","command":"sleep 30","background":true}`, `{"id":"fg","op":"run","command":"sleep 0.3; echo done"}`)
	evs := h.finish()
	var fg, bg event
	for _, e := range evs {
		if e.str("event") == "finished" {
			if e.str("id") == "fg" {
				fg = e
			} else {
				bg = e
			}
		}
	}
	if fg.str("output") != "done\n" || fg["interrupted"] != false {
		t.Errorf("the foreground command was not waited for: %v", fg)
	}
	if bg["interrupted"] != true {
		t.Errorf("the background command was not killed: %v", bg)
	}
}

func TestPreviewEditEvent(t *testing.T) {
	h := newHarness(t, nil)
	os.WriteFile(filepath.Join(h.dir, "f.txt"), []byte("a\n"), 0o644)
	h.send(`{"id":"e","op":"preview_edit","command":"sed -i 's/a/b/' f.txt"}`, `{"id":"n","op":"preview_edit","command":"ls"}`)
	e := h.wait(is("e", "edit"))
	edit, _ := e["edit"].(map[string]any)
	if edit["diff"] != "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n+b\n" || edit["path"] != filepath.Join(h.dir, "f.txt") {
		t.Errorf("%v", e)
	}
	if n := h.wait(is("n", "edit")); n["edit"] != nil {
		t.Errorf("%v", n)
	}
	h.finish()
}

// failing is a Runner whose Start always fails.
type failing struct{}

func (failing) Start(context.Context, shell.Proc) (shell.Process, error) {
	return nil, errors.New("no sandbox today")
}

func TestStartFailure(t *testing.T) {
	h := newHarness(t, func(c *shell.Config, _ *Server) { c.Runner = failing{} })
	h.send(`{"id":"1","op":"run","command":"ls"}`)
	f := h.wait(is("1", "finished"))
	if f["exit_code"] != -1.0 || f["is_error"] != true || !strings.Contains(f.str("error"), "no sandbox today") || f.str("cwd") != h.dir {
		t.Errorf("%v", f)
	}
	h.finish()
}
