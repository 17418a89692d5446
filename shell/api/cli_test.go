//go:build linux

package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// thisProcess is a CLIRunRequest describing this process, as moat's C
// client describes its own.
func thisProcess(t *testing.T, args ...string) client.CLIRunRequest {
	t.Helper()
	um := syscall.Umask(0)
	syscall.Umask(um)
	var rl [][2]uint64
	for i := 0; i < rlimNlimits; i++ {
		var l unix.Rlimit
		if err := unix.Getrlimit(i, &l); err != nil {
			t.Fatal(err)
		}
		if i == unix.RLIMIT_NOFILE {
			cur, max, ok := runtime.StartRlimitNofile()
			if !ok {
				t.Skip("no C constructor in this build (cgo off)")
			}
			l = unix.Rlimit{Cur: cur, Max: max}
		}
		rl = append(rl, [2]uint64{l.Cur, l.Max})
	}
	gid := unix.Getgid()
	groups, _ := unix.Getgroups()
	cwd, _ := os.Getwd()
	return client.CLIRunRequest{Args: args, Cwd: cwd, Env: os.Environ(), Umask: &um, Rlimits: rl, Gid: &gid, Groups: groups}
}

// cliCall sends req to POST /v1/cli/run; on 101 it sends fds and returns
// the connection, otherwise the status and the error's text.
func cliCall(t *testing.T, sock string, req client.CLIRunRequest, fds []int) (*net.UnixConn, int, string) {
	t.Helper()
	return cliCallProof(t, sock, req, fds, serverProof(t))
}

// serverProof is the token of this process's server (the test runs the
// server in-process), read as moat's client reads it: from /proc/PID/fd.
func serverProof(t *testing.T) string {
	t.Helper()
	es, _ := os.ReadDir("/proc/self/fd")
	for _, e := range es {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		if tok, ok := strings.CutPrefix(l, "/memfd:"+proofPrefix); ok {
			tok, _, _ = strings.Cut(tok, " ")
			return tok
		}
	}
	return ""
}

