package netproxy

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// SOCKS5 (RFC 1928) and its username/password authentication (RFC 1929).
const (
	socksVersion5 = 0x05

	socksMethodNone     = 0x00
	socksMethodPassword = 0x02
	socksMethodNoneOK   = 0xff

	socksCmdConnect = 0x01

	socksAtypIPv4   = 0x01
	socksAtypDomain = 0x03
	socksAtypIPv6   = 0x04

	socksSucceeded          = 0x00
	socksGeneralFailure     = 0x01
	socksNotAllowed         = 0x02
	socksNetworkUnreachable = 0x03
	socksHostUnreachable    = 0x04
	socksConnRefused        = 0x05
	socksTTLExpired         = 0x06
	socksCmdNotSupported    = 0x07
	socksAtypNotSupported   = 0x08
)

// serveSOCKS serves one SOCKS5 connection: greeting, optional
// authentication, one CONNECT request, then a tunnel. BIND and UDP
// ASSOCIATE are answered "command not supported".
func (cc *clientConn) serveSOCKS() {
	s := cc.s
	br := cc.br
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	want := byte(socksMethodNone)
	if s.Credential != "" {
		want = socksMethodPassword
	}
	offered := false
	for _, m := range methods {
		if m == want {
			offered = true
		}
	}
	if !offered {
		cc.c.Write([]byte{socksVersion5, socksMethodNoneOK})
		lingerClose(cc.c)
		return
	}
	if _, err := cc.c.Write([]byte{socksVersion5, want}); err != nil {
		return
	}
	if want == socksMethodPassword {
		ok, err := cc.socksAuth()
		if err != nil {
			return
		}
		if !ok {
			cc.c.Write([]byte{0x01, 0x01})
			lingerClose(cc.c)
			return
		}
		if _, err := cc.c.Write([]byte{0x01, 0x00}); err != nil {
			return
		}
	}

	// Request: VER CMD RSV ATYP DST.ADDR DST.PORT
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return
	}
	if req[0] != socksVersion5 {
		return
	}
	host, err := readSOCKSAddr(br, req[3])
	if err != nil {
		if errors.Is(err, errAtyp) {
			cc.socksReply(socksAtypNotSupported)
			lingerClose(cc.c)
		}
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	port := int(pb[0])<<8 | int(pb[1])
	if req[1] != socksCmdConnect {
		cc.socksReply(socksCmdNotSupported)
		lingerClose(cc.c)
		return
	}
	cc.lr.n = noLimit
	cc.c.SetReadDeadline(time.Time{})

	t, err := s.authorize(cc.ctx, host, port, false)
	if err != nil {
		var d *denial
		if errors.As(err, &d) {
			cc.socksReply(socksNotAllowed)
		} else {
			cc.socksReply(socksErrorCode(err))
		}
		lingerClose(cc.c)
		return
	}
	up, err := s.dial(cc.ctx, t)
	if err != nil {
		cc.socksReply(socksErrorCode(err))
		lingerClose(cc.c)
		return
	}
	// BND.ADDR is left 0.0.0.0:0: the host's addresses are none of the
	// sandbox's business.
	if err := cc.socksReply(socksSucceeded); err != nil {
		up.conn.Close()
		return
	}
	s.tunnelTo(t, cc.c, cc.pending(), up.conn, up.pending)
}

var errAtyp = errors.New("unsupported address type")

func readSOCKSAddr(r io.Reader, atyp byte) (string, error) {
	switch atyp {
	case socksAtypIPv4:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom4(b).String(), nil
	case socksAtypIPv6:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom16(b).String(), nil
	case socksAtypDomain:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return "", err
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		if len(b) == 0 {
			return "", nil // refused as malformed by authorize
		}
		return string(b), nil
	}
	return "", errAtyp
}

// socksAuth reads an RFC 1929 username/password request.
func (cc *clientConn) socksAuth() (bool, error) {
	ver, user, pass, err := readSOCKSUserPass(cc.br)
	if err != nil {
		return false, err
	}
	if ver != 0x01 {
		return false, errors.New("bad auth version")
	}
	return cc.s.checkCredential(user, pass), nil
}

// readSOCKSUserPass reads an RFC 1929 request: its version, username and
// password.
func readSOCKSUserPass(r io.Reader) (ver byte, user, pass string, err error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, "", "", err
	}
	u := make([]byte, h[1])
	if _, err := io.ReadFull(r, u); err != nil {
		return 0, "", "", err
	}
	var pl [1]byte
	if _, err := io.ReadFull(r, pl[:]); err != nil {
		return 0, "", "", err
	}
	p := make([]byte, pl[0])
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, "", "", err
	}
	return h[0], string(u), string(p), nil
}

func (cc *clientConn) socksReply(code byte) error {
	cc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	defer cc.c.SetWriteDeadline(time.Time{})
	_, err := cc.c.Write([]byte{socksVersion5, code, 0x00, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

// socksErrorCode maps an upstream failure to a SOCKS5 reply code.
func socksErrorCode(err error) byte {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksConnRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return socksNetworkUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH):
		return socksHostUnreachable
	case isTimeout(err):
		return socksTTLExpired
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return socksHostUnreachable
	}
	return socksGeneralFailure
}
