package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"

	"github.com/moat-sandbox/moat/internal/term"
	"golang.org/x/sys/unix"
)

// RunUpgrade is the protocol POST /v1/run switches its connection to: the
// client sends its three descriptors (one SCM_RIGHTS message, one byte of
// data), then signal lines ({"signal":N}); the server sends, when the
// command has a terminal, a RunTerminal line carrying the pty master, and
// one RunEnd line when the command has ended. Closing the connection kills the command.
const RunUpgrade = "moat-run"

// RunAttached runs req in a sandbox of its own with stdio as the command's
// descriptors (passed to the server, which must be on this machine), sends
// the signals that arrive on signals, and returns how the command ended.
// When stdin is a terminal the command gets a pty of its own, whose master
// the server hands back: RunAttached relays it to stdio's terminal (raw
// while the command runs, restored after; SIGWINCH resizes the pty). Cancelling ctx
// closes the connection, which kills the command. Errors the server
// answers before the command starts are *Error.
func (c *Client) RunAttached(ctx context.Context, req RunRequest, stdio [3]*os.File, signals <-chan os.Signal) (RunEnd, error) {
	if c.Socket == "" {
		return RunEnd{}, errors.New("moat api: RunAttached needs the server's unix socket (client.New)")
	}
	conn, err := c.dial(ctx, c.Socket)
	if err != nil {
		return RunEnd{}, err
	}
	uc := conn.(*net.UnixConn)
	defer uc.Close()
	stop := context.AfterFunc(ctx, func() { uc.Close() })
	defer stop()

	body, err := json.Marshal(req)
	if err != nil {
		return RunEnd{}, err
	}
	hr, err := http.NewRequest(http.MethodPost, c.Base+"/v1/run", bytes.NewReader(body))
	if err != nil {
		return RunEnd{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Connection", "Upgrade")
	hr.Header.Set("Upgrade", RunUpgrade)
	if p := Proof(uc); p != "" {
		hr.Header.Set(ProofHeader, p)
	}
	if err := hr.Write(uc); err != nil {
		return RunEnd{}, ctxErr(ctx, err)
	}
	br := bufio.NewReader(uc)
	resp, err := http.ReadResponse(br, hr)
	if err != nil {
		return RunEnd{}, ctxErr(ctx, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		e := &Error{Status: resp.StatusCode}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(b, e) != nil || e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
		return RunEnd{}, e
	}
	fds := []int{int(stdio[0].Fd()), int(stdio[1].Fd()), int(stdio[2].Fd())}
	if _, _, err := uc.WriteMsgUnix([]byte{0}, syscall.UnixRights(fds...), nil); err != nil {
		return RunEnd{}, ctxErr(ctx, fmt.Errorf("pass the descriptors: %w", err))
	}
	var (
		relayMu sync.Mutex
		relay   *term.Relay
	)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case sig, ok := <-signals:
				if !ok {
					return
				}
				s, isSys := sig.(syscall.Signal)
				if !isSys {
					continue
				}
				if s == syscall.SIGWINCH {
					// The pty is ours to resize: the server relays nothing.
					relayMu.Lock()
					if relay != nil {
						relay.Resize()
					}
					relayMu.Unlock()
					continue
				}
				line, _ := json.Marshal(map[string]int{"signal": int(s)})
				if _, err := uc.Write(append(line, '\n')); err != nil {
					return
				}
			}
		}
	}()
	defer func() {
		relayMu.Lock()
		defer relayMu.Unlock()
		if relay != nil {
			relay.Finish() // the command's last output, then the terminal as it was
		}
	}()
	lines := &fdLines{uc: uc, buf: br}
	for {
		line, fds, err := lines.next()
		if err != nil {
			return RunEnd{}, ctxErr(ctx, fmt.Errorf("the server ended the run without saying how: %w", err))
		}
		var end RunEnd
		if err := json.Unmarshal(line, &end); err != nil {
			closeFDs(fds)
			return RunEnd{}, fmt.Errorf("the server's answer: %w", err)
		}
		if end.Event != RunTerminal {
			closeFDs(fds)
			return end, nil
		}
		if len(fds) != 1 || !term.Supported {
			closeFDs(fds)
			return RunEnd{}, fmt.Errorf("the server's terminal line came with %d descriptors, want one", len(fds))
		}
		// The command's pty: relayed here, between it and our terminal.
		relayMu.Lock()
		if relay == nil {
			relay = term.New(stdio)
			relay.Attach(os.NewFile(uintptr(fds[0]), "pty-master"))
		} else {
			closeFDs(fds)
		}
		relayMu.Unlock()
	}
}

// fdLines reads the server's lines and the descriptors that come with
// them (SCM_RIGHTS: the terminal line's pty master).
type fdLines struct {
	uc   *net.UnixConn
	buf  *bufio.Reader // what was read with the HTTP answer
	data []byte
	fds  []int
}

// next returns the next line and the descriptors received with it or
// before it.
func (l *fdLines) next() ([]byte, []int, error) {
	if l.buf != nil {
		// Nothing follows the 101 before our descriptors reach the
		// server, so this holds no descriptor's bytes: take what it has.
		n := l.buf.Buffered()
		b, _ := l.buf.Peek(n)
		l.data = append(l.data, b...)
		l.buf = nil
	}
	for {
		if i := bytes.IndexByte(l.data, '\n'); i >= 0 {
			line := append([]byte(nil), l.data[:i]...)
			l.data = l.data[i+1:]
			fds := l.fds
			l.fds = nil
			return line, fds, nil
		}
		if len(l.data) > 1<<20 {
			return nil, nil, errors.New("a line of over 1 MiB")
		}
		b := make([]byte, 64<<10)
		oob := make([]byte, unix.CmsgSpace(4*4))
		n, oobn, _, _, err := l.uc.ReadMsgUnix(b, oob)
		if oobn > 0 {
			if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
				for _, m := range msgs {
					if got, err := unix.ParseUnixRights(&m); err == nil {
						for _, fd := range got {
							unix.CloseOnExec(fd)
						}
						l.fds = append(l.fds, got...)
					}
				}
			}
		}
		l.data = append(l.data, b[:n]...)
		if err != nil {
			closeFDs(l.fds)
			l.fds = nil
			return nil, nil, err
		}
		if n == 0 {
			closeFDs(l.fds)
			l.fds = nil
			return nil, nil, io.ErrUnexpectedEOF
		}
	}
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
