//go:build linux

package privtests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ttySecrets are the lines the tests type into the caller's terminal before
// the command starts: one for each read the command tries (fd 1, then 2).
const ttySecrets = "tty-secret-one\ntty-secret-two\n"

func init() {
	// tty-steal: with the caller's terminal on stdout or stderr only
	// (stdin a pipe), read what the user types from fd 1 and fd 2 (a
	// terminal is opened read-write), turn off ECHO and ICANON on each of
	// them that is a terminal and change its window size. It escapes when it read a typed line; the
	// test checks the caller's terminal for the rest.
	attacks["tty-steal"] = func([]string) (string, error) {
		in, _ := io.ReadAll(os.Stdin)
		fmt.Printf("stdin=%s\n", strings.TrimSpace(string(in)))
		var stolen, did []string
		for _, fd := range []int{1, 2} {
			_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
			fmt.Printf("fd%d-terminal=%v\n", fd, err == nil)
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(fds, 2000); n <= 0 || fds[0].Revents&unix.POLLIN == 0 {
				fmt.Printf("fd%d: nothing typed (%v, revents %#x)\n", fd, err, fds[0].Revents)
				continue
			}
			buf := make([]byte, 256)
			n, err := unix.Read(fd, buf)
			if n > 0 && strings.Contains(string(buf[:n]), "tty-secret") {
				stolen = append(stolen, fmt.Sprintf("STOLE fd%d %q", fd, strings.TrimSpace(string(buf[:n]))))
			} else {
				fmt.Printf("fd%d: read %d bytes (%v)\n", fd, n, err)
			}
		}
		for _, fd := range []int{1, 2} {
			if tio, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
				tio.Lflag &^= unix.ECHO | unix.ICANON
				if err := unix.IoctlSetTermios(fd, unix.TCSETS, tio); err == nil {
					did = append(did, fmt.Sprintf("-echo -icanon on fd %d", fd))
				}
				if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 7, Col: 13}); err == nil {
					did = append(did, fmt.Sprintf("TIOCSWINSZ 7x13 on fd %d", fd))
				}
			}
		}
		fmt.Fprintln(os.Stderr, "tty-helper-stderr")
		fmt.Printf("did: %s\ntty-helper-done\n", strings.Join(did, ", "))
		if len(stolen) > 0 {
			return strings.Join(stolen, "; "), nil
		}
		return "", fmt.Errorf("read nothing typed into the caller's terminal")
	}
}

// callerTerminal is a pty the test holds as the caller's terminal: its
// size, and what shows on it.
type callerTerminal struct {
	master, slave *os.File
	rows, cols    uint16
}

func newCallerTerminal(t *testing.T) *callerTerminal {
	t.Helper()
	master, slave := openPTY(t)
	t.Cleanup(func() { master.Close(); slave.Close() })
	ct := &callerTerminal{master: master, slave: slave, rows: 41, cols: 123}
	must(t, unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: ct.rows, Col: ct.cols}))
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	must(t, err)
	if tio.Lflag&(unix.ECHO|unix.ICANON) != unix.ECHO|unix.ICANON {
		t.Fatalf("a new pty without ECHO and ICANON: lflag %#x", tio.Lflag)
	}
	return ct
}

// run runs cmd with the terminal as its stdout and stderr (its controlling
// terminal, as in an interactive shell's `echo | cmd`), stdin a pipe, after
// the user typed ttySecrets. It returns what showed on the terminal; the
// slave stays open, to be looked at.
func (ct *callerTerminal) run(t *testing.T, cmd *exec.Cmd, stdin string) (string, int) {
	t.Helper()
	if _, err := ct.master.Write([]byte(ttySecrets)); err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = strings.NewReader(stdin)
	if cmd.Stdout == nil {
		cmd.Stdout = ct.slave
	}
	cmd.Stderr = ct.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 2}
	// The master is read with poll: the slave stays open (to be looked at
	// afterwards), so a read would never end.
	got := make(chan string, 1)
	stop := make(chan struct{})
	go func() {
		var all []byte
		buf := make([]byte, 4096)
		fd := int(ct.master.Fd())
		for stopping := false; ; {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, _ := unix.Poll(fds, 100)
			if n > 0 && fds[0].Revents&unix.POLLIN != 0 {
				if m, err := unix.Read(fd, buf); m > 0 {
					all = append(all, buf[:m]...)
					continue
				} else if err != nil && err != unix.EINTR && err != unix.EAGAIN {
					break
				}
			}
			if stopping {
				break
			}
			select {
			case <-stop:
				stopping = true // one more poll: what is left
			default:
			}
		}
		got <- string(all)
	}()
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		err = <-done
		t.Errorf("%s ran for 90 s", cmd.Path)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s: %v", cmd.Path, err)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	return <-got, code
}

// changes reports how the caller's terminal differs from how it was
// before: ECHO and ICANON, and its size.
func (ct *callerTerminal) changes(t *testing.T) []string {
	t.Helper()
	var ch []string
	tio, err := unix.IoctlGetTermios(int(ct.slave.Fd()), unix.TCGETS)
	must(t, err)
	if tio.Lflag&unix.ECHO == 0 {
		ch = append(ch, "ECHO off")
	}
	if tio.Lflag&unix.ICANON == 0 {
		ch = append(ch, "ICANON off")
	}
	ws, err := unix.IoctlGetWinsize(int(ct.slave.Fd()), unix.TIOCGWINSZ)
	must(t, err)
	if ws.Row != ct.rows || ws.Col != ct.cols {
		ch = append(ch, fmt.Sprintf("size %dx%d, was %dx%d", ws.Row, ws.Col, ct.rows, ct.cols))
	}
	return ch
}

