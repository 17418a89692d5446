// Package loadgen is the origin server and client used by netproxy's
// benchmarks and by bench/proxy-bench.sh: an HTTP/1.1 origin that serves N
// zero bytes as fast as the kernel takes them, and a client that fetches
// them directly or through the proxy's CONNECT, forwarding or SOCKS5 path.
// It is test tooling, not part of moat.
package loadgen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// ServeOrigin answers "GET /?size=N" with N zero bytes (Content-Length,
// keep-alive) on every connection l accepts, until l is closed.
func ServeOrigin(l net.Listener) error {
	buf := make([]byte, 1<<20)
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go serveOriginConn(c, buf)
	}
}

func serveOriginConn(c net.Conn, zeros []byte) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		size, _ := strconv.ParseInt(req.URL.Query().Get("size"), 10, 64)
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: application/octet-stream\r\n\r\n", size); err != nil {
			return
		}
		for size > 0 {
			n := min(size, int64(len(zeros)))
			if _, err := c.Write(zeros[:n]); err != nil {
				return
			}
			size -= n
		}
		if req.Close {
			return
		}
	}
}

// Methods of Fetch.
const (
	Direct  = "direct"
	Connect = "connect"
	Forward = "http"
	SOCKS   = "socks"
)

// Fetch opens a new connection (to origin, or to proxy with method),
// downloads size bytes from origin and closes it. buf is the read buffer
// (256 KiB is a good size). It returns the body bytes read.
func Fetch(method, proxy, origin string, size int64, buf []byte) (int64, error) {
	c, br, err := Open(method, proxy, origin)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	path := fmt.Sprintf("/?size=%d", size)
	target := path
	if method == Forward {
		target = "http://" + origin + path
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, origin); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("status %s", resp.Status)
	}
	// Drain what the reader holds, then read the socket directly.
	var n int64
	if k := br.Buffered(); k > 0 {
		m, _ := br.Discard(min(k, int(size)))
		n += int64(m)
	}
	for n < size {
		m, err := c.Read(buf)
		n += int64(m)
		if err != nil {
			if errors.Is(err, io.EOF) && n == size {
				break
			}
			return n, err
		}
	}
	return n, nil
}

// Open connects to origin, directly or through proxy with method, and
// returns the connection ready for an HTTP request (for Forward, one in
// absolute-URI form).
func Open(method, proxy, origin string) (net.Conn, *bufio.Reader, error) {
	addr := proxy
	if method == Direct {
		addr = origin
	}
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(c, 64<<10)
	fail := func(err error) (net.Conn, *bufio.Reader, error) {
		c.Close()
		return nil, nil, err
	}
	switch method {
	case Direct, Forward:
	case Connect:
		if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", origin, origin); err != nil {
			return fail(err)
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			return fail(err)
		}
		if resp.StatusCode != 200 {
			return fail(fmt.Errorf("CONNECT: %s", resp.Status))
		}
	case SOCKS:
		ap, err := netip.ParseAddrPort(origin)
		if err != nil || !ap.Addr().Is4() {
			return fail(fmt.Errorf("SOCKS origin must be IPv4:port, got %q", origin))
		}
		a := ap.Addr().As4()
		msg := []byte{5, 1, 0, 5, 1, 0, 1, a[0], a[1], a[2], a[3], byte(ap.Port() >> 8), byte(ap.Port())}
		if _, err := c.Write(msg); err != nil {
			return fail(err)
		}
		rep := make([]byte, 12)
		if _, err := io.ReadFull(br, rep); err != nil {
			return fail(err)
		}
		if rep[1] != 0 || rep[3] != 0 {
			return fail(fmt.Errorf("SOCKS reply %x", rep))
		}
	default:
		return fail(fmt.Errorf("unknown method %q (want %s)", method, strings.Join([]string{Direct, Connect, Forward, SOCKS}, ", ")))
	}
	return c, br, nil
}
