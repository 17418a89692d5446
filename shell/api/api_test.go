//go:build linux

package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell/api/client"
	"github.com/moat-sandbox/moat/shell/sandbox"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	if code, ok := runtime.Reexec(os.Args); ok {
		os.Exit(code)
	}
	done := testutil.OwnHome()
	code := m.Run()
	done()
	os.Exit(code)
}

// fixture is a server on a socket in a new directory outside /tmp (the
// host's /tmp is hidden in the sandbox), whose policy lets commands write
// in work only.
type fixture struct {
	dir, work, sock string
	srv             *Server
	c               *client.Client
}

// newFixture starts a server; edit changes its configuration first. The
// server's gate is off unless edit says otherwise: the tests about the
// sandbox run every command.
func newFixture(t *testing.T, edit func(*Config)) *fixture {
	t.Helper()
	testutil.RequireUserns(t)
	root := os.Getenv("MOAT_TEST_DIR")
	if root == "" {
		root = "/var/tmp"
	}
	dir, err := os.MkdirTemp(root, "moat-api-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fixture{dir: dir, work: filepath.Join(dir, "work"), sock: filepath.Join(dir, "api.sock")}
	os.Mkdir(f.work, 0o755)
	pol := &policy.Policy{Cwd: f.work, Home: dir, Violations: true}
	pol.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	pol.FS.AllowWrite = []policy.PathRule{{Path: f.work, Source: "test"}}
	pol.Permissions.Deny = []policy.Rule{{Rule: "Bash(rm:*)"}}
	cfg := Config{Policy: pol, Gate: sandbox.GateOff, StateDir: filepath.Join(dir, "state"), Hide: []string{f.sock},
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "LANG=C"}}
	if edit != nil {
		edit(&cfg)
	}
	f.srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen(f.sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(l) }()
	f.c = client.New(f.sock)
	t.Cleanup(func() {
		f.c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := f.srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return f
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func (f *fixture) session(t *testing.T, req client.SessionRequest) client.Session {
	t.Helper()
	s, err := f.c.CreateSession(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) run(t *testing.T, session, command string) client.Event {
	t.Helper()
	ev, err := f.c.RunWait(ctxT(t), session, client.CommandRequest{Command: command})
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return ev
}

// raw sends a request as it is and returns the status and the error body.
func (f *fixture) raw(t *testing.T, method, path string, body []byte) (int, client.Error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, f.c.Base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e client.Error
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &e)
	if resp.StatusCode >= 400 && (e.Message == "" || resp.Header.Get("Content-Type") != "application/json") {
		t.Errorf("%s %s: %d without a JSON error: %q", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, e
}

// waitGone waits for the processes of "sleep marker" to be gone, and
// fails if they stay (a minute: no timing is asserted, only that they go).
func waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		pids := testutil.Procs("sleep "+marker, os.Getuid())
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left: sleep %s: %v", marker, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A session's life: health, open, list, run (the working directory carries
// over), describe, close; a closed session is gone.
func TestLifecycle(t *testing.T) {
	f := newFixture(t, nil)
	ctx := ctxT(t)
	h, err := f.c.Health(ctx)
	if err != nil || h.Status != "ok" || h.Version == "" {
		t.Fatalf("health: %+v %v", h, err)
	}
	if fi, err := os.Stat(f.sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the socket's mode: %v %v", fi.Mode(), err)
	}
	s := f.session(t, client.SessionRequest{Gate: "off", Mode: "default"})
	if s.ID == "" || s.Cwd != f.work || s.Gate != "off" {
		t.Fatalf("session: %+v", s)
	}
	list, err := f.c.Sessions(ctx)
	if err != nil || len(list) != 1 || list[0].ID != s.ID {
		t.Fatalf("sessions: %+v %v", list, err)
	}
	if ev := f.run(t, s.ID, "mkdir -p sub && cd sub && export GREETING=hello"); ev.ExitCode != 0 || ev.Event != "finished" {
		t.Fatalf("first command: %+v", ev)
	}
	ev := f.run(t, s.ID, `pwd; echo "$GREETING"`)
	if ev.Output != filepath.Join(f.work, "sub")+"\nhello\n" || ev.Cwd != filepath.Join(f.work, "sub") {
		t.Fatalf("the working directory and the export did not carry over: %+v", ev)
	}
	if got, err := f.c.Session(ctx, s.ID); err != nil || got.Cwd != filepath.Join(f.work, "sub") {
		t.Fatalf("session after cd: %+v %v", got, err)
	}
	if err := f.c.CloseSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	var ae *client.Error
	if _, err := f.c.Session(ctx, s.ID); !errors.As(err, &ae) || ae.Status != 404 || ae.Field != "session" {
		t.Fatalf("a closed session: %v", err)
	}
	if _, err := f.c.RunWait(ctx, s.ID, client.CommandRequest{Command: "true"}); !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("a command in a closed session: %v", err)
	}
}

// A foreground command streams NDJSON events: started first, its output
// as it comes, finished last.
func TestStream(t *testing.T) {
	f := newFixture(t, nil)
	s := f.session(t, client.SessionRequest{})
	var events []client.Event
	fin, err := f.c.Run(ctxT(t), s.ID, client.CommandRequest{ID: "stream-1", Command: "echo one; echo two"}, func(ev client.Event) {
		events = append(events, ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) < 2 || events[0].Event != "started" || events[len(events)-1].Event != "finished" {
		t.Fatalf("events: %+v", events)
	}
	var streamed strings.Builder
	for _, ev := range events {
		if ev.ID != "stream-1" {
			t.Errorf("event of another id: %+v", ev)
		}
		if ev.Event == "output" {
			streamed.WriteString(ev.Data)
		}
	}
	if streamed.String() != "one\ntwo\n" || fin.Output != "one\ntwo\n" || fin.ExitCode != 0 {
		t.Errorf("streamed %q, finished %+v", streamed.String(), fin)
	}
	// The media type, and one JSON object per line.
	body := []byte(`{"command":"echo x"}`)
	req, _ := http.NewRequestWithContext(ctxT(t), "POST", f.c.Base+"/v1/sessions/"+s.ID+"/commands", bytes.NewReader(body))
	resp, err := f.c.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type %q", ct)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("not a JSON line: %q", line)
		}
	}
}

// A background command answers at once; it can be read, then killed, and
// nothing is left of it. One that finishes gives its result once.
func TestBackgroundReadKill(t *testing.T) {
	f := newFixture(t, nil)
	ctx := ctxT(t)
	s := f.session(t, client.SessionRequest{})
	marker := testutil.SleepMarker(300)
	st, err := f.c.Start(ctx, s.ID, client.CommandRequest{Command: "echo started; sleep " + marker})
	if err != nil || !st.Running || st.ID == "" {
		t.Fatalf("start: %+v %v", st, err)
	}
	var out strings.Builder
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "started"); {
		rd, err := f.c.Read(ctx, s.ID, st.ID)
		if err != nil || !rd.Running {
			t.Fatalf("read: %+v %v", rd, err)
		}
		out.WriteString(rd.Output)
		if time.Now().After(deadline) {
			t.Fatalf("no output from the background command: %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got, _ := f.c.Session(ctx, s.ID); len(got.Commands) != 1 || !got.Commands[0].Running {
		t.Errorf("the session's commands: %+v", got.Commands)
	}
	k, err := f.c.Kill(ctx, s.ID, st.ID)
	if err != nil || k.Result == nil || !k.Result.Interrupted || k.Running {
		t.Fatalf("kill: %+v %v", k, err)
	}
	waitGone(t, marker)
	var ae *client.Error
	if _, err := f.c.Read(ctx, s.ID, st.ID); !errors.As(err, &ae) || ae.Status != 404 || ae.Field != "command" {
		t.Errorf("a collected command: %v", err)
	}

	st, err = f.c.Start(ctx, s.ID, client.CommandRequest{ID: "done", Command: "echo token-bg-42"})
	if err != nil || st.ID != "done" {
		t.Fatalf("start: %+v %v", st, err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		rd, err := f.c.Read(ctx, s.ID, "done")
		if err != nil {
			t.Fatal(err)
		}
		if rd.Result != nil {
			if rd.Running || rd.Result.ExitCode != 0 || rd.Result.Output != "token-bg-42\n" {
				t.Fatalf("result: %+v %+v", rd, rd.Result)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background command never finished")
		}
	}
}

// A client that goes away kills its command: the process is gone, the
// session goes on and its slot is free.
func TestCancelKills(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxCommandsPerSession = 1 })
	s := f.session(t, client.SessionRequest{})
	marker := testutil.SleepMarker(300)
	ctx, cancel := context.WithCancel(ctxT(t))
	_, err := f.c.Run(ctx, s.ID, client.CommandRequest{Command: "echo started; sleep " + marker}, func(ev client.Event) {
		if ev.Event == "output" && strings.Contains(ev.Data, "started") {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v", err)
	}
	waitGone(t, marker)
	// The slot comes back once the server has the command's end.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		ev, err := f.c.RunWait(ctxT(t), s.ID, client.CommandRequest{Command: "echo after"})
		if err == nil {
			if ev.Output != "after\n" {
				t.Fatalf("after the cancel: %+v", ev)
			}
			break
		}
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != 429 || time.Now().After(deadline) {
			t.Fatalf("after the cancel: %v", err)
		}
	}
}

// Bad requests get a 4xx and a JSON error naming the field at fault.
func TestBadRequests(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxRequestBytes = 4 << 10 })
	s := f.session(t, client.SessionRequest{})
	cmds := "/v1/sessions/" + s.ID + "/commands"
	big := `{"command":"echo ` + strings.Repeat("x", 8<<10) + `"}`
	for _, tc := range []struct {
		method, path, body string
		status             int
		field              string
	}{
		{"POST", "/v1/sessions", `{"bogus":1}`, 400, "bogus"},
		{"POST", "/v1/sessions", `{"gate":"sometimes"}`, 400, "gate"},
		{"POST", "/v1/sessions", `{"mode":"yolo"}`, 400, "mode"},
		{"POST", "/v1/sessions", `{"timeout_ms":"soon"}`, 400, "timeout_ms"},
		{"POST", "/v1/sessions", `{"timeout_ms":1e3}`, 400, "timeout_ms"},
		{"POST", "/v1/sessions", `{"timeout_ms":99999999999999999999}`, 400, "timeout_ms"},
		{"POST", "/v1/sessions", `{"mode":"default","mode":"bypassPermissions"}`, 400, "mode"},
		{"POST", "/v1/sessions", `{"write":["/nonexistent/moat-api"]}`, 400, "write"},
		{"POST", "/v1/sessions", `[1,2]`, 400, ""},
		{"POST", "/v1/sessions", `{} {}`, 400, ""},
		{"POST", cmds, `{}`, 400, "command"},
		{"POST", cmds, `{"command":"   "}`, 400, "command"},
		{"POST", cmds, ``, 400, ""},
		{"POST", cmds, `{"command":"true","id":"../x"}`, 400, "id"},
		{"POST", cmds, `{"command":"true","timeout_ms":-1}`, 400, "timeout_ms"},
		{"POST", cmds, `{"command":"true","extra":true}`, 400, "extra"},
		{"POST", cmds, `{"command":"true","command":"echo b"}`, 400, "command"},
		{"POST", cmds + "?stream=maybe", `{"command":"true"}`, 400, "stream"},
		{"POST", cmds, big, 413, ""},
		{"POST", "/v1/sessions/nosuch/commands", `{"command":"true"}`, 404, "session"},
		{"GET", "/v1/sessions/nosuch", ``, 404, "session"},
		{"DELETE", "/v1/sessions/nosuch", ``, 404, "session"},
		{"GET", cmds + "/nosuch", ``, 404, "command"},
		{"DELETE", cmds + "/nosuch", ``, 404, "command"},
		{"POST", "/v1/decide", `{"cwd":"/"}`, 400, "command"},
		{"POST", "/v1/decide", `{"command":"ls","mode":"yolo"}`, 400, "mode"},
		{"POST", "/v1/decide", `{"command":"ls","cwd":"relative"}`, 400, "cwd"},
		{"PUT", "/v1/health", ``, 405, ""},
		{"GET", "/v1/nothing", ``, 404, ""},
	} {
		status, e := f.raw(t, tc.method, tc.path, []byte(tc.body))
		if status != tc.status || e.Field != tc.field {
			t.Errorf("%s %s %.40q: %d %+v, want %d naming %q", tc.method, tc.path, tc.body, status, e, tc.status, tc.field)
		}
	}
	// Nothing of that ran: the session holds no command.
	if got, err := f.c.Session(ctxT(t), s.ID); err != nil || len(got.Commands) != 0 {
		t.Errorf("after bad requests: %+v %v", got, err)
	}
}

// A body encoding/json reads without a word, but not as its sender or a
// filter in front of moat reads it, is a 400 naming what is wrong, and
// runs nothing: a key given twice in another case ("command" and
// "Command", "background" and "bac\u212aground": encoding/json matches
// fields regardless of case, and the last won), bytes that are not UTF-8
// and lone surrogates (decoded as U+FFFD: the command ran with characters
// nobody wrote). Found by an attack pass.
func TestAmbiguousBodies(t *testing.T) {
	f := newFixture(t, nil)
	s := f.session(t, client.SessionRequest{})
	cmds := "/v1/sessions/" + s.ID + "/commands?stream=false"
	marker := filepath.Join(f.work, "ran")
	touch := "touch " + marker
	for _, tc := range []struct {
		path, body string
		field, msg string
	}{
		{cmds, `{"command":"true","Command":"` + touch + `"}`, "Command", "regardless of case"},
		{cmds, `{"command":"true","COMMAND":"` + touch + `"}`, "COMMAND", "regardless of case"},
		{cmds, `{"command":"` + touch + `","background":false,"bac\u212aground":true}`, "bac\u212aground", "regardless of case"},
		{cmds, "{\"command\":\"" + touch + "\xff\"}", "", "not valid UTF-8"},
		{cmds, `{"command":"` + touch + `\ud800"}`, "", "lone surrogate"},
		{"/v1/sessions", `{"gate":"strict","Gate":"off"}`, "Gate", "regardless of case"},
		{"/v1/sessions", `{"mode":"default","Mode":"bypassPermissions"}`, "Mode", "regardless of case"},
		{"/v1/decide", `{"command":"true","Command":"rm -rf /"}`, "Command", "regardless of case"},
	} {
		status, e := f.raw(t, "POST", tc.path, []byte(tc.body))
		if status != http.StatusBadRequest || e.Field != tc.field || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s %q: %d %+v, want 400 naming %q (%s)", tc.path, tc.body, status, e, tc.field, tc.msg)
		}
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Errorf("a refused body ran: %s exists", marker)
	}
	if got, err := f.c.Session(ctxT(t), s.ID); err != nil || len(got.Commands) != 0 {
		t.Errorf("after refused bodies: %+v %v", got, err)
	}
	if list, err := f.c.Sessions(ctxT(t)); err != nil || len(list) != 1 {
		t.Errorf("a refused session request opened one: %+v %v", list, err)
	}
}

// The limits answer 429; a session may not loosen the server's gate.
func TestLimits(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxSessions, c.MaxCommandsPerSession, c.Gate = 2, 1, sandbox.GateDeny })
	ctx := ctxT(t)
	var ae *client.Error
	if _, err := f.c.CreateSession(ctx, client.SessionRequest{Gate: "off"}); !errors.As(err, &ae) || ae.Status != 400 || ae.Field != "gate" {
		t.Fatalf("a looser gate: %v", err)
	}
	s := f.session(t, client.SessionRequest{})
	if s.Gate != "deny" {
		t.Errorf("the server's gate is the default: %+v", s)
	}
	f.session(t, client.SessionRequest{Gate: "strict"})
	if _, err := f.c.CreateSession(ctx, client.SessionRequest{}); !errors.As(err, &ae) || ae.Status != 429 {
		t.Fatalf("a third session: %v", err)
	}
	marker := testutil.SleepMarker(300)
	st, err := f.c.Start(ctx, s.ID, client.CommandRequest{Command: "sleep " + marker})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.RunWait(ctx, s.ID, client.CommandRequest{Command: "true"}); !errors.As(err, &ae) || ae.Status != 429 {
		t.Fatalf("a second command: %v", err)
	}
	if _, err := f.c.Kill(ctx, s.ID, st.ID); err != nil {
		t.Fatal(err)
	}
	waitGone(t, marker)
	if ev := f.run(t, s.ID, "echo ok"); ev.Output != "ok\n" {
		t.Fatalf("after the kill: %+v", ev)
	}
}

// Under the strict gate only what moat allows runs; "ask" and "deny" come
// back refused and nothing runs.
func TestGateStrict(t *testing.T) {
	f := newFixture(t, nil)
	s := f.session(t, client.SessionRequest{Gate: "strict"})
	victim := filepath.Join(f.work, "victim")
	os.WriteFile(victim, []byte("x"), 0o644)
	for _, tc := range []struct{ command, decision string }{
		{"rm " + victim, "deny"},
		{"touch " + victim + ".new", "ask"},
	} {
		ev := f.run(t, s.ID, tc.command)
		if ev.Refused == nil || ev.Refused.Decision != tc.decision || ev.ExitCode != -1 {
			t.Errorf("%s: %+v", tc.command, ev)
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("a refused command ran: %v", err)
	}
	if _, err := os.Stat(victim + ".new"); err == nil {
		t.Error("a refused command ran: the file was created")
	}
	if ev := f.run(t, s.ID, "echo hi"); ev.Refused != nil || ev.Output != "hi\n" {
		t.Errorf("an allowed command: %+v", ev)
	}
	d, err := f.c.Decide(ctxT(t), client.DecideRequest{Command: "rm " + victim})
	if err != nil || d.Decision != "deny" || d.Rule == nil || *d.Rule != "Bash(rm:*)" {
		t.Errorf("decide: %+v %v", d, err)
	}
}

// The attack: a command writing outside the policy fails through the API,
// and the same write succeeds without moat.
func TestAttackWriteOutside(t *testing.T) {
	f := newFixture(t, nil)
	s := f.session(t, client.SessionRequest{})
	target := filepath.Join(f.dir, "pwned")
	attack := "echo pwned > " + target
	ev := f.run(t, s.ID, attack)
	if ev.ExitCode == 0 || !strings.Contains(string(ev.Violations), target) {
		t.Errorf("the write outside the policy: %+v", ev)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("ESCAPE: the write outside the policy landed on the host")
	}
	if out, err := exec.Command("/bin/sh", "-c", attack).CombinedOutput(); err != nil {
		t.Fatalf("without moat the write fails too, the attack proves nothing: %v %s", err, out)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatal(err)
	}
}

// A sandboxed command cannot drive the API that started it. Three layers,
// each tested alone: the sandbox blocks unix sockets by default; with them
// allowed, the socket is hidden from it (Config.Hide); were it not, the
// server refuses a peer in the sandbox's namespaces (403). The same request
// from outside the sandbox succeeds.
func TestSandboxCannotReachAPI(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		testutil.Unavailable(t, "no curl")
	}
	for _, tc := range []struct {
		name              string
		allowUnix, hide   bool
		wantForbiddenPeer bool
	}{
		{"unix sockets blocked", false, true, false},
		{"socket hidden", true, true, false},
		{"peer check", true, false, true},
	} {
		f := newFixture(t, func(c *Config) {
			c.Policy.Net.AllowAllUnixSockets = tc.allowUnix
			if !tc.hide {
				c.Hide = nil
			}
		})
		s := f.session(t, client.SessionRequest{})
		probe := fmt.Sprintf("%s -s -o /dev/null -w 'status=%%{http_code}' --unix-socket %s http://moat/v1/health", curl, f.sock)
		ev := f.run(t, s.ID, probe)
		t.Logf("%s: from the sandbox: %q (exit %d)", tc.name, ev.Output, ev.ExitCode)
		if strings.Contains(ev.Output, "status=200") {
			t.Fatalf("ESCAPE (%s): a sandboxed command reached the API: %+v", tc.name, ev)
		}
		if got403 := strings.HasPrefix(ev.Output, "status=403"); got403 != tc.wantForbiddenPeer {
			t.Errorf("%s: %q: refused by the peer check %v, want %v", tc.name, ev.Output, got403, tc.wantForbiddenPeer)
		}
		out, _ := exec.Command("/bin/sh", "-c", probe).CombinedOutput()
		if string(out) != "status=200" {
			t.Fatalf("%s: from the host the API answers: %q", tc.name, out)
		}
	}
}

// Decisions and the policy, as moat check --json and moat policy --json.
func TestDecidePolicy(t *testing.T) {
	f := newFixture(t, nil)
	ctx := ctxT(t)
	d, err := f.c.Decide(ctx, client.DecideRequest{Command: "ls -la", Mode: "plan"})
	if err != nil || d.Decision != "allow" || !d.ReadOnly || d.Warnings == nil {
		t.Errorf("decide: %+v %v", d, err)
	}
	raw, err := f.c.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Policy      policy.Policy   `json:"policy"`
		Notes       []string        `json:"notes"`
		Enforcement json.RawMessage `json:"enforcement"`
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.Policy.Cwd != f.work || p.Notes == nil || len(p.Enforcement) == 0 {
		t.Errorf("policy: %v %s", err, raw)
	}
}

// The load: 200 concurrent commands across 20 sessions, each echoing its
// own token: every result comes back with its token. Each session also
// holds a background sleep; after Shutdown no process is left.
func TestLoad(t *testing.T) {
	const sessions, perSession = 20, 10
	f := newFixture(t, nil)
	ctx := ctxT(t)
	ids := make([]string, sessions)
	var bgMarkers []string
	for i := range ids {
		ids[i] = f.session(t, client.SessionRequest{}).ID
		m := testutil.SleepMarker(300)
		if _, err := f.c.Start(ctx, ids[i], client.CommandRequest{Command: "sleep " + m}); err != nil {
			t.Fatal(err)
		}
		bgMarkers = append(bgMarkers, m)
	}
	marker := testutil.SleepMarker(0) // "sleep 0.<unique>": a short sleep we can name
	var wg sync.WaitGroup
	errs := make(chan error, sessions*perSession)
	for i := range sessions * perSession {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := fmt.Sprintf("token-%03d-%s", i, marker)
			req := client.CommandRequest{Command: "echo " + token + "; sleep " + marker}
			var ev client.Event
			var err error
			if i%2 == 0 {
				ev, err = f.c.Run(ctx, ids[i%sessions], req, nil)
			} else {
				ev, err = f.c.RunWait(ctx, ids[i%sessions], req)
			}
			switch {
			case err != nil:
				errs <- fmt.Errorf("command %d: %v", i, err)
			case ev.ExitCode != 0 || ev.Output != token+"\n":
				errs <- fmt.Errorf("command %d: exit %d, output %q, want %q", i, ev.ExitCode, ev.Output, token)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitGone(t, marker)
	for _, id := range ids {
		s, err := f.c.Session(ctx, id)
		if err != nil || len(s.Commands) != 1 {
			t.Errorf("session %s after the load: %+v %v", id, s.Commands, err)
		}
	}
	for _, m := range bgMarkers {
		if len(testutil.Procs("sleep "+m, os.Getuid())) == 0 {
			t.Fatalf("a background sleep is not running: %s", m)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.srv.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range bgMarkers {
		if pids := testutil.Procs("sleep "+m, os.Getuid()); len(pids) > 0 {
			t.Errorf("Shutdown left processes: sleep %s: %v", m, pids)
		}
	}
	if _, err := os.Stat(f.sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Shutdown left the socket: %v", err)
	}
}

// A daemon serves each user at most MaxConnsPerUser connections at once:
// one more gets a 429 before anything is read from it, and once one of
// them is closed a new one is served again. Without the bound, a user's
// idle connections (each a goroutine and a descriptor of the daemon, as
// root) had no end.
func TestDaemonConnsPerUser(t *testing.T) {
	const max = 3
	f := newFixture(t, func(c *Config) {
		c.Daemon = &Daemon{MaxConnsPerUser: max,
			PolicyFor: func(*enforce.Identity, string) (*policy.Policy, []string, error) {
				return nil, nil, errors.New("not used")
			},
			CheckWritable: func(*enforce.Identity, string) (string, error) { return "", errors.New("not used") },
			CheckDir:      func(*enforce.Identity, string) (string, error) { return "", errors.New("not used") },
		}
	})
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("unix", f.sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// status sends GET /v1/health on c and returns the answer's status line.
	status := func(c net.Conn) string {
		t.Helper()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "GET /v1/health HTTP/1.1\r\nHost: moatd\r\n\r\n")
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		return strings.TrimSpace(line)
	}
	var conns []net.Conn
	for i := 0; i < max; i++ {
		conns = append(conns, dial())
	}
	if got := status(conns[0]); strings.Contains(got, "429") {
		t.Fatalf("a connection within the bound: %s", got)
	}
	extra := dial()
	extra.SetDeadline(time.Now().Add(30 * time.Second))
	b, _ := io.ReadAll(extra) // answered and closed without a request
	if !strings.HasPrefix(string(b), "HTTP/1.1 429 ") || !strings.Contains(string(b), "connections open to the daemon") {
		t.Errorf("connection %d of one user: %q, want a 429 naming the limit", max+1, b)
	}
	conns[1].Close()
	for deadline := time.Now().Add(30 * time.Second); ; {
		c := dial()
		got := status(c)
		if !strings.Contains(got, "429") {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a connection closed, yet a new one still gets %s", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A policy with permissions.disableBypassPermissionsMode refuses a session
// or a decision that asks for bypassPermissions (400 naming "mode"); the
// request's mode was taken as given and widened every ask to allow (found
// by an attack pass).
func TestBypassModeDisabled(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Policy.Permissions.DisableBypass = true; c.Gate = sandbox.GateStrict })
	for _, tc := range []struct{ path, body string }{
		{"/v1/sessions", `{"mode":"bypassPermissions"}`},
		{"/v1/decide", `{"command":"rm -rf x","mode":"bypassPermissions"}`},
	} {
		status, e := f.raw(t, "POST", tc.path, []byte(tc.body))
		if status != 400 || e.Field != "mode" || !strings.Contains(e.Message, "disableBypassPermissionsMode") {
			t.Errorf("%s %s: %d %+v, want 400 naming mode and the setting", tc.path, tc.body, status, e)
		}
	}
	if s := f.session(t, client.SessionRequest{Mode: "acceptEdits"}); s.Mode != "acceptEdits" {
		t.Errorf("another mode: %+v", s)
	}
}

// A client that stops reading its command's stream holds nothing up: the
// command still ends at its timeout, and the session closes. The stream's
// writes blocked with the progress lock held, the wait loop that enforces
// the timeout waited on that lock, and the session's close and the
// server's shutdown waited on the command (found by an attack pass).
func TestStalledStreamHoldsNothing(t *testing.T) {
	old := StreamWriteTimeout
	StreamWriteTimeout = 500 * time.Millisecond
	t.Cleanup(func() { StreamWriteTimeout = old })
	f := newFixture(t, nil)
	s := f.session(t, client.SessionRequest{})
	marker := fmt.Sprintf("3%d", time.Now().UnixNano()%1000000)
	conn, err := net.Dial("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if rc, err := conn.(*net.UnixConn).SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096) })
	}
	body := fmt.Sprintf(`{"command":"sleep %s & yes | head -c 3000000; wait","timeout_ms":1500}`, marker)
	fmt.Fprintf(conn, "POST /v1/sessions/%s/commands HTTP/1.1\r\nHost: moat\r\nContent-Type: application/json\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s", s.ID, client.ProofHeader, serverProof(t), len(body), body)
	// Never read: the stream backs up. The command must still end by its
	// timeout (it runs first: its sleep is there).
	deadline := time.Now().Add(time.Minute)
	for len(testutil.Procs("sleep "+marker, os.Getuid())) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the command never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		got, err := f.c.Session(ctxT(t), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		running := false
		for _, c := range got.Commands {
			running = running || c.Running
		}
		if !running && len(testutil.Procs("sleep "+marker, os.Getuid())) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after its 1.5 s timeout the command still runs (a client that stopped reading its stream holds it): %+v", got.Commands)
		}
		time.Sleep(100 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- f.c.CloseSession(ctxT(t), s.ID) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("closing the session hangs on the stalled stream")
	}
}

// Shutdown ends within its context even when a session's close does not
// (its last git audit held in a tree its client filled: a FIFO named as
// the audit's record held moatd's shutdown for good, attack pass 60): the
// error says so, and the rest still shuts down.
func TestShutdownDoesNotWaitForAHungSession(t *testing.T) {
	f := newFixture(t, nil)
	s, err := f.c.CreateSession(ctxT(t), client.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	orig := closeSession
	closeSession = func(ss *session) error { <-release; return orig(ss) }
	defer func() { closeSession = orig }()
	defer close(release) // the held session then closes (before the fixture's cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	err = f.srv.Shutdown(ctx)
	if err == nil || !strings.Contains(err.Error(), "sessions still closing") {
		t.Errorf("Shutdown with a session that does not close: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Shutdown took %v past its context of 2 s", d)
	}
	_ = s
}
