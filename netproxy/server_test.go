package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

var kinds = []string{"forward", "connect", "socks"}

// do sends one request of the given kind to hostport through the proxy.
func do(t *testing.T, proxy, kind, hostport string) result {
	t.Helper()
	switch kind {
	case "forward":
		return viaForward(t, proxy, hostport, "/fwd")
	case "connect":
		return viaConnect(t, proxy, hostport)
	}
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
	atyp := byte(3)
	if a, err := netip.ParseAddr(host); err == nil && strings.Count(host, ".") == 3 || strings.Contains(host, ":") {
		atyp = 1
		if a.Is6() {
			atyp = 4
		}
	}
	return viaSOCKS(t, proxy, atyp, host, port, "")
}

func wantDenied(t *testing.T, e *testEnv, kind string, r result, target, reason string) {
	t.Helper()
	if kind == "socks" {
		if r.socks != socksNotAllowed {
			t.Fatalf("SOCKS reply %#x, want %#x (not allowed by ruleset); result %+v", r.socks, socksNotAllowed, r)
		}
	} else {
		if r.status != http.StatusForbidden || r.header.Get("X-Proxy-Error") != "blocked-by-allowlist" {
			t.Fatalf("got %d %v %q, want 403 with X-Proxy-Error: blocked-by-allowlist", r.status, r.header, r.body)
		}
		if !strings.Contains(r.body, reason) {
			t.Fatalf("403 body %q does not give the reason %q", r.body, reason)
		}
	}
	v := e.lastViolation()
	if v.Kind != policy.NetworkViolation || v.Op != "connect" || !strings.Contains(v.Rule, reason) {
		t.Fatalf("violation %+v: want kind network, op connect, rule containing %q", v, reason)
	}
	if target != "" && v.Target != target {
		t.Fatalf("violation target %q, want %q", v.Target, target)
	}
}

func wantOK(t *testing.T, r result, body string) {
	t.Helper()
	if !r.ok() || !strings.Contains(r.body, body) {
		t.Fatalf("got %+v, want 200 with body containing %q", r, body)
	}
}

