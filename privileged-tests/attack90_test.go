//go:build linux

package privtests

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Plain HTTP in a tunnel to an allowed name whose Host is another site:
// with localhost:PORT allowed, curl -p --connect-to evil.test:PORT:localhost:PORT
// http://evil.test:PORT/ opened a CONNECT tunnel to localhost:PORT and
// asked the server there for evil.test, which a server that serves several
// sites by name (virtual hosting, a CDN's address) served: the clear-text
// form of domain fronting, which the proxy can read. It now judges every
// request of such a tunnel by its Host, and ends the tunnel with a 403.
func TestProxyRefusesPlainHTTPHostFronting(t *testing.T) {
	requireCurl(t)
	f := newFixture(t)
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Host)
		mu.Unlock()
		fmt.Fprintf(w, "site %s\n", r.Host)
	}))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	allow := f.netSettings(map[string]any{"allowedDomains": []string{"localhost:" + port}})
	if got := f.sandboxedWith(allow, "curl", "-p", "http://localhost:"+port+"/"); !got.escaped() {
		t.Fatalf("plain HTTP in a tunnel to the allowed localhost:%s must work:\n%s", port, got.out)
	}
	front := []string{"curl", "-p", "--connect-to", "evil.test:" + port + ":localhost:" + port, "http://evil.test:" + port + "/"}
	got := f.sandboxedWith(allow, front...)
	mu.Lock()
	reached := strings.Contains(strings.Join(asked, " "), "evil.test")
	asked = nil
	mu.Unlock()
	if got.escaped() || reached {
		t.Fatalf("ESCAPE: HTTP for evil.test in a tunnel to localhost:%s:\n%s", port, got.out)
	}
	if !strings.Contains(got.out, "evil.test") || !strings.Contains(got.out, "virtual-host fronting") {
		t.Errorf("the fronting attempt is not reported:\n%s", got.out)
	}
	if base := f.direct(front...); !base.escaped() {
		t.Fatalf("the attack must work without moat: %s", base.out)
	}
}