// cliCallProof is cliCall with a given proof.
func cliCallProof(t *testing.T, sock string, req client.CLIRunRequest, fds []int, proof string) (*net.UnixConn, int, string) {
	t.Helper()
	body, _ := json.Marshal(req)
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	uc := conn.(*net.UnixConn)
	fmt.Fprintf(uc, "POST /v1/cli/run HTTP/1.1\r\nHost: moat\r\nContent-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		client.CLIRunUpgrade, client.CLIProofHeader, proof, len(body), body)
	uc.SetReadDeadline(time.Now().Add(time.Minute))
	buf := make([]byte, 8192)
	n, _ := uc.Read(buf)
	head, rest, _ := strings.Cut(string(buf[:n]), "\r\n\r\n")
	var status int
	fmt.Sscanf(head, "HTTP/1.1 %d", &status)
	if status != 101 {
		uc.Close()
		var e client.Error
		json.Unmarshal([]byte(rest), &e)
		return nil, status, e.Message + " [" + e.Field + "]"
	}
	uc.SetReadDeadline(time.Time{})
	if _, _, err := uc.WriteMsgUnix([]byte{0}, syscall.UnixRights(fds...), nil); err != nil {
		t.Fatal(err)
	}
	return uc, status, ""
}

// TestCLIRun: POST /v1/cli/run hands moat run's command line, working
// directory, environment and descriptors to Config.CLIRun, forwards
// signal lines, and ends with its status; a server without CLIRun answers
// 404; a malformed request is a 400 naming the field; a caller whose
// process differs from the server's in anything moat reads is a 409 naming
// it, and nothing runs.
func TestCLIRun(t *testing.T) {
	plain := newFixture(t, nil)
	if _, status, msg := cliCall(t, plain.sock, thisProcess(t, "--", "true"), nil); status != 404 || !strings.Contains(msg, "moat serve only") {
		t.Errorf("a server without CLIRun: %d %s", status, msg)
	}

	type call struct {
		inv CLIInvocation
		sig os.Signal
	}
	calls := make(chan call, 1)
	f := newFixture(t, func(c *Config) {
		c.CLIRun = func(ctx context.Context, inv CLIInvocation) int {
			fmt.Fprintf(inv.Stdio[1], "args %q\n", inv.Args)
			var sig os.Signal
			if len(inv.Args) > 0 && inv.Args[0] == "wait-signal" {
				select {
				case sig = <-inv.Signals:
				case <-time.After(time.Minute):
				}
			}
			calls <- call{inv, sig}
			return 7
		}
		c.MaxSessions = 1 // a run in progress must not take the one session's place
		c.CLICheck = func(args []string, _ string, _ []string) error {
			if len(args) > 0 && args[0] == "--control-fd" {
				return fmt.Errorf("--control-fd names a descriptor of the caller's")
			}
			return nil
		}
	})
	out, err := os.Create(filepath.Join(f.dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	in, _ := os.Open(os.DevNull)
	defer in.Close()
	fds := []int{int(in.Fd()), int(out.Fd()), int(out.Fd())}

	uc, status, msg := cliCall(t, f.sock, thisProcess(t, "wait-signal", "x y"), fds)
	if status != 101 {
		t.Fatalf("a caller like the server: %d %s", status, msg)
	}
	if _, err := f.c.CreateSession(ctxT(t), client.SessionRequest{}); err != nil {
		t.Errorf("a session while a moat run is served (MaxSessions 1): %v", err)
	}
	fmt.Fprintf(uc, "{\"signal\":%d}\n", syscall.SIGUSR1)
	line, err := bufio.NewReader(uc).ReadString('\n')
	uc.Close()
	var end client.CLIRunEnd
	if err != nil || json.Unmarshal([]byte(line), &end) != nil || end.ExitCode != 7 {
		t.Fatalf("the end: %q %v", line, err)
	}
	c := <-calls
	cwd, _ := os.Getwd()
	if c.inv.Cwd != cwd || len(c.inv.Env) != len(os.Environ()) || c.sig != syscall.SIGUSR1 || len(c.inv.Hide) != 1 || c.inv.Hide[0] != f.sock {
		t.Errorf("the invocation: cwd %s, %d variables, signal %v, hide %v", c.inv.Cwd, len(c.inv.Env), c.sig, c.inv.Hide)
	}
	if b, _ := os.ReadFile(out.Name()); string(b) != "args [\"wait-signal\" \"x y\"]\n" {
		t.Errorf("the output on the caller's descriptor: %q", b)
	}

	// Without the server's proof (a process that may not inspect it):
	// 403, and nothing runs.
	for _, p := range []string{"", "00000000000000000000000000000000"} {
		if _, status, msg := cliCallProof(t, f.sock, thisProcess(t, "--", "true"), fds, p); status != 403 || !strings.Contains(msg, "proof") {
			t.Errorf("proof %q: %d %s, want 403", p, status, msg)
		}
	}

	bad := func(edit func(*client.CLIRunRequest)) client.CLIRunRequest {
		r := thisProcess(t, "--", "true")
		edit(&r)
		return r
	}
	other := 0o077
	if um := syscall.Umask(0); true {
		syscall.Umask(um)
		if um == other {
			other = 0o022
		}
	}
	for _, tc := range []struct {
		name   string
		req    client.CLIRunRequest
		status int
		says   string
	}{
		{"no umask", bad(func(r *client.CLIRunRequest) { r.Umask = nil }), 400, "[umask]"},
		{"relative cwd", bad(func(r *client.CLIRunRequest) { r.Cwd = "work" }), 400, "[cwd]"},
		{"no env", bad(func(r *client.CLIRunRequest) { r.Env = nil }), 400, "[env]"},
		{"NUL in args", bad(func(r *client.CLIRunRequest) { r.Args = []string{"a\x00b"} }), 400, "[args]"},
		{"no rlimits", bad(func(r *client.CLIRunRequest) { r.Rlimits = nil }), 400, "[rlimits]"},
		{"another HOME", bad(func(r *client.CLIRunRequest) { r.Env = append([]string{"HOME=/nonexistent"}, r.Env...) }), 409, "$HOME"},
		{"another proxy", bad(func(r *client.CLIRunRequest) { r.Env = append([]string{"HTTPS_PROXY=http://10.0.0.1:3128"}, r.Env...) }), 409, "$HTTPS_PROXY"},
		{"another umask", bad(func(r *client.CLIRunRequest) { r.Umask = &other }), 409, "umask"},
		{"other limits", bad(func(r *client.CLIRunRequest) { r.Rlimits[unix.RLIMIT_CORE][0]++ }), 409, "resource limit 4"},
		{"short limits", bad(func(r *client.CLIRunRequest) { r.Rlimits = r.Rlimits[:3] }), 409, "rlimits"},
		{"other groups", bad(func(r *client.CLIRunRequest) { r.Groups = append(r.Groups, 65533) }), 409, "groups"},
		{"control fd", bad(func(r *client.CLIRunRequest) { r.Args = []string{"--control-fd", "3"} }), 409, "--control-fd"},
	} {
		if _, status, msg := cliCall(t, f.sock, tc.req, fds); status != tc.status || !strings.Contains(msg, tc.says) {
			t.Errorf("%s: %d %s, want %d naming %s", tc.name, status, msg, tc.status, tc.says)
		}
	}
	select {
	case c := <-calls:
		t.Errorf("a refused request ran: %q", c.inv.Args)
	default:
	}
}