// TestTTYOnStdoutOnly: with the caller's terminal on stdout and stderr but
// not on stdin (`echo | moat run -- cmd` in an interactive shell), the
// command gets a pty of its own on fds 1 and 2, not the caller's terminal:
// it cannot read what the user types (a terminal is opened read-write),
// nor leave the caller's terminal without ECHO and ICANON or at another
// size. Its stdin stays the pipe and its output still shows on the
// caller's terminal.
func TestTTYOnStdoutOnly(t *testing.T) {
	f := newFixture(t)

	t.Run("without moat", func(t *testing.T) {
		ct := newCallerTerminal(t)
		cmd := exec.Command(self, "tty-steal")
		cmd.Dir, cmd.Env = f.work, f.env()
		out, code := ct.run(t, cmd, "piped-input\n")
		if code != 0 || !strings.Contains(out, "ESCAPED: STOLE fd1") || !strings.Contains(out, "STOLE fd2") {
			t.Errorf("the attack must read the typed lines without moat (exit %d): %q", code, out)
		}
		if ch := ct.changes(t); len(ch) != 3 {
			t.Errorf("the attack must change the terminal without moat (ECHO, ICANON, size): got %v\n%q", ch, out)
		}
	})

	t.Run("moat run", func(t *testing.T) {
		coldRunsOnly(t) // the session's case is its own, below
		ct := newCallerTerminal(t)
		cmd := exec.Command(moatBin, "run", "--settings", f.settings, "--", self, "tty-steal")
		cmd.Dir, cmd.Env = f.work, f.env()
		out, code := ct.run(t, cmd, "piped-input\n")
		if strings.Contains(out, "STOLE") || strings.Contains(out, "ESCAPED") {
			t.Errorf("ESCAPE under moat: the command read what was typed into the caller's terminal: %q", out)
		}
		for _, want := range []string{"stdin=piped-input", "fd1-terminal=true", "fd2-terminal=true", "tty-helper-stderr", "tty-helper-done", "blocked:"} {
			if !strings.Contains(out, want) {
				t.Errorf("the caller's terminal shows no %q (exit %d): %q", want, code, out)
			}
		}
		if ch := ct.changes(t); len(ch) != 0 {
			t.Errorf("the command left the caller's terminal changed: %v\n%q", ch, out)
		}
	})

	// Only stderr is the terminal (`moat run -- cmd <file >file` in an
	// interactive shell): the same, and stdout stays the file.
	t.Run("moat run, stderr only", func(t *testing.T) {
		coldRunsOnly(t) // the session's case is its own, below
		ct := newCallerTerminal(t)
		outFile, err := os.CreateTemp(f.root, "stdout-")
		must(t, err)
		defer outFile.Close()
		cmd := exec.Command(moatBin, "run", "--settings", f.settings, "--", self, "tty-steal")
		cmd.Dir, cmd.Env = f.work, f.env()
		cmd.Stdout = outFile
		out, _ := ct.run(t, cmd, "piped-input\n")
		stdout := readFile(t, outFile.Name())
		if strings.Contains(out+stdout, "STOLE") || strings.Contains(out+stdout, "ESCAPED") {
			t.Errorf("ESCAPE under moat: the command read what was typed into the caller's terminal: %q\n%q", out, stdout)
		}
		if !strings.Contains(out, "tty-helper-stderr") {
			t.Errorf("the caller's terminal shows no stderr: %q", out)
		}
		for _, want := range []string{"stdin=piped-input", "fd1-terminal=false", "fd2-terminal=true", "tty-helper-done"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout (a file) has no %q: %q", want, stdout)
			}
		}
		if strings.Contains(out, "tty-helper-done") {
			t.Errorf("stdout reached the terminal, not its file: %q", out)
		}
		if ch := ct.changes(t); len(ch) != 0 {
			t.Errorf("the command left the caller's terminal changed: %v\n%q\n%q", ch, out, stdout)
		}
	})

	// A session has no pty: its commands get pipes, never the terminal of
	// moat session itself.
	t.Run("moat session", func(t *testing.T) {
		if !viaSession() {
			t.Skip("MOAT_VIA=session runs it (the attack helper is then beside moat's binary, where a session finds it)")
		}
		ct := newCallerTerminal(t)
		req, _ := json.Marshal(map[string]any{"id": "attack", "op": "run", "command": "'" + self + "' tty-steal", "auto_background_ms": -1})
		cmd := exec.Command(moatBin, "session", "--jsonl", "--gate", "off", "--settings", f.settings)
		cmd.Dir, cmd.Env = f.work, f.env()
		var jsonl bytes.Buffer
		cmd.Stdout = &jsonl
		out, code := ct.run(t, cmd, string(req)+"\n")
		all := out + jsonl.String()
		if code != 0 || !strings.Contains(all, "tty-helper-done") {
			t.Fatalf("moat session (exit %d) did not run the attack: %q", code, all)
		}
		if strings.Contains(all, "STOLE") || strings.Contains(all, "fd1-terminal=true") || strings.Contains(all, "fd2-terminal=true") {
			t.Errorf("ESCAPE under moat session: the command had the caller's terminal: %q", all)
		}
		if ch := ct.changes(t); len(ch) != 0 {
			t.Errorf("the command left the caller's terminal changed: %v\n%q", ch, all)
		}
	})
}
