package netproxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// The tests never send traffic off this machine: names resolve (through
// fakeResolver) to documentation addresses (203.0.113.0/24), and the
// test dialer maps those onto servers on 127.0.0.1; loopback addresses are
// dialled as they are, anything else fails.

const (
	addrAllowed = "203.0.113.10" // "allowed.test"
	addrDenied  = "203.0.113.20" // "denied.test"
	addrGarbage = "203.0.113.30" // "garbage.test": answers nonsense
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := waitNoGoroutines(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked after all tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// proxyGoroutines returns the stacks of goroutines running proxy code
// (not the test's own helpers).
func proxyGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "moat/netproxy.") {
			continue
		}
		if strings.Contains(g, "_test.go") || strings.Contains(g, "netproxy.TestMain") {
			continue
		}
		out = append(out, g)
	}
	return strings.Join(out, "\n\n")
}

func waitNoGoroutines(d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		s := proxyGoroutines()
		if s == "" || time.Now().After(deadline) {
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeResolver resolves from a fixed table (names without the trailing
// dot); unknown names fail. Like the host's resolver, it takes a name
// with a trailing dot as fully qualified and, with search set, tries one
// without it below that domain too when the name itself is unknown
// (resolv.conf's "search").
type fakeResolver struct {
	mu     sync.Mutex
	names  map[string][]netip.Addr
	search string
	asked  []string // every name asked, as asked
	calls  atomic.Int32
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	tries := []string{strings.TrimSuffix(host, ".")}
	if !strings.HasSuffix(host, ".") && r.search != "" {
		tries = append(tries, host+"."+r.search)
	}
	for _, n := range tries {
		if as, ok := r.names[n]; ok {
			return as, nil
		}
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// names asked so far.
func (r *fakeResolver) askedNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

func (r *fakeResolver) set(name string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	r.names[name] = as
}

// origin is a test server standing in for a remote host.
type origin struct {
	name  string
	srv   *httptest.Server
	conns atomic.Int32
	hits  atomic.Int32
}

func newOrigin(t *testing.T, name string) *origin {
	o := &origin{name: name}
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.hits.Add(1)
		if n := r.URL.Query().Get("size"); n != "" {
			size, _ := strconv.Atoi(n)
			w.Header().Set("Content-Length", strconv.Itoa(size))
			buf := make([]byte, 32<<10)
			for size > 0 {
				k := min(size, len(buf))
				if _, err := w.Write(buf[:k]); err != nil {
					return
				}
				size -= k
			}
			return
		}
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "origin %s got %d bytes", name, len(b))
			return
		}
		fmt.Fprintf(w, "origin %s %s", name, r.URL.Path)
	}))
	o.srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.conns.Add(1)
		}
	}
	o.srv.Start()
	t.Cleanup(o.srv.Close)
	return o
}

func (o *origin) addr() string { return o.srv.Listener.Addr().String() }

func (o *origin) port() int { return o.srv.Listener.Addr().(*net.TCPAddr).Port }

// garbageServer answers every connection with bytes that are no HTTP.
func garbageServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				bufio.NewReader(c).ReadString('\n')
				io.WriteString(c, "SSH-2.0-not-http\r\n\x00\x01\x02garbage\r\n\r\n")
			}()
		}
	}()
	t.Cleanup(func() { l.Close(); wg.Wait() })
	return l.Addr().String()
}

// testEnv is a proxy with origins and a controlled resolver and dialer.
type testEnv struct {
	t       *testing.T
	srv     *Server
	addr    string
	res     *fakeResolver
	routeMu sync.Mutex
	routes  map[netip.Addr]string
	allowed *origin
	denied  *origin
	dials   atomic.Int32

	mu   sync.Mutex
	viol []policy.Violation
}

func rulesOf(t *testing.T, allow []string, deny []string) *Rules {
	t.Helper()
	n := policy.Network{}
	for _, a := range allow {
		n.AllowedDomains = append(n.AllowedDomains, policy.DomainRule{Pattern: a})
	}
	for _, d := range deny {
		n.DeniedDomains = append(n.DeniedDomains, policy.DomainRule{Pattern: d})
	}
	r, err := NewRules(n)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newEnv(t *testing.T, rules *Rules, opts ...func(*Server)) *testEnv {
	t.Helper()
	e := &testEnv{t: t, res: &fakeResolver{names: map[string][]netip.Addr{}}}
	e.allowed = newOrigin(t, "allowed")
	e.denied = newOrigin(t, "denied")
	e.routes = map[netip.Addr]string{
		netip.MustParseAddr(addrAllowed): e.allowed.addr(),
		netip.MustParseAddr(addrDenied):  e.denied.addr(),
	}
	e.res.set("allowed.test", addrAllowed)
	e.res.set("www.allowed.test", addrAllowed)
	e.res.set("denied.test", addrDenied)
	e.res.set("bad.allowed.test", addrDenied)
	e.srv = &Server{
		Rules:    rules,
		Resolver: e.res,
		Dial:     e.dial,
		OnViolation: func(v policy.Violation) {
			e.mu.Lock()
			e.viol = append(e.viol, v)
			e.mu.Unlock()
		},
		LocalAddrs: func() ([]netip.Addr, error) { return nil, nil },
	}
	for _, o := range opts {
		o(e.srv)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = l.Addr().String()
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(l) }()
	t.Cleanup(func() {
		e.srv.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		if leaked := waitNoGoroutines(3 * time.Second); leaked != "" {
			t.Errorf("goroutines left after Close:\n%s", leaked)
		}
	})
	return e
}

// dial maps documentation addresses to origins and passes loopback through.
func (e *testEnv) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	e.dials.Add(1)
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("test dialer: %q is not an IP address: a second lookup?", addr)
	}
	var d net.Dialer
	e.routeMu.Lock()
	to, ok := e.routes[ap.Addr()]
	e.routeMu.Unlock()
	if ok {
		if to == "" {
			return nil, fmt.Errorf("test dialer: no route to %s", addr)
		}
		return d.DialContext(ctx, network, to)
	}
	if ap.Addr().IsLoopback() {
		return d.DialContext(ctx, network, addr)
	}
	return nil, fmt.Errorf("test dialer: no route to %s", addr)
}

