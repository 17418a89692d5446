package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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
	a1, a2, b := serveShared(t, mine), serveShared(t, mine), serveShared(t, theirs)
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
// (at least the pool's floor), one per uid.
func TestUserShareSize(t *testing.T) {
	if UserShare(4242) != UserShare(4242) || UserShare(4242) == UserShare(4243) {
		t.Fatal("UserShare is not one share per uid")
	}
	p := processPool()
	if got, want := UserShare(4242).Size(), max(p.size/4, p.floor); got != want {
		t.Fatalf("share of %d slots, want %d", got, want)
	}
}

// serveShared starts a Server of sh that allows localhost and returns
// its address.
func serveShared(t *testing.T, sh *Share) string {
	t.Helper()
	srv := &Server{Rules: rulesOf(t, []string{"localhost"}, nil), Share: sh}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// TestIdleListenersTakeNoSlot: a Server took a slot of its Share (and of
// the process) before it accepted a connection, so each listener of a run
// that opened none held one: under moatd, two for each idle run of the
// user's, and a run of the user's with a connection to make waited for
// good once the user's idle runs held its share (attack pass 72). The
// slot is now taken for an accepted connection.
func TestIdleListenersTakeNoSlot(t *testing.T) {
	origin := silentOrigin(t, true)
	_, port, _ := net.SplitHostPort(origin)
	sh := NewShare(2)
	serveShared(t, sh)
	serveShared(t, sh)
	time.Sleep(200 * time.Millisecond) // both wait in Accept
	busy := serveShared(t, sh)
	done := make(chan net.Conn, 1)
	go func() {
		c := dialProxy(t, busy)
		fmt.Fprintf(c, "CONNECT localhost:%s HTTP/1.1\r\nHost: x\r\n\r\n", port)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != 200 {
			c.Close()
			c = nil
		}
		done <- c
	}()
	if c := <-done; c == nil {
		t.Fatal("a connection of a share of 2 was not served beside two idle listeners of the share: they hold its slots")
	} else {
		c.Close()
	}
}

// TestNoSlotAnswered: a connection that gets no slot of its Share is
// answered, HTTP 503 with X-Proxy-Error: no-connection-slot, or SOCKS5
// general failure, within a few seconds. It waited with no answer for as
// long as the share's connections were held, and the command's client
// hung (attack pass 72).
func TestNoSlotAnswered(t *testing.T) {
	origin := silentOrigin(t, false)
	_, port, _ := net.SplitHostPort(origin)
	sh := NewShare(1)
	addr := serveShared(t, sh)
	held := openTunnel(t, addr, "localhost:"+port)
	defer held.Close()

	start := time.Now()
	c := dialProxy(t, addr)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT localhost:%s HTTP/1.1\r\nHost: x\r\n\r\n", port)
	c.SetReadDeadline(time.Now().Add(SlotWait + 5*time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("a CONNECT with no slot left got no answer in %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Proxy-Error") != "no-connection-slot" {
		t.Fatalf("a CONNECT with no slot left: %s %q", resp.Status, resp.Header.Get("X-Proxy-Error"))
	}
	t.Logf("HTTP refused after %v", time.Since(start).Round(time.Millisecond))

	// The listener has just refused one: the next is refused at once.
	start = time.Now()
	s := dialProxy(t, addr)
	defer s.Close()
	s.Write([]byte{socksVersion5, 1, socksMethodNone})
	s.SetReadDeadline(time.Now().Add(2 * time.Second))
	var b [12]byte
	if _, err := io.ReadFull(s, b[:2]); err != nil || b[1] != socksMethodNone {
		t.Fatalf("SOCKS5 greeting with no slot left: %x %v", b[:2], err)
	}
	s.Write([]byte{socksVersion5, socksCmdConnect, 0, socksAtypIPv4, 127, 0, 0, 1, 0, 80})
	if _, err := io.ReadFull(s, b[:10]); err != nil || b[1] != socksGeneralFailure {
		t.Fatalf("SOCKS5 CONNECT with no slot left: %x %v", b[:10], err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the second refusal took %v: the listener waited again", took)
	}
}

// TestReserveKeptForFewConnections: four shares of a quarter of the
// process's slots each took every slot (moatd: four users' tunnels), and
// a fifth user's proxy answered nothing (attack pass 72). The last
// quarter of the slots is kept for shares holding fewer than the floor:
// the four get three quarters and the floor, a fifth and a sixth get the
// floor, and every slot is taken only by at least reserve/floor shares.
func TestReserveKeptForFewConnections(t *testing.T) {
	for _, size := range []int{16, 64, 384, 2244} {
		p := newSlotPool(size)
		var big []*Share
		for range 4 {
			sh := NewShare(size / 4)
			big = append(big, sh)
			for {
				if ok, _ := p.take(sh); !ok {
					break
				}
			}
		}
		held := 0
		for _, sh := range big {
			held += sh.held
		}
		if held > size-p.reserve+p.floor*4 {
			t.Errorf("size %d: four quarters hold %d, more than what the reserve leaves", size, held)
		}
		for i := range 2 {
			sh := NewShare(size / 4)
			for {
				if ok, _ := p.take(sh); !ok {
					break
				}
			}
			if sh.held == 0 {
				t.Errorf("size %d: new share %d got no slot beside four full quarters", size, i)
			}
		}
		// Small shares take the rest: at least reserve/floor of them.
		n := 0
		for p.used < p.size {
			sh := NewShare(size / 4)
			if ok, _ := p.take(sh); !ok {
				t.Fatalf("size %d: a share with none refused with %d of %d used", size, p.used, p.size)
			}
			for {
				if ok, _ := p.take(sh); !ok {
					break
				}
			}
			n++
		}
		if want := p.reserve/p.floor - 2 - 4; n < want {
			t.Errorf("size %d: every slot taken with %d more shares, want at least %d", size, n, want)
		}
		// A slot given back wakes a waiter.
		_, freed := p.take(big[0])
		p.give(big[0])
		select {
		case <-freed:
		default:
			t.Errorf("size %d: a slot given back did not wake the waiters", size)
		}
	}
}

// TakeSlots takes all n slots or none, within the Share and, past a
// Share's floor, outside the reserve; what it refuses says which.
func TestTakeSlotsAllOrNone(t *testing.T) {
	p := newSlotPool(64) // reserve 16, floor 1
	sh := NewShare(10)
	if err := p.refusal(sh, 11); err == nil || !err.(*SlotError).Share {
		t.Errorf("11 slots of a share of 10: %v, want a refusal naming the share", err)
	}
	p.used = 64 - 16 // only the reserve is free
	if err := p.refusal(sh, 1); err != nil {
		t.Errorf("a share holding none, one slot of the reserve: %v, want it given", err)
	}
	if err := p.refusal(sh, 2); err == nil || err.(*SlotError).Share {
		t.Errorf("a share holding none, two slots of the reserve (floor 1): %v, want a refusal naming the process", err)
	}
	// TakeSlots and GiveSlots on the process's pool count against the
	// Share exactly what they took.
	sh = NewShare(5)
	if err := TakeSlots(sh, 3); err != nil {
		t.Fatal(err)
	}
	if err := TakeSlots(sh, 3); err == nil || !strings.Contains(err.Error(), "your share") {
		t.Errorf("3 more of a share of 5 holding 3: %v, want a refusal naming the share", err)
	}
	if sh.held != 3 {
		t.Errorf("a refused take left the share holding %d, want 3", sh.held)
	}
	GiveSlots(sh, 3)
	if err := TakeSlots(sh, 5); err != nil {
		t.Errorf("5 of a share of 5 after the 3 were given back: %v", err)
	}
	GiveSlots(sh, 5)
}
