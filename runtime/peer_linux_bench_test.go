package runtime

import (
	"net"
	"os"
	"strconv"
	"testing"
)

// BenchmarkPeerOwner is what the check of one proxy connection on the
// host's loopback costs with n more idle TCP sockets on the host (n/2
// connections to a listener of the benchmark's, both ends of each open).
// The check had read every line of /proc/net/tcp and tcp6 for each
// connection, so its cost grew with the host's sockets (docs/PERFORMANCE.md).
func BenchmarkPeerOwner(b *testing.B) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func() {
		d, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		c, err := l.Accept()
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, d, c)
	}
	dial()
	// the first connection made is checked: the others are made after
	// it, as another user's would be
	c := conns[1]
	check := peerOwnedBy(os.Getuid())
	for _, n := range []int{0, 5000} {
		for len(conns) < n+2 {
			dial()
		}
		b.Run("more-"+strconv.Itoa(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := check(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