// setRoute maps a documentation address to a test server ("" = no route).
func (e *testEnv) setRoute(addr, to string) {
	e.routeMu.Lock()
	defer e.routeMu.Unlock()
	e.routes[netip.MustParseAddr(addr)] = to
}

func (e *testEnv) violations() []policy.Violation {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]policy.Violation(nil), e.viol...)
}

func (e *testEnv) lastViolation() policy.Violation {
	v := e.violations()
	if len(v) == 0 {
		e.t.Fatal("no violation recorded")
	}
	return v[len(v)-1]
}

// result is what a client saw.
type result struct {
	status int // HTTP status of the proxy's or origin's answer
	header http.Header
	body   string
	socks  byte // SOCKS reply code
}

func (r result) ok() bool { return r.status == 200 && r.socks == 0 }

func dialProxy(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// viaForward sends GET http://hostport/path as an absolute-URI request.
func viaForward(t *testing.T, proxy, hostport, path string, hdr ...string) result {
	t.Helper()
	c := dialProxy(t, proxy)
	defer c.Close()
	fmt.Fprintf(c, "GET http://%s%s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n", hostport, path, hostport, strings.Join(hdr, ""))
	return readResult(t, bufio.NewReader(c), "GET")
}

func readResult(t *testing.T, br *bufio.Reader, method string) result {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return result{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// viaConnect opens a CONNECT tunnel and, if it opens, sends a plain GET
// through it.
func viaConnect(t *testing.T, proxy, hostport string, hdr ...string) result {
	t.Helper()
	c := dialProxy(t, proxy)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", hostport, hostport, strings.Join(hdr, ""))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("reading CONNECT answer: %v", err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return result{status: resp.StatusCode, header: resp.Header, body: string(b)}
	}
	fmt.Fprintf(c, "GET /tunnel HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", hostport)
	return readResult(t, br, "GET")
}

// socksHandshake performs the greeting (with cred if not empty) and the
// CONNECT request; it returns the reply code and the connection.
func socksHandshake(t *testing.T, proxy string, atyp byte, host string, port int, cred string) (byte, net.Conn, *bufio.Reader) {
	t.Helper()
	c := dialProxy(t, proxy)
	br := bufio.NewReader(c)
	method := byte(0)
	if cred != "" {
		method = 2
	}
	c.Write([]byte{5, 1, method})
	var g [2]byte
	if _, err := io.ReadFull(br, g[:]); err != nil {
		t.Fatalf("socks greeting: %v", err)
	}
	if g[1] == 0xff {
		return 0xff, c, br
	}
	if method == 2 {
		u, p, _ := strings.Cut(cred, ":")
		msg := append([]byte{1, byte(len(u))}, u...)
		msg = append(append(msg, byte(len(p))), p...)
		c.Write(msg)
		var a [2]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			t.Fatalf("socks auth: %v", err)
		}
		if a[1] != 0 {
			return 0xfe, c, br // auth failed
		}
	}
	req := []byte{5, 1, 0, atyp}
	switch atyp {
	case 1:
		a := netip.MustParseAddr(host).As4()
		req = append(req, a[:]...)
	case 4:
		a := netip.MustParseAddr(host).As16()
		req = append(req, a[:]...)
	case 3:
		req = append(append(req, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	c.Write(req)
	var rep [10]byte
	if _, err := io.ReadFull(br, rep[:4]); err != nil {
		t.Fatalf("socks reply: %v", err)
	}
	rest := 6
	if rep[3] == 4 {
		rest = 18
	}
	io.ReadFull(br, make([]byte, rest))
	return rep[1], c, br
}

// viaSOCKS connects with SOCKS5 and, if allowed, sends a plain GET.
func viaSOCKS(t *testing.T, proxy string, atyp byte, host string, port int, cred string) result {
	t.Helper()
	code, c, br := socksHandshake(t, proxy, atyp, host, port, cred)
	defer c.Close()
	if code != 0 {
		return result{socks: code}
	}
	fmt.Fprintf(c, "GET /socks HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
	return readResult(t, br, "GET")
}
