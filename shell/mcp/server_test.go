//go:build linux

package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/permissions"
	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell/sandbox"
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

// fixture is a sandbox writable in work only, with a deny rule for rm, and
// an MCP server on it.
type fixture struct {
	dir, work string
	sh        *sandbox.Shell
	srv       *sdk.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, nil)
}

// newFixtureWith is newFixture with the policy changed by edit first.
func newFixtureWith(t *testing.T, edit func(*policy.Policy)) *fixture {
	t.Helper()
	return newFixtureConfig(t, edit, nil)
}

// newFixtureConfig is newFixtureWith with the session's configuration
// changed by editCfg too.
func newFixtureConfig(t *testing.T, edit func(*policy.Policy), editCfg func(*sandbox.Config)) *fixture {
	t.Helper()
	testutil.RequireUserns(t)
	root := os.Getenv("MOAT_TEST_DIR")
	if root == "" {
		root = "/var/tmp" // the host's /tmp is hidden in the sandbox
	}
	dir, err := os.MkdirTemp(root, "moat-mcp-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	pol := &policy.Policy{Cwd: work, Home: dir, Violations: true}
	pol.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	pol.FS.AllowWrite = []policy.PathRule{{Path: work, Source: "test"}}
	pol.Permissions.Deny = []policy.Rule{{Rule: "Bash(rm:*)"}}
	if edit != nil {
		edit(pol)
	}
	cfg := sandbox.Config{Policy: pol, Gate: sandbox.GateOff,
		StateDir: filepath.Join(dir, "state"), Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "LANG=C"}}
	if editCfg != nil {
		editCfg(&cfg)
	}
	sh, err := sandbox.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	return &fixture{dir: dir, work: work, sh: sh, srv: New(sh, nil)}
}

// elicitations records what a client was asked, and answers with action.
type elicitations struct {
	mu     sync.Mutex
	action string
	asked  []string
}

func (e *elicitations) handler(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, req.Params.Message)
	return &sdk.ElicitResult{Action: e.action}, nil
}

func (e *elicitations) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.asked)
}

