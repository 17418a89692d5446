//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// moat serve end to end: health, a command, a background command; SIGTERM
// leaves no process and removes the socket. A stale socket is replaced; a
// file that is not a socket is refused and left alone.
func TestServe(t *testing.T) {
	tr := newTree(t)
	root := filepath.Dir(tr.dir)

	notSocket := filepath.Join(root, "not-a-socket")
	os.WriteFile(notSocket, []byte("keep"), 0o600)
	if r := tr.moat(t, "", nil, "serve", "--socket", notSocket, "--settings", tr.settings); r.code != exitMoatError {
		t.Errorf("serve on a regular file: %d %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(notSocket); string(b) != "keep" {
		t.Errorf("serve touched the file in its way: %q", b)
	}

	sock := filepath.Join(root, "api.sock")
	l, err := net.Listen("unix", sock) // a stale socket: nobody will answer
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()

	cmd := exec.Command(moatBin(t), "serve", "--socket", sock, "--settings", tr.settings, "--gate", "off")
	cmd.Dir, cmd.Env = tr.dir, tr.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := client.New(sock)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		h, err := c.Health(ctx)
		if err == nil && h.Status == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("moat serve never answered: %v\n%s", err, stderr.String())
		}
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the socket: %v %v", fi, err)
	}
	s, err := c.CreateSession(ctx, client.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := c.Run(ctx, s.ID, client.CommandRequest{Command: "echo served; pwd"}, nil)
	if err != nil || ev.Output != "served\n"+tr.dir+"\n" {
		t.Fatalf("a command: %+v %v", ev, err)
	}
	marker := testutil.SleepMarker(300)
	if _, err := c.Start(ctx, s.ID, client.CommandRequest{Command: "sleep " + marker}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); len(testutil.Procs("sleep "+marker, os.Getuid())) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the background sleep never ran")
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("moat serve after SIGTERM: %v\n%s", err, stderr.String())
	}
	if pids := testutil.Procs("sleep "+marker, os.Getuid()); len(pids) > 0 {
		t.Errorf("moat serve left processes: %v", pids)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("moat serve left its socket: %v", err)
	}
}
