package runtime

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

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

func TestTCPOwner(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := peerOwnedBy(os.Getuid())(c); err != nil {
		t.Errorf("the test's own connection: %v", err)
	}
	if err := peerOwnedBy(os.Getuid() + 1)(c); err == nil {
		t.Errorf("the test's connection taken for uid %d's", os.Getuid()+1)
	}
}
