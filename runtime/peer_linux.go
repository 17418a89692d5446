package runtime

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
)

// peerOwnedBy returns the check of a proxy connection on the host's
// loopback (a shared network, the no-namespace tier): its other end must
// be a TCP socket of uid. Every user of the host can connect to such a
// port, and the proxy's credential is read only after the connection has
// taken a slot of the run's user's share: another user's idle connections
// to one of a moatd user's runs held that user's share, and the user's
// every sandbox connection, session and run was refused (attack pass 78).
// A connection whose owner is not found, or is no longer a socket of any
// process (closed: the kernel's entry names no owner), is refused too.
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

// The kernel's sock_diag structures (linux/inet_diag.h), which
// golang.org/x/sys/unix does not declare.
type inetDiagSockID struct {
	Sport, Dport [2]byte // big-endian
	Src, Dst     [16]byte
	If           uint32
	Cookie       [2]uint32
}

type inetDiagReqV2 struct {
	Family, Protocol, Ext, Pad uint8
	States                     uint32
	ID                         inetDiagSockID
}

type inetDiagMsg struct {
	Family, State, Timer, Retrans uint8
	ID                            inetDiagSockID
	Expires, Rqueue, Wqueue       uint32
	UID, Inode                    uint32
}

const (
	inetDiagNoCookie = ^uint32(0)
	// TCP states (include/net/tcp_states.h) of an entry that is not a
	// process's connected socket: a listener, and the kernel's own
	// mini-sockets of a closed connection (no owner: uid 0) or of a
	// handshake not yet accepted.
	tcpTimeWait   = 6
	tcpClose      = 7
	tcpListen     = 10
	tcpNewSynRecv = 12
)

// tcpOwner is the owner of the TCP socket of this network namespace whose
// local address is local and remote address remote, asked of the kernel
// by that exact pair (a NETLINK_SOCK_DIAG request, as ss does): reading
// all of /proc/net/tcp for each connection cost 36 ms with 5,000 other
// sockets on the host, in the proxy's accept loop (docs/PERFORMANCE.md).
func tcpOwner(local, remote netip.AddrPort) (int, error) {
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	if local.Addr().Is4() != remote.Addr().Is4() {
		return -1, fmt.Errorf("no socket %s -> %s on this host", local, remote)
	}
	req := inetDiagReqV2{Family: unix.AF_INET6, Protocol: unix.IPPROTO_TCP}
	if local.Addr().Is4() {
		// Found whether the client's socket is IPv4 or an IPv6 socket
		// connected to an IPv4 address: the kernel keeps both in the
		// table of IPv4 pairs.
		req.Family = unix.AF_INET
		a, b := local.Addr().As4(), remote.Addr().As4()
		copy(req.ID.Src[:], a[:])
		copy(req.ID.Dst[:], b[:])
	} else {
		req.ID.Src = local.Addr().As16()
		req.ID.Dst = remote.Addr().As16()
	}
	binary.BigEndian.PutUint16(req.ID.Sport[:], local.Port())
	binary.BigEndian.PutUint16(req.ID.Dport[:], remote.Port())
	req.ID.Cookie = [2]uint32{inetDiagNoCookie, inetDiagNoCookie}
	m, err := sockDiag(&req)
	if err != nil {
		return -1, fmt.Errorf("socket %s -> %s: %w", local, remote, err)
	}
	// The kernel answers a pair it has no connection for with a listener
	// on the local address if there is one (its lookup is an incoming
	// packet's): only the very pair asked for, in a state a process's
	// socket is in, names the client's owner.
	if got, ok := diagPair(m); !ok || got[0] != local || got[1] != remote {
		return -1, fmt.Errorf("no socket %s -> %s on this host", local, remote)
	}
	switch m.State {
	case tcpTimeWait, tcpClose, tcpListen, tcpNewSynRecv:
		return -1, fmt.Errorf("socket %s -> %s: closed or not a connected socket (TCP state %d)", local, remote, m.State)
	}
	if m.Inode == 0 {
		return -1, fmt.Errorf("socket %s -> %s: no process holds it", local, remote)
	}
	return int(m.UID), nil
}

// diagPair is the local and remote address of the kernel's answer.
func diagPair(m *inetDiagMsg) ([2]netip.AddrPort, bool) {
	var a, b netip.Addr
	switch m.Family {
	case unix.AF_INET:
		a = netip.AddrFrom4([4]byte(m.ID.Src[:4]))
		b = netip.AddrFrom4([4]byte(m.ID.Dst[:4]))
	case unix.AF_INET6:
		a = netip.AddrFrom16(m.ID.Src).Unmap()
		b = netip.AddrFrom16(m.ID.Dst).Unmap()
	default:
		return [2]netip.AddrPort{}, false
	}
	return [2]netip.AddrPort{
		netip.AddrPortFrom(a, binary.BigEndian.Uint16(m.ID.Sport[:])),
		netip.AddrPortFrom(b, binary.BigEndian.Uint16(m.ID.Dport[:])),
	}, true
}

// sockDiag sends req to the kernel's socket diagnostics and returns its
// one answer. A netlink socket per request: it costs two system calls
// more than one kept open, and nothing is shared between the accept
// loops of several runs.
func sockDiag(req *inetDiagReqV2) (*inetDiagMsg, error) {
	fd, err := sys.RetryValue(func() (int, error) {
		return unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	})
	if err != nil {
		return nil, sys.Named("sock_diag socket", err)
	}
	defer unix.Close(fd)
	const hdr = unix.SizeofNlMsghdr
	h := unix.NlMsghdr{
		Len:   uint32(hdr + unsafe.Sizeof(*req)),
		Type:  unix.SOCK_DIAG_BY_FAMILY,
		Flags: unix.NLM_F_REQUEST,
		Seq:   1,
	}
	msg := make([]byte, h.Len)
	copy(msg, unsafe.Slice((*byte)(unsafe.Pointer(&h)), hdr))
	copy(msg[hdr:], unsafe.Slice((*byte)(unsafe.Pointer(req)), unsafe.Sizeof(*req)))
	if err := sys.Retry(func() error { return unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}) }); err != nil {
		return nil, sys.Named("sock_diag request", err)
	}
	buf := make([]byte, 8192)
	n, err := sys.RetryValue(func() (int, error) {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		return n, err
	})
	if err != nil {
		return nil, sys.Named("sock_diag answer", err)
	}
	if n < hdr {
		return nil, fmt.Errorf("sock_diag: a short answer (%d bytes)", n)
	}
	var rh unix.NlMsghdr
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&rh)), hdr), buf)
	if int(rh.Len) < hdr || int(rh.Len) > n {
		return nil, fmt.Errorf("sock_diag: an answer that does not parse (%d bytes, %d said)", n, rh.Len)
	}
	data := buf[hdr:rh.Len]
	switch rh.Type {
	case unix.NLMSG_ERROR:
		if len(data) >= 4 {
			if e := int32(binary.NativeEndian.Uint32(data)); e < 0 {
				return nil, unix.Errno(-e)
			}
		}
		return nil, fmt.Errorf("sock_diag: an error with no error number")
	case unix.SOCK_DIAG_BY_FAMILY:
		var d inetDiagMsg
		if len(data) < int(unsafe.Sizeof(d)) {
			return nil, fmt.Errorf("sock_diag: a short answer (%d bytes)", len(data))
		}
		// copied, not cast: the answer's bytes need not be aligned
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&d)), unsafe.Sizeof(d)), data)
		return &d, nil
	}
	return nil, fmt.Errorf("sock_diag: an answer of type %d", rh.Type)
}
