package netproxy

import (
	"bufio"
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// cdnServer is a TLS server standing in for a CDN's address: it serves
// whichever site the client's TLS asks for by name.
func cdnServer(t *testing.T) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "site %q", r.TLS.ServerName)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// tlsThrough opens a tunnel to hostport through the proxy (CONNECT, or
// SOCKS5 with a domain name) and asks TLS for serverName there.
func tlsThrough(t *testing.T, proxy, hostport, serverName string, socks bool) (string, error) {
	t.Helper()
	return tlsThroughAfter(t, proxy, hostport, serverName, socks, nil)
}

// tlsThroughAfter is tlsThrough with prefix written into the tunnel
// before the TLS handshake; an empty proxy dials hostport directly.
func tlsThroughAfter(t *testing.T, proxy, hostport, serverName string, socks bool, prefix []byte) (string, error) {
	t.Helper()
	c, err := dialTunnel(t, proxy, hostport, socks)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(prefix); err != nil {
		return "", err
	}
	return getOverTLS(c, &tls.Config{ServerName: serverName, InsecureSkipVerify: true})
}

// dialTunnel opens a tunnel to hostport through proxy (CONNECT, or SOCKS5
// with a domain name); an empty proxy dials hostport directly.
func dialTunnel(t *testing.T, proxy, hostport string, socks bool) (net.Conn, error) {
	t.Helper()
	switch {
	case proxy == "":
		return net.Dial("tcp", hostport)
	case socks:
		host, port, _ := net.SplitHostPort(hostport)
		var p int
		fmt.Sscan(port, &p)
		code, sc, _ := socksHandshake(t, proxy, 3, host, p, "")
		if code != 0 {
			sc.Close()
			return nil, fmt.Errorf("SOCKS5 reply %d", code)
		}
		return sc, nil
	}
	c := dialProxy(t, proxy)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
	if resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
		c.Close()
		return nil, fmt.Errorf("CONNECT: %v %v", resp, err)
	}
	return c, nil
}

// getOverTLS asks for / over TLS on c (cfg's ServerName as the Host) and
// returns the answer's body.
func getOverTLS(c net.Conn, cfg *tls.Config) (string, error) {
	tc := tls.Client(c, cfg)
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", cfg.ServerName)
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		return "", err
	}
	b, _ := io.ReadAll(resp.Body)
	return string(b), nil
}

// TestTunnelServerNameChecked: a tunnel to an allowed name whose TLS asks
// for another name (domain fronting: the allowed name's address is a CDN's
// that serves other sites too) is ended and reported, unless that name is
// allowed too; the same tunnel asking for its own name, or for none, works.
func TestTunnelServerNameChecked(t *testing.T) {
	e := newEnv(t, rulesOf(t, []string{"allowed.test", "www.allowed.test"}, nil))
	cdn := cdnServer(t)
	e.setRoute(addrAllowed, cdn.Listener.Addr().String())
	for _, socks := range []bool{false, true} {
		got, err := tlsThrough(t, e.addr, "allowed.test:443", "evil.test", socks)
		if err == nil {
			t.Fatalf("socks=%v: TLS for evil.test through a tunnel to allowed.test reached the CDN's site: %s", socks, got)
		}
		v := e.lastViolation()
		if v.Target != "evil.test:443" || !strings.Contains(v.Rule, "domain fronting") {
			t.Errorf("socks=%v: violation %+v", socks, v)
		}
		for _, name := range []string{"allowed.test", "ALLOWED.test", "www.allowed.test", ""} {
			got, err := tlsThrough(t, e.addr, "allowed.test:443", name, socks)
			if err != nil || got != fmt.Sprintf("site %q", strings.ToLower(name)) && !(name == "ALLOWED.test" && got == `site "ALLOWED.test"`) {
				t.Errorf("socks=%v: TLS for %q through a tunnel to allowed.test: %q %v", socks, name, got, err)
			}
		}
	}
}

// warningAlert is a TLS alert record of level warning (user_canceled):
// a TLS server that has not yet read a ClientHello drops it and reads on
// (crypto/tls does, and so do servers built on it).
var warningAlert = []byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x01, 0x5a}

