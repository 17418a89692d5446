//go:build linux || darwin

package term

import (
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
)

// Supported is true where terminals are relayed.
const Supported = true

func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

func Size(f *os.File) (rows, cols uint16) {
	if f == nil {
		return 0, 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return ws.Row, ws.Col
}

// Relay relays between the caller's terminal and the sandbox's pty (as
// docker run -t does): the caller's terminal goes raw, bytes flow both ways,
// and the command never holds a descriptor of the caller's terminal.
type Relay struct {
	in, out *os.File
	saved   *unix.Termios

	mu     sync.Mutex
	master *os.File
	stopR  *os.File // a pipe: closing stopW ends the input copy
	stopW  *os.File
	outEnd chan struct{}
}

func New(in, out *os.File) *Relay {
	if !IsTerminal(out) {
		out = in
	}
	t := &Relay{in: in, out: out}
	if st, err := unix.IoctlGetTermios(int(in.Fd()), ioctlGetTermios); err == nil {
		t.saved = st
		raw := *st
		raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
		raw.Oflag &^= unix.OPOST
		raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		raw.Cflag &^= unix.CSIZE | unix.PARENB
		raw.Cflag |= unix.CS8
		raw.Cc[unix.VMIN] = 1
		raw.Cc[unix.VTIME] = 0
		_ = unix.IoctlSetTermios(int(in.Fd()), ioctlSetTermios, &raw)
	}
	return t
}

// Attach starts relaying to and from the pty master.
func (t *Relay) Attach(master *os.File) {
	t.mu.Lock()
	t.master = master
	t.outEnd = make(chan struct{})
	if r, w, err := os.Pipe(); err == nil {
		t.stopR, t.stopW = r, w
	}
	t.mu.Unlock()
	t.Resize()
	go func() {
		defer close(t.outEnd)
		_, _ = io.Copy(t.out, master) // ends with EIO once every slave fd is closed
	}()
	go t.copyInput()
}

// copyInput copies the caller's terminal to the pty until stopped, polling
// so that it never steals a keystroke after the command has ended.
func (t *Relay) copyInput() {
	if t.stopR == nil {
		return
	}
	defer t.stopR.Close()
	buf := make([]byte, 32*1024)
	in := int(t.in.Fd())
	for {
		fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}, {Fd: int32(t.stopR.Fd()), Events: unix.POLLIN}}
		if _, err := sys.RetryValue(func() (int, error) { return unix.Poll(fds, -1) }); err != nil {
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) == 0 {
			continue
		}
		n, err := sys.RetryValue(func() (int, error) { return unix.Read(in, buf) })
		if err == unix.EAGAIN {
			continue
		}
		if n <= 0 || err != nil {
			return
		}
		if _, err := t.master.Write(buf[:n]); err != nil {
			return
		}
	}
}

// Resize copies the caller's window size to the pty (the kernel then sends
// SIGWINCH to the command's foreground process group).
func (t *Relay) Resize() {
	t.mu.Lock()
	m := t.master
	t.mu.Unlock()
	if m == nil {
		return
	}
	if ws, err := unix.IoctlGetWinsize(int(t.in.Fd()), unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(int(m.Fd()), unix.TIOCSWINSZ, ws)
	}
}

// Finish drains the command's output, stops the relay and restores the
// caller's terminal.
func (t *Relay) Finish() {
	t.mu.Lock()
	m, end := t.master, t.outEnd
	t.mu.Unlock()
	if end != nil {
		select {
		case <-end:
		case <-time.After(2 * time.Second):
		}
	}
	if t.stopW != nil {
		t.stopW.Close()
	}
	if m != nil {
		m.Close()
	}
	if t.saved != nil {
		_ = unix.IoctlSetTermios(int(t.in.Fd()), ioctlSetTermios, t.saved)
	}
}