// TestDenyThenAllow runs each refused request, then the same request
// after a rule change that allows it: a test cannot pass because the proxy
// is simply broken. The change goes through SetRules, so every case also
// checks the live rule swap.
func TestDenyThenAllow(t *testing.T) {
	type pc struct {
		name         string
		host         func(e *testEnv) string // host:port as the client writes it
		target       string                  // violation target ("" = not checked)
		deny, allow  func(e *testEnv) policy.Network
		reason, body string
		setup        func(e *testEnv)
	}
	lists := func(allow []string, deny ...string) func(*testEnv) policy.Network {
		return func(*testEnv) policy.Network { return netOf(allow, deny) }
	}
	fixed := func(h string) func(*testEnv) string { return func(*testEnv) string { return h } }
	cases := []pc{
		{name: "name not on allow list", host: fixed("denied.test:80"), target: "denied.test:80",
			deny: lists([]string{"allowed.test"}), allow: lists([]string{"allowed.test", "denied.test"}),
			reason: ReasonNotAllowed, body: "origin denied"},
		{name: "empty allow list", host: fixed("allowed.test:80"),
			deny: lists(nil), allow: lists([]string{"allowed.test"}),
			reason: ReasonNotAllowed, body: "origin allowed"},
		{name: "deny entry with reason", host: fixed("denied.test:80"),
			deny: func(*testEnv) policy.Network {
				n := netOf([]string{"denied.test"}, nil)
				n.DeniedDomains = []policy.DomainRule{{Pattern: "denied.test", Reason: "exfil host; use the approved mirror"}}
				return n
			},
			allow:  lists([]string{"denied.test"}),
			reason: "exfil host; use the approved mirror", body: "origin denied"},
		{name: "deny entry without reason", host: fixed("denied.test:80"),
			deny: lists([]string{"denied.test"}, "denied.test"), allow: lists([]string{"denied.test"}),
			reason: `denied by deniedDomains entry "denied.test"`, body: "origin denied"},
		{name: "deny before allow", host: fixed("bad.allowed.test:80"),
			deny: lists([]string{"*.allowed.test"}, "bad.allowed.test"), allow: lists([]string{"*.allowed.test"}),
			reason: "bad.allowed.test", body: "origin denied"},
		{name: "deny star port", host: fixed("denied.test:22"),
			deny: lists([]string{"denied.test"}, "*:22"), allow: lists([]string{"denied.test"}),
			reason: `"*:22"`, body: "origin denied"},
		{name: "wildcard is strict subdomains only", host: fixed("allowed.test:80"),
			deny: lists([]string{"*.allowed.test"}), allow: lists([]string{"*.allowed.test", "allowed.test"}),
			reason: ReasonNotAllowed, body: "origin allowed"},
		{name: "port mismatch", host: fixed("allowed.test:8080"),
			deny: lists([]string{"allowed.test:443"}), allow: lists([]string{"allowed.test:8080"}),
			reason: ReasonNotAllowed, body: "origin allowed"},
		{name: "IP literal not listed", host: fixed(addrDenied + ":80"), target: addrDenied + ":80",
			deny: lists([]string{"denied.test"}), allow: lists([]string{addrDenied}),
			reason: ReasonNotAllowed, body: "origin denied"},
		{name: "denied name is not reached by its IP", host: fixed(addrDenied + ":80"),
			deny: lists([]string{"allowed.test"}, "denied.test"), allow: lists([]string{addrDenied}, "denied.test"),
			reason: ReasonNotAllowed, body: "origin denied"},
		{name: "name resolving to loopback", host: func(e *testEnv) string { return "evil.test:" + strconv.Itoa(e.allowed.port()) },
			setup: func(e *testEnv) { e.res.set("evil.test", "127.0.0.1") },
			deny:  lists([]string{"evil.test"}),
			allow: func(e *testEnv) policy.Network {
				return netOf([]string{"evil.test", "127.0.0.1:" + strconv.Itoa(e.allowed.port())}, nil)
			},
			reason: "127.0.0.1: loopback", body: "origin allowed"},
		{name: "name resolving to cloud metadata", host: fixed("meta.test:80"),
			setup: func(e *testEnv) { e.res.set("meta.test", "169.254.169.254") },
			deny:  lists([]string{"meta.test"}), allow: lists([]string{"meta.test", "169.254.169.254"}),
			reason: "169.254.169.254: cloud metadata", body: "origin allowed"},
		{name: "name resolving to a private address", host: fixed("lan.test:80"),
			setup: func(e *testEnv) { e.res.set("lan.test", "10.1.2.3") },
			deny:  lists([]string{"lan.test"}), allow: lists([]string{"lan.test", "10.1.2.3:80"}),
			reason: "10.1.2.3: private", body: "origin allowed"},
		{name: "name resolving to NAT64 loopback", host: fixed("nat.test:80"),
			setup: func(e *testEnv) { e.res.set("nat.test", "64:ff9b::7f00:1") },
			deny:  lists([]string{"nat.test"}), allow: lists([]string{"nat.test", "[64:ff9b::7f00:1]"}),
			reason: "64:ff9b::7f00:1: loopback", body: "origin allowed"},
		{name: "name resolving to v4-mapped metadata", host: fixed("mapped.test:80"),
			setup: func(e *testEnv) { e.res.set("mapped.test", "::ffff:169.254.169.254") },
			deny:  lists([]string{"mapped.test"}), allow: lists([]string{"mapped.test", "169.254.169.254"}),
			reason: "169.254.169.254: cloud metadata", body: "origin allowed"},
		{name: "only the safe addresses of a name are dialled", host: fixed("mixed.test:80"),
			setup: func(e *testEnv) { e.res.set("mixed.test", "127.0.0.1", addrAllowed) },
			deny:  lists([]string{"mixed.test"}, "203.0.113.10"), allow: lists([]string{"mixed.test"}),
			reason: "refused addresses", body: "origin allowed"},
		{name: "deniedResolvedAddresses", host: fixed("allowed.test:80"),
			deny: func(*testEnv) policy.Network {
				n := netOf([]string{"allowed.test"}, nil)
				n.DeniedResolvedAddresses = []string{"203.0.113.0/24"}
				return n
			},
			allow:  lists([]string{"allowed.test"}),
			reason: "deniedResolvedAddresses", body: "origin allowed"},
		{name: "localhost needs an explicit entry", host: func(e *testEnv) string { return "localhost:" + strconv.Itoa(e.allowed.port()) },
			deny: lists([]string{"allowed.test", "localhost:1"}),
			allow: func(e *testEnv) policy.Network {
				return netOf([]string{"localhost:" + strconv.Itoa(e.allowed.port())}, nil)
			},
			reason: ReasonNotAllowed, body: "origin allowed"},
		{name: "loopback literal needs an explicit entry", host: func(e *testEnv) string { return "127.0.0.1:" + strconv.Itoa(e.allowed.port()) },
			deny: lists([]string{"localhost"}),
			allow: func(e *testEnv) policy.Network {
				return netOf([]string{"127.0.0.1:" + strconv.Itoa(e.allowed.port())}, nil)
			},
			reason: ReasonNotAllowed, body: "origin allowed"},
		{name: "malformed host", host: fixed("bad_host!.test:80"),
			deny: lists([]string{"allowed.test"}), allow: nil, reason: "malformed host"},
	}
	// Every numeric spelling of the denied address.
	for _, sp := range []string{"203.0.28948", "203.28948", "3405803796", "0xcb007114", "0313.0.0161.024", "0xcb.0.0x71.0x14", "0313.0.113.0x14"} {
		cases = append(cases, pc{name: "IPv4 spelling " + sp, host: fixed(sp + ":80"), target: addrDenied + ":80",
			deny: lists([]string{"allowed.test"}, addrDenied), allow: lists([]string{addrDenied}),
			reason: `denied by deniedDomains entry "203.0.113.20"`, body: "origin denied"})
	}
	for _, c := range cases {
		for _, kind := range kinds {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				e := newEnv(t, nil)
				e.setRoute("169.254.169.254", e.allowed.addr())
				e.setRoute("10.1.2.3", e.allowed.addr())
				e.setRoute("64:ff9b::7f00:1", e.allowed.addr())
				if c.setup != nil {
					c.setup(e)
				}
				e.srv.SetRules(mustRules(t, c.deny(e)))
				host := c.host(e)
				wantDenied(t, e, kind, do(t, e.addr, kind, host), c.target, c.reason)
				if c.allow == nil {
					return
				}
				e.srv.SetRules(mustRules(t, c.allow(e)))
				wantOK(t, do(t, e.addr, kind, host), c.body)
			})
		}
	}
}

