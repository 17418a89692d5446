//go:build linux

package api

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/shell/api/client"
)

// TestRunAttached: POST /v1/run runs one command with the caller's
// descriptors, in the server's sandbox (a write outside the policy fails
// and is reported), returns its exit status; bad requests get a 4xx naming
// the field, and a caller that never sends its descriptors, or sends the
// wrong number, gets an error line and leaves the server serving.
func TestRunAttached(t *testing.T) {
	f := newFixture(t, nil)
	out, err := os.Create(filepath.Join(f.dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	in, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	outside := filepath.Join(f.dir, "outside")
	env := []string{"PATH=/usr/bin:/bin"}
	end, err := f.c.RunAttached(ctxT(t), client.RunRequest{Argv: []string{"sh", "-c", "pwd; echo x > " + outside + "; exit 4"}, Env: env}, [3]*os.File{in, out, out}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	if end.Event != "exit" || end.ExitCode != 4 || !strings.HasPrefix(string(b), f.work+"\n") {
		t.Errorf("run: %+v, output %q", end, b)
	}
	if _, err := os.Lstat(outside); err == nil {
		t.Errorf("the command wrote %s, outside its policy", outside)
	}
	if !strings.Contains(string(end.Violations), outside) {
		t.Errorf("the refused write is not reported: %s", end.Violations)
	}
	if end, err := f.c.RunAttached(ctxT(t), client.RunRequest{Argv: []string{"no-such-command-moat"}, Env: env}, [3]*os.File{in, out, out}, nil); err != nil || end.Event != "error" || end.ExitCode != 127 {
		t.Errorf("a missing command: %+v, %v; want an error line with 127", end, err)
	}
	for _, c := range []struct {
		req   client.RunRequest
		field string
	}{
		{client.RunRequest{Env: env}, "argv"},
		{client.RunRequest{Argv: []string{""}, Env: env}, "argv"},
		{client.RunRequest{Argv: []string{"true", "a\x00b"}, Env: env}, "argv"},
		{client.RunRequest{Argv: []string{"true"}}, "env"},
		{client.RunRequest{Argv: []string{"true"}, Env: []string{"NOEQUALS"}}, "env"},
		{client.RunRequest{Argv: []string{"true"}, Env: env, TimeoutMS: -1}, "timeout_ms"},
		// 18446744073709552 ms in nanoseconds wraps to 384 µs: it ran
		// with that timeout (found by an attack pass).
		{client.RunRequest{Argv: []string{"true"}, Env: env, TimeoutMS: 18446744073709552}, "timeout_ms"},
		{client.RunRequest{Argv: []string{"true"}, Env: env, Write: []string{"/nonexistent/moat"}}, "write"},
		{client.RunRequest{Argv: []string{"true"}, Env: env, Cwd: "/"}, "cwd"},
	} {
		_, err := f.c.RunAttached(ctxT(t), c.req, [3]*os.File{in, out, out}, nil)
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Field != c.field {
			t.Errorf("%+v: %v; want 400 naming %s", c.req, err, c.field)
		}
	}
	// Without the upgrade: 400 saying how.
	body, _ := json.Marshal(client.RunRequest{Argv: []string{"true"}, Env: env})
	if code, e := f.raw(t, "POST", "/v1/run", body); code != 400 || !strings.Contains(e.Message, "Upgrade") {
		t.Errorf("POST /v1/run without the upgrade: %d %+v", code, e)
	}
	// Upgraded, then no descriptors (a plain byte), or only one: an error
	// line, and the server still serves.
	for _, fds := range [][]int{nil, {int(in.Fd())}} {
		conn, err := net.Dial("unix", f.sock)
		if err != nil {
			t.Fatal(err)
		}
		uc := conn.(*net.UnixConn)
		req := "POST /v1/run HTTP/1.1\r\nHost: moat\r\nContent-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: moat-run\r\n" +
			client.ProofHeader + ": " + serverProof(t) + "\r\nContent-Length: " +
			itoa(len(body)) + "\r\n\r\n" + string(body)
		if _, err := uc.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		uc.SetReadDeadline(time.Now().Add(time.Minute))
		n, _ := uc.Read(buf)
		if !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 101") {
			t.Fatalf("no upgrade: %q", buf[:n])
		}
		var oob []byte
		if fds != nil {
			oob = unixRights(fds...)
		}
		uc.WriteMsgUnix([]byte{0}, oob, nil)
		n, _ = uc.Read(buf)
		var e client.RunEnd
		if json.Unmarshal(buf[:n], &e) != nil || e.Event != "error" || e.ExitCode != 125 || !strings.Contains(e.Error, "three descriptors") {
			t.Errorf("descriptors %v: %q", fds, buf[:n])
		}
		uc.Close()
	}
	if _, err := f.c.Health(ctxT(t)); err != nil {
		t.Errorf("the server stopped answering: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func unixRights(fds ...int) []byte { return syscall.UnixRights(fds...) }
