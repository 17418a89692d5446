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
// docker run -t does): the command never holds a descriptor of the caller's
// terminal. When stdin is a terminal it goes raw and what is typed reaches
// the command; when only stdout or stderr is one, the relay carries the
// command's output alone: it never reads the caller's terminal and leaves
// its modes as they are.
type Relay struct {
	in    *os.File // the caller's terminal on stdin, or nil: no input relayed
	out   *os.File // where the pty's output goes
	size  *os.File // the terminal whose window size the pty follows
	saved *unix.Termios

	mu     sync.Mutex
	master *os.File
	stopR  *os.File // a pipe: closing stopW ends the input copy
	stopW  *os.File
	outEnd chan struct{}
}

// Mask says which of stdio are terminals (bit i for descriptor i): the
// descriptors that get the command's pty in their place, none if 0.
func Mask(stdio [3]*os.File) uint32 {
	var m uint32
	for i, f := range stdio {
		if IsTerminal(f) {
			m |= 1 << i
		}
	}
	return m
}

// WindowSize is the size of the first terminal among stdio.
func WindowSize(stdio [3]*os.File) (rows, cols uint16) {
	for _, f := range stdio {
		if IsTerminal(f) {
			return Size(f)
		}
	}
	return 0, 0
}

// New relays for a command whose descriptors were stdio (Mask names the
// terminals among them, at least one).
func New(stdio [3]*os.File) *Relay {
	t := &Relay{}
	for _, f := range stdio {
		if IsTerminal(f) {
			t.size = f
			break
		}
	}
	for _, i := range []int{1, 2, 0} {
		if IsTerminal(stdio[i]) {
			t.out = stdio[i]
			break
		}
	}
	if !IsTerminal(stdio[0]) {
		return t
	}
	in := stdio[0]
	t.in = in
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
	if t.in != nil {
		if r, w, err := os.Pipe(); err == nil {
			t.stopR, t.stopW = r, w
		}
	}
	t.mu.Unlock()
	if t.in == nil {
		t.outputAsIs(master)
	}
	t.Resize()
	go func() {
		defer close(t.outEnd)
		if t.out == nil {
			_, _ = io.Copy(io.Discard, master)
			return
		}
		_, _ = io.Copy(t.out, master) // ends with EIO once every slave fd is closed
	}()
	go t.copyInput()
}

// outputAsIs turns off the pty's output processing when the caller's
// terminal is not raw (stdin is no terminal, so it keeps its modes): the
// caller's terminal processes the command's output once, as it would have
// without moat (not "\n" made "\r\n" by the pty and "\r\r\n" by the
// caller's terminal). A termios request on the master is the slave's.
func (t *Relay) outputAsIs(master *os.File) {
	st, err := unix.IoctlGetTermios(int(master.Fd()), ioctlGetTermios)
	if err != nil || st.Oflag&unix.OPOST == 0 {
		return
	}
	st.Oflag &^= unix.OPOST
	_ = unix.IoctlSetTermios(int(master.Fd()), ioctlSetTermios, st)
}

// copyInput copies the caller's terminal to the pty until stopped, polling
// so that it never steals a keystroke after the command has ended. Without
// a terminal on stdin it reads nothing.
func (t *Relay) copyInput() {
	if t.in == nil || t.stopR == nil {
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
	if m == nil || t.size == nil {
		return
	}
	if ws, err := unix.IoctlGetWinsize(int(t.size.Fd()), unix.TIOCGWINSZ); err == nil {
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
	if t.saved != nil && t.in != nil {
		_ = unix.IoctlSetTermios(int(t.in.Fd()), ioctlSetTermios, t.saved)
	}
}
