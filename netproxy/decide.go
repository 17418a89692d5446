package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// denial is a refused destination (403, SOCKS 0x02, a violation).
type denial struct {
	reason string
	// dest is what was refused, unlisted whether it was on neither list
	// (then the settings that allow it are worth naming).
	dest     string
	unlisted bool
}

func (d *denial) Error() string { return d.reason }

// body is the one line a refused HTTP client reads: moat refused it, why,
// and for a host on neither list, which settings allow it.
func (d *denial) body() string {
	b := "moat's sandbox network policy refused " + d.dest + ": " + d.reason
	if d.unlisted {
		host, _, _ := strings.Cut(d.dest, ":")
		if strings.HasPrefix(d.dest, "[") {
			host = strings.TrimPrefix(strings.SplitN(d.dest, "]", 2)[0], "[")
		}
		b += " (to allow it: network.allowedDomains in the srt settings file, or WebFetch(domain:" + host + ") in Claude Code's permissions.allow)"
	}
	return b
}

// upstreamError is a failure to reach an allowed destination (502, SOCKS
// host unreachable / refused).
type upstreamError struct {
	op  string
	err error
}

func (e *upstreamError) Error() string { return e.op + ": " + e.err.Error() }
func (e *upstreamError) Unwrap() error { return e.err }

// target is an authorised destination: the canonical host and port and
// either the checked addresses to dial or the parent proxy to go through.
type target struct {
	host  string
	port  int
	addrs []netip.Addr
	via   *parentServer
}

func (t *target) String() string { return hostPort(t.host, t.port) }

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// authorize runs the whole decision for host:port, in srt's order:
// malformed host, canonical form, deny list, allow list, ask; then name
// resolution and the address checks. A *denial has been reported as a
// violation; other errors are upstream failures.
//
// plainHTTP selects the parent proxy for forwarded http:// requests
// (ParentProxy.HTTP first) rather than for tunnels (ParentProxy.HTTPS
// first).
func (s *Server) authorize(ctx context.Context, rawHost string, port int, plainHTTP bool) (*target, error) {
	host, err := policy.CanonicalHost(rawHost)
	if err != nil || port < 1 || port > 65535 {
		d := &denial{reason: "malformed host", dest: hostPort(truncate(rawHost, 255), port)}
		s.violation(d.dest, d.reason)
		return nil, d
	}
	dest := hostPort(host, port)
	rules := s.CurrentRules()
	v, ru := rules.check(host, port)
	switch v {
	case policy.Deny:
		d := &denial{reason: ru.denyReason(), dest: dest}
		s.violation(dest, d.reason)
		return nil, d
	case policy.Passthrough:
		if reason, ok := s.ask(ctx, rules, host, port); !ok {
			d := &denial{reason: reason, dest: dest, unlisted: true}
			s.violation(dest, d.reason)
			return nil, d
		}
	}
	s.logger().Debug("allowed", "verdict", "allow", "host", dest)

	t := &target{host: host, port: port}
	if p := s.parent.forTarget(host, port, plainHTTP); p != nil {
		t.via = p
	}
	localhost := ru != nil && !ru.pat.Wildcard && ru.pat.Host == "localhost"
	var addrs []netip.Addr
	switch a, err := netip.ParseAddr(host); {
	case err == nil:
		addrs = []netip.Addr{a}
	case host == "localhost":
		// Never asked of DNS: localhost is loopback.
		addrs = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
	default:
		rctx, cancel := context.WithTimeout(ctx, orDefault(s.DialTimeout, DefaultDialTimeout))
		addrs, err = s.resolver().LookupNetIP(rctx, "ip", fqdn(host))
		cancel()
		if err != nil || len(addrs) == 0 {
			if t.via != nil {
				// The parent proxy resolves names in its own network;
				// the host may have no resolver for them at all.
				return t, nil
			}
			if err == nil {
				err = errors.New("no addresses")
			}
			return nil, &upstreamError{"resolve " + host, err}
		}
	}

	var keep []netip.Addr
	var refused []string
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		if why := s.refuseAddr(rules, a, port, localhost); why != "" {
			refused = append(refused, a.String()+": "+why)
			continue
		}
		keep = append(keep, a)
	}
	if len(keep) == 0 || (t.via != nil && len(refused) > 0) {
		reason := fmt.Sprintf("%s resolves to refused addresses (%s)", host, strings.Join(refused, "; "))
		if _, err := netip.ParseAddr(host); err == nil || host == "localhost" {
			reason = fmt.Sprintf("address refused (%s)", strings.Join(refused, "; "))
		}
		d := &denial{reason: reason, dest: dest}
		s.violation(dest, d.reason)
		return nil, d
	}
	t.addrs = keep
	return t, nil
}

// fqdn is the fully qualified form of a canonical host name (which has no
// trailing dot): the name the policy judged, and no other. Without the
// dot, the host's resolver would also try it below each domain of
// resolv.conf's search list: with "search corp.test" and *.allowed.test
// allowed, api.allowed.test (unknown to DNS) reached
// api.allowed.test.corp.test (found by an attack pass).
func fqdn(host string) string {
	if strings.HasSuffix(host, ".") {
		return host
	}
	return host + "."
}