func netOf(allow, deny []string) policy.Network {
	var n policy.Network
	for _, a := range allow {
		n.AllowedDomains = append(n.AllowedDomains, policy.DomainRule{Pattern: a})
	}
	for _, d := range deny {
		n.DeniedDomains = append(n.DeniedDomains, policy.DomainRule{Pattern: d})
	}
	return n
}

func mustRules(t *testing.T, n policy.Network) *Rules {
	t.Helper()
	r, err := NewRules(n)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestZeroServerAllowsNothing(t *testing.T) {
	e := newEnv(t, nil)
	for _, kind := range kinds {
		wantDenied(t, e, kind, do(t, e.addr, kind, "allowed.test:80"), "allowed.test:80", ReasonNotAllowed)
	}
	if n := e.dials.Load(); n != 0 {
		t.Fatalf("%d dials for refused destinations", n)
	}
}

func TestIPv6Loopback(t *testing.T) {
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "origin v6") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	host := fmt.Sprintf("[::1]:%d", port)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, mustRules(t, netOf([]string{"localhost:1", "127.0.0.1"}, nil)))
			wantDenied(t, e, kind, do(t, e.addr, kind, host), host, ReasonNotAllowed)
			e.srv.SetRules(mustRules(t, netOf([]string{host}, nil)))
			wantOK(t, do(t, e.addr, kind, host), "origin v6")
			// localhost:PORT dials ::1 when 127.0.0.1 refuses.
			e.srv.SetRules(mustRules(t, netOf([]string{fmt.Sprintf("localhost:%d", port)}, nil)))
			wantOK(t, do(t, e.addr, kind, fmt.Sprintf("localhost:%d", port)), "origin v6")
		})
	}
}

func TestHostOwnAddressRefused(t *testing.T) {
	var local atomic.Value
	local.Store([]netip.Addr{netip.MustParseAddr(addrAllowed)})
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)), func(s *Server) {
		s.LocalAddrs = func() ([]netip.Addr, error) { return local.Load().([]netip.Addr), nil }
	})
	wantDenied(t, e, "connect", do(t, e.addr, "connect", "allowed.test:443"), "allowed.test:443", "an address of this host")
	local.Store([]netip.Addr(nil))
	wantOK(t, do(t, e.addr, "connect", "allowed.test:443"), "origin allowed")
}

// When the host's own addresses cannot be read, an allowed name is
// refused rather than dialled: the check counted an error as "not one of
// ours", and a command that used up moat's descriptors (so that the
// netlink socket InterfaceAddrs needs could not be opened) reached the
// host's own address through an allowed name (found by attack pass 63).
func TestHostAddressesUnknownRefused(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)), func(s *Server) {
		s.LocalAddrs = func() ([]netip.Addr, error) {
			if fail.Load() {
				return nil, errors.New("too many open files")
			}
			return nil, nil
		}
	})
	for _, kind := range kinds {
		wantDenied(t, e, kind, do(t, e.addr, kind, "allowed.test:443"), "allowed.test:443", "the host's own addresses could not be read")
	}
	fail.Store(false)
	wantOK(t, do(t, e.addr, "connect", "allowed.test:443"), "origin allowed")
}

// The same with the default reader (net.InterfaceAddrs): a failed read is
// refused and not cached, so the next request reads the addresses again
// and still finds the host's own. The failure had been cached as an empty
// set for five seconds, and the attack's next request, once it had freed
// its descriptors, was dialled to the host's address.
func TestHostAddressesErrorNotCached(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	defer func(f func() ([]net.Addr, error)) { interfaceAddrs = f }(interfaceAddrs)
	interfaceAddrs = func() ([]net.Addr, error) {
		if fail.Load() {
			return nil, &net.OpError{Op: "socket", Err: syscall.EMFILE}
		}
		return []net.Addr{&net.IPNet{IP: net.ParseIP(addrAllowed), Mask: net.CIDRMask(32, 32)}}, nil
	}
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)), func(s *Server) { s.LocalAddrs = nil })
	wantDenied(t, e, "connect", do(t, e.addr, "connect", "allowed.test:443"), "allowed.test:443", "the host's own addresses could not be read")
	fail.Store(false)
	wantDenied(t, e, "connect", do(t, e.addr, "connect", "allowed.test:443"), "allowed.test:443", "an address of this host")
}

func TestWildcardAllowsSubdomains(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"*.allowed.test"}, nil)))
	for _, kind := range kinds {
		wantOK(t, do(t, e.addr, kind, "www.allowed.test:80"), "origin allowed")
		wantOK(t, do(t, e.addr, kind, "WWW.Allowed.Test.:80"), "origin allowed")
	}
}

