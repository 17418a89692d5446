//go:build linux

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestDaemonRunTerminalStdoutOnly: moat run through moatd with the
// client's terminal on stdout and stderr but stdin a pipe (`echo | moat
// run -- cmd` in an interactive shell). The command gets a pty of its own on
// fds 1 and 2 (of the client's size), its stdin stays the pipe, its output
// shows on the client's terminal, and it can neither read what the user
// types there nor leave that terminal without ECHO and ICANON or resized.
func TestDaemonRunTerminalStdoutOnly(t *testing.T) {
	d, u1, _, _ := daemonFixture(t)
	master, slave := testutil.OpenPTY(t)
	defer master.Close()
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 101}); err != nil {
		t.Fatal(err)
	}
	// The user typed a line, waiting in the client's terminal.
	if _, err := master.Write([]byte("moatd-typed-secret\n")); err != nil {
		t.Fatal(err)
	}
	script := `cat; test -t 0 || echo stdin-no-tty; test -t 1 && test -t 2 && echo out-and-err-tty; stty size <&1; ` +
		`exec 3>&1; x=$(timeout --foreground 2 head -n1 <&3); echo "read:[$x]"; stty -echo -icanon <&1; stty rows 5 cols 9 <&1; echo done`
	cmd := moatRunAs(t, d, u1, u1.dir, "piped-line\n", nil, "--", "sh", "-c", script)
	cmd.Stdout, cmd.Stderr = slave, slave
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 1
	out := make(chan string, 1)
	go func() {
		var b []byte
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			b = append(b, buf[:n]...)
			if err != nil {
				out <- string(b)
				return
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("moat run: %v", err)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("moat run did not end in 60 s")
	}
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := unix.IoctlGetWinsize(int(slave.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		t.Fatal(err)
	}
	slave.Close() // the master's reader ends
	var got string
	select {
	case got = <-out:
	case <-time.After(10 * time.Second):
		t.Fatal("the client's terminal did not close")
	}
	if strings.Contains(got, "read:[moatd") {
		t.Errorf("ESCAPE: the command read what was typed into the client's terminal: %q", got)
	}
	for _, want := range []string{"piped-line", "stdin-no-tty", "out-and-err-tty", "33 101", "read:[]", "done"} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal shows no %q:\n%q", want, got)
		}
	}
	if tio.Lflag&(unix.ECHO|unix.ICANON) != unix.ECHO|unix.ICANON {
		t.Errorf("the client's terminal was left without ECHO or ICANON: lflag %#x", tio.Lflag)
	}
	if ws.Row != 33 || ws.Col != 101 {
		t.Errorf("the client's terminal was left at %dx%d, was 33x101", ws.Row, ws.Col)
	}
}