// refuseAddr says why a resolved address may not be dialled, or "".
func (s *Server) refuseAddr(rules *Rules, a netip.Addr, port int, localhost bool) string {
	if why, ok := rules.addrDenied(a, port); ok {
		return why
	}
	if rules.addrExempt(a, port) || (localhost && a.IsLoopback()) {
		return ""
	}
	if what := policy.SpecialAddr(a); what != "" {
		return what
	}
	switch local, err := s.isLocalAddr(a); {
	case err != nil:
		// Unknown is refused: the check used to count an error as "not
		// ours", and a command that used up moat's descriptors (the
		// netlink socket could not be opened) reached the host's own
		// address through an allowed name (found by attack pass 63).
		return "the host's own addresses could not be read (" + err.Error() + ")"
	case local:
		return "an address of this host"
	}
	return ""
}

// ask consults the Ask callback for a host on neither list.
func (s *Server) ask(ctx context.Context, rules *Rules, host string, port int) (string, bool) {
	if rules.Strict() || s.Ask == nil {
		return ReasonNotAllowed, false
	}
	ctx, cancel := context.WithTimeout(ctx, orDefault(s.AskTimeout, DefaultAskTimeout))
	defer cancel()
	type answer struct {
		ok  bool
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		ok, err := s.Ask(ctx, host, port)
		ch <- answer{ok, err}
	}()
	select {
	case a := <-ch:
		switch {
		case a.err != nil:
			return ReasonNotAllowed + " (ask failed: " + a.err.Error() + ")", false
		case !a.ok:
			return ReasonNotAllowed + " (not approved)", false
		}
		return "", true
	case <-ctx.Done():
		return ReasonNotAllowed + " (no answer in time)", false
	}
}

func (s *Server) resolver() Resolver {
	if s.Resolver != nil {
		return s.Resolver
	}
	return net.DefaultResolver
}

func (s *Server) dialRaw(ctx context.Context, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, orDefault(s.DialTimeout, DefaultDialTimeout))
	defer cancel()
	if s.Dial != nil {
		return s.Dial(ctx, "tcp", addr)
	}
	d := net.Dialer{KeepAlive: 30 * time.Second}
	return d.DialContext(ctx, "tcp", addr)
}

// upstream is an open outbound connection; pending holds bytes a parent
// proxy sent after its CONNECT answer.
type upstream struct {
	conn    net.Conn
	pending []byte
}

// dial connects to an authorised target, and closes that connection when
// ctx ends. ctx is the client connection's: it ends when the client's is
// served, and when the Server closes. Closing the client's connection
// alone did not end a tunnel whose client had half-closed it (EOF, passed
// on as CloseWrite) and whose upstream stayed silent: it waited on the
// upstream for good, and with it Close, the end of the run, and the
// connection's slot of the process (attack pass 69: the sandbox's
// commands exited, moatd kept their tunnels and their descriptors).
func (s *Server) dial(ctx context.Context, t *target) (*upstream, error) {
	u, err := s.dialTarget(ctx, t)
	if err == nil {
		context.AfterFunc(ctx, func() { u.conn.Close() })
	}
	return u, err
}

// dialTarget connects to an authorised target: the checked addresses in
// order (never a second lookup), or through the parent proxy.
func (s *Server) dialTarget(ctx context.Context, t *target) (*upstream, error) {
	if t.via != nil {
		return t.via.connect(ctx, s, t)
	}
	var errs []error
	for _, a := range t.addrs {
		c, err := s.dialRaw(ctx, netip.AddrPortFrom(a, uint16(t.port)).String())
		if err == nil {
			return &upstream{conn: c}, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, &upstreamError{"connect " + t.String(), errors.Join(errs...)}
}

// localCache caches the host's interface addresses.
type localCache struct {
	mu    sync.Mutex
	at    time.Time
	addrs map[netip.Addr]bool
}

const localCacheTTL = 5 * time.Second

// interfaceAddrs reads the host's interface addresses (a variable for
// tests, which make it fail).
var interfaceAddrs = net.InterfaceAddrs

// isLocalAddr reports whether a is one of the host's own addresses. An
// error means the addresses are unknown; it is never cached, so the next
// call reads them again.
func (s *Server) isLocalAddr(a netip.Addr) (bool, error) {
	if s.LocalAddrs != nil {
		as, err := s.LocalAddrs()
		if err != nil {
			return false, err
		}
		for _, x := range as {
			if x.Unmap().WithZone("") == a {
				return true, nil
			}
		}
		return false, nil
	}
	c := &s.local
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addrs == nil || time.Since(c.at) > localCacheTTL {
		ifas, err := interfaceAddrs()
		if err != nil {
			c.addrs = nil
			return false, err
		}
		addrs := make(map[netip.Addr]bool)
		for _, ifa := range ifas {
			if pn, ok := ifa.(*net.IPNet); ok {
				if x, ok := netip.AddrFromSlice(pn.IP); ok {
					addrs[x.Unmap()] = true
				}
			}
		}
		c.addrs, c.at = addrs, time.Now()
	}
	return c.addrs[a], nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
