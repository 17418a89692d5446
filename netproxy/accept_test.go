package netproxy

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

// failingOnce is a listener whose first Accept fails with err, as accept(2)
// does for a connection that failed before it was taken.
type failingOnce struct {
	net.Listener
	err    error
	failed bool
}

func (l *failingOnce) Accept() (net.Conn, error) {
	if !l.failed {
		l.failed = true
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", l.err)}
	}
	return l.Listener.Accept()
}

// The network errors accept(2) passes on from a connection that failed
// before it was taken (its manual: retry them like EAGAIN) do not end
// Serve. It returned on them and closed the listener: the sandbox's only
// route out was refused for the rest of its run, and nothing said so.
func TestServeSurvivesPendingNetworkErrors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EPROTO, syscall.ENETDOWN, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EOPNOTSUPP} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &Server{Rules: rulesOf(t, []string{"localhost"}, nil)}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(&failingOnce{Listener: l, err: errno}) }()
		c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
		if err == nil {
			c.SetDeadline(time.Now().Add(10 * time.Second))
			_, err = c.Write([]byte("GET http://denied.example/ HTTP/1.1\r\nHost: denied.example\r\n\r\n"))
			if err == nil {
				var resp *http.Response
				if resp, err = http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					resp.Body.Close()
				}
			}
			c.Close()
		}
		select {
		case e := <-served:
			t.Errorf("%v: Serve ended on it (%v), closing the listener", errno, e)
		default:
			if err != nil {
				t.Errorf("%v: the next connection was not served: %v", errno, err)
			}
		}
		srv.Close()
	}
}
