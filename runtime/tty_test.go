//go:build linux

package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/term"
	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestLaunchTerminalOnStdoutOnly: with the caller's terminal on stdout and
// stderr and a pipe on stdin, the command gets a pty on fds 1 and 2 (the
// terminal's size), stdin stays the pipe, and the enforcer is never handed
// the caller's terminal.
func TestLaunchTerminalOnStdoutOnly(t *testing.T) {
	pol, dir := testPolicy(t)
	master, slave := testutil.OpenPTY(t)
	defer master.Close()
	defer slave.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 21, Col: 77}))
	pr, pw, err := os.Pipe()
	must(err)
	defer pr.Close()
	defer pw.Close()
	for _, tc := range []struct {
		name  string
		stdio [3]*os.File
		mask  uint32
	}{
		{"stdout and stderr", [3]*os.File{pr, slave, slave}, 6},
		{"stderr", [3]*os.File{pr, pw, slave}, 4},
		{"all three", [3]*os.File{slave, slave, slave}, 7},
		{"none", [3]*os.File{pr, pw, pw}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newRun(Request{Policy: pol, Argv: []string{"true"}, Stdin: tc.stdio[0], Stdout: tc.stdio[1], Stderr: tc.stdio[2], StateDir: filepath.Join(dir, ".state")})
			must(err)
			defer r.close()
			l := r.launch(0)
			if tc.mask == 0 {
				if l.Terminal != nil {
					t.Fatalf("a pty without a terminal: %+v", *l.Terminal)
				}
				return
			}
			if l.Terminal == nil || l.Terminal.Mask != tc.mask || l.Terminal.Rows != 21 || l.Terminal.Cols != 77 || l.OnTerminal == nil {
				t.Fatalf("terminal %+v, want mask %b, 21x77", l.Terminal, tc.mask)
			}
			for i, f := range l.Stdio {
				if term.IsTerminal(f) {
					t.Errorf("the enforcer was handed a terminal as descriptor %d", i)
				}
				if tc.mask&(1<<i) == 0 && f != tc.stdio[i] {
					t.Errorf("descriptor %d is not the caller's (not a terminal)", i)
				}
			}
		})
	}
}

// A session relays no terminal: a command given one is refused.
func TestSessionRefusesTerminal(t *testing.T) {
	pol, _ := testPolicy(t)
	s := newTestSession(t, pol)
	master, slave := testutil.OpenPTY(t)
	defer master.Close()
	defer slave.Close()
	for _, c := range []Command{
		{Argv: []string{"true"}, Stdin: slave},
		{Argv: []string{"true"}, Stdout: slave},
		{Argv: []string{"true"}, Stderr: slave},
		{Argv: []string{"true"}, FD3: slave},
	} {
		if _, err := s.Start(t.Context(), c); err == nil || !strings.Contains(err.Error(), "terminal") {
			t.Errorf("a session command with a terminal: %v", err)
		}
	}
	if res, out, err := sessionRun(t, s, Command{Argv: []string{"/bin/sh", "-c", "echo ok"}}); err != nil || res.ExitCode != 0 || out != "ok\n" {
		t.Fatalf("then a command: %v %v %q", err, res, out)
	}
}
