package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// parentConfig is a parsed policy.ParentProxy.
type parentConfig struct {
	http, https *parentServer
	noProxy     []noProxyEntry
}

// parentServer is one upstream HTTP proxy, spoken to with CONNECT.
type parentServer struct {
	addr       string // host:port
	serverName string // for TLS to the proxy itself
	tls        bool
	auth       string // "Basic ..." or ""
}

// newParentConfig validates a parent proxy configuration. URLs are
// "http://[user:pass@]host[:port]" (port 1080 by default, as curl) or
// "https://..." (TLS to the proxy, port 443 by default); a bare
// "host:port" means http.
func newParentConfig(p *policy.ParentProxy) (*parentConfig, error) {
	pc := &parentConfig{}
	var err error
	if p.HTTP != "" {
		if pc.http, err = parseParentURL(p.HTTP); err != nil {
			return nil, fmt.Errorf("netproxy: parentProxy.http: %w", err)
		}
	}
	if p.HTTPS != "" {
		if pc.https, err = parseParentURL(p.HTTPS); err != nil {
			return nil, fmt.Errorf("netproxy: parentProxy.https: %w", err)
		}
	}
	for _, e := range p.NoProxy {
		for _, f := range strings.Split(e, ",") {
			if f = strings.TrimSpace(f); f != "" {
				pc.noProxy = append(pc.noProxy, parseNoProxy(f))
			}
		}
	}
	if pc.http == nil && pc.https == nil {
		return nil, nil
	}
	return pc, nil
}

func parseParentURL(raw string) (*parentServer, error) {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	ps := &parentServer{}
	port := "1080"
	switch u.Scheme {
	case "http":
	case "https":
		ps.tls, port = true, "443"
	default:
		return nil, fmt.Errorf("unsupported proxy scheme %q (want http or https)", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%q names no host", raw)
	}
	if u.Port() != "" {
		port = u.Port()
	}
	ps.addr = net.JoinHostPort(u.Hostname(), port)
	ps.serverName = u.Hostname()
	if u.User != nil {
		pw, _ := u.User.Password()
		ps.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))
	}
	return ps, nil
}

// noProxyEntry is one NO_PROXY element: "*", a CIDR, an IP, or a domain
// (".example.com", "*.example.com" and "example.com" all cover the domain
// and its subdomains, as curl reads them), with an optional port.
type noProxyEntry struct {
	all    bool
	prefix netip.Prefix
	domain string
	port   int
}

func parseNoProxy(s string) noProxyEntry {
	if s == "*" {
		return noProxyEntry{all: true}
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return noProxyEntry{prefix: p.Masked()}
	}
	var e noProxyEntry
	host := s
	if h, p, err := net.SplitHostPort(s); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			host, e.port = h, n
		}
	}
	host = strings.TrimPrefix(strings.TrimPrefix(host, "*"), ".")
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		a = a.Unmap()
		e.prefix = netip.PrefixFrom(a, a.BitLen())
		return e
	}
	if c, err := policy.CanonicalHost(host); err == nil {
		e.domain = c
	} else {
		e.domain = strings.ToLower(host)
	}
	return e
}

func (e noProxyEntry) match(host string, port int) bool {
	if e.port != 0 && e.port != port {
		return false
	}
	switch {
	case e.all:
		return true
	case e.prefix.IsValid():
		a, err := netip.ParseAddr(host)
		return err == nil && e.prefix.Contains(a.Unmap())
	case e.domain != "":
		return host == e.domain || strings.HasSuffix(host, "."+e.domain)
	}
	return false
}

// forTarget picks the parent proxy for a canonical destination, or nil
// for a direct connection.
func (pc *parentConfig) forTarget(host string, port int, plainHTTP bool) *parentServer {
	if pc == nil {
		return nil
	}
	for _, e := range pc.noProxy {
		if e.match(host, port) {
			return nil
		}
	}
	if plainHTTP && pc.http != nil || pc.https == nil {
		return pc.http
	}
	return pc.https
}

// connect opens a tunnel to t through the parent with CONNECT. The parent
// is given the host name: it resolves in its own network.
func (p *parentServer) connect(ctx context.Context, s *Server, t *target) (*upstream, error) {
	op := "connect " + t.String() + " via parent proxy " + p.addr
	c, err := s.dialRaw(ctx, p.addr)
	if err != nil {
		return nil, &upstreamError{op, err}
	}
	deadline := time.Now().Add(orDefault(s.DialTimeout, DefaultDialTimeout))
	c.SetDeadline(deadline)
	if p.tls {
		tc := tls.Client(c, &tls.Config{ServerName: p.serverName})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, &upstreamError{op, err}
		}
		c = tc
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", t, t)
	if p.auth != "" {
		fmt.Fprintf(&b, "Proxy-Authorization: %s\r\n", p.auth)
	}
	b.WriteString("\r\n")
	if _, err := c.Write([]byte(b.String())); err != nil {
		c.Close()
		return nil, &upstreamError{op, err}
	}
	br := bufio.NewReaderSize(c, 4096)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, &upstreamError{op, fmt.Errorf("bad answer: %w", err)}
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, &upstreamError{op, fmt.Errorf("parent proxy answered %s", resp.Status)}
	}
	c.SetDeadline(time.Time{})
	up := &upstream{conn: c}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		up.pending = append([]byte(nil), b...)
	}
	return up, nil
}

// ParentFromEnvironment builds a parent proxy from the proxy variables of
// moat's own environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, either case),
// as srt falls back to them when settings name no parent proxy. It returns
// nil when neither proxy variable is set. Pass os.Getenv.
func ParentFromEnvironment(getenv func(string) string) *policy.ParentProxy {
	get := func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return getenv(strings.ToLower(k))
	}
	p := &policy.ParentProxy{HTTP: get("HTTP_PROXY"), HTTPS: get("HTTPS_PROXY")}
	if p.HTTP == "" && p.HTTPS == "" {
		return nil
	}
	if np := get("NO_PROXY"); np != "" {
		p.NoProxy = strings.Split(np, ",")
	}
	return p
}
