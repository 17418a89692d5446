package netproxy

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// serveHTTP serves HTTP proxy requests on one client connection: CONNECT
// (then the connection is a tunnel) or absolute-URI requests, forwarded
// with keep-alive on both sides.
func (cc *clientConn) serveHTTP() {
	s := cc.s
	var up *httpUpstream
	defer func() {
		if up != nil {
			up.conn.Close()
		}
	}()
	headerTimeout := orDefault(s.HeaderTimeout, DefaultHeaderTimeout)
	for first := true; ; first = false {
		cc.lr.n, cc.lr.hit = s.maxHeader(), false
		if !first {
			// Wait for the next request, then give its header the usual time.
			cc.c.SetReadDeadline(time.Now().Add(orDefault(s.IdleTimeout, DefaultIdleTimeout)))
			if _, err := cc.br.Peek(1); err != nil {
				return
			}
			cc.c.SetReadDeadline(time.Now().Add(headerTimeout))
		}
		req, err := http.ReadRequest(cc.br)
		if err != nil {
			switch {
			case cc.lr.hit:
				cc.replyError(http.StatusRequestHeaderFieldsTooLarge, "request header too large")
			case errors.Is(err, io.EOF), isTimeout(err), errors.Is(err, net.ErrClosed):
				// The client left or stalled: nothing to answer.
				cc.c.Close()
			default:
				cc.replyError(http.StatusBadRequest, "malformed request")
			}
			return
		}
		cc.lr.n = noLimit
		cc.c.SetReadDeadline(time.Time{})

		if !cc.authorizedHTTP(req) {
			cc.reply(http.StatusProxyAuthRequired, map[string]string{"Proxy-Authenticate": `Basic realm="moat"`},
				"proxy authentication required")
			return
		}
		if req.Method == http.MethodConnect {
			if up != nil {
				up.conn.Close()
				up = nil
			}
			cc.serveConnect(req)
			return
		}
		var keep bool
		up, keep = cc.forward(req, up)
		if !keep {
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// authorizedHTTP checks Proxy-Authorization against the credential.
func (cc *clientConn) authorizedHTTP(req *http.Request) bool {
	if cc.s.Credential == "" {
		return true
	}
	h := req.Header.Get("Proxy-Authorization")
	scheme, enc, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return false
	}
	user, pass, _ := strings.Cut(string(raw), ":")
	return cc.s.checkCredential(user, pass)
}

// reply writes a complete error answer and closes the connection
// gracefully (the client may still be sending).
func (cc *clientConn) reply(code int, extra map[string]string, body string) {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	for k, v := range extra {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	body += "\n"
	fmt.Fprintf(&b, "Content-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	cc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	cc.c.Write([]byte(b.String()))
	lingerClose(cc.c)
}

func (cc *clientConn) replyError(code int, msg string) { cc.reply(code, nil, msg) }

// replyDenied answers a refused destination: 403 with X-Proxy-Error and
// the reason as the body.
func (cc *clientConn) replyDenied(reason string) {
	cc.reply(http.StatusForbidden, map[string]string{"X-Proxy-Error": "blocked-by-allowlist"}, oneLine(reason))
}

func (cc *clientConn) replyUpstream(err error) {
	cc.reply(http.StatusBadGateway, map[string]string{"X-Proxy-Error": "upstream-failed"}, oneLine(err.Error()))
}

// oneLine keeps a reason from breaking out of a header or body line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// splitTarget splits an authority ("host:port", "[v6]:port") with a default
// port.
func splitTarget(authority string, defPort int) (string, int, bool) {
	host, portStr, err := net.SplitHostPort(authority)
	if err != nil {
		// No port: the whole authority is the host.
		if strings.HasPrefix(authority, "[") && strings.HasSuffix(authority, "]") {
			return authority[1 : len(authority)-1], defPort, true
		}
		if strings.Count(authority, ":") > 0 {
			return "", 0, false
		}
		return authority, defPort, authority != ""
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, false
	}
	return host, port, host != ""
}

// serveConnect authorises, dials and tunnels one CONNECT request.
func (cc *clientConn) serveConnect(req *http.Request) {
	host, port, ok := splitTarget(req.Host, 443)
	if !ok {
		cc.s.violation(truncate(req.Host, 255), "malformed host")
		cc.replyDenied((&denial{reason: "malformed host", dest: "?"}).body())
		return
	}
	t, err := cc.s.authorize(cc.ctx, host, port, false)
	if err != nil {
		cc.replyVerdictError(err)
		return
	}
	up, err := cc.s.dial(cc.ctx, t)
	if err != nil {
		cc.replyUpstream(err)
		return
	}
	if _, err := io.WriteString(cc.c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		up.conn.Close()
		return
	}
	cc.s.tunnelTo(t, cc.c, cc.pending(), up.conn, up.pending)
}

func (cc *clientConn) replyVerdictError(err error) {
	var d *denial
	if errors.As(err, &d) {
		cc.replyDenied(d.body())
		return
	}
	cc.replyUpstream(err)
}

// httpUpstream is a kept-alive connection to an origin server.
type httpUpstream struct {
	key  string // canonical host:port
	conn net.Conn
	raw  bool // no parent-proxy prefix: conn may be read directly after br
	// first, if set, is what br reads (a tunnel's first bytes from the
	// upstream, then conn): conn may be read directly once it is drained.
	first *firstThen
	br    *bufio.Reader
	bw    *bufio.Writer
}

// direct reports whether conn may be read directly after what br holds.
func (u *httpUpstream) direct() bool {
	return u.raw || (u.first != nil && u.first.got && len(u.first.pending) == 0)
}

// hopHeaders are connection-specific and never forwarded (RFC 9110 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, f := range h["Connection"] {
		for _, name := range strings.Split(f, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// upgradeType returns the protocol a request or response asks to upgrade
// to ("websocket"), or "".
func upgradeType(h http.Header) string {
	for _, f := range h["Connection"] {
		for _, name := range strings.Split(f, ",") {
			if strings.EqualFold(textproto.TrimString(name), "upgrade") {
				return h.Get("Upgrade")
			}
		}
	}
	return ""
}

// webSocketUpgrade returns "websocket" when a request asks to upgrade to
// WebSocket, or "". Every other protocol is dropped from the request,
// which the server then answers in HTTP/1.1: a WebSocket's messages go to
// the resource its request named, on the host the proxy judged, but h2c
// carries requests for any host of the server (its :authority) that the
// proxy would relay unread, through a name it allowed.
func webSocketUpgrade(h http.Header) string {
	for _, v := range strings.Split(upgradeType(h), ",") {
		if strings.EqualFold(textproto.TrimString(v), "websocket") {
			return "websocket"
		}
	}
	return ""
}

// forward sends one absolute-URI request to its origin and relays the
// answer. It returns the upstream connection to keep for the next request
// (or nil) and whether the client connection stays open.
func (cc *clientConn) forward(req *http.Request, up *httpUpstream) (*httpUpstream, bool) {
	s := cc.s
	closeUp := func() {
		if up != nil {
			up.conn.Close()
			up = nil
		}
	}
	if req.URL == nil || !req.URL.IsAbs() {
		closeUp()
		cc.replyError(http.StatusBadRequest, "this is a proxy: send absolute-URI requests or CONNECT")
		return nil, false
	}
	if !strings.EqualFold(req.URL.Scheme, "http") {
		closeUp()
		cc.replyError(http.StatusNotImplemented, fmt.Sprintf("scheme %q is not forwarded; use CONNECT for https", req.URL.Scheme))
		return nil, false
	}
	host, port, ok := splitTarget(req.URL.Host, 80)
	if !ok {
		closeUp()
		s.violation(truncate(req.URL.Host, 255), "malformed host")
		cc.replyDenied((&denial{reason: "malformed host", dest: "?"}).body())
		return nil, false
	}
	// Every request is checked, also on a kept-alive upstream connection
	// (the rules may have changed in between).
	t, err := s.authorize(cc.ctx, host, port, true)
	if err != nil {
		closeUp()
		cc.replyVerdictError(err)
		return nil, false
	}
	if up != nil && up.key != t.String() {
		closeUp()
	}
	if up == nil {
		u, err := s.dial(cc.ctx, t)
		if err != nil {
			cc.replyUpstream(err)
			return nil, false
		}
		up = &httpUpstream{key: t.String(), conn: u.conn, raw: len(u.pending) == 0}
		var r io.Reader = u.conn
		if len(u.pending) > 0 {
			r = io.MultiReader(strings.NewReader(string(u.pending)), u.conn)
		}
		up.br = bufio.NewReaderSize(r, 4096)
		up.bw = bufio.NewWriterSize(u.conn, 4096)
	}
	return cc.exchange(req, up, t)
}

// exchange sends one judged request to t over up and relays the answer,
// as forward does (its return values are forward's). After a 101 the two
// connections are tunnelled as they are.
func (cc *clientConn) exchange(req *http.Request, up *httpUpstream, t *target) (*httpUpstream, bool) {
	s := cc.s
	closeUp := func() {
		if up != nil {
			up.conn.Close()
			up = nil
		}
	}
	upgrade := webSocketUpgrade(req.Header)
	removeHopHeaders(req.Header)
	if upgrade != "" {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", upgrade)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // keep Go from adding its own
	}
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// Answer the client at once rather than stall its body.
		req.Header.Del("Expect")
		io.WriteString(cc.c, "HTTP/1.1 100 Continue\r\n\r\n")
	}
	clientClose := req.Close
	req.Close = false
	if err := req.Write(up.bw); err != nil {
		closeUp()
		cc.replyUpstream(fmt.Errorf("send request to %s: %w", t, err))
		return nil, false
	}
	if err := up.bw.Flush(); err != nil {
		closeUp()
		cc.replyUpstream(fmt.Errorf("send request to %s: %w", t, err))
		return nil, false
	}

	var resp *http.Response
	var err error
	for {
		up.conn.SetReadDeadline(time.Now().Add(orDefault(s.IdleTimeout, DefaultIdleTimeout)))
		resp, err = http.ReadResponse(up.br, req)
		if err != nil {
			closeUp()
			cc.replyUpstream(fmt.Errorf("read answer from %s: %w", t, err))
			return nil, false
		}
		up.conn.SetReadDeadline(time.Time{})
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			removeHopHeaders(resp.Header)
			if err := writeResponseHeader(cc.c, resp, -2); err != nil {
				closeUp()
				return nil, false
			}
			continue
		}
		break
	}

	if resp.StatusCode == http.StatusSwitchingProtocols {
		proto := upgradeType(resp.Header)
		if upgrade == "" || !strings.EqualFold(textproto.TrimString(proto), "websocket") {
			// A switch to a protocol not asked for, or not WebSocket, is
			// a tunnel whose requests moat cannot judge.
			closeUp()
			s.violation(t.String(), "the server switched to "+truncate(oneLine(proto), 64)+", a protocol the proxy does not relay (only WebSocket is)")
			cc.replyUpstream(fmt.Errorf("%s switched to a protocol the proxy does not relay: %q", t, truncate(oneLine(proto), 64)))
			return nil, false
		}
		removeHopHeaders(resp.Header)
		resp.Header.Set("Connection", "Upgrade")
		resp.Header.Set("Upgrade", proto)
		if err := writeResponseHeader(cc.c, resp, -2); err != nil {
			closeUp()
			return nil, false
		}
		var upPending []byte
		if n := up.br.Buffered(); n > 0 {
			b, _ := up.br.Peek(n)
			upPending = append([]byte(nil), b...)
		}
		var client net.Conn = cc.c
		clientPending := cc.pending()
		if cc.src != nil {
			// The client's bytes come through a reader that holds more
			// than its buffer (a tunnel's first bytes).
			client, clientPending = &readerConn{Conn: cc.c, r: cc.br}, nil
		}
		if up.direct() {
			tunnel(client, clientPending, up.conn, upPending)
		} else {
			tunnel(client, clientPending, &readerConn{Conn: up.conn, r: up.br}, nil)
		}
		return nil, false
	}

	removeHopHeaders(resp.Header)
	keep := !clientClose && !resp.Close
	resp.Close = !keep
	if err := cc.copyResponse(resp, up, req.Method == http.MethodHead); err != nil {
		s.logger().Debug("relay answer failed", "host", t.String(), "err", err)
		closeUp()
		return nil, false
	}
	if resp.Close {
		closeUp()
	}
	if !keep {
		return up, false
	}
	return up, true
}

// copyResponse relays an origin's answer to the client. A body of known
// length is copied straight from the upstream socket after what the reader
// already holds (splice(2) on Linux); other bodies go through
// Response.Write, which re-frames them.
func (cc *clientConn) copyResponse(resp *http.Response, up *httpUpstream, head bool) error {
	n := resp.ContentLength
	fast := up.direct() && !head && n > 0 && len(resp.TransferEncoding) == 0 &&
		resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
	if !fast {
		bw := bufio.NewWriterSize(cc.c, 4096)
		if err := resp.Write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := writeResponseHeader(cc.c, resp, n); err != nil {
		return err
	}
	if b := up.br.Buffered(); b > 0 {
		k := min(int64(b), n)
		if _, err := io.CopyN(cc.c, up.br, k); err != nil {
			return err
		}
		n -= k
	}
	if n > 0 {
		if _, err := io.CopyN(cc.c, up.conn, n); err != nil {
			return err
		}
	}
	return nil
}

// writeResponseHeader writes the status line and header of resp. A length
// of -2 writes no Content-Length (1xx and 101 answers).
func writeResponseHeader(w io.Writer, resp *http.Response, length int64) error {
	var b strings.Builder
	text := resp.Status
	if i := strings.IndexByte(text, ' '); i >= 0 {
		text = text[i+1:]
	} else {
		text = http.StatusText(resp.StatusCode)
	}
	fmt.Fprintf(&b, "HTTP/%d.%d %03d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.StatusCode, oneLine(text))
	resp.Header.Del("Content-Length")
	if err := resp.Header.Write(&b); err != nil {
		return err
	}
	if length >= 0 {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", length)
	}
	if resp.Close {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// readerConn reads through r (which buffers conn) but writes to conn.
type readerConn struct {
	net.Conn
	r io.Reader
}

func (c *readerConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *readerConn) CloseWrite() error {
	if cw, ok := c.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