func TestManagedOnly(t *testing.T) {
	n := policy.Network{
		AllowedDomains: []policy.DomainRule{
			{Pattern: "allowed.test", Managed: true},
			{Pattern: "denied.test"}, // user entry: does not count
		},
		AllowManagedDomainsOnly: true,
	}
	e := newEnv(t, mustRules(t, n))
	for _, kind := range kinds {
		wantOK(t, do(t, e.addr, kind, "allowed.test:80"), "origin allowed")
		wantDenied(t, e, kind, do(t, e.addr, kind, "denied.test:80"), "denied.test:80", ReasonNotAllowed)
	}
	// The same list without managed-only allows the user entry.
	n.AllowManagedDomainsOnly = false
	e.srv.SetRules(mustRules(t, n))
	wantOK(t, do(t, e.addr, "connect", "denied.test:80"), "origin denied")

	// An update cannot widen past managed-only, nor drop managed denies.
	cur := policy.Network{
		AllowedDomains:          []policy.DomainRule{{Pattern: "allowed.test", Managed: true}},
		DeniedDomains:           []policy.DomainRule{{Pattern: "bad.allowed.test", Managed: true, Reason: "managed"}},
		AllowManagedDomainsOnly: true,
		StrictAllowlist:         true,
	}
	upd := policy.Network{
		AllowedDomains: []policy.DomainRule{{Pattern: "denied.test", Managed: true}}, // claims to be managed
	}
	merged := MergeUpdate(cur, upd)
	if !merged.AllowManagedDomainsOnly || !merged.StrictAllowlist {
		t.Fatalf("update turned a switch off: %+v", merged)
	}
	e.srv.SetRules(mustRules(t, merged))
	wantDenied(t, e, "connect", do(t, e.addr, "connect", "denied.test:80"), "denied.test:80", ReasonNotAllowed)
	wantOK(t, do(t, e.addr, "connect", "allowed.test:80"), "origin allowed")
	wantDenied(t, e, "connect", do(t, e.addr, "connect", "bad.allowed.test:80"), "", "managed")
}

func TestAsk(t *testing.T) {
	var asked atomic.Int32
	var answer atomic.Bool
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, []string{"denied.test"})), func(s *Server) {
		s.AskTimeout = 300 * time.Millisecond
		s.Ask = func(ctx context.Context, host string, port int) (bool, error) {
			asked.Add(1)
			if host == "slow.test" {
				<-ctx.Done()
				return true, nil
			}
			return answer.Load(), nil
		}
	})
	e.res.set("unlisted.test", addrAllowed)
	e.res.set("slow.test", addrAllowed)
	wantDenied(t, e, "connect", do(t, e.addr, "connect", "unlisted.test:80"), "unlisted.test:80", "not approved")
	answer.Store(true)
	wantOK(t, do(t, e.addr, "connect", "unlisted.test:80"), "origin allowed")
	wantDenied(t, e, "connect", do(t, e.addr, "connect", "slow.test:80"), "slow.test:80", "no answer in time")
	// Listed hosts are never asked about.
	n := asked.Load()
	wantDenied(t, e, "connect", do(t, e.addr, "connect", "denied.test:80"), "", "denied.test")
	wantOK(t, do(t, e.addr, "connect", "allowed.test:80"), "origin allowed")
	if asked.Load() != n {
		t.Fatal("Ask was consulted for a listed host")
	}
	// Strict: never asked.
	strict := netOf([]string{"allowed.test"}, nil)
	strict.StrictAllowlist = true
	e.srv.SetRules(mustRules(t, strict))
	wantDenied(t, e, "connect", do(t, e.addr, "connect", "unlisted.test:80"), "", ReasonNotAllowed)
	if asked.Load() != n {
		t.Fatal("Ask was consulted under a strict allow list")
	}
}

func TestNoSecondLookup(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)))
	before := e.res.calls.Load()
	wantOK(t, do(t, e.addr, "connect", "allowed.test:80"), "origin allowed")
	if got := e.res.calls.Load() - before; got != 1 {
		t.Fatalf("%d lookups for one connection, want 1", got)
	}
	// The test dialer fails any dial of a name, so a pass above also
	// shows that the checked address was dialled.
}

// TestResolvesFullyQualified: the proxy resolves the name it judged and no
// other. The host's resolver applies resolv.conf's search list to a name
// without a trailing dot: with "search corp.test" and *.allowed.test
// allowed, api.allowed.test (unknown to DNS) reached
// api.allowed.test.corp.test, a host the policy never named (found by an
// attack pass). Every way in (forward, CONNECT, SOCKS5, a kept-alive
// connection) goes through the one lookup; names written with a trailing
// dot and IP literals are covered too.
func TestResolvesFullyQualified(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"*.allowed.test", "203.0.113.10"}, nil)))
	e.res.search = "corp.test"
	e.res.set("api.allowed.test.corp.test", addrDenied) // the search list's answer
	for _, kind := range kinds {
		for _, h := range []string{"api.allowed.test:80", "api.allowed.test.:80"} {
			r := do(t, e.addr, kind, h)
			if r.ok() || e.denied.hits.Load() != 0 {
				t.Fatalf("%s %s: %+v; the origin behind the search list's name was reached (%d hits)", kind, h, r, e.denied.hits.Load())
			}
			if kind == "socks" {
				if r.socks == 0 || r.socks == socksNotAllowed {
					t.Fatalf("%s %s: SOCKS reply %#x, want host unreachable", kind, h, r.socks)
				}
			} else if r.status != http.StatusBadGateway {
				t.Fatalf("%s %s: %d, want 502 (no such host)", kind, h, r.status)
			}
		}
	}
	for _, n := range e.res.askedNames() {
		if n != "api.allowed.test." {
			t.Errorf("resolver asked for %q, want only \"api.allowed.test.\"", n)
		}
	}

	// A name that resolves does, written with or without its dot; the
	// name asked has exactly one.
	before := len(e.res.askedNames())
	for _, kind := range kinds {
		wantOK(t, do(t, e.addr, kind, "www.allowed.test:80"), "origin allowed")
		wantOK(t, do(t, e.addr, kind, "www.allowed.test.:80"), "origin allowed")
	}
	for _, n := range e.res.askedNames()[before:] {
		if n != "www.allowed.test." {
			t.Errorf("resolver asked for %q, want \"www.allowed.test.\"", n)
		}
	}

	// On a kept-alive connection every request is resolved the same way.
	c := dialProxy(t, e.addr)
	defer c.Close()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET http://www.allowed.test/keep HTTP/1.1\r\nHost: www.allowed.test\r\n\r\n")
	wantOK(t, readResult(t, br, "GET"), "origin allowed /keep")
	fmt.Fprintf(c, "GET http://api.allowed.test/keep HTTP/1.1\r\nHost: api.allowed.test\r\n\r\n")
	if r := readResult(t, br, "GET"); r.status != http.StatusBadGateway || e.denied.hits.Load() != 0 {
		t.Fatalf("kept-alive request to api.allowed.test: %+v, want 502", r)
	}

	// IP literals are never asked of the resolver.
	before = len(e.res.askedNames())
	for _, kind := range kinds {
		wantOK(t, do(t, e.addr, kind, "203.0.113.10:80"), "origin allowed")
	}
	if got := e.res.askedNames()[before:]; len(got) != 0 {
		t.Errorf("IP literals were resolved: %q", got)
	}
}

