package netproxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// sniffHTTP reads on from the client's first bytes (not TLS, and before
// any of the upstream's) until it can tell whether they are an HTTP/1
// request: as long as they could be the start of a request line, up to
// its end. A tunnel to an allowed name that carried plain HTTP with
// another site's Host reached that site on a server that serves several
// by name (virtual hosting: domain fronting in clear text), which the
// proxy can read. Other protocols are tunnelled as they are, at the first
// byte that no request line has.
func (s *Server) sniffHTTP(host string, port int, client net.Conn, rc *recordingConn) ([]byte, firstVerdict) {
	limit := int(s.maxHeader())
	client.SetReadDeadline(time.Now().Add(helloTimeout))
	defer client.SetReadDeadline(time.Time{})
	var b [2048]byte
	for {
		if proxyProtocolHeader(rc.buf) {
			// A load balancer's header, a client's has no use for: a
			// server that takes one from its clients reads the HTTP
			// after it, which the line test would not see.
			s.violation(hostPort(host, port), "a PROXY protocol header in a tunnel, after which moat does not read")
			return nil, firstRefused
		}
		switch requestLineState(rc.buf) {
		case lineNotHTTP:
			return rc.buf, firstRaw
		case lineHTTP:
			return rc.buf, firstHTTP
		}
		if len(rc.buf) >= limit {
			break
		}
		n, err := rc.Read(b[:min(len(b), limit-len(rc.buf))])
		if n == 0 && err != nil {
			break
		}
	}
	// A request line moat could not read to its end: judged as one that
	// could not be read (relayHTTP refuses what it cannot parse).
	if len(rc.buf) >= limit {
		s.violation(hostPort(host, port), "an HTTP request line longer than "+strconv.Itoa(limit)+" bytes in a tunnel")
		return nil, firstRefused
	}
	return rc.buf, firstHTTP
}

// proxyProtocolHeader reports whether b starts with the PROXY protocol's
// version 1 ("PROXY ") or version 2 signature.
func proxyProtocolHeader(b []byte) bool {
	return bytes.HasPrefix(b, []byte("PROXY ")) || bytes.HasPrefix(b, []byte("\r\n\r\n\x00\r\nQUIT\n"))
}

// What a stream's first bytes say of an HTTP/1 request line.
const (
	lineMore    = iota // could still be one: read on
	lineHTTP           // one (or what a server may take for one)
	lineNotHTTP        // none
)

// requestLineState judges b, a stream's first bytes. Empty lines first are
// skipped, as servers do (RFC 9112 2.2), and blanks too (what a lenient
// server might skip; the parser refuses them). A request line is a method
// (a token), a blank, then anything to the end of the line: it is HTTP
// when a word after the method starts with "HTTP/" (any case) or it is
// HTTP/0.9's "GET /path" or a two-word line whose target is an absolute
// URI ("GET http://host/"); a line that is neither (a text protocol's
// command: "GET key") is not. The test is wide on purpose: what it takes
// for HTTP and the parser cannot read ends the tunnel.
func requestLineState(b []byte) int {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return lineMore
	}
	i := 0
	for i < len(b) && isTokenByte(b[i]) {
		i++
	}
	if i == len(b) {
		return lineMore
	}
	if i == 0 || (b[i] != ' ' && b[i] != '\t') {
		return lineNotHTTP
	}
	end := bytes.IndexByte(b, '\n')
	line := b
	if end >= 0 {
		line = b[:end]
	}
	// A NUL is in no server's request line, and in most binary
	// protocols' first bytes (a length): what has one is not HTTP. Other
	// control bytes are left to the parser, which refuses them.
	if bytes.IndexByte(line, 0) >= 0 {
		return lineNotHTTP
	}
	if end < 0 {
		return lineMore
	}
	f := strings.Fields(string(line))
	for _, w := range f[1:] {
		if strings.IndexFunc(w, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
			return lineHTTP
		}
	}
	for _, w := range f[1:] {
		if len(w) >= 5 && strings.EqualFold(w[:5], "HTTP/") {
			return lineHTTP
		}
	}
	if len(f) == 2 && (f[0] == "GET" && strings.HasPrefix(f[1], "/") || absoluteURI(f[1])) {
		// HTTP/0.9: no version, no headers. Its target in absolute form
		// names the site, and nginx serves "GET http://evil.test/" from
		// evil.test's server: tunnelled unread, it reached another site
		// than the one judged (attack pass 92).
		return lineHTTP
	}
	return lineNotHTTP
}

// absoluteURI reports whether w starts as a URI with a scheme and an
// authority ("http://...", any scheme): a request target that names a
// host, which no text protocol's argument of a two-word command looks
// like.
func absoluteURI(w string) bool {
	scheme, _, ok := strings.Cut(w, "://")
	if !ok || scheme == "" || !('a' <= scheme[0]|0x20 && scheme[0]|0x20 <= 'z') {
		return false
	}
	return !strings.ContainsFunc(scheme, func(r rune) bool {
		return !('a' <= r|0x20 && r|0x20 <= 'z' || '0' <= r && r <= '9' || r == '+' || r == '-' || r == '.')
	})
}