// TestTunnelServerNameAfterAlert: a tunnel whose first bytes are a TLS
// warning alert, and then a ClientHello for another name, is judged by
// that ClientHello. The look at the first bytes took only a handshake
// record (0x16) for TLS, so the alert's 0x15 let the tunnel through
// unchecked, and a Go TLS server, which drops the alert, served evil.test.
func TestTunnelServerNameAfterAlert(t *testing.T) {
	e := newEnv(t, rulesOf(t, []string{"allowed.test"}, nil))
	cdn := cdnServer(t)
	e.setRoute(addrAllowed, cdn.Listener.Addr().String())
	if got, err := tlsThroughAfter(t, "", cdn.Listener.Addr().String(), "evil.test", false, warningAlert); err != nil || got != `site "evil.test"` {
		t.Fatalf("the server must take a ClientHello after a warning alert (the attack without moat): %q %v", got, err)
	}
	for _, socks := range []bool{false, true} {
		got, err := tlsThroughAfter(t, e.addr, "allowed.test:443", "evil.test", socks, warningAlert)
		if err == nil {
			t.Fatalf("socks=%v: TLS for evil.test after an alert, through a tunnel to allowed.test, reached the CDN's site: %s", socks, got)
		}
		v := e.lastViolation()
		if v.Target != "evil.test:443" || !strings.Contains(v.Rule, "domain fronting") {
			t.Errorf("socks=%v: violation %+v", socks, v)
		}
		if got, err := tlsThroughAfter(t, e.addr, "allowed.test:443", "allowed.test", socks, warningAlert); err != nil || got != `site "allowed.test"` {
			t.Errorf("socks=%v: TLS for allowed.test after an alert: %q %v", socks, got, err)
		}
	}
}

// TestTunnelServerSpeaksFirst: the look at the client's first bytes does
// not hold the upstream's: a server that speaks first (SSH) is heard.
func TestTunnelServerSpeaksFirst(t *testing.T) {
	e := newEnv(t, rulesOf(t, []string{"allowed.test"}, nil))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "SSH-2.0-test\r\n")
		b := make([]byte, 64)
		n, _ := c.Read(b)
		c.Write(b[:n])
	}()
	e.setRoute(addrAllowed, l.Addr().String())
	c := dialProxy(t, e.addr)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT allowed.test:22 HTTP/1.1\r\nHost: allowed.test:22\r\n\r\n")
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	banner, err := br.ReadString('\n')
	if err != nil || banner != "SSH-2.0-test\r\n" {
		t.Fatalf("the server's banner: %q %v", banner, err)
	}
	io.WriteString(c, "SSH-2.0-client\r\n")
	echo, err := br.ReadString('\n')
	if err != nil || echo != "SSH-2.0-client\r\n" {
		t.Fatalf("the echo: %q %v", echo, err)
	}
}

// BenchmarkServerNameCheck is what a tunnel's look at its ClientHello
// costs (TestTunnelServerNameChecked): a real ClientHello read from the
// client and parsed by crypto/tls.
func BenchmarkServerNameCheck(b *testing.B) {
	hello := clientHello(b, "allowed.test")
	s := &Server{Rules: rulesOf(&testing.T{}, []string{"allowed.test"}, nil)}
	for b.Loop() {
		c := &bytesConn{r: bytes.NewReader(hello)}
		if _, v := s.checkServerName("allowed.test", 443, c, nil, clientSpokeFirst); v == firstRefused {
			b.Fatal("refused")
		}
	}
}

// clientSpokeFirst is checkServerName's claim when the client's bytes came
// first.
func clientSpokeFirst() bool { return true }

// clientHello is the first flight of crypto/tls's client for name.
func clientHello(tb testing.TB, name string) []byte {
	c, s := net.Pipe()
	go tls.Client(c, &tls.Config{ServerName: name, InsecureSkipVerify: true}).Handshake()
	buf := make([]byte, 16<<10)
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := s.Read(buf)
	if err != nil {
		tb.Fatal(err)
	}
	c.Close()
	s.Close()
	return buf[:n]
}

// bytesConn is a net.Conn that reads from r and takes writes.
type bytesConn struct {
	net.Conn
	r io.Reader
}

func (c *bytesConn) Read(p []byte) (int, error)      { return c.r.Read(p) }
func (c *bytesConn) Write(p []byte) (int, error)     { return len(p), nil }
func (c *bytesConn) SetReadDeadline(time.Time) error { return nil }
func (c *bytesConn) SetDeadline(time.Time) error     { return nil }

