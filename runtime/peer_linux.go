package runtime

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
)

// peerOwnedBy returns the check of a proxy connection on the host's
// loopback (a shared network, the no-namespace tier): its other end must
// be a TCP socket of uid. The kernel lists each socket of the network
// namespace with its owner in /proc/net/tcp and tcp6; the client's is the
// one whose local address is the connection's remote one and the other
// way round. Every user of the host can connect to such a port, and the
// proxy's credential is read only after the connection has taken a slot
// of the run's user's share: another user's idle connections to one of
// a moatd user's runs held that user's share, and the user's every
// sandbox connection, session and run was refused (attack pass 78). A
// connection whose owner is not found is refused too.
func peerOwnedBy(uid int) func(net.Conn) error {
	return func(c net.Conn) error {
		la, ok1 := c.LocalAddr().(*net.TCPAddr)
		ra, ok2 := c.RemoteAddr().(*net.TCPAddr)
		if !ok1 || !ok2 {
			return fmt.Errorf("not a TCP connection")
		}
		owner, err := tcpOwner(ra.AddrPort(), la.AddrPort())
		if err != nil {
			return err
		}
		if owner != uid {
			return fmt.Errorf("the connection is uid %d's, not the run's user's (%d)", owner, uid)
		}
		return nil
	}
}

// tcpOwner is the owner of the TCP socket of this network namespace whose
// local address is local and remote address remote.
func tcpOwner(local, remote netip.AddrPort) (int, error) {
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	type table struct {
		file          string
		local, remote string
	}
	var tables []table
	if local.Addr().Is4() && remote.Addr().Is4() {
		tables = append(tables, table{"/proc/net/tcp", procAddr4(local), procAddr4(remote)})
		// a dual-stack socket's connection to an IPv4 address
		tables = append(tables, table{"/proc/net/tcp6", procAddr6(netip.AddrPortFrom(netip.AddrFrom16(local.Addr().As16()), local.Port())),
			procAddr6(netip.AddrPortFrom(netip.AddrFrom16(remote.Addr().As16()), remote.Port()))})
	} else {
		tables = append(tables, table{"/proc/net/tcp6", procAddr6(local), procAddr6(remote)})
	}
	for _, t := range tables {
		b, err := os.ReadFile(t.file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := bytes.Fields(sc.Bytes())
			if len(f) < 8 || string(f[1]) != t.local || string(f[2]) != t.remote {
				continue
			}
			uid, err := strconv.Atoi(string(f[7]))
			if err != nil {
				return -1, fmt.Errorf("%s: bad uid %q", t.file, f[7])
			}
			return uid, nil
		}
	}
	return -1, fmt.Errorf("no socket %s -> %s on this host", local, remote)
}

// procAddr4 is an IPv4 address and port as /proc/net/tcp writes them: the
// address's 32 bits as the host reads them, in hex, and the port.
func procAddr4(ap netip.AddrPort) string {
	a := ap.Addr().As4()
	return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(a[:]), ap.Port())
}

// procAddr6 is procAddr4 for /proc/net/tcp6: four 32-bit words.
func procAddr6(ap netip.AddrPort) string {
	a := ap.Addr().As16()
	var s string
	for i := 0; i < 16; i += 4 {
		s += fmt.Sprintf("%08X", binary.NativeEndian.Uint32(a[i:i+4]))
	}
	return s + fmt.Sprintf(":%04X", ap.Port())
}
