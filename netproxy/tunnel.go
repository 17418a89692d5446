package netproxy

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

type closeWriter interface{ CloseWrite() error }

// tunnel splices client and upstream both ways until both directions end.
// clientPending is early data the client sent before the verdict;
// upPending is data the upstream sent before the tunnel began. With
// *net.TCPConn on both sides io.Copy uses splice(2) on Linux, so bytes do
// not pass through user space.
//
// A direction that ends with EOF half-closes its destination (CloseWrite)
// and the other direction carries on; a direction that fails closes both
// connections, which ends the other one too.
func tunnel(client net.Conn, clientPending []byte, up net.Conn, upPending []byte) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(up, client, clientPending)
	}()
	pipe(client, up, upPending)
	<-done
	client.Close()
	up.Close()
}

// pipe copies src to dst after writing pending.
func pipe(dst, src net.Conn, pending []byte) {
	if len(pending) > 0 {
		if _, err := dst.Write(pending); err != nil {
			dst.Close()
			src.Close()
			return
		}
	}
	_, err := io.Copy(dst, src)
	if err != nil {
		dst.Close()
		src.Close()
		return
	}
	if cw, ok := dst.(closeWriter); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	// Cannot half-close: end the whole connection.
	dst.Close()
	src.Close()
}

// maxHello bounds what is read of a client's first TLS flight before its
// server name is known (a ClientHello is at most a 64 KiB handshake message).
const maxHello = 70 << 10

// helloTimeout bounds the wait for the rest of a ClientHello once its
// first byte has come.
const helloTimeout = 30 * time.Second

// extensionEncryptedClientHello is the TLS extension of Encrypted Client
// Hello (RFC 9849), real or GREASE.
const extensionEncryptedClientHello = 0xfe0d

// extensionServerName is the TLS server_name extension (SNI, RFC 6066).
const extensionServerName = 0

// errHelloRead stops the TLS handshake once the ClientHello is parsed.
var errHelloRead = errors.New("client hello read")

// tunnelTo tunnels to t: by name (tunnelNamed) unless t is an address.
func (s *Server) tunnelTo(t *target, client net.Conn, clientPending []byte, up net.Conn, upPending []byte) {
	if _, err := netip.ParseAddr(t.host); err == nil {
		tunnel(client, clientPending, up, upPending)
		return
	}
	s.tunnelNamed(t.host, t.port, client, clientPending, up, upPending)
}

// tunnelNamed is tunnel for a CONNECT or SOCKS5 request that named host
// (not an address literal): the client's first bytes are read before any
// goes upstream, and a TLS ClientHello whose server name (SNI) is not host
// must name a destination the rules allow on port by itself, or the
// tunnel ends and the attempt is reported. An allowed name's address is
// often a CDN's or a cloud's that serves other sites too, chosen by that
// name: a command that opened a tunnel to an allowed name and asked TLS
// for another (domain fronting, or Encrypted Client Hello's public name)
// reached a site the policy does not allow. What the TLS carries inside
// (an HTTP Host header) is not seen. Plain HTTP is: when the client
// speaks first and its first bytes are an HTTP/1 request, every request
// of the tunnel is read and judged by its Host the same way (relayHTTP).
// The upstream's bytes flow at once when it speaks first: a server that
// does (SSH's banner) is not kept waiting.
func (s *Server) tunnelNamed(host string, port int, client net.Conn, clientPending []byte, up net.Conn, upPending []byte) {
	// Who spoke first: the upstream's first bytes go to the client at
	// once if they come before the client's, else to whoever reads the
	// upstream once the client's first bytes are judged (upFirst).
	var first atomic.Int32
	upFirst := make(chan []byte, 1)
	done := make(chan struct{})
	go func() {
		pending := upPending
		if len(pending) == 0 {
			b := make([]byte, 4096)
			n, _ := up.Read(b)
			pending = b[:n]
		}
		if !first.CompareAndSwap(spokeNone, spokeUpstream) {
			upFirst <- pending
			return
		}
		defer close(done)
		pipe(client, up, pending)
	}()
	claim := func() bool { return first.CompareAndSwap(spokeNone, spokeClient) }
	b, verdict := s.checkServerName(host, port, client, clientPending, claim)
	if verdict != firstRefused && first.Load() == spokeClient {
		if verdict == firstHTTP {
			s.relayHTTP(host, port, client, b, up, upFirst)
			client.Close()
			up.Close()
			return
		}
		go func() {
			defer close(done)
			pipe(client, up, <-upFirst)
		}()
	}
	if verdict != firstRefused {
		pipe(up, client, b)
	} else {
		client.Close()
		up.Close()
		if first.Load() == spokeClient {
			return // the upstream's reader hands its bytes to no one
		}
	}
	<-done
	client.Close()
	up.Close()
}

// Who of a tunnel's two ends spoke first (tunnelNamed).
const (
	spokeNone int32 = iota
	spokeUpstream
	spokeClient
)

// What a tunnel's first bytes are (checkServerName).
type firstVerdict int

const (
	firstRaw     firstVerdict = iota // tunnel them as they are
	firstHTTP                        // an HTTP/1 request: relayHTTP
	firstRefused                     // the tunnel ends
)

