//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// mcpTree is a tree whose settings (Claude Code's format) deny rm.
func mcpTree(t *testing.T) tree {
	tr := newTree(t)
	writeJSON(t, tr.settings, map[string]any{
		"permissions": map[string]any{"deny": []string{"Bash(rm:*)"}},
	})
	return tr
}

func mcpClient(el string) *sdk.Client {
	opts := &sdk.ClientOptions{}
	if el != "" {
		opts.ElicitationHandler = func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: el}, nil
		}
	}
	return sdk.NewClient(&sdk.Implementation{Name: "moat-e2e", Version: "1"}, opts)
}

func mcpCall(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (*sdk.CallToolResult, map[string]any, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	raw, _ := json.Marshal(r.StructuredContent)
	var m map[string]any
	json.Unmarshal(raw, &m)
	return r, m, b.String()
}

// moat mcp over stdio, driven by the SDK's client running the binary: the
// tools are listed, an allowed command runs, a denied one is refused, a
// write outside the policy fails (and succeeds without moat), a background
// command is killed with what it started.
func TestMCPStdio(t *testing.T) {
	tr := mcpTree(t)
	cmd := exec.Command(moatBin(t), "mcp", "--settings", tr.settings)
	cmd.Dir, cmd.Env = tr.dir, tr.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := mcpClient("accept").Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	if info := cs.InitializeResult().ServerInfo; info == nil || info.Name != "moat" {
		t.Errorf("server info: %+v", info)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, " ") != "bash bash_kill bash_output" {
		t.Errorf("tools: %v", names)
	}
	r, m, txt := mcpCall(t, cs, "bash", map[string]any{"command": "echo hi"})
	if r.IsError || m["output"] != "hi\n" || !strings.Contains(txt, "hi\n[exit code 0; cwd "+tr.dir+"]") {
		t.Errorf("echo hi: %v %q %v", r.IsError, txt, m)
	}
	victim := filepath.Join(tr.dir, "victim")
	os.WriteFile(victim, []byte("x"), 0o644)
	if r, m, txt := mcpCall(t, cs, "bash", map[string]any{"command": "rm -f " + victim}); !r.IsError || m["refused"] == nil || !strings.Contains(txt, "deny") {
		t.Errorf("rm under a deny rule: %v %q", r.IsError, txt)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the denied rm ran: %v", err)
	}

	// The attack: the user approves, the sandbox still refuses.
	target := filepath.Join(filepath.Dir(tr.dir), "outside.txt")
	attack := "echo pwned > " + target
	r, m, txt = mcpCall(t, cs, "bash", map[string]any{"command": attack})
	if !r.IsError || !strings.Contains(txt, "<sandbox_violations>") || len(m["violations"].([]any)) == 0 {
		t.Errorf("a write outside the policy: %v %q", r.IsError, txt)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("ESCAPE: the write outside the policy landed on the host")
	}
	if out, err := exec.Command("bash", "-c", attack).CombinedOutput(); err != nil {
		t.Fatalf("without moat the same write fails too: %v %s", err, out)
	}

	marker := testutil.SleepMarker(300)
	_, m, txt = mcpCall(t, cs, "bash", map[string]any{"command": "sleep " + marker + " & sleep " + marker, "run_in_background": true})
	id, _ := m["background_id"].(string)
	if id == "" {
		t.Fatalf("background: %q", txt)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(testutil.Procs("sleep "+marker, os.Getuid())) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the background sleeps never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r, m, txt := mcpCall(t, cs, "bash_kill", map[string]any{"id": id}); r.IsError || m["interrupted"] != true {
		t.Errorf("bash_kill: %v %q", r.IsError, txt)
	}
	if pids := testutil.Procs("sleep "+marker, os.Getuid()); len(pids) > 0 {
		t.Errorf("the killed command left processes: %v", pids)
	}
	// The client going away ends the server, and with it what still runs.
	marker2 := testutil.SleepMarker(300)
	mcpCall(t, cs, "bash", map[string]any{"command": "sleep " + marker2, "run_in_background": true})
	cs.Close()
	deadline = time.Now().Add(15 * time.Second)
	for len(testutil.Procs("sleep "+marker2, os.Getuid())) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("a background command outlived the server")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The README's configuration, `claude mcp add moat -- moat mcp`, names no
// settings file: moat mcp reads the user's ~/.claude/settings.json (and the
// project's) as moat run does. --settings with a file that does not exist
// is moat's error, exit 125, before anything is served.
func TestMCPReadsTheUsersSettings(t *testing.T) {
	tr := newTree(t)
	os.MkdirAll(filepath.Join(tr.home, ".claude"), 0o755)
	writeJSON(t, filepath.Join(tr.home, ".claude", "settings.json"), map[string]any{
		"permissions": map[string]any{"deny": []string{"Bash(rm:*)"}},
	})
	cmd := exec.Command(moatBin(t), "mcp")
	cmd.Dir, cmd.Env = tr.dir, tr.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcpClient("").Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	victim := filepath.Join(tr.dir, "victim")
	os.WriteFile(victim, []byte("x"), 0o644)
	if r, m, txt := mcpCall(t, cs, "bash", map[string]any{"command": "rm -f " + victim}); !r.IsError || m["refused"] == nil || !strings.Contains(txt, "Bash(rm:*)") {
		t.Errorf("rm under the user's deny rule: %v %q", r.IsError, txt)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the denied rm ran: %v", err)
	}
	if r, m, txt := mcpCall(t, cs, "bash", map[string]any{"command": "echo hi"}); r.IsError || m["output"] != "hi\n" {
		t.Errorf("echo hi: %v %q", r.IsError, txt)
	}
	missing := filepath.Join(tr.home, ".claude", "no-such-settings.json")
	if out := tr.moat(t, "", tr.env(), "mcp", "--settings", missing); out.code != exitMoatError || !strings.Contains(out.stderr, "no such file") {
		t.Errorf("moat mcp --settings with a missing file: exit %d, %q", out.code, out.stderr)
	}
}

// startHTTP starts moat mcp --http addr and returns the URL it serves.
func startHTTP(t *testing.T, tr tree, addr string) (*exec.Cmd, string) {
	t.Helper()
	return startHTTPVia(t, tr, nil, "--http", addr)
}

// startHTTPVia is startHTTP with moat mcp's arguments after --settings,
// started by a wrapper command (pre: setpriv ...), if any.
func startHTTPVia(t *testing.T, tr tree, pre []string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	argv := append(append(append([]string(nil), pre...), moatBin(t), "mcp", "--settings", tr.settings), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = tr.dir, tr.env()
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	re := regexp.MustCompile(`MCP over streamable HTTP at (\S+)`)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("moat mcp --http ended before it listened")
			}
			if m := re.FindStringSubmatch(l); m != nil {
				go func() {
					for range lines {
					}
				}()
				return cmd, m[1]
			}
		case <-timeout:
			t.Fatal("moat mcp --http did not say where it listens")
		}
	}
}

// moat mcp --http on a loopback port: the SDK's streamable client works;
// requests a web page could send through DNS rebinding (a foreign Host) or
// from another origin are refused; SIGTERM ends the server cleanly.
func TestMCPHTTP(t *testing.T) {
	tr := mcpTree(t)
	cmd, url := startHTTP(t, tr, "127.0.0.1:0")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("url %q", url)
	}
	ctx := context.Background()
	cs, err := mcpClient("").Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, _, txt := mcpCall(t, cs, "bash", map[string]any{"command": "echo over http"})
	if r.IsError || !strings.Contains(txt, "over http") {
		t.Errorf("echo over HTTP: %q", txt)
	}
	// Without elicitation an ask is refused, saying why.
	if r, _, txt := mcpCall(t, cs, "bash", map[string]any{"command": "touch " + filepath.Join(tr.dir, "f")}); !r.IsError || !strings.Contains(txt, "elicitation") {
		t.Errorf("an ask from a client without elicitation: %q", txt)
	}
	cs.Close()

	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(host, origin string) int {
		req, _ := http.NewRequest("POST", url, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	port := url[len("http://127.0.0.1:") : len(url)-len("/mcp")]
	if c := post("", ""); c != http.StatusOK {
		t.Errorf("a plain initialize: %d", c)
	}
	if c := post("localhost:"+port, "http://localhost:"+port); c != http.StatusOK {
		t.Errorf("a loopback Host and Origin: %d", c)
	}
	if c := post("attacker.example:"+port, ""); c != http.StatusForbidden {
		t.Errorf("a DNS-rebinding Host: %d, want 403", c)
	}
	if c := post("", "http://attacker.example"); c != http.StatusForbidden {
		t.Errorf("a foreign Origin: %d, want 403", c)
	}
	// An absolute-form target with a foreign Host header: net/http takes
	// the target's host, so only the origin form is served.
	if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
		fmt.Fprintf(c, "POST http://localhost:%s/mcp HTTP/1.1\r\nHost: attacker.example\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", port, len(initBody), initBody)
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if !strings.Contains(line, " 400 ") && !strings.Contains(line, " 403 ") {
			t.Errorf("an absolute-form target with a foreign Host: %q, want 400", line)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("moat mcp --http after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("moat mcp --http did not end on SIGTERM")
	}
}

// moat mcp --http unix:PATH: the socket is this user's only (0600) and
// serves the streamable client that shows the server's proof (moat's Go
// client does; one that does not is refused); the socket, the path given,
// is hidden from the server's own sandbox (its temporary bind name was
// hidden instead: found by an attack pass), and removed at the end.
func TestMCPUnixSocket(t *testing.T) {
	tr := mcpTree(t)
	sock := filepath.Join(filepath.Dir(tr.dir), "mcp.sock")
	cmd, _ := startHTTP(t, tr, "unix:"+sock)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("the socket's mode is %v, want a 0600 socket", fi.Mode())
	}
	// moat's Go client's HTTP client shows the server's proof by itself.
	cs, err := mcpClient("").Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://localhost/mcp", HTTPClient: client.New(sock).HTTP}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, _, txt := mcpCall(t, cs, "bash", map[string]any{"command": "echo over a socket"}); r.IsError || !strings.Contains(txt, "over a socket") {
		t.Errorf("echo over the socket: %q", txt)
	}
	// The socket, the path given, is hidden from the server's own sandbox
	// (the temporary name it was bound to was hidden instead).
	if _, m, txt := mcpCall(t, cs, "bash", map[string]any{"command": "test -S " + sock}); m["exit_code"] != float64(1) {
		t.Errorf("the server's own socket is there in its sandbox: %v %q", m["exit_code"], txt)
	}
	cs.Close()
	// A client without the proof (HTTP on the socket as is) is refused:
	// the peer checks do not see Landlock (TestServerProofLandlockCaller).
	plain := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	if _, err := mcpClient("").Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://localhost/mcp", HTTPClient: plain}, nil); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("a client without the proof: %v, want Forbidden", err)
	}
	plain.CloseIdleConnections()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	proof := client.Proof(c)
	c.Close()
	if proof == "" {
		t.Fatal("the server shows no proof to its own user")
	}
	// moat proof prints it, for clients of one's own (curl).
	if out := tr.moat(t, "", tr.env(), "proof", "unix:"+sock); out.code != 0 || strings.TrimSpace(out.stdout) != proof {
		t.Errorf("moat proof unix:%s: %d %q %q, want %s", sock, out.code, out.stdout, out.stderr, proof)
	}
	// As a header, for curl -H @<(moat proof --header ...): a pipe, not a
	// command line that any process can read.
	if out := tr.moat(t, "", tr.env(), "proof", "--header", "unix:"+sock); out.code != 0 || strings.TrimSpace(out.stdout) != client.ProofHeader+": "+proof {
		t.Errorf("moat proof --header unix:%s: %d %q %q", sock, out.code, out.stdout, out.stderr)
	}
	// A command of another sandbox that may reach unix sockets is refused
	// (it ran its commands under this server's policy and answered its own
	// asks: found by an attack pass); the same request from this user's
	// host process is served.
	unixOK := filepath.Join(filepath.Dir(tr.settings), "unixall.json")
	writeJSON(t, unixOK, map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}, "allowAllUnixSockets": true},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{}, "denyWrite": []string{}},
	})
	initReq := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"x","version":"1"}}}`
	curl := []string{"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", sock, "-X", "POST", "http://localhost/mcp",
		"-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream", "-H", client.ProofHeader + ": " + proof, "-d", initReq}
	if _, err := exec.LookPath("curl"); err == nil {
		direct, _ := exec.Command(curl[0], curl[1:]...).Output()
		if string(direct) != "200" {
			t.Fatalf("the host's own request: %q, want 200", direct)
		}
		// Even with the proof, a command of another sandbox is refused (the
		// peer checks: other namespaces).
		out := tr.moat(t, "", tr.env(), append([]string{"run", "--settings", unixOK, "--"}, curl...)...)
		if strings.HasPrefix(out.stdout, "2") {
			t.Errorf("ESCAPE: a command of another sandbox was served by moat mcp (%d): %q %q", out.code, out.stdout, out.stderr)
		}
	}
	// A second server on the same socket is refused while the first listens.
	if out := tr.moat(t, "", tr.env(), "mcp", "--settings", tr.settings, "--http", "unix:"+sock); out.code != exitMoatError || !strings.Contains(out.stderr, "already answers") {
		t.Errorf("a second server on a live socket: %d %q", out.code, out.stderr)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if _, err := os.Lstat(sock); err == nil {
		t.Error("the socket is left behind")
	}
}

// --http refuses addresses that are not loopback, before any sandbox.
func TestMCPHTTPRefusesNonLoopback(t *testing.T) {
	tr := mcpTree(t)
	for _, addr := range []string{"0.0.0.0:8080", "[::]:8080", "192.0.2.1:80", "example.com:80", ":8080", "127.0.0.1", "unix:"} {
		out := tr.moat(t, "", tr.env(), "mcp", "--settings", tr.settings, "--http", addr)
		if out.code != exitMoatError || !strings.Contains(out.stderr, "--http") {
			t.Errorf("--http %s: exit %d, %q", addr, out.code, out.stderr)
		}
		if strings.Contains(addr, "8080") && !strings.Contains(out.stderr, "loopback") {
			t.Errorf("--http %s: the error does not say loopback: %q", addr, out.stderr)
		}
	}
	if out := tr.moat(t, "", tr.env(), "mcp", "--gate", "strict"); out.code != exitMoatError {
		t.Errorf("--gate strict: exit %d, %q", out.code, out.stderr)
	}
}