// connect connects a client to the fixture's server over in-memory
// transports. el nil: a client without elicitation.
func (f *fixture) connect(t *testing.T, el *elicitations, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	if opts == nil {
		opts = &sdk.ClientOptions{}
	}
	if el != nil {
		opts.ElicitationHandler = el.handler
	}
	ct, st := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := f.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "moat-test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// structured is a tool result's structured content as a map.
func structured(t *testing.T, r *sdk.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return r
}

// The tools are listed with their schemas and annotations.
func TestListTools(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, nil, nil)
	// The SDK's client asks for the newest version; the server offers none
	// past 2025-11-25 (where a tool call may elicit), and they agree on it.
	if v := cs.InitializeResult().ProtocolVersion; v != newestElicitingVersion {
		t.Errorf("negotiated protocol version %s, want %s", v, newestElicitingVersion)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	for _, n := range []string{"bash", "bash_output", "bash_kill"} {
		if tools[n] == nil {
			t.Fatalf("tool %s is not listed: %v", n, res.Tools)
		}
	}
	b, _ := json.Marshal(tools["bash"].InputSchema)
	for _, want := range []string{`"command"`, `"timeout"`, `"run_in_background"`, `"description"`, `"dangerouslyDisableSandbox"`, `"maximum":600000`, `"required":["command"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("bash's schema lacks %s: %s", want, b)
		}
	}
	if a := tools["bash"].Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Errorf("bash's annotations: %+v", a)
	}
	if a := tools["bash_output"].Annotations; a == nil || !a.ReadOnlyHint {
		t.Errorf("bash_output's annotations: %+v", a)
	}
}

// An allowed command runs at once (no question), in the session: the
// working directory and exports carry over; the result has the output, the
// exit code, the cwd and the decision.
func TestAllowRuns(t *testing.T) {
	f := newFixture(t)
	el := &elicitations{action: "decline"}
	cs := f.connect(t, el, nil)
	r := call(t, cs, "bash", map[string]any{"command": "echo hello from moat"})
	if r.IsError || !strings.Contains(text(r), "hello from moat\n") || !strings.Contains(text(r), "exit code 0") || !strings.Contains(text(r), "cwd "+f.work) {
		t.Fatalf("echo: %v %q", r.IsError, text(r))
	}
	m := structured(t, r)
	if m["exit_code"] != 0.0 || m["output"] != "hello from moat\n" || m["cwd"] != f.work || m["decision"].(map[string]any)["decision"] != "allow" {
		t.Errorf("structured content: %v", m)
	}
	if el.count() != 0 {
		t.Errorf("an allowed command asked the user: %v", el.asked)
	}
	r = call(t, cs, "bash", map[string]any{"command": "grep -r no-such-text-anywhere ."})
	if r.IsError || structured(t, r)["exit_code"] != 1.0 || !strings.Contains(text(r), "No matches found") {
		t.Errorf("grep with no match is not an error: %v %q", r.IsError, text(r))
	}
	r = call(t, cs, "bash", map[string]any{"command": "ls no-such-dir"})
	if !r.IsError || !strings.Contains(text(r), "exit code 2") {
		t.Errorf("a failing command is an error: %v %q", r.IsError, text(r))
	}
}

// A denied command is refused without running and without a question.
func TestDenyRefused(t *testing.T) {
	f := newFixture(t)
	victim := filepath.Join(f.work, "victim")
	os.WriteFile(victim, []byte("x"), 0o644)
	el := &elicitations{action: "accept"}
	cs := f.connect(t, el, nil)
	r := call(t, cs, "bash", map[string]any{"command": "rm " + victim})
	if !r.IsError || !strings.Contains(text(r), "Command not run") || !strings.Contains(text(r), "deny") {
		t.Fatalf("rm under a deny rule: %v %q", r.IsError, text(r))
	}
	m := structured(t, r)
	if m["refused"] == nil || m["exit_code"] != -1.0 {
		t.Errorf("structured content of a refusal: %v", m)
	}
	if el.count() != 0 {
		t.Errorf("a denied command asked the user: %v", el.asked)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the denied command ran: %v", err)
	}
}

// An ask becomes an elicitation showing the command and the reason: accept
// runs it, decline and cancel refuse it; a client without elicitation gets
// a refusal that says why.
func TestAskElicitation(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		action string // "" for a client without elicitation
		runs   bool
	}{{"accept", true}, {"decline", false}, {"cancel", false}, {"", false}} {
		file := filepath.Join(f.work, "asked-"+tc.action)
		cmd := "touch " + file
		var el *elicitations
		if tc.action != "" {
			el = &elicitations{action: tc.action}
		}
		cs := f.connect(t, el, nil)
		r := call(t, cs, "bash", map[string]any{"command": cmd, "description": "create a marker file"})
		_, err := os.Stat(file)
		if ran := err == nil; ran != tc.runs {
			t.Errorf("%q: ran %v, want %v (%q)", tc.action, ran, tc.runs, text(r))
		}
		m := structured(t, r)
		if d := m["decision"].(map[string]any); d["decision"] != "ask" {
			t.Fatalf("%s is not an ask: %v", cmd, d)
		}
		if tc.runs {
			if r.IsError || m["approved"] != "user" || m["exit_code"] != 0.0 {
				t.Errorf("accepted: %v %v", r.IsError, m)
			}
		} else if !r.IsError || m["refused"] == nil || !strings.Contains(text(r), "Command not run") {
			t.Errorf("%q: not a refusal: %v %q", tc.action, r.IsError, text(r))
		}
		switch tc.action {
		case "":
			if !strings.Contains(text(r), "elicitation") {
				t.Errorf("the refusal does not say the client cannot ask: %q", text(r))
			}
		default:
			if el.count() != 1 || !strings.Contains(el.asked[0], cmd) || !strings.Contains(el.asked[0], "create a marker file") {
				t.Errorf("the question does not show the command and its description: %q", el.asked)
			}
		}
	}
}

// A client that asks for an older protocol version (2025-06-18) still gets
// elicitations.
func TestAskOlderProtocol(t *testing.T) {
	f := newFixture(t)
	ct, st := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := f.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	el := &elicitations{action: "accept"}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "old", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: el.handler}).
		Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-06-18" {
		t.Errorf("negotiated %s", v)
	}
	r := call(t, cs, "bash", map[string]any{"command": "touch " + filepath.Join(f.work, "old")})
	if r.IsError || el.count() != 1 {
		t.Errorf("elicitation under 2025-06-18: %v %q %v", r.IsError, text(r), el.asked)
	}
}

// Invalid inputs are tool errors naming the field.
func TestInvalidInput(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, nil, nil)
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"bash", map[string]any{"command": ""}, "command"},
		{"bash", map[string]any{"command": "   "}, "command"},
		{"bash", map[string]any{}, "command"},
		{"bash", map[string]any{"command": "true", "timeout": 600001}, "timeout"},
		{"bash", map[string]any{"command": "true", "timeout": -1}, "timeout"},
		{"bash", map[string]any{"command": "true", "timeout": "soon"}, "timeout"},
		{"bash", map[string]any{"command": "true", "colour": "red"}, "colour"},
		{"bash_output", map[string]any{"id": "no-such-id"}, "id"},
		{"bash_output", map[string]any{}, "id"},
		{"bash_kill", map[string]any{"id": "no-such-id"}, "id"},
	} {
		r := call(t, cs, tc.tool, tc.args)
		if !r.IsError || !strings.Contains(text(r), tc.field) {
			t.Errorf("%s %v: %v %q (want an error naming %s)", tc.tool, tc.args, r.IsError, text(r), tc.field)
		}
	}
}

// A background command can be read and killed; the kill leaves no process.
func TestBackgroundReadKill(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, &elicitations{action: "accept"}, nil)
	marker := testutil.SleepMarker(300)
	r := call(t, cs, "bash", map[string]any{"command": "echo started; sleep " + marker, "run_in_background": true})
	id, _ := structured(t, r)["background_id"].(string)
	if r.IsError || id == "" || !strings.Contains(text(r), "bash_output") {
		t.Fatalf("background: %v %q", r.IsError, text(r))
	}
	deadline := time.Now().Add(20 * time.Second)
	var out string
	for !strings.Contains(out, "started") {
		if time.Now().After(deadline) {
			t.Fatalf("no output from the background command: %q", out)
		}
		rr := call(t, cs, "bash_output", map[string]any{"id": id})
		if rr.IsError {
			t.Fatalf("bash_output: %q", text(rr))
		}
		out += structured(t, rr)["output"].(string)
		if structured(t, rr)["running"] != true {
			t.Fatalf("the background command ended early: %q", text(rr))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// "started" comes before the shell has forked and exec'd sleep: on a
	// loaded machine that takes a while.
	for len(testutil.Procs("sleep "+marker, os.Getuid())) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the background sleep is not running (the marker does not find it)")
		}
		time.Sleep(20 * time.Millisecond)
	}
	k := call(t, cs, "bash_kill", map[string]any{"id": id})
	if k.IsError || structured(t, k)["interrupted"] != true {
		t.Fatalf("bash_kill: %v %q", k.IsError, text(k))
	}
	// The text is the killed command's result: its output and status
	// line, not the advice to read or kill an id that is gone (it was
	// "Command was interrupted" and that advice, pass 77).
	if kt := text(k); !strings.Contains(kt, "started\n") || !strings.Contains(kt, "[exit code 137, interrupted") || strings.Contains(kt, "bash_output") {
		t.Errorf("bash_kill's text: %q", kt)
	}
	if pids := testutil.Procs("sleep "+marker, os.Getuid()); len(pids) > 0 {
		t.Errorf("the killed command left processes: %v", pids)
	}
	// The result was returned: the id is gone.
	if rr := call(t, cs, "bash_output", map[string]any{"id": id}); !rr.IsError {
		t.Errorf("bash_output after the kill: %q", text(rr))
	}
}

// A background command that finishes is read to its end with its result.
func TestBackgroundFinishes(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, &elicitations{action: "accept"}, nil)
	r := call(t, cs, "bash", map[string]any{"command": "echo one; sleep 0.2; echo two", "run_in_background": true})
	id, _ := structured(t, r)["background_id"].(string)
	if id == "" {
		t.Fatalf("background: %q", text(r))
	}
	deadline := time.Now().Add(20 * time.Second)
	var out string
	for {
		rr := call(t, cs, "bash_output", map[string]any{"id": id})
		m := structured(t, rr)
		out += m["output"].(string)
		if m["result"] != nil {
			if res := m["result"].(map[string]any); res["exit_code"] != 0.0 || !strings.Contains(text(rr), "exit code 0") {
				t.Errorf("the finished result: %v %q", res, text(rr))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background command did not finish: %q", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out != "one\ntwo\n" {
		t.Errorf("the output read in pieces: %q", out)
	}
}

// Cancelling the tool call (notifications/cancelled) kills the command.
func TestCancelKills(t *testing.T) {
	f := newFixture(t)
	cs := f.connect(t, &elicitations{action: "accept"}, nil)
	marker := testutil.SleepMarker(300)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "sleep " + marker}})
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(testutil.Procs("sleep "+marker, os.Getuid())) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled call returned no error")
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		pids := testutil.Procs("sleep "+marker, os.Getuid())
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled command still runs: %v", pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The session goes on.
	if r := call(t, cs, "bash", map[string]any{"command": "echo still here"}); r.IsError || !strings.Contains(text(r), "still here") {
		t.Errorf("after the cancel: %q", text(r))
	}
}

// A call with a progress token gets the output as progress notifications
// before the result.
func TestProgress(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var msgs []string
	var last float64
	increasing := true
	opts := &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		if req.Params.ProgressToken != "tok-1" {
			return
		}
		if req.Params.Progress <= last {
			increasing = false
		}
		last = req.Params.Progress
		msgs = append(msgs, req.Params.Message)
	}}
	cs := f.connect(t, &elicitations{action: "accept"}, opts)
	params := &sdk.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "for i in 1 2 3; do echo line$i; sleep 0.4; done"}}
	params.SetProgressToken("tok-1")
	r, err := cs.CallTool(context.Background(), params)
	if err != nil || r.IsError {
		t.Fatalf("%v %q", err, text(r))
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(msgs, "")
	if !strings.Contains(all, "line1") || !strings.Contains(all, "line2") {
		t.Errorf("the progress notifications do not carry the output: %q", msgs)
	}
	if !increasing {
		t.Errorf("progress did not increase: %q", msgs)
	}
}

// The attack: a write outside the policy, through the tool, fails and is
// reported as a violation even though the user approved the command; the
// same write without moat succeeds, so the attack was real.
func TestWriteOutsidePolicy(t *testing.T) {
	f := newFixture(t)
	target := filepath.Join(f.dir, "outside.txt")
	cmd := "echo pwned > " + target
	cs := f.connect(t, &elicitations{action: "accept"}, nil)
	r := call(t, cs, "bash", map[string]any{"command": cmd})
	m := structured(t, r)
	if d := m["decision"].(map[string]any); d["decision"] == "deny" {
		t.Fatalf("the write was refused by the decision, not the sandbox: %v", d)
	}
	if !r.IsError || m["exit_code"] == 0.0 || !strings.Contains(text(r), "<sandbox_violations>") || len(m["violations"].([]any)) == 0 {
		t.Errorf("the write outside the policy: %v %q", r.IsError, text(r))
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("ESCAPE: the write outside the policy landed on the host")
	}
	if out, err := exec.Command("bash", "-c", cmd).CombinedOutput(); err != nil {
		t.Fatalf("without moat the same write fails too (the test proves nothing): %v %s", err, out)
	}
	if b, _ := os.ReadFile(target); string(b) != "pwned\n" {
		t.Fatalf("without moat: %q", b)
	}
}

// Claude Code's sandbox switches act on the bash tool's decisions as in
// moat check: autoAllowBashIfSandboxed allows a command no rule denies or
// asks; excludedCommands and a dangerouslyDisableSandbox request (which
// allowUnsandboxedCommands permits) mark the command as one the settings
// would run outside the sandbox, which takes that allowance away (the user
// is asked), says so in the result (sandbox, and a note), and still runs it
// inside moat's sandbox.
func TestSandboxSwitches(t *testing.T) {
	f := newFixtureWith(t, func(p *policy.Policy) {
		p.Sandbox.AutoAllowBashIfSandboxed = true
		p.Sandbox.ExcludedCommands = []string{"touch"}
	})
	el := &elicitations{action: "accept"}
	cs := f.connect(t, el, nil)
	sandboxOf := func(r *sdk.CallToolResult) map[string]any {
		t.Helper()
		sb, _ := structured(t, r)["sandbox"].(map[string]any)
		if sb == nil {
			t.Fatalf("no sandbox in the result: %v", structured(t, r))
		}
		return sb
	}

	// autoAllowBashIfSandboxed: mkdir (no rule allows it) runs unasked.
	r := call(t, cs, "bash", map[string]any{"command": "mkdir auto"})
	if r.IsError || el.count() != 0 || structured(t, r)["decision"].(map[string]any)["decision"] != "allow" {
		t.Fatalf("autoAllowBashIfSandboxed: %v %q, asked %v", r.IsError, text(r), el.asked)
	}
	if sb := sandboxOf(r); sb["sandboxed"] != true || strings.Contains(text(r), "outside the sandbox") {
		t.Errorf("an auto-allowed command: sandbox %v, %q", sb, text(r))
	}

	// excludedCommands: touch is asked about, and runs in the sandbox all
	// the same: its write outside the policy is refused.
	outside := filepath.Join(f.dir, "outside-excluded")
	inside := filepath.Join(f.work, "excluded")
	r = call(t, cs, "bash", map[string]any{"command": "touch " + inside + " " + outside})
	if el.count() != 1 || !strings.Contains(el.asked[0], "outside the sandbox") || !strings.Contains(el.asked[0], "excludedCommands") {
		t.Fatalf("an excluded command must be asked about, saying so: %q", el.asked)
	}
	if sb := sandboxOf(r); sb["sandboxed"] != false || !strings.Contains(sb["reason"].(string), "excludedCommands") {
		t.Errorf("an excluded command: sandbox %v", sb)
	}
	if !strings.Contains(text(r), "[note: the settings would run this command outside the sandbox") || !strings.Contains(text(r), "moat ran it inside") {
		t.Errorf("no note that moat ran it inside: %q", text(r))
	}
	if _, err := os.Stat(inside); err != nil {
		t.Errorf("the approved excluded command did not run: %v", err)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatalf("ESCAPE: an excluded command ran outside the sandbox (%s written)", outside)
	}
	if !r.IsError || !strings.Contains(text(r), "<sandbox_violations>") {
		t.Errorf("the excluded command's write outside the policy must be refused and reported: %q", text(r))
	}

	// dangerouslyDisableSandbox: accepted by the schema, counted (the
	// allowance goes, the user is asked), run inside.
	r = call(t, cs, "bash", map[string]any{"command": "mkdir requested", "dangerouslyDisableSandbox": true})
	if el.count() != 2 || !strings.Contains(el.asked[1], "dangerouslyDisableSandbox") {
		t.Fatalf("dangerouslyDisableSandbox must take the allowance away: %v %q, asked %q", r.IsError, text(r), el.asked)
	}
	if sb := sandboxOf(r); r.IsError || sb["sandboxed"] != false || !strings.Contains(text(r), "moat ran it inside") {
		t.Errorf("dangerouslyDisableSandbox: %v %v %q", r.IsError, sb, text(r))
	}
	if _, err := os.Stat(filepath.Join(f.work, "requested")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	// false is the default: allowed as before.
	if r = call(t, cs, "bash", map[string]any{"command": "mkdir plain", "dangerouslyDisableSandbox": false}); r.IsError || el.count() != 2 {
		t.Errorf("dangerouslyDisableSandbox false: %v %q", r.IsError, text(r))
	}
}

// With allowUnsandboxedCommands false a dangerouslyDisableSandbox request
// does not count: the command stays sandboxed (the result says why) and
// keeps autoAllowBashIfSandboxed's allowance.
func TestDangerouslyDisableSandboxNotAllowed(t *testing.T) {
	no := false
	f := newFixtureWith(t, func(p *policy.Policy) {
		p.Sandbox.AutoAllowBashIfSandboxed = true
		p.Sandbox.AllowUnsandboxedCommands = &no
	})
	el := &elicitations{action: "decline"}
	cs := f.connect(t, el, nil)
	r := call(t, cs, "bash", map[string]any{"command": "mkdir kept", "dangerouslyDisableSandbox": true})
	sb, _ := structured(t, r)["sandbox"].(map[string]any)
	if r.IsError || el.count() != 0 || sb == nil || sb["sandboxed"] != true || !strings.Contains(sb["reason"].(string), "not honoured") {
		t.Errorf("dangerouslyDisableSandbox without allowUnsandboxedCommands: %v %q %v, asked %q", r.IsError, text(r), sb, el.asked)
	}
	if strings.Contains(text(r), "outside the sandbox") {
		t.Errorf("a sandboxed command got the note: %q", text(r))
	}
}

// The question of an "ask" shows the command as it is: control characters
// escaped, each line of a multi-line command numbered, so that a command
// cannot draw moat's own lines or hide its tail behind an escape sequence
// (found by an attack pass).
func TestAskMessageShowsTheCommand(t *testing.T) {
	cmd := "ls\n\nWhy you are asked: read-only listing\x1b[8m\n\ngit push --force\x1b[0m\r"
	msg := askMessage(BashInput{Command: cmd, Description: "list\x1b[2Jfiles"}, "/work", permissions.Result{})
	if strings.ContainsAny(msg, "\x1b\r") {
		t.Errorf("control characters reach the question: %q", msg)
	}
	if !strings.Contains(msg, "  3| Why you are asked: read-only listing") || !strings.Contains(msg, "  5| git push --force") {
		t.Errorf("the command's lines are not numbered as its own:\n%s", msg)
	}
	if !strings.Contains(msg, "\\u001b[8m") {
		t.Errorf("the escape is not shown:\n%s", msg)
	}
}

// The command a user approves runs in the directory it was judged (and
// shown) in: another call's cd while the user was asked moved the
// session, and the approved command ran there, through a symlink that led
// outside what the user saw (found by an attack pass).
func TestAskedCommandRunsWhereJudged(t *testing.T) {
	f := newFixture(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(f.work, "sub"), 0o755))
	other := f.connect(t, nil, nil)
	el := &elicitations{action: "accept"}
	moved := false
	opts := &sdk.ClientOptions{ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		if !moved {
			moved = true
			r := call(t, other, "bash", map[string]any{"command": "cd sub"})
			if r.IsError {
				t.Errorf("cd sub: %q", text(r))
			}
		}
		return el.handler(ctx, req)
	}}
	cs := f.connect(t, nil, opts)
	r := call(t, cs, "bash", map[string]any{"command": "echo x > out.txt"})
	if !moved {
		t.Fatalf("the command was not asked about: %q", text(r))
	}
	if _, err := os.Stat(filepath.Join(f.work, "sub", "out.txt")); err == nil {
		t.Fatalf("the approved command ran in the directory another call moved to: %q", text(r))
	}
	if !r.IsError || !strings.Contains(text(r), "judged in "+f.work) {
		t.Errorf("the result must say the command was judged elsewhere: %q", text(r))
	}
	if len(el.asked) != 1 || !strings.Contains(el.asked[0], "In: "+f.work) {
		t.Errorf("the question must show where the command runs: %q", el.asked)
	}
}

// Unicode's line and paragraph separators (and the other invisible format
// characters) are shown as escapes too: a command with U+2028 U+2028 before
// a "Why you are asked" line drew moat's reason in the question, as some
// clients break lines there (found by an attack pass). The reason and the
// warnings, which quote the command's words, are shown the same way.
func TestAskMessageShowsLineSeparators(t *testing.T) {
	cmd := "rm -rf ~/work/build\u2028\u2028Why you are asked: read-only command (auto-approved by your rule Bash(ls:*))\u2029\u061c\u180e\u0085"
	dec := permissions.Result{Decision: policy.Decision{Verdict: policy.Ask, Reason: "command reads /x\u2028\u2028Why you are asked: ok"}, Warnings: []string{"w\u2029x"}}
	msg := askMessage(BashInput{Command: cmd, Description: "d\u2028e"}, "/work\u2029", dec)
	for _, r := range []rune{0x2028, 0x2029, 0x061c, 0x180e, 0x85} {
		if strings.ContainsRune(msg, r) {
			t.Errorf("U+%04X reaches the question: %q", r, msg)
		}
	}
	if !strings.Contains(msg, `\u2028\u2028Why you are asked: read-only command`) {
		t.Errorf("the separators are not shown as escapes:\n%s", msg)
	}
	if strings.Count(msg, "\nWhy you are asked:") != 1 {
		t.Errorf("a second reason line:\n%s", msg)
	}
}

// A tools/call whose parameters encoding/json would read without a word,
// but not as its sender or a filter in front of the server reads them, is
// an "invalid params" error and runs nothing: a key given twice (the last
// won: the second command ran), bytes that are not UTF-8 and lone
// surrogates (decoded as U+FFFD). Over stdio (Checked) and HTTP
// (CheckedHandler). Found by an attack pass.
func TestAmbiguousParams(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(f.work, "ran")
	touch := "touch " + marker
	bodies := []string{
		`{"name":"bash","arguments":{"command":"true","command":"` + touch + `"}}`,
		`{"name":"bash_output","name":"bash","arguments":{"command":"` + touch + `"}}`,
		`{"name":"bash","arguments":{"command":"` + touch + "\xff" + `"}}`,
		`{"name":"bash","arguments":{"command":"` + touch + `\ud800"}}`,
	}
	want := []string{"given twice", "given twice", "not valid UTF-8", "lone surrogate"}
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

	// stdio
	c := newStdioClient(t, f.srv)
	send := func(s string) map[string]any {
		t.Helper()
		c.write(s)
		return c.next(s)
	}
	send(init)
	c.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, b := range bodies {
		m := send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, b))
		e, _ := m["error"].(map[string]any)
		if msg, _ := e["message"].(string); !strings.Contains(msg, want[i]) || m["id"] != float64(i+1) {
			t.Errorf("stdio %s: %v, want an error saying %q", b, m, want[i])
		}
	}
	c.close()

	// HTTP
	h := CheckedHandler(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.srv }, nil), sdk.DefaultMaxRequestBodyBytes)
	for i, b := range bodies {
		rec := post(h, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, b))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), want[i]) {
			t.Errorf("HTTP %s: %d %s, want 400 saying %q", b, rec.Code, rec.Body, want[i])
		}
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Errorf("a refused call ran: %s exists", marker)
	}
}

// A message whose parameters are clean but whose envelope, or an answer of
// the client's, encoding/json (the SDK's reader) would read otherwise than
// its sender or a filter in front of the server reads it, runs nothing:
// "params" or "method" given twice (the last won: {"method":"tools/list",
// "method":"tools/call"} ran a command a filter saw as a listing), and an
// elicitation's answer {"action":"decline","action":"accept"} (the last
// won: the command a filter saw declined ran). Over stdio only the
// parameters of requests were checked (attack pass 73); HTTP's handler
// checks whole bodies, which the second half holds it to.
func TestAmbiguousMessages(t *testing.T) {
	f := newFixture(t)
	marker := filepath.Join(f.work, "ran")
	touch := "touch " + marker
	call := func(id int, params string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params)
	}
	clean := `{"name":"bash","arguments":{"command":"true"}}`
	evil := `{"name":"bash","arguments":{"command":"` + touch + `"}}`
	envelopes := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + clean + `,"params":` + evil + `}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","method":"tools/call","params":` + evil + `}`,
		`{"jsonrpc":"2.0","id":3,"id":4,"method":"tools/call","params":` + evil + `}`,
		`[` + call(5, clean) + `,{"jsonrpc":"2.0","id":6,"method":"tools/call","params":` + clean + `,"params":` + evil + `}]`,
	}
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`

	// stdio
	c := newStdioClient(t, f.srv)
	write, next := c.write, c.next
	write(init)
	next("initialize")
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, e := range envelopes {
		write(e)
		m := next(e)
		if er, _ := m["error"].(map[string]any); er == nil || !strings.Contains(fmt.Sprint(er["message"]), "given twice") {
			t.Errorf("stdio %s: %v, want an error saying a key is given twice", e, m)
		}
	}
	// An ask: the question comes, and the answer holds "action" twice.
	write(call(7, evil))
	q := next("the asked call")
	if q["method"] != "elicitation/create" {
		t.Fatalf("stdio: %v, want the question", q)
	}
	qid, _ := json.Marshal(q["id"])
	write(`{"jsonrpc":"2.0","id":` + string(qid) + `,"result":{"action":"decline","action":"accept"}}`)
	m := next("the answer")
	res, _ := m["result"].(map[string]any)
	if m["id"] != 7.0 || res == nil || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "given twice") {
		t.Errorf("stdio: the answer with action twice: %v, want a refusal saying a key is given twice", m)
	}
	c.close()
	if _, err := os.Lstat(marker); err == nil {
		t.Fatalf("stdio: an ambiguous message ran a command: %s exists", marker)
	}

	// HTTP: the handler reads whole bodies, answers included.
	h := CheckedHandler(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.srv }, nil), sdk.DefaultMaxRequestBodyBytes)
	for _, b := range append(envelopes, `{"jsonrpc":"2.0","id":1,"result":{"action":"decline","action":"accept"}}`) {
		rec := post(h, b)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "given twice") {
			t.Errorf("HTTP %s: %d %s, want 400 saying a key is given twice", b, rec.Code, rec.Body)
		}
	}
	// A body that is not one JSON value was handed on unchecked, and the
	// SDK read its first value, ignoring the rest: with " x" after it, the
	// command given twice ran (attack pass 73). A stateless handler runs a
	// call without a session's initialization.
	h = CheckedHandler(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.srv },
		&sdk.StreamableHTTPOptions{Stateless: true}), sdk.DefaultMaxRequestBodyBytes)
	for _, b := range []string{
		call(8, `{"name":"bash","arguments":{"command":"true","command":"echo moat-ran-second"}}`) + " x",
		call(9, `{"name":"bash","arguments":{"command":"true","command":"echo moat-ran-second"}}`) + "\n" + call(10, clean),
		call(11, `{"name":"bash","arguments":{"command":"true","command":"echo moat-ran-second"}}`) + "]",
	} {
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if strings.Contains(rec.Body.String(), `"output":"moat-ran-second`) {
			t.Errorf("HTTP %s: the command given second ran: %s", b, rec.Body)
		}
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "one JSON value") {
			t.Errorf("HTTP %s: %d %s, want 400 saying the body is not one JSON value", b, rec.Code, rec.Body)
		}
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Errorf("an ambiguous message ran a command: %s exists", marker)
	}
}

