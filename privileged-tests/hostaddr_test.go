//go:build linux

package privtests

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// hostAddrMarker is what the server on the host's own address answers.
const hostAddrMarker = "served-by-host-address"

func init() {
	// serve ADDR: answer every HTTP request with hostAddrMarker (runs until
	// killed).
	attacks["serve"] = func(a []string) (string, error) {
		l, err := net.Listen("tcp", a[0])
		if err != nil {
			return "", err
		}
		return "", http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, hostAddrMarker)
		}))
	}
	// fdexhaust HOST:PORT FILL: reach HOST:PORT, an allowed name that resolves
	// to the host's own address, which the proxy refuses. Under moat: ask
	// once (the refusal warms the proxy's caches), wait for its cache of
	// the host's addresses to expire, then hold every descriptor moat has
	// with tunnels to FILL, an allowed destination (each costs moat two
	// descriptors and more, the command one), then idle connections, ask again on a connection opened
	// before (the proxy cannot open the netlink socket that reads the
	// host's addresses), free them and ask once more. Without a proxy: a
	// plain GET.
	attacks["fdexhaust"] = func(a []string) (string, error) {
		target := a[0]
		proxy := os.Getenv("HTTP_PROXY")
		if proxy == "" {
			return httpGet(target, target)
		}
		u, err := url.Parse(proxy)
		if err != nil {
			return "", err
		}
		first := "refused"
		if _, err := httpGet(u.Host, target); err == nil {
			return "reached on the first try", nil
		} else {
			first = err.Error()
		}
		time.Sleep(6 * time.Second)
		early, err := net.Dial("tcp", u.Host)
		if err != nil {
			// (Seen once in CI under the load test: say which step, and
			// what the first try got, should it happen again.)
			return "", fmt.Errorf("the connection opened before the flood, 6 s after the first try (which got: %s): %w", first, err)
		}
		defer early.Close()
		// One kept-alive request first: the proxy then waits its idle
		// timeout for the next one, not the header timeout.
		early.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(early, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", a[1], a[1])
		br := bufio.NewReader(early)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return "", err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		var fill []net.Conn
		tunnels := true
		for range 4096 {
			c, err := net.DialTimeout("tcp", u.Host, time.Second)
			if err != nil {
				break
			}
			fill = append(fill, c)
			if !tunnels {
				continue // idle: the descriptors tunnels left
			}
			c.SetDeadline(time.Now().Add(time.Second))
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", a[1], a[1])
			if _, err := c.Read(make([]byte, 64)); err != nil {
				tunnels = false
			}
		}
		n := len(fill)
		during, duringErr := httpGetOn(early, br, target)
		for _, c := range fill {
			c.Close()
		}
		time.Sleep(time.Second)
		if body, err := httpGet(u.Host, target); err == nil {
			return fmt.Sprintf("after %d connections (answer while held: %q, %v): %s", n, during, duringErr, body), nil
		} else {
			return "", fmt.Errorf("after %d connections (answer while held: %q, %v): %v", n, during, duringErr, err)
		}
	}
}

// httpGet sends GET http://target/ to via (the proxy, or target itself)
// and returns the body when it is hostAddrMarker.
func httpGet(via, target string) (string, error) {
	c, err := net.DialTimeout("tcp", via, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return httpGetOn(c, bufio.NewReader(c), target)
}

func httpGetOn(c net.Conn, br *bufio.Reader, target string) (string, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, target)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), hostAddrMarker) {
		return "", errors.New(resp.Status + ": " + strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// An allowed name that resolves to one of the host's own addresses is
// refused even when a command has used up moat's descriptors: the proxy
// counted a failed read of the host's addresses (no descriptor for the
// netlink socket) as "not ours" and cached that for five seconds, and the
// command's next request reached a service on the host's own address
// (found by attack pass 63). The "host" is a network and mount namespace
// of the test's own: 198.18.0.1 (not a special range) on its loopback,
// named by a hosts file bound over /etc/hosts there, and moat run with a
// descriptor limit of 256 (a command holds up to 512 connections to the
// proxy, so any limit below a few thousand is reached the same way).
func TestHostAddressCheckFailsClosed(t *testing.T) {
	coldRunsOnly(t)
	testutil.RequireRoot(t)
	for _, tool := range []string{"unshare", "ip", "prlimit", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.Unavailable(t, "%s is not installed", tool)
		}
	}
	f := newFixture(t)
	const addr = "198.18.0.1"
	target := "hostaddr.allowed.test:8080"
	fill := addr + ":8081" // an allowed literal: the fillers' tunnels
	hosts := filepath.Join(f.root, "hosts")
	must(t, os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"+addr+" hostaddr.allowed.test\n"), 0o644))
	settings := f.netSettings(map[string]any{"allowedDomains": []string{"*.allowed.test", fill}})
	// run runs argv in the namespaces with the server on the host address.
	run := func(argv ...string) result {
		script := `set -e
ip link set lo up
ip addr add ` + addr + `/32 dev lo
mount --bind "$1" /etc/hosts
"$2" serve ` + addr + `:8080 & srv=$!
"$2" serve ` + addr + `:8081 & srv2=$!
trap 'kill $srv $srv2' EXIT
sleep 0.5
shift 2
"$@"`
		return f.exec("unshare", append([]string{"--mount", "--net", "--propagation", "private", "sh", "-c", script, "sh", hosts, self}, argv...)...)
	}
	if base := run(self, "fdexhaust", target, fill); !base.escaped() {
		t.Fatalf("without moat the host address must be reachable:\n%s", base.out)
	}
	got := run("prlimit", "--nofile=256:256", moatBin, "run", "--settings", settings, "--", self, "fdexhaust", target, fill)
	if got.escaped() {
		t.Fatalf("ESCAPE: an allowed name reached the host's own address:\n%s", got.out)
	}
	t.Logf("under moat:\n%s", got.out)
	if !strings.Contains(got.out, "an address of this host") {
		t.Fatalf("the proxy did not refuse the host's address:\n%s", got.out)
	}
}
