//go:build linux

package privtests

import (
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A directory handed to the command as a descriptor 0-2 leads, through
// /proc/self/fd/N, to the host's tree on the host's mount, below the
// sandbox's hidden paths: `moat run ... < ~` read ~/.ssh (found by an
// attack pass). moat refuses such a descriptor, naming it; without moat
// the same user reads the file that way.
func TestDirectoryStdioRefused(t *testing.T) {
	f := newFixture(t)
	rel := filepath.Base(f.secret)
	run := func(argv ...string) (int, string) {
		dir, err := os.Open(f.outside)
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdin = f.work, f.env(), dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
	code, out := run(moatBin, "run", "--settings", f.settings, "--", "cat", "/proc/self/fd/0/"+rel)
	if strings.Contains(out, secretText) {
		t.Fatalf("ESCAPE: the denied %s read through a directory on stdin:\n%s", f.secret, out)
	}
	if code != 125 || !strings.Contains(out, "is a directory") {
		t.Errorf("moat must refuse a directory as stdin, naming it (exit %d):\n%s", code, out)
	}
	if _, out := run("cat", "/proc/self/fd/0/"+rel); !strings.Contains(out, secretText) {
		t.Errorf("without moat the user reads %s through the descriptor (or this test cannot fail):\n%s", f.secret, out)
	}
}

// A file handed to the command as a descriptor is reopened through
// /proc/self/fd/N against the host's mount, not the sandbox's view: a
// protected name given on stdin was reopened for writing (`moat run ... <
// .mcp.json`), a denied file given as stdout for reading (`>> secret`;
// found by an attack pass). moat hands the command a pipe instead and
// copies; without moat the same user does both.
func TestStdioFileNotReopened(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	protected := filepath.Join(f.work, ".mcp.json")
	must(t, os.WriteFile(protected, []byte("{}\n"), 0o644))
	run := func(stdin, stdout string, argv ...string) string {
		in, err := os.Open(stdin)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		out, err := os.OpenFile(stdout, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		cmd := exec.Command(argv[0], argv[1:]...)
		var errb bytes.Buffer
		cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = f.work, f.env(), in, out, &errb
		cmd.Run()
		return errb.String()
	}
	write := "echo planted >> /proc/self/fd/0"
	read := "exec 3>&1; dd if=/proc/self/fd/3 iflag=nonblock >&2 2>/dev/null"
	sink := filepath.Join(f.work, "sink")
	must(t, os.WriteFile(sink, nil, 0o644))
	out := run(protected, sink, moatBin, "run", "--settings", f.settings, "--", "sh", "-c", write)
	if b, _ := os.ReadFile(protected); strings.Contains(string(b), "planted") {
		t.Errorf("ESCAPE: %s (protected) written through the descriptor it was given for reading:\n%s", protected, out)
	}
	out = run("/dev/null", f.secret, moatBin, "run", "--settings", f.settings, "--", "sh", "-c", read)
	if strings.Contains(out, secretText) {
		t.Errorf("ESCAPE: %s (denyRead) read through the descriptor it was given for writing:\n%s", f.secret, out)
	}
	// The file is still the command's input and output.
	if r := run(protected, sink, moatBin, "run", "--settings", f.settings, "--", "sh", "-c", "cat; echo more"); r != "" {
		t.Errorf("stdin and stdout as files: %s", r)
	}
	if b, _ := os.ReadFile(sink); string(b) != "{}\nmore\n" {
		t.Errorf("the command's output through the pipe: %q", b)
	}
	run(protected, sink, "sh", "-c", write)
	if b, _ := os.ReadFile(protected); !strings.Contains(string(b), "planted") {
		t.Errorf("without moat the user writes the file through the descriptor (or this test cannot fail): %q", b)
	}
	if out := run("/dev/null", f.secret, "sh", "-c", read); !strings.Contains(out, secretText) {
		t.Errorf("without moat the user reads the file through the descriptor (or this test cannot fail): %q", out)
	}
}

// A device or a named pipe handed to the command names an inode of the
// host's too: as root, `chmod 0600 /proc/self/fd/2` with `2>/dev/null`
// changed the mode of the host's /dev/null for every user (found by an
// attack pass); as a user, the mode of the user's own FIFO. The command
// gets a pipe moat copies instead; without moat the same user changes
// both.
func TestStdioDeviceAndFifoNotReopened(t *testing.T) {
	f := newFixture(t)
	fifo := filepath.Join(f.outside, "fifo")
	must(t, unix.Mkfifo(fifo, 0o644))
	must(t, os.Chmod(fifo, 0o644))
	nodes := map[string]os.FileMode{fifo: 0o644}
	if root() {
		null := filepath.Join(f.outside, "null")
		must(t, unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
		must(t, os.Chmod(null, 0o666))
		nodes[null] = 0o666
	}
	for node, mode := range nodes {
		run := func(argv ...string) string {
			fd, err := os.OpenFile(node, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fd.Close()
			cmd := exec.Command(argv[0], argv[1:]...)
			var out bytes.Buffer
			cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = f.work, f.env(), fd, &out, fd
			cmd.Run()
			return out.String()
		}
		out := run(moatBin, "run", "--settings", f.settings, "--", "sh", "-c", "chmod 0600 /proc/self/fd/0; chmod 0606 /proc/self/fd/2")
		if fi, err := os.Stat(node); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("ESCAPE: the mode of %s changed through the descriptor it was given: %v %v\n%s", node, fi.Mode(), err, out)
		}
		run("sh", "-c", "chmod 0600 /proc/self/fd/0")
		if fi, err := os.Stat(node); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("without moat the user changes %s through the descriptor (or this test cannot fail): %v %v", node, fi.Mode(), err)
		}
	}
}

// A socket of the caller's handed as a descriptor 0-2 is the host
// network's: a datagram socket as stdout let the command send to the
// host's loopback (and to unix datagram sockets), past the network
// namespace and, as root, the eBPF layer (which judges the cgroup a socket
// was made in); a listening socket served on the host's port (found by an
// attack pass). moat hands over only a connected stream socket, copies any
// other through a pipe and refuses a listening one; without moat the same
// datagram arrives.
func TestStdioSocketNotHandedOver(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	host, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	received := func() bool {
		host.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
		buf := make([]byte, 64)
		n, _, err := host.ReadFrom(buf)
		return err == nil && strings.Contains(string(buf[:n]), "ESCAPED-UDP")
	}
	run := func(stdout *os.File, argv ...string) (int, string) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdout = f.work, f.env(), stdout
		var eb bytes.Buffer
		cmd.Stderr = &eb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), eb.String()
		}
		return 0, eb.String()
	}
	udp := func() *os.File {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fl, err := c.(*net.UDPConn).File()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fl.Close() })
		return fl
	}
	to := host.LocalAddr().String()
	run(udp(), moatBin, "run", "--settings", f.settings, "--", self, "sendto-fd", "1", to)
	if received() {
		t.Errorf("ESCAPE: the command sent to the host's %s on a UDP socket handed over as its stdout", to)
	}
	run(udp(), self, "sendto-fd", "1", to)
	if !received() {
		t.Errorf("without moat the datagram does not arrive (the test cannot fail)")
	}
	// A connected TCP socket: connect(AF_UNSPEC) disconnects it, and it
	// connected anew to the host's loopback (found by an attack pass).
	secret, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer secret.Close()
	agent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	go func() {
		for {
			c, err := agent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	reached := func() bool {
		secret.(*net.TCPListener).SetDeadline(time.Now().Add(1500 * time.Millisecond))
		c, err := secret.Accept()
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	tcp := func() *os.File {
		c, err := net.Dial("tcp", agent.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fl, err := c.(*net.TCPConn).File()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fl.Close() })
		return fl
	}
	run(tcp(), moatBin, "run", "--settings", f.settings, "--", self, "reconnect-fd", "1", secret.Addr().String())
	if reached() {
		t.Errorf("ESCAPE: the command reconnected a TCP socket handed over as its stdout to the host's %s", secret.Addr())
	}
	run(tcp(), self, "reconnect-fd", "1", secret.Addr().String())
	if !reached() {
		t.Errorf("without moat the socket does not reconnect (the test cannot fail)")
	}
	// A listening socket as stdin is refused, naming it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lf, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	cmd := exec.Command(moatBin, "run", "--settings", f.settings, "--", "true")
	cmd.Dir, cmd.Env, cmd.Stdin = f.work, f.env(), lf
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(string(out), "listening socket") {
		t.Errorf("a listening socket as stdin: %v\n%s", err, out)
	}
}

// A pipe of the caller's is not handed over: reopened through
// /proc/self/fd/0 for writing it put a line into the host shell's script
// it was reading (cat script | bash ran it outside the sandbox), and
// /proc/self/fd/1 for reading took what another host process wrote for
// the real reader (found by an attack pass). The command gets moat's pipe;
// without moat the line lands in the caller's pipe.
func TestStdioPipeOneWay(t *testing.T) {
	f := newFixture(t)
	inject := func(argv ...string) string {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		w.Write([]byte("job\n"))
		w.Close()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdin = f.work, f.env(), r
		cmd.Run()
		r.SetReadDeadline(time.Now().Add(2 * time.Second))
		rest, _ := io.ReadAll(r)
		return string(rest)
	}
	script := "echo INJECTED > /proc/self/fd/0"
	if rest := inject(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c", script); strings.Contains(rest, "INJECTED") {
		t.Errorf("ESCAPE: the command wrote into the caller's stdin pipe: %q", rest)
	}
	if rest := inject("/bin/sh", "-c", script); !strings.Contains(rest, "INJECTED") {
		t.Errorf("without moat the line does not land in the pipe (the test cannot fail): %q", rest)
	}
}

// moat run -n gives the command /dev/null on stdin (ssh -n): moat reads a
// pipe on its stdin ahead of the command, so a while-read loop of moat runs
// needs it to see every line.
func TestRunNoStdin(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	loop := func(flag string) string {
		cmd := exec.Command("/bin/sh", "-c", `while read x; do "$0" run `+flag+` --settings "$1" -- /bin/sh -c 'read y && echo "command read $y"'; echo "loop read $x"; done`, moatBin, f.settings)
		cmd.Dir, cmd.Env, cmd.Stdin = f.work, f.env(), strings.NewReader("a\nb\nc\n")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := loop("-n"); strings.Count(out, "loop read") != 3 || strings.Contains(out, "command read") {
		t.Errorf("with -n the loop must read every line and the command none:\n%s", out)
	}
	if out := loop(""); strings.Count(out, "loop read") == 3 {
		t.Errorf("without -n moat reads stdin ahead (this test shows what -n is for):\n%s", out)
	}
}
