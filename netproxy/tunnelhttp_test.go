package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// vhostOrigin is a server that serves the site its request's Host names
// ("site HOST"), as a shared server or a CDN's address does, and keeps
// the hosts it was asked for.
type vhostOrigin struct {
	srv   *httptest.Server
	mu    sync.Mutex
	hosts []string
}

func newVhostOrigin(t *testing.T) *vhostOrigin {
	o := &vhostOrigin{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		o.mu.Lock()
		o.hosts = append(o.hosts, r.Host)
		o.mu.Unlock()
		fmt.Fprintf(w, "site %s %s", r.Host, r.Method)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *vhostOrigin) asked(host string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, h := range o.hosts {
		if strings.Contains(h, host) {
			return true
		}
	}
	return false
}

// readAll reads what comes back on c until it closes (or 3 s pass).
func readAll(c net.Conn) string {
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	b, _ := io.ReadAll(c)
	return string(b)
}

// Plain HTTP in a tunnel to an allowed name, with another site's Host: a
// server that serves several sites by name served the one the Host named
// (virtual hosting: the clear-text form of domain fronting). Every request
// of such a tunnel is now judged by its Host, by CONNECT and by SOCKS5.
func TestTunnelPlainHTTPHostChecked(t *testing.T) {
	e := newEnv(t, rulesOf(t, []string{"allowed.test", "other.test"}, nil))
	o := newVhostOrigin(t)
	e.setRoute(addrAllowed, o.srv.Listener.Addr().String())
	const evil = "evil.test"
	smuggled := "0\r\n\r\nGET /s HTTP/1.1\r\nHost: evil.test\r\n\r\n"
	for _, c := range []struct {
		name, send string
		want       []string // in order, in what comes back
		refused    bool
	}{
		{"host", "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", []string{"403 Forbidden"}, true},
		{"second request", "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
			[]string{"site allowed.test GET", "403 Forbidden"}, true},
		{"empty lines first", "\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", []string{"403 Forbidden"}, true},
		{"absolute form", "GET http://evil.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", []string{"403 Forbidden"}, true},
		{"upper case and port", "GET / HTTP/1.1\r\nHost: EVIL.test:80\r\n\r\n", []string{"403 Forbidden"}, true},
		{"smuggled in a body", "POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: " + fmt.Sprint(len(smuggled)) +
			"\r\nTransfer-Encoding: chunked\r\n\r\n" + smuggled, []string{"site allowed.test POST", "403 Forbidden"}, true},
		{"allowed by itself", "GET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n", []string{"site other.test GET"}, false},
		{"HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n", []string{"site allowed.test GET"}, false},
		{"HTTP/1.1 without Host", "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", []string{"site allowed.test GET"}, false},
		{"allowed, kept alive", "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\nGET / HTTP/1.1\r\nHost: ALLOWED.test.\r\nConnection: close\r\n\r\n",
			[]string{"site allowed.test GET", "site ALLOWED.test. GET"}, false},
	} {
		for _, via := range []string{"connect", "socks"} {
			t.Run(c.name+"/"+via, func(t *testing.T) {
				var conn net.Conn
				if via == "connect" {
					conn = dialProxy(t, e.addr)
					fmt.Fprintf(conn, "CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n")
					br := bufio.NewReader(conn)
					if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
						t.Fatalf("CONNECT: %v %v", resp, err)
					}
				} else {
					code, sc, _ := socksHandshake(t, e.addr, 3, "allowed.test", 80, "")
					if code != 0 {
						t.Fatalf("SOCKS5: %d", code)
					}
					conn = sc
				}
				defer conn.Close()
				io.WriteString(conn, c.send)
				got := readAll(conn)
				rest := got
				for _, w := range c.want {
					i := strings.Index(rest, w)
					if i < 0 {
						t.Fatalf("want %q in:\n%s", w, got)
					}
					rest = rest[i+len(w):]
				}
				if o.asked(evil) {
					t.Fatalf("ESCAPE: the server was asked for %s:\n%s", evil, got)
				}
				if c.refused {
					v := e.lastViolation()
					if !strings.Contains(v.Target, "evil.test") || !strings.Contains(v.Rule, "virtual-host fronting") {
						t.Errorf("violation %+v", v)
					}
				}
			})
		}
	}
}

