package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// silentOrigin accepts connections and never answers them: with
// closeOnEOF it closes one when its client has sent EOF, else it holds it
// until the test ends (an upstream that keeps a tunnel open).
func silentOrigin(t *testing.T, closeOnEOF bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if closeOnEOF {
				go func() { io.Copy(io.Discard, c); c.Close() }()
				continue
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range held {
			c.Close()
		}
	})
	return l.Addr().String()
}

// openTunnel CONNECTs through the proxy at addr to hostport and returns
// the open tunnel.
func openTunnel(t *testing.T, addr, hostport string) net.Conn {
	t.Helper()
	c := dialProxy(t, addr)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %v %v", hostport, resp, err)
	}
	return c
}

// TestCloseEndsHalfClosedTunnel: a tunnel whose client sent EOF (a
// command that exited) and whose upstream stays silent waited on the
// upstream for good: Close never returned, and in moatd neither did the
// sandbox's run, its descriptors and its connection slots (attack pass
// 69). Close ends it.
func TestCloseEndsHalfClosedTunnel(t *testing.T) {
	origin := silentOrigin(t, false)
	_, port, _ := net.SplitHostPort(origin)
	srv := &Server{Rules: rulesOf(t, []string{"localhost"}, nil)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	c := openTunnel(t, l.Addr().String(), "localhost:"+port)
	c.(*net.TCPConn).CloseWrite()
	time.Sleep(100 * time.Millisecond) // the EOF reaches the proxy
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return in 5 s: a half-closed tunnel to a silent upstream holds the Server")
	}
	c.Close()
}

// TestShareBoundsServersTogether: the Servers of one Share (moatd: one
// user's sandboxes) serve at most its size of connections together; a
// Server of another Share is served meanwhile. Before, one user's
// sandboxes took every connection slot of moatd's process with tunnels
// held open, and every other user's proxy waited for good (attack pass 69).
func TestShareBoundsServersTogether(t *testing.T) {
	origin := silentOrigin(t, true)
	_, port, _ := net.SplitHostPort(origin)
	target := "localhost:" + port
	mine, theirs := NewShare(3), NewShare(3)
	serve := func(sh *Share) string {
		srv := &Server{Rules: rulesOf(t, []string{"localhost"}, nil), Share: sh}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return l.Addr().String()
	}
	a1, a2, b := serve(mine), serve(mine), serve(theirs)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	held = append(held, openTunnel(t, a1, target), openTunnel(t, a2, target), openTunnel(t, a1, target))
	// A fourth of the same share waits: its CONNECT gets no answer.
	c := dialProxy(t, a2)
	held = append(held, c)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); err == nil || n > 0 {
		t.Fatalf("a fourth connection of a share of 3 was served")
	}
	// Another share is served.
	held = append(held, openTunnel(t, b, target))
	// One of the share's ends: the waiting one is served.
	held[0].Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the waiting connection was not served once a slot freed: %v %v", resp, err)
	}
}

// TestUserShareSize: a user's share is a quarter of the process's slots
// (at least 16), one per uid.
func TestUserShareSize(t *testing.T) {
	if UserShare(4242) != UserShare(4242) || UserShare(4242) == UserShare(4243) {
		t.Fatal("UserShare is not one share per uid")
	}
	if got, want := cap(UserShare(4242).slots), max(cap(processSlots())/4, 16); got != want {
		t.Fatalf("share of %d slots, want %d", got, want)
	}
}
