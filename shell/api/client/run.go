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
	"syscall"
)

// RunUpgrade is the protocol POST /v1/run switches its connection to: the
// client sends its three descriptors (one SCM_RIGHTS message, one byte of
// data), then signal lines ({"signal":N}); the server sends one RunEnd line
// when the command has ended. Closing the connection kills the command.
const RunUpgrade = "moat-run"

// RunAttached runs req in a sandbox of its own with stdio as the command's
// descriptors (passed to the server, which must be on this machine), sends
// the signals that arrive on signals (SIGWINCH makes the server copy the
// terminal's size), and returns how the command ended. Cancelling ctx
// closes the connection, which kills the command. Errors the server
// answers before the command starts are *Error.
func (c *Client) RunAttached(ctx context.Context, req RunRequest, stdio [3]*os.File, signals <-chan os.Signal) (RunEnd, error) {
	if c.Socket == "" {
		return RunEnd{}, errors.New("moat api: RunAttached needs the server's unix socket (client.New)")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
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
				line, _ := json.Marshal(map[string]int{"signal": int(s)})
				if _, err := uc.Write(append(line, '\n')); err != nil {
					return
				}
			}
		}
	}()
	line, err := br.ReadBytes('\n')
	if err != nil {
		return RunEnd{}, ctxErr(ctx, fmt.Errorf("the server ended the run without saying how: %w", err))
	}
	var end RunEnd
	if err := json.Unmarshal(line, &end); err != nil {
		return RunEnd{}, fmt.Errorf("the server's answer: %w", err)
	}
	return end, nil
}

func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
