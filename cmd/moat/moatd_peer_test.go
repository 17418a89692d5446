//go:build linux

package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeMoatdEnv names the socket a child of this test binary serves as a
// fake moatd (TestMain).
const fakeMoatdEnv = "MOAT_TEST_FAKE_MOATD"

// fakeMoatd answers moatd's health route on sock and writes every other
// request it is handed (the command a client would have it run) to
// sock+".got": a server that is not root could run it as it pleased.
func fakeMoatd(sock string) {
	l, err := net.Listen("unix", sock)
	if err != nil {
		os.Exit(3)
	}
	os.Chmod(sock, 0o666)
	http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/health" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"status":"ok","version":"fake"}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		os.WriteFile(sock+".got", []byte(r.Method+" "+r.URL.Path+" "+string(body)), 0o644)
		http.Error(w, `{"error":"fake"}`, http.StatusInternalServerError)
	}))
}

// TestDaemonClientRefusesServerNotRoot: moat as a user hands its command
// and descriptors only to a moatd that root serves. A socket in
// $MOAT_DAEMON_SOCKET served by a user (this one, or another) answers the
// health route like moatd; moat must not run through it (and say so), and
// with MOAT_DAEMON=auto run rootless instead. Before the check, moat said
// "running through moatd" and sent the fake server the command.
func TestDaemonClientRefusesServerNotRoot(t *testing.T) {
	bin := moatBin(t)
	var u *daemonUser // nil: this test's own user serves and asks
	if os.Geteuid() == 0 {
		u = lookupDaemonUser(t, "moat-ci", true)
	}
	dir, err := os.MkdirTemp(testDir(), "moatd-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	sock := filepath.Join(dir, "fake.sock")
	// This test binary serves, from a copy the user may run.
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "fake-moatd")
	if err := os.WriteFile(exe, self, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(exe)
	srv.Env = append(os.Environ(), fakeMoatdEnv+"="+sock)
	as := func(c *exec.Cmd) {
		if u != nil {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{uint32(u.gid)}}}
		}
	}
	as(srv)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if i == 500 {
			t.Fatal("the fake moatd did not listen")
		}
		time.Sleep(10 * time.Millisecond)
	}
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	if u != nil {
		os.Chown(work, u.uid, u.gid)
	}
	run := func(mode string) (string, error) {
		cmd := exec.Command(bin, "run", "--", "echo", "hi")
		cmd.Dir, cmd.Env = work, clientEnv(work, "MOAT_DAEMON_SOCKET="+sock, "MOAT_DAEMON="+mode)
		as(cmd)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("required")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(out, "not root: not moatd") {
		t.Errorf("MOAT_DAEMON=required with a server not root: %v %q; want exit 125 saying it is not moatd", err, out)
	}
	out, err = run("auto")
	if err != nil || !strings.Contains(out, "hi") || !strings.Contains(out, "running rootless") || strings.Contains(out, "running through moatd") {
		t.Errorf("MOAT_DAEMON=auto with a server not root: %v %q; want the command run rootless, and said so", err, out)
	}
	if got, err := os.ReadFile(sock + ".got"); err == nil {
		t.Errorf("moat handed the command to a server not root: %s", got)
	}
}