// checkServerName reads the client's first bytes and judges the server
// name of a TLS ClientHello among them (tunnelNamed). It returns what it
// read, to be sent upstream (or read by relayHTTP), and what they are.
// claim is called when the client's first bytes have come: true if they
// came before the upstream's, and only then is plain HTTP told apart.
func (s *Server) checkServerName(host string, port int, client net.Conn, pending []byte, claim func() bool) ([]byte, firstVerdict) {
	rc := &recordingConn{Conn: client, pending: pending}
	var b [2048]byte
	n, _ := rc.Read(b[:])
	if n == 0 {
		return rc.buf, firstRaw // the client sent nothing
	}
	clientFirst := claim()
	if !tlsRecordType(b[0]) {
		if !clientFirst {
			return rc.buf, firstRaw
		}
		return s.sniffHTTP(host, port, client, rc)
	}
	client.SetReadDeadline(time.Now().Add(helloTimeout))
	defer client.SetReadDeadline(time.Time{})
	rc.replay, rc.off = true, 0
	var name string
	read, ech, sniExt := false, false, false
	err := tls.Server(rc, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		name, read = h.ServerName, true
		ech = slices.Contains(h.Extensions, extensionEncryptedClientHello)
		sniExt = slices.Contains(h.Extensions, extensionServerName)
		return nil, errHelloRead
	}}).Handshake()
	dest := hostPort(host, port)
	if !read {
		reason := "a TLS ClientHello moat cannot read"
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			reason = "a TLS ClientHello not finished in " + helloTimeout.String()
		}
		s.violation(dest, reason)
		return nil, firstRefused
	}
	if ech {
		// The name asked for is encrypted; the outer name is the ECH
		// config's public name, which the client chose with the config
		// and which says nothing of it: a tunnel to allowed.test with the
		// public name allowed.test reached evil.test on a server that
		// takes ECH (TestTunnelRefusesEncryptedClientHello). Whether the
		// extension is real or GREASE cannot be told apart, so both end
		// the tunnel: a policy moat cannot judge is not let through.
		s.violation(dest, "TLS asked through Encrypted Client Hello, whose server name moat cannot read (outer name "+truncate(oneLine(name), 255)+"); turn ECH off in the client")
		return nil, firstRefused
	}
	if name == "" && sniExt {
		// A server_name extension whose entries are none of type
		// host_name: crypto/tls reads no name from it, a server that
		// takes an entry whatever its type would route by it
		// (TestTunnelRefusesServerNameOfAnotherType).
		s.violation(dest, "a TLS ClientHello whose server name is not a host name")
		return nil, firstRefused
	}
	if name == "" {
		return rc.buf, firstRaw // no name asked: the tunnel's own destination serves it
	}
	if s.sameSiteAllowed(host, port, name) {
		return rc.buf, firstRaw
	}
	s.violation(hostPort(truncate(name, 255), port), "TLS asked for "+truncate(oneLine(name), 255)+" in a tunnel to "+host+", and that name is not allowed (domain fronting)")
	return nil, firstRefused
}

// sameSiteAllowed reports whether name, asked for in a tunnel to host on
// port (by TLS or an HTTP Host), is host or a destination the rules allow
// on that port by themselves (never asked about).
func (s *Server) sameSiteAllowed(host string, port int, name string) bool {
	canon, err := policy.CanonicalHost(name)
	if err != nil {
		return false
	}
	if canon == host {
		return true
	}
	if v, _ := s.CurrentRules().check(canon, port); v == policy.Allow {
		s.logger().Debug("allowed", "verdict", "allow", "host", hostPort(host, port), "name asked", canon)
		return true
	}
	return false
}

// tlsRecordType reports whether b, a stream's first byte, is the type of a
// record a TLS server takes before the ClientHello: a handshake, or an
// alert. A server drops a warning alert that comes first (crypto/tls does,
// and servers built on it), so a tunnel that began with one and then sent
// a ClientHello for another name was let through unchecked
// (TestTunnelServerNameAfterAlert); crypto/tls skips it too. The other
// record types no server takes first, and a protocol whose first byte is
// one (a length, say) is not held up.
func tlsRecordType(b byte) bool { return b == 0x15 || b == 0x16 }

// recordingConn is the client's connection as crypto/tls reads a
// ClientHello from it: the bytes read are kept (to be sent upstream,
// up to maxHello), and nothing is ever written to the client.
type recordingConn struct {
	net.Conn
	pending []byte // read before the verdict (the proxy's buffer)
	buf     []byte // every byte read so far
	replay  bool   // Read gives buf back first (what was read to look)
	off     int    // how much of buf Read has given back
}

func (c *recordingConn) Read(p []byte) (int, error) {
	if c.replay && c.off < len(c.buf) {
		n := copy(p, c.buf[c.off:])
		c.off += n
		return n, nil
	}
	if len(c.buf) >= maxHello {
		return 0, errors.New("ClientHello too large")
	}
	if len(p) > maxHello-len(c.buf) {
		p = p[:maxHello-len(c.buf)]
	}
	var n int
	var err error
	if len(c.pending) > 0 {
		n = copy(p, c.pending)
		c.pending = c.pending[n:]
	} else {
		n, err = c.Conn.Read(p)
	}
	c.buf = append(c.buf, p[:n]...)
	c.off = len(c.buf)
	return n, err
}

func (c *recordingConn) Write(p []byte) (int, error) { return len(p), nil }
