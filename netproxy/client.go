package netproxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ProxyError is a proxy's refusal of a CONNECT request.
type ProxyError struct {
	Target string
	Status int    // HTTP status (403 refused, 407 bad credential, 502 upstream)
	Reason string // the proxy's explanation (the 403 body)
}

func (e *ProxyError) Error() string {
	msg := fmt.Sprintf("proxy refused %s: %d %s", e.Target, e.Status, http.StatusText(e.Status))
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// DialThroughProxy opens a tunnel to host:port through the HTTP proxy at
// proxyAddr with CONNECT, presenting cred ("user:password" or a password;
// empty for none). Data the server sends right after the tunnel opens
// (an SSH banner) is kept. A refusal is a *ProxyError.
func DialThroughProxy(proxyAddr, host string, port int, cred string) (net.Conn, error) {
	return dialThroughProxy(context.Background(), proxyAddr, host, port, cred)
}

func dialThroughProxy(ctx context.Context, proxyAddr, host string, port int, cred string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", proxyAddr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	target := hostPort(strings.Trim(host, "[]"), port)
	var b strings.Builder
	fmt.Fprintf(&b, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", target, target)
	if user, pass, ok := splitCredential(cred); ok {
		tok := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
		fmt.Fprintf(&b, "Proxy-Authorization: Basic %s\r\n", tok)
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(c, 4096)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("proxy %s: bad answer: %w", proxyAddr, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		c.Close()
		return nil, &ProxyError{Target: target, Status: resp.StatusCode, Reason: strings.TrimSpace(string(body))}
	}
	c.SetDeadline(time.Time{})
	if br.Buffered() == 0 {
		return c, nil
	}
	return &readerConn{Conn: c, r: br}, nil
}

// SSHProxyCommand is the body of "moat ssh-proxy HOST PORT", ssh's
// ProxyCommand: it opens a tunnel to host:port through the proxy named by
// MOAT_PROXY (read with getenv, normally os.Getenv) and pipes stdin to it
// and it to stdout until the server closes. A refusal is returned as a
// *ProxyError whose message names the reason; print it to stderr, where
// ssh shows it.
func SSHProxyCommand(getenv func(string) string, host, port string, stdin io.Reader, stdout io.Writer) error {
	raw := getenv(EnvProxyVar)
	if raw == "" {
		return fmt.Errorf("%s is not set: not running inside a moat sandbox?", EnvProxyVar)
	}
	addr, cred, err := parseProxyURL(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvProxyVar, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	c, err := DialThroughProxy(addr, host, p, cred)
	if err != nil {
		return err
	}
	defer c.Close()
	go func() {
		io.Copy(c, stdin)
		if cw, ok := c.(closeWriter); ok {
			cw.CloseWrite()
		}
	}()
	_, err = io.Copy(stdout, c)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// parseProxyURL reads "http://[user:pass@]host:port" (or "host:port").
func parseProxyURL(raw string) (addr, cred string, err error) {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", err
	}
	if u.Scheme != "http" || u.Host == "" || u.Port() == "" {
		return "", "", fmt.Errorf("want http://host:port, got %q", u.Redacted())
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		cred = u.User.Username() + ":" + pw
	}
	return u.Host, cred, nil
}