// echServer is cdnServer that takes Encrypted Client Hello (an X25519
// config whose public name is publicName), and the ECHConfigList a client
// needs for it.
func echServer(t *testing.T, publicName string) (*httptest.Server, []byte) {
	t.Helper()
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u16 := func(n int) []byte { return []byte{byte(n >> 8), byte(n)} }
	pub := k.PublicKey().Bytes()
	c := append([]byte{7}, u16(0x20)...) // config_id, DHKEM(X25519)
	c = append(append(c, u16(len(pub))...), pub...)
	c = append(c, 0, 4, 0, 1, 0, 1) // HKDF-SHA256, AES-128-GCM
	c = append(append(c, 32, byte(len(publicName))), publicName...)
	c = append(c, 0, 0) // no extensions
	config := append(append(u16(0xfe0d), u16(len(c))...), c...)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "site %q", r.TLS.ServerName)
	}))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS13, EncryptedClientHelloKeys: []tls.EncryptedClientHelloKey{{Config: config, PrivateKey: k.Bytes()}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, append(u16(len(config)), config...)
}

// TestTunnelRefusesEncryptedClientHello: a ClientHello with Encrypted
// Client Hello carries the name it asks for encrypted; its outer name,
// which the look judged, is the config's public name and says nothing of
// it. A tunnel to allowed.test whose ECH's public name was allowed.test
// and whose inner name was evil.test reached evil.test on a server that
// takes ECH (attack pass 86). Such a tunnel is refused now.
func TestTunnelRefusesEncryptedClientHello(t *testing.T) {
	e := newEnv(t, rulesOf(t, []string{"allowed.test"}, nil))
	srv, list := echServer(t, "allowed.test")
	e.setRoute(addrAllowed, srv.Listener.Addr().String())
	dial := func(proxy, hostport, name string, socks bool) (string, error) {
		c, err := dialTunnel(t, proxy, hostport, socks)
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return getOverTLS(c, &tls.Config{ServerName: name, InsecureSkipVerify: true, MinVersion: tls.VersionTLS13, EncryptedClientHelloConfigList: list})
	}
	if got, err := dial("", srv.Listener.Addr().String(), "evil.test", false); err != nil || got != `site "evil.test"` {
		t.Fatalf("the server must serve evil.test through ECH (the attack without moat): %q %v", got, err)
	}
	for _, socks := range []bool{false, true} {
		got, err := dial(e.addr, "allowed.test:443", "evil.test", socks)
		if err == nil {
			t.Fatalf("socks=%v: ECH for evil.test (public name allowed.test) through a tunnel to allowed.test reached the site: %s", socks, got)
		}
		v := e.lastViolation()
		if v.Target != "allowed.test:443" || !strings.Contains(v.Rule, "Encrypted Client Hello") {
			t.Errorf("socks=%v: violation %+v", socks, v)
		}
	}
}

// TestTunnelRefusesServerNameOfAnotherType: a server_name extension whose
// only entry is of a type other than host_name gives crypto/tls no name,
// and a ClientHello without a name went through unchecked; a parser that
// reads the entry whatever its type (RFC 6066 leaves other types open)
// would route by it. Such a ClientHello is refused (hardening, attack pass
// 86: no server seen to do so).
func TestTunnelRefusesServerNameOfAnotherType(t *testing.T) {
	hello := clientHello(t, "evil.test")
	i := bytes.Index(hello, []byte("evil.test"))
	if i < 3 || hello[i-3] != 0 {
		t.Fatalf("no host_name entry for evil.test in the ClientHello")
	}
	hello[i-3] = 1
	s := &Server{Rules: rulesOf(t, []string{"allowed.test"}, nil)}
	if _, v := s.checkServerName("allowed.test", 443, &bytesConn{r: bytes.NewReader(hello)}, nil, clientSpokeFirst); v != firstRefused {
		t.Fatal("a ClientHello whose server_name entry is of another type went through")
	}
	if _, v := s.checkServerName("allowed.test", 443, &bytesConn{r: bytes.NewReader(clientHello(t, ""))}, nil, clientSpokeFirst); v == firstRefused {
		t.Fatal("a ClientHello without server_name was refused")
	}
}