func TestLiveSwapOnKeptAliveConnection(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)))
	c := dialProxy(t, e.addr)
	defer c.Close()
	br := bufio.NewReader(c)
	get := func() result {
		fmt.Fprintf(c, "GET http://allowed.test/keep HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
		return readResult(t, br, "GET")
	}
	wantOK(t, get(), "origin allowed /keep")
	wantOK(t, get(), "origin allowed /keep")
	if n := e.allowed.conns.Load(); n != 1 {
		t.Fatalf("origin saw %d connections for two kept-alive requests, want 1", n)
	}
	e.srv.SetRules(mustRules(t, netOf([]string{"denied.test"}, nil)))
	r := get()
	if r.status != http.StatusForbidden {
		t.Fatalf("after the swap: %+v, want 403", r)
	}
}

func TestProxyAuth(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)), func(s *Server) { s.Credential = "moat:s3cret" })
	good := "Proxy-Authorization: Basic " + b64("moat:s3cret") + "\r\n"
	bad := "Proxy-Authorization: Basic " + b64("moat:wrong") + "\r\n"
	for _, hdr := range []string{"", bad, "Proxy-Authorization: Bearer x\r\n", "Proxy-Authorization: Basic !!!\r\n"} {
		for _, r := range []result{viaConnect(t, e.addr, "allowed.test:80", hdr), viaForward(t, e.addr, "allowed.test", "/", hdr)} {
			if r.status != http.StatusProxyAuthRequired || r.header.Get("Proxy-Authenticate") != `Basic realm="moat"` {
				t.Fatalf("header %q: got %d %v, want 407 with Proxy-Authenticate", hdr, r.status, r.header)
			}
		}
	}
	wantOK(t, viaConnect(t, e.addr, "allowed.test:80", good), "origin allowed")
	wantOK(t, viaForward(t, e.addr, "allowed.test", "/", good), "origin allowed")

	if r := viaSOCKS(t, e.addr, 3, "allowed.test", 80, ""); r.socks != 0xff {
		t.Fatalf("SOCKS without credential: %+v, want no acceptable method (0xff)", r)
	}
	if r := viaSOCKS(t, e.addr, 3, "allowed.test", 80, "moat:wrong"); r.socks != 0xfe {
		t.Fatalf("SOCKS with a wrong credential: %+v, want auth failure", r)
	}
	wantOK(t, viaSOCKS(t, e.addr, 3, "allowed.test", 80, "moat:s3cret"), "origin allowed")
	// Auth failures are not violations of the network policy.
	if n := len(e.violations()); n != 0 {
		t.Fatalf("%d violations for auth failures", n)
	}
}

func b64(s string) string {
	const enc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var out []byte
	b := []byte(s)
	for len(b) > 0 {
		var v uint32
		n := min(3, len(b))
		for i := 0; i < 3; i++ {
			v <<= 8
			if i < n {
				v |= uint32(b[i])
			}
		}
		for i := 0; i < 4; i++ {
			if i <= n {
				out = append(out, enc[(v>>(18-6*i))&63])
			} else {
				out = append(out, '=')
			}
		}
		b = b[n:]
	}
	return string(out)
}

func TestBadGateway(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test", "nowhere.test", "closed.test", "garbage.test"}, nil)))
	// A closed port on loopback, reached through a documentation address.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := l.Addr().String()
	l.Close()
	e.res.set("closed.test", "203.0.113.40")
	e.setRoute("203.0.113.40", closedAddr)
	e.res.set("garbage.test", addrGarbage)
	e.setRoute(addrGarbage, garbageServer(t))

	for _, kind := range []string{"forward", "connect"} {
		for _, host := range []string{"nowhere.test:80", "closed.test:80"} {
			r := do(t, e.addr, kind, host)
			if r.status != http.StatusBadGateway || r.header.Get("X-Proxy-Error") != "upstream-failed" {
				t.Fatalf("%s %s: got %+v, want 502", kind, host, r)
			}
		}
	}
	if r := viaForward(t, e.addr, "garbage.test", "/"); r.status != http.StatusBadGateway {
		t.Fatalf("garbage upstream: %+v, want 502", r)
	}
	if r := viaSOCKS(t, e.addr, 3, "closed.test", 80, ""); r.socks != socksConnRefused {
		t.Fatalf("SOCKS to a closed port: %+v, want connection refused", r)
	}
	if r := viaSOCKS(t, e.addr, 3, "nowhere.test", 80, ""); r.socks != socksHostUnreachable {
		t.Fatalf("SOCKS to an unresolvable name: %+v, want host unreachable", r)
	}
	if len(e.violations()) != 0 {
		t.Fatalf("upstream failures recorded as violations: %v", e.violations())
	}
	// The proxy is still up.
	wantOK(t, do(t, e.addr, "forward", "allowed.test:80"), "origin allowed")
}