func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// relayHTTP serves a tunnel to host:port whose client speaks HTTP/1: each
// request is read, its Host judged (sameSiteAllowed, as a TLS server name
// is), and written to up again as the proxy frames it, so the server reads
// the requests the proxy judged; its answers are relayed the same way. A
// Host the rules do not allow there ends the tunnel with a 403 and a
// violation. A WebSocket upgrade, once the server switches, is tunnelled
// as it is; h2c and other upgrades are not relayed, and HTTP/2 without
// TLS (prior knowledge), whose requests moat does not read, ends the
// tunnel. first is what the client sent so far; upFirst gives the
// upstream's first bytes.
func (s *Server) relayHTTP(host string, port int, client net.Conn, first []byte, up net.Conn, upFirst <-chan []byte) {
	cc := &clientConn{s: s, c: client, ctx: s.ctx}
	cc.src = io.MultiReader(bytes.NewReader(first), client)
	cc.lr = &limitReader{r: cc.src}
	cc.br = bufio.NewReaderSize(cc.lr, 4096)
	t := &target{host: host, port: port}
	u := &httpUpstream{key: t.String(), conn: up, first: &firstThen{ch: upFirst, r: up}}
	u.br = bufio.NewReaderSize(u.first, 4096)
	u.bw = bufio.NewWriterSize(up, 4096)
	headerTimeout := orDefault(s.HeaderTimeout, DefaultHeaderTimeout)
	dest := t.String()
	for n := 0; ; n++ {
		cc.lr.n, cc.lr.hit = s.maxHeader(), false
		if n > 0 {
			client.SetReadDeadline(time.Now().Add(orDefault(s.IdleTimeout, DefaultIdleTimeout)))
			if _, err := cc.br.Peek(1); err != nil {
				return
			}
		}
		client.SetReadDeadline(time.Now().Add(headerTimeout))
		// Empty lines before a request are skipped, as servers do.
		for {
			c, err := cc.br.Peek(1)
			if err != nil || (c[0] != '\r' && c[0] != '\n') {
				break
			}
			cc.br.Discard(1)
		}
		req, err := http.ReadRequest(cc.br)
		if err != nil {
			if cc.lr.hit || !(errors.Is(err, io.EOF) || isTimeout(err) || errors.Is(err, net.ErrClosed)) {
				s.violation(dest, "an HTTP request moat cannot read in a tunnel")
				cc.replyError(http.StatusBadRequest, "malformed request in a tunnel to "+dest)
			}
			return
		}
		cc.lr.n = noLimit
		client.SetReadDeadline(time.Time{})
		if req.ProtoMajor != 1 {
			s.violation(dest, "HTTP/2 without TLS in a tunnel, whose requests' hosts moat does not read; use TLS or the proxy's http:// forwarding")
			lingerClose(client)
			return
		}
		if req.Host == "" {
			// HTTP/1.0 without Host: the server's default site, not
			// necessarily the name judged.
			req.Host = dest
			if port == 80 {
				req.Host = host
			}
		}
		name, _, ok := splitTarget(req.Host, port)
		if !ok || !s.sameSiteAllowed(host, port, name) {
			if canon, err := policy.CanonicalHost(name); err == nil {
				name = canon
			}
			s.violation(hostPort(truncate(name, 255), port), "HTTP asked for "+truncate(oneLine(req.Host), 255)+" in a tunnel to "+host+", and that name is not allowed (virtual-host fronting)")
			cc.replyDenied((&denial{reason: "HTTP asked for another host in a tunnel to " + host + ", and that name is not allowed", dest: truncate(oneLine(req.Host), 255)}).body())
			return
		}
		if req.Method == http.MethodConnect {
			// What a CONNECT opens is no more HTTP, and not the host
			// judged: not relayed.
			s.violation(hostPort(truncate(name, 255), portOf(req.Host, port)), "a CONNECT inside a tunnel to "+host)
			cc.replyError(http.StatusMethodNotAllowed, "CONNECT inside a tunnel is not relayed")
			return
		}
		var keep bool
		if u, keep = cc.exchange(req, u, t); !keep || u == nil {
			return
		}
	}
}

// portOf is the port of an authority, or def.
func portOf(authority string, def int) int {
	_, p, ok := splitTarget(authority, def)
	if !ok {
		return def
	}
	return p
}

// firstThen reads what ch gives once (the upstream's first bytes, read
// while the client's were judged), then r.
type firstThen struct {
	ch      <-chan []byte
	got     bool
	pending []byte
	r       io.Reader
}

func (f *firstThen) Read(p []byte) (int, error) {
	if !f.got {
		f.pending, f.got = <-f.ch, true
	}
	if len(f.pending) > 0 {
		n := copy(p, f.pending)
		f.pending = f.pending[n:]
		return n, nil
	}
	return f.r.Read(p)
}