// HTTP/2 without TLS in a tunnel to a name carries requests for any host
// in HPACK, which moat does not read: the tunnel ends. A request moat
// cannot read, once the first line says HTTP, ends it too.
func TestTunnelRefusesUnreadableHTTP(t *testing.T) {
	e := newEnv(t, rulesOf(t, []string{"allowed.test"}, nil))
	o := newVhostOrigin(t)
	e.setRoute(addrAllowed, o.srv.Listener.Addr().String())
	for _, c := range []struct{ name, send, rule string }{
		{"h2 prior knowledge", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/2 without TLS"},
		{"HTTP/0.9", "GET /\r\n", "cannot read"},
		// nginx serves evil.test's site for this (attack pass 92).
		{"HTTP/0.9 absolute form", "GET http://evil.test/\r\n", "cannot read"},
		{"HTTP/0.9 absolute form, other scheme", "GET HTTPS://evil.test/ \n", "cannot read"},
		{"two spaces", "GET  / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "cannot read"},
		{"a blank first", " GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "cannot read"},
		{"a word after the version", "GET / HTTP/1.1 x\r\nHost: evil.test\r\n\r\n", "cannot read"},
		{"PROXY protocol v1", "PROXY TCP4 192.0.2.1 192.0.2.2 1 80\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "PROXY protocol"},
		{"PROXY protocol v2", "\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c\xc0\x00\x02\x01\xc0\x00\x02\x02\x00\x01\x00\x50GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "PROXY protocol"},
		{"a control byte", "GET /\x01 HTTP/1.1\r\nHost: evil.test\r\n\r\n", "cannot read"},
		{"lower case version", "GET / http/1.1\r\nHost: evil.test\r\n\r\n", "cannot read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(e.violations())
			conn := dialProxy(t, e.addr)
			defer conn.Close()
			fmt.Fprintf(conn, "CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n%s", c.send)
			got := readAll(conn)
			if strings.Contains(got, "site ") {
				t.Fatalf("ESCAPE: the server answered:\n%s", got)
			}
			// This row's own violation, not an earlier row's: a line
			// tunnelled unread records none (and a server of its own,
			// nginx, may serve it).
			if len(e.violations()) == before {
				t.Fatalf("no violation: tunnelled unread (the server answered %q)", got)
			}
			if v := e.lastViolation(); !strings.Contains(v.Rule, c.rule) {
				t.Errorf("violation %+v, want %q", v, c.rule)
			}
		})
	}
}

// Protocols that are not HTTP go through a tunnel to a name as they are,
// text ones too; so does a server that speaks first.
func TestTunnelOtherProtocolsUntouched(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	e := newEnv(t, rulesOf(t, []string{"allowed.test"}, nil))
	e.setRoute(addrAllowed, l.Addr().String())
	for _, send := range []string{"SET key value\r\n", "PING\r\n", "get key\r\n", "GET key\r\n", "GET user:1\r\n", "\x00\x00\x00\x08\x04\xd2\x16\x2f", "GET key HTTPx\r\n"} {
		c := dialProxy(t, e.addr)
		fmt.Fprintf(c, "CONNECT allowed.test:6379 HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
		br := bufio.NewReader(c)
		if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		io.WriteString(c, send)
		b := make([]byte, len(send))
		if _, err := io.ReadFull(br, b); err != nil || string(b) != send {
			t.Errorf("%q: echo %q %v", send, b, err)
		}
		c.Close()
	}
}

// The forward path relays an upgrade to WebSocket only: h2c carries
// requests for any host of the server on the connection, which the proxy
// would then tunnel unread, and a server that switches to a protocol not
// asked for is refused.
func TestForwardUpgradeOnlyWebSocket(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// A lenient server: it switches to whatever Upgrade names, and to
	// h2c when asked for /switch, then echoes.
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				proto := req.Header.Get("Upgrade")
				if req.URL.Path == "/switch" {
					proto = "h2c"
				}
				if proto == "" {
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nno upgrade")
					return
				}
				fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", proto)
				io.Copy(c, br)
			}()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	e := newEnv(t, rulesOf(t, []string{fmt.Sprintf("127.0.0.1:%d", port)}, nil))
	for _, c := range []struct{ name, hdr, path string }{
		{"h2c", "Connection: Upgrade\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n", "/"},
		{"h2c and HTTP2-Settings", "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n", "/"},
		{"TLS", "Connection: Upgrade\r\nUpgrade: TLS/1.2\r\n", "/"},
		{"switched unasked", "", "/switch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := dialProxy(t, e.addr)
			defer conn.Close()
			fmt.Fprintf(conn, "GET http://127.0.0.1:%d%s HTTP/1.1\r\nHost: x\r\n%s\r\n", port, c.path, c.hdr)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode == http.StatusSwitchingProtocols {
				t.Fatalf("ESCAPE: the proxy relayed a switch to %q", resp.Header.Get("Upgrade"))
			}
			if c.path == "/switch" && resp.StatusCode != http.StatusBadGateway {
				t.Errorf("a switch not asked for: %d, want 502", resp.StatusCode)
			}
		})
	}
}

// requestLineState's verdict on a stream's first bytes holds for the
// whole stream: sniffHTTP decides as soon as it can, and more bytes must
// not have made them HTTP (a lenient server's) after they were passed on.
func FuzzRequestLineState(f *testing.F) {
	for _, s := range []string{"GET / HTTP/1.1\r\n", "GET \x01 HTTP/1.1\r\n", "\r\n GET / HTTP/1.1\n", "GET key\r\n",
		"A \x00\x00\x01", "PRI * HTTP/2.0\r\n", "SET k v\r\n", "GET /\r\n", "\x16\x03\x01"} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		whole := requestLineState(b)
		if cut < 0 || cut > len(b) {
			return
		}
		if early := requestLineState(b[:cut]); early != lineMore && early != whole {
			t.Fatalf("%q: %d on its first %d bytes, %d on all", b, early, cut, whole)
		}
	})
}

// A WebSocket opened through a CONNECT tunnel to a name (ws:// through a
// proxy, as browsers and Node's agents do it) still works now that plain
// HTTP in such a tunnel is read: the upgrade is relayed, and after its 101
// the bytes flow both ways unread.
func TestTunnelWebSocketUpgradeRelayed(t *testing.T) {
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
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil || !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			return
		}
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		io.Copy(c, br) // echo
	}()
	e.setRoute(addrAllowed, l.Addr().String())
	conn := dialProxy(t, e.addr)
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT allowed.test:80 HTTP/1.1\r\nHost: allowed.test:80\r\n\r\n")
	br := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: allowed.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("the upgrade in a tunnel: %v %v", resp, err)
	}
	io.WriteString(conn, "\x81\x05hello frames")
	got := make([]byte, len("\x81\x05hello frames"))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "\x81\x05hello frames" {
		t.Fatalf("after the 101: %q %v", got, err)
	}
}