func TestSOCKSReplies(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test", addrAllowed}, nil)))
	wantOK(t, viaSOCKS(t, e.addr, 1, addrAllowed, 80, ""), "origin allowed")
	wantOK(t, viaSOCKS(t, e.addr, 3, "allowed.test", 80, ""), "origin allowed")

	raw := func(msg []byte, n int) []byte {
		c := dialProxy(t, e.addr)
		defer c.Close()
		c.Write(msg)
		b := make([]byte, n)
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatalf("reading %d bytes: %v", n, err)
		}
		return b
	}
	// UDP ASSOCIATE and BIND: command not supported.
	for _, cmd := range []byte{2, 3} {
		b := raw([]byte{5, 1, 0, 5, cmd, 0, 1, 0, 0, 0, 0, 0, 0}, 12)
		if b[3] != socksCmdNotSupported {
			t.Fatalf("command %d: reply %#x, want %#x", cmd, b[3], socksCmdNotSupported)
		}
	}
	// Unknown address type.
	if b := raw([]byte{5, 1, 0, 5, 1, 0, 9}, 4); b[3] != socksAtypNotSupported {
		t.Fatalf("bad address type: reply %#x", b[3])
	}
	// Only GSSAPI offered: no acceptable method.
	if b := raw([]byte{5, 1, 1}, 2); b[1] != 0xff {
		t.Fatalf("no acceptable method: %#x", b[1])
	}
	// Empty name.
	if r := viaSOCKS(t, e.addr, 3, "", 80, ""); r.socks != socksNotAllowed {
		t.Fatalf("empty name: %+v", r)
	}
}

func TestMalformedRequests(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)), func(s *Server) {
		s.HeaderTimeout = 300 * time.Millisecond
		s.MaxHeaderBytes = 8 << 10
	})
	send := func(raw string) string {
		c := dialProxy(t, e.addr)
		defer c.Close()
		io.WriteString(c, raw)
		b, _ := io.ReadAll(c)
		return string(b)
	}
	for _, tc := range []struct{ name, raw, want string }{
		{"garbage", "HELLO THERE\r\n\r\n", "400 Bad Request"},
		{"binary", "\x16\x03\x01\x00\xff\x01\x00\x00\r\n\r\n", "400 Bad Request"},
		{"origin-form", "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "400 Bad Request"},
		{"https absolute-URI", "GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "501 Not Implemented"},
		{"CONNECT without host", "CONNECT :80 HTTP/1.1\r\n\r\n", "403 Forbidden"},
		{"CONNECT bad port", "CONNECT allowed.test:99999 HTTP/1.1\r\nHost: allowed.test:99999\r\n\r\n", "403 Forbidden"},
		{"CONNECT userinfo is dropped, the host is checked", "CONNECT user@denied.test:80 HTTP/1.1\r\nHost: x\r\n\r\n", "403 Forbidden"},
		{"NUL in host", "CONNECT allowed.test\x00.evil:80 HTTP/1.1\r\nHost: x\r\n\r\n", "400 Bad Request"},
		{"oversized header", "GET http://allowed.test/ HTTP/1.1\r\nX: " + strings.Repeat("a", 20<<10) + "\r\n\r\n", "431 Request Header Fields Too Large"},
		{"endless header line", "GET http://allowed.test/ HTTP/1.1\r\nX: " + strings.Repeat("a", 100<<10), "431"},
		{"slow request", "GET http://allowed.test/ HTTP/1.1\r\n", ""},
		{"SOCKS4", "\x04\x01\x00\x50\x7f\x00\x00\x01\x00", "400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := send(tc.raw)
			if !strings.Contains(got, tc.want) || (tc.want == "" && got != "") {
				t.Fatalf("answer %q, want it to contain %q", truncate(got, 200), tc.want)
			}
		})
	}
	// Still serving.
	wantOK(t, do(t, e.addr, "forward", "allowed.test:80"), "origin allowed")
}

func TestSlowClientDoesNotBlockOthers(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)), func(s *Server) { s.HeaderTimeout = 2 * time.Second })
	var slow []net.Conn
	for i := 0; i < 20; i++ {
		c := dialProxy(t, e.addr)
		io.WriteString(c, "GET http://allowed.test/ HTTP/1.1\r\n") // and nothing more
		slow = append(slow, c)
	}
	for i := 0; i < 5; i++ {
		wantOK(t, do(t, e.addr, kinds[i%3], "allowed.test:80"), "origin allowed")
	}
	for _, c := range slow {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("slow client: %v (want the proxy to close it)", err)
		}
		c.Close()
	}
}

