package runtime

import (
	"net"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/netproxy"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// TestRelayBoundedAndEndsWithTheProxy: the relay to an external proxy
// (httpProxyPort) counts its connections against the user's share, as
// moat's own proxy does, and ends them when the run's proxy closes. It
// had no bound, and a connection whose sandbox end had gone stayed open as
// long as the external proxy kept its own: one user's sandbox took every
// descriptor of moatd, for good (attack pass 69).
func TestRelayBoundedAndEndsWithTheProxy(t *testing.T) {
	// The external proxy: accepts and holds every connection.
	ext, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	held := make(chan net.Conn, 4096)
	go func() {
		for {
			c, err := ext.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			held <- c
		}
	}()
	defer func() {
		ext.Close()
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	port := ext.Addr().(*net.TCPAddr).Port
	const uid = 4269
	p, err := newProxy(&policy.Policy{Net: policy.Network{HTTPProxyPort: port}}, &enforce.Identity{Uid: uid}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Serve(l, false)
	share := netproxy.UserShare(uid)
	// Take all but two of the user's share elsewhere (another sandbox of
	// the user's), so that the test opens few connections.
	n := share.Size() - 2
	for range n {
		netproxy.AcquireConn(nil, share)
	}
	defer func() {
		for ; n > 0; n-- {
			netproxy.ReleaseConn(share)
		}
	}()
	var clients []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	time.Sleep(300 * time.Millisecond)
	if got := accepted.Load(); got != 2 {
		t.Errorf("%d connections relayed with 2 slots of the user's share left, want 2", got)
	}
	// The sandbox's end goes (EOF): the relay's connections stay while the
	// run does, and end with it.
	for _, c := range clients {
		c.Close()
	}
	closed := make(chan struct{})
	go func() { p.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the proxy's close did not return in 5 s: a relayed connection outlives the run")
	}
	// No goroutine of the relay is left (each held a relayed connection).
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		if !strings.Contains(string(buf[:goruntime.Stack(buf, true)]), "(*proxy).relay") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("relayed connections outlive the run's proxy: goroutines of the relay are left")
		}
	}
}
