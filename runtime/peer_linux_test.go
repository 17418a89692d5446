package runtime

import (
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// A proxy whose ports are on the host's loopback (a shared network: it
// requires a credential) serves only its run's user's connections: every
// user of the host could connect to a moatd run's port, and each idle
// connection took a slot of the run's user's share before its credential
// was read, so another user's 96 idle connections had every connection of
// that user's sandboxes refused (attack pass 78, moatd with
// moat.shareNetwork). The test's own connection (uid 0 or the test's
// user) is another user's for a run of uid+4242: it must be closed at
// once, not held waiting for a header (10 s).
func TestHostProxyServesOnlyTheRunsUser(t *testing.T) {
	for _, c := range []struct {
		uid    int
		served bool
	}{{os.Getuid() + 4242, false}, {os.Getuid(), true}} {
		p, err := newProxy(&policy.Policy{Net: policy.Network{}}, &enforce.Identity{Uid: c.uid}, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.RequireCredential(); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p.Serve(l, false)
		conn, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		start := time.Now()
		_, rerr := conn.Read(make([]byte, 1))
		closed := rerr == io.EOF || rerr != nil && !isTimeout(rerr)
		switch {
		case !c.served && !closed:
			t.Errorf("a connection of another user than the run's (%d) is held open: %v after %v", c.uid, rerr, time.Since(start))
		case c.served && closed:
			t.Errorf("the run's user's connection was closed: %v", rerr)
		}
		conn.Close()
		p.close()
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// loopbackPair is a connection on 127.0.0.1: the client's end d and the
// accepted end c (closed when the test ends).
func loopbackPair(t *testing.T) (d, c net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if d, err = net.Dial("tcp", l.Addr().String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if c, err = l.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return d, c
}

func TestTCPOwner(t *testing.T) {
	_, c := loopbackPair(t)
	if err := peerOwnedBy(os.Getuid())(c); err != nil {
		t.Errorf("the test's own connection: %v", err)
	}
	if err := peerOwnedBy(os.Getuid() + 1)(c); err == nil {
		t.Errorf("the test's connection taken for uid %d's", os.Getuid()+1)
	}
}

// A client that closed its end before the proxy looked is nobody's: the
// kernel keeps its end as a mini-socket that names no owner (uid 0, no
// inode), which the scan of /proc/net/tcp took for root's, so a root run's
// proxy served another user's closed connections. The lookup refuses it.
func TestPeerClosedClientRefused(t *testing.T) {
	d, c := loopbackPair(t)
	if err := peerOwnedBy(os.Getuid())(c); err != nil {
		t.Fatalf("the open connection: %v", err)
	}
	d.Close()
	// the client's end becomes the kernel's once the proxy's end has
	// acknowledged its FIN: the proxy's end reads EOF then
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the proxy's end: %v, want EOF", err)
	}
	for _, uid := range []int{0, os.Getuid()} {
		if err := peerOwnedBy(uid)(c); err == nil {
			t.Errorf("a closed client's connection taken for uid %d's", uid)
		}
	}
}

// The kernel answers a pair it has no connection for with a listener on
// the pair's local address (its lookup is an incoming packet's): that
// listener's owner is not the client's.
func TestPeerListenerNotTakenForClient(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	la := l.Addr().(*net.TCPAddr).AddrPort()
	if uid, err := tcpOwner(la, netip.MustParseAddrPort("127.0.0.1:9")); err == nil {
		t.Errorf("a listener's owner (%d) given for a connection that is not there", uid)
	}
}

// The request and answer structures are the kernel's sizes
// (linux/inet_diag.h): a field out of place would read another's bytes.
func TestInetDiagSizes(t *testing.T) {
	if s := unsafe.Sizeof(inetDiagReqV2{}); s != 56 {
		t.Errorf("inet_diag_req_v2: %d bytes, the kernel's is 56", s)
	}
	if s := unsafe.Sizeof(inetDiagMsg{}); s != 72 {
		t.Errorf("inet_diag_msg: %d bytes, the kernel's is 72", s)
	}
}

// An IPv6 client and a dual-stack client connected to an IPv4 address
// are found as well as an IPv4 one.
func TestTCPOwnerIPv6(t *testing.T) {
	for _, c := range []struct{ lnet, laddr, dnet string }{
		{"tcp6", "[::1]:0", "tcp6"},
		{"tcp", "[::]:0", "tcp4"}, // a dual-stack listener, an IPv4 client
		{"tcp", "[::]:0", "tcp6"}, // a dual-stack listener, an IPv6 client to ::1
	} {
		l, err := net.Listen(c.lnet, c.laddr)
		if err != nil {
			t.Logf("%s %s: %v", c.lnet, c.laddr, err)
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		host := "127.0.0.1"
		if c.dnet == "tcp6" {
			host = "::1"
		}
		d, err := net.Dial(c.dnet, net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			l.Close()
			t.Logf("%s to %s: %v", c.dnet, host, err)
			continue
		}
		a, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if err := peerOwnedBy(os.Getuid())(a); err != nil {
			t.Errorf("%s client to a %s %s listener: %v", c.dnet, c.lnet, c.laddr, err)
		}
		if err := peerOwnedBy(os.Getuid() + 1)(a); err == nil {
			t.Errorf("%s client to a %s %s listener taken for uid %d's", c.dnet, c.lnet, c.laddr, os.Getuid()+1)
		}
		a.Close()
		d.Close()
		l.Close()
	}
}