func TestClientAbort(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)))
	for i := 0; i < 20; i++ {
		// Abort mid-download on each path.
		c := dialProxy(t, e.addr)
		switch i % 3 {
		case 0:
			fmt.Fprintf(c, "GET http://allowed.test/?size=%d HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 64<<20)
		case 1:
			fmt.Fprintf(c, "CONNECT allowed.test:80 HTTP/1.1\r\n\r\nGET /?size=%d HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 64<<20)
		case 2:
			code, sc, br := socksHandshake(t, e.addr, 3, "allowed.test", 80, "")
			if code != 0 {
				t.Fatal(code)
			}
			c.Close()
			c = sc
			fmt.Fprintf(c, "GET /?size=%d HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 64<<20)
			br.Peek(1)
		}
		io.ReadFull(c, make([]byte, 1000))
		if tc, ok := c.(*net.TCPConn); ok && i%2 == 0 {
			tc.SetLinger(0) // reset instead of a clean close
		}
		c.Close()
		// And abort in the middle of a request header.
		c = dialProxy(t, e.addr)
		io.WriteString(c, "CONNECT allowed.test:80 HTTP/1.1\r\nHo")
		c.Close()
	}
	wantOK(t, do(t, e.addr, "connect", "allowed.test:80"), "origin allowed")
}

func TestHalfClose(t *testing.T) {
	// An echo server that answers only after its input ends.
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
		b, _ := io.ReadAll(c)
		c.Write([]byte("echo:" + string(b)))
	}()
	port := l.Addr().(*net.TCPAddr).Port
	e := newEnv(t, mustRules(t, netOf([]string{fmt.Sprintf("127.0.0.1:%d", port)}, nil)))
	c := dialProxy(t, e.addr)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\nearly data", port) // sent before the verdict
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	io.WriteString(c, "+late")
	c.(*net.TCPConn).CloseWrite()
	got, _ := io.ReadAll(br)
	if string(got) != "echo:early data+late" {
		t.Fatalf("got %q through a half-closed tunnel", got)
	}
}

func TestKeepAliveAndPost(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test", "www.allowed.test"}, nil)))
	proxyURL, _ := url.Parse("http://" + e.addr)
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for i := 0; i < 5; i++ {
		resp, err := client.Get("http://allowed.test/a")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "origin allowed /a" {
			t.Fatalf("got %q", b)
		}
	}
	if n := e.allowed.conns.Load(); n != 1 {
		t.Fatalf("origin saw %d connections for 5 requests, want keep-alive reuse", n)
	}
	resp, err := client.Post("http://www.allowed.test/p", "text/plain", strings.NewReader(strings.Repeat("x", 100000)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "origin allowed got 100000 bytes" {
		t.Fatalf("POST: %q", b)
	}
	// Chunked request body with Expect: 100-continue.
	req, _ := http.NewRequest("POST", "http://allowed.test/c", io.MultiReader(strings.NewReader("abc"), strings.NewReader("def")))
	req.Header.Set("Expect", "100-continue")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "origin allowed got 6 bytes" {
		t.Fatalf("chunked POST: %q", b)
	}
	// HEAD has no body but keeps its length.
	resp, err = client.Head("http://allowed.test/?size=12345")
	if err != nil || resp.ContentLength != 12345 {
		t.Fatalf("HEAD: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestUpgrade(t *testing.T) {
	// A server that switches to WebSocket and then echoes.
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
		if err != nil || req.Header.Get("Upgrade") != "websocket" {
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			return
		}
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		io.Copy(c, br)
	}()
	port := l.Addr().(*net.TCPAddr).Port
	e := newEnv(t, mustRules(t, netOf([]string{fmt.Sprintf("127.0.0.1:%d", port)}, nil)))
	c := dialProxy(t, e.addr)
	defer c.Close()
	fmt.Fprintf(c, "GET http://127.0.0.1:%d/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	io.WriteString(c, "ping")
	b := make([]byte, 4)
	if _, err := io.ReadFull(br, b); err != nil || string(b) != "ping" {
		t.Fatalf("echo after upgrade: %q %v", b, err)
	}
}

func TestConcurrentConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)))
	const n = 1000
	var wg sync.WaitGroup
	var okCount atomic.Int32
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			c, err := net.DialTimeout("tcp", e.addr, 10*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(60 * time.Second))
			path := fmt.Sprintf("/c%d", i)
			switch i % 3 {
			case 0:
				fmt.Fprintf(c, "GET http://allowed.test%s HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", path)
			case 1:
				fmt.Fprintf(c, "CONNECT allowed.test:80 HTTP/1.1\r\n\r\n")
			case 2:
				c.Write([]byte{5, 1, 0})
			}
			br := bufio.NewReader(c)
			switch i % 3 {
			case 1:
				resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
				if err != nil || resp.StatusCode != 200 {
					errs <- fmt.Errorf("CONNECT %d: %v %v", i, resp, err)
					return
				}
				fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", path)
			case 2:
				io.ReadFull(br, make([]byte, 2))
				c.Write([]byte{5, 1, 0, 3, 12})
				c.Write([]byte("allowed.test"))
				c.Write([]byte{0, 80})
				rep := make([]byte, 10)
				if _, err := io.ReadFull(br, rep); err != nil || rep[1] != 0 {
					errs <- fmt.Errorf("SOCKS %d: %v %v", i, rep, err)
					return
				}
				fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", path)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				errs <- fmt.Errorf("%d: %v", i, err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			if string(b) != "origin allowed "+path {
				errs <- fmt.Errorf("%d: got %q", i, b)
				return
			}
			okCount.Add(1)
		}(i)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if okCount.Load() != n {
		t.Fatalf("%d of %d connections succeeded", okCount.Load(), n)
	}
}