// stdioClient is a client of srv over CheckedIO on pipes: write sends one
// message, next reads the next answer (at most 30 s), close ends the input.
type stdioClient struct {
	t     *testing.T
	in    *io.PipeWriter
	lines *bufio.Scanner
}

func newStdioClient(t *testing.T, srv *sdk.Server) *stdioClient {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go srv.Run(ctx, CheckedIO(inR, outW))
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 4<<20)
	return &stdioClient{t: t, in: inW, lines: lines}
}

func (c *stdioClient) write(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, s+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *stdioClient) next(what string) map[string]any {
	c.t.Helper()
	got := make(chan bool, 1)
	go func() { got <- c.lines.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			c.t.Fatalf("no answer to %s", what)
		}
	case <-time.After(30 * time.Second):
		c.t.Fatalf("no answer to %s within 30 s", what)
	}
	var m map[string]any
	json.Unmarshal(c.lines.Bytes(), &m)
	return m
}

func (c *stdioClient) close() { c.in.Close() }

// post is one JSON-RPC POST to h, as a streamable HTTP client sends it.
func post(h http.Handler, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// The bash tool's schema tells the model the session's default timeout:
// it said "default 120000" whatever the session's was, and moat mcp
// --timeout 2s killed a command the model had given two minutes (found
// by pass 77 against moat mcp).
func TestTimeoutDefaultShown(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		want    string
	}{{0, "default 120000)"}, {2 * time.Second, "default 2000)"}} {
		f := newFixtureConfig(t, nil, func(c *sandbox.Config) { c.Timeout = tc.timeout })
		cs := f.connect(t, nil, nil)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var desc string
		for _, tl := range res.Tools {
			if tl.Name == "bash" {
				b, _ := json.Marshal(tl.InputSchema)
				var sc struct {
					Properties map[string]struct {
						Description string `json:"description"`
					} `json:"properties"`
				}
				json.Unmarshal(b, &sc)
				desc = sc.Properties["timeout"].Description
			}
		}
		if !strings.Contains(desc, tc.want) {
			t.Errorf("session timeout %v: the bash tool's timeout says %q, want %q", tc.timeout, desc, tc.want)
		}
	}
}