func TestCloseEndsActiveConnections(t *testing.T) {
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)))
	c := dialProxy(t, e.addr)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT allowed.test:80 HTTP/1.1\r\n\r\n")
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
		t.Fatal(resp, err)
	}
	idle := dialProxy(t, e.addr)
	defer idle.Close()
	done := make(chan struct{})
	go func() { e.srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	for _, x := range []io.Reader{br, idle} {
		if _, err := io.ReadAll(x); err != nil {
			t.Fatalf("after Close: %v", err)
		}
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := e.srv.Serve(l); err != ErrServerClosed {
		t.Fatalf("Serve after Close: %v", err)
	}
	if _, err := l.Accept(); err == nil {
		t.Fatal("Serve after Close left its listener open")
	}
}

func TestServeUnixListener(t *testing.T) {
	// Serve never assumes it made the listener, nor that it is TCP.
	dir := t.TempDir()
	l, err := net.Listen("unix", dir+"/p.sock")
	if err != nil {
		t.Skip(err)
	}
	e := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)))
	go e.srv.Serve(l)
	c, err := net.Dial("unix", dir+"/p.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT allowed.test:80 HTTP/1.1\r\n\r\nGET /u HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
	br := bufio.NewReader(c)
	http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	wantOK(t, readResult(t, br, "GET"), "origin allowed /u")
}

// A sandbox cannot take the process's descriptors with connections: a
// Server serves at most MaxConns at once, the next ones wait (in the
// listener's backlog) until one ends. A command that opened thousands of
// tunnels used up moat serve's descriptors, and its API and other sessions
// stopped answering (found by an attack pass).
func TestMaxConns(t *testing.T) {
	e := newEnv(t, rulesOf(t, []string{"allowed.test"}, nil), func(s *Server) { s.MaxConns = 2 })
	// Two connections that say nothing hold both slots.
	var held []net.Conn
	for i := 0; i < 2; i++ {
		held = append(held, dialProxy(t, e.addr))
	}
	// Let the proxy take them (a request on each would be served).
	time.Sleep(200 * time.Millisecond)
	third := dialProxy(t, e.addr)
	defer third.Close()
	fmt.Fprintf(third, "GET http://allowed.test/x HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
	third.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	br := bufio.NewReader(third)
	if _, err := br.Peek(1); err == nil {
		t.Fatal("a third connection was served while two held the slots")
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	if r := readResult(t, br, "GET"); !r.ok() {
		t.Fatalf("the waiting connection was not served once a slot freed: %+v", r)
	}
	held[1].Close()
}

// TestRefusedNamesNotResolved: a name the lists refuse (denied, or on
// neither list with nobody to ask) is never looked up, by any way in: a
// lookup of <secret>.evil.test would carry the secret to evil.test's name
// servers whatever the proxy answers (attack pass 48 checked this holds).
func TestRefusedNamesNotResolved(t *testing.T) {
	e := newEnv(t, rulesOf(t, []string{"*.allowed.test"}, []string{"secret.allowed.test"}))
	for _, name := range []string{"c2VjcmV0.evil.test", "secret.allowed.test", "SECRET.allowed.test.", "allowed.test"} {
		if r := viaForward(t, e.addr, name+":80", "/"); r.status != http.StatusForbidden {
			t.Errorf("forward %s: status %d, want 403", name, r.status)
		}
		if r := viaConnect(t, e.addr, name+":443"); r.status != http.StatusForbidden {
			t.Errorf("CONNECT %s: status %d, want 403", name, r.status)
		}
		if r := viaSOCKS(t, e.addr, 0x03, name, 443, ""); r.socks != 0x02 {
			t.Errorf("SOCKS5 %s: reply %d, want 2 (not allowed)", name, r.socks)
		}
	}
	if asked := e.res.askedNames(); len(asked) != 0 {
		t.Fatalf("refused names were looked up: %q", asked)
	}
}

// The proxy's connections leave the process descriptors for the rest of
// its work whatever the limit (attack pass 63: a floor of 512 connections,
// about 3,000 descriptors, used up a limit of a few thousand).
func TestSlotsForLeaveDescriptors(t *testing.T) {
	for _, limit := range []uint64{64, 256, 1024, 4096, 6144, 65536, 1 << 20} {
		n := uint64(slotsFor(limit))
		if limit >= 256 && 6*n > limit*3/4 {
			t.Errorf("limit %d: %d connections may take %d descriptors, more than three quarters", limit, n, 6*n)
		}
		if n < 16 {
			t.Errorf("limit %d: %d connections", limit, n)
		}
	}
	if n := slotsFor(1 << 20); n < DefaultMaxConns {
		t.Errorf("a large limit: %d connections, want at least %d", n, DefaultMaxConns)
	}
}

// The slots stand for a thread each as well: under any limit of threads
// a quarter of it (at most 1024) stays for the rest of the process, and
// the process's own limit is no more than Go's.
func TestThreadSlotsForLeaveThreads(t *testing.T) {
	for _, limit := range []int{64, 160, 4915, 10000, 1 << 20} {
		n := threadSlotsFor(limit)
		if limit >= 64 && limit-n < min(limit/4, 1024) {
			t.Errorf("limit %d threads: %d slots leave %d", limit, n, limit-n)
		}
		if n < 16 {
			t.Errorf("limit %d threads: %d slots", limit, n)
		}
	}
	if n := threadLimit(); n <= 0 || n > 10000 {
		t.Errorf("threadLimit() = %d, want at most Go's 10,000", n)
	}
}
