//go:build linux

package linux

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/runtime/enforce"
)

// The proxy's addresses inside the sandbox's network namespace. The
// namespace is the sandbox's own, so fixed ports cannot collide with
// anything on the host.
const (
	proxyHTTPPort  = 3128
	proxySOCKSPort = 1080
	proxyHost      = "127.0.0.1"
)

// listenAddrs are the listeners stage 2 creates inside the sandbox's
// network namespace, in order: HTTP, then SOCKS5.
var listenAddrs = []struct {
	family int
	addr   string
	port   int
}{
	{unix.AF_INET, proxyHost, proxyHTTPPort},
	{unix.AF_INET, proxyHost, proxySOCKSPort},
}

// network is the sandbox's route out: listeners served by the runtime's
// proxy. Inside a network namespace, stage 2 creates them there and hands
// them over (a socket keeps the namespace it was made in, so the proxy
// accepts from the sandbox and dials from the host; when the supervisor
// dies they die with it). Without one (shared), they listen on the host's
// loopback and the proxy requires a per-run credential.
type network struct {
	proxy     enforce.Proxy
	shared    bool
	hostAddrs []netip.AddrPort
}

func newNetwork(proxy enforce.Proxy, shared bool) (*network, error) {
	if proxy == nil {
		return nil, fmt.Errorf("no proxy for the sandbox's network")
	}
	n := &network{proxy: proxy, shared: shared}
	if !shared {
		return n, nil
	}
	// Anyone on the host can reach a loopback port: the proxy serves only
	// clients that present this run's credential.
	if _, err := proxy.RequireCredential(); err != nil {
		return nil, err
	}
	for i := range listenAddrs {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("proxy listener: %w", err)
		}
		n.hostAddrs = append(n.hostAddrs, l.Addr().(*net.TCPAddr).AddrPort())
		proxy.Serve(l, i == 1)
	}
	return n, nil
}

// env is what the command needs to find the proxy.
func (n *network) env(moatPath string) []string {
	if n.shared {
		return n.proxy.Env(n.hostAddrs[0].String(), n.hostAddrs[1].String(), moatPath)
	}
	return n.proxy.Env(net.JoinHostPort(proxyHost, strconv.Itoa(proxyHTTPPort)), net.JoinHostPort(proxyHost, strconv.Itoa(proxySOCKSPort)), moatPath)
}

// kernelAllow is what the eBPF filter lets the command reach directly: the
// proxy's listeners, and when it shares the host's network the loopback
// ports the policy names as IP literals ("127.0.0.1:3000") that the proxy
// would connect to itself (enforce.Proxy.Allowed).
func (n *network) kernelAllow() []netip.AddrPort {
	return n.kernelAllowOf(n.proxy.Allowed())
}

// kernelAllowOf is kernelAllow with the allowed loopback literals given
// (a live update's, before it reaches the proxy).
func (n *network) kernelAllowOf(allowed []string) []netip.AddrPort {
	if !n.shared {
		return proxyListenerAddrs()
	}
	out := append([]netip.AddrPort(nil), n.hostAddrs...)
	for _, a := range allowed {
		if ap, err := netip.ParseAddrPort(a); err == nil {
			out = append(out, ap)
		}
	}
	return out
}

// serve takes the listener fds stage 2 sent (in listenAddrs order).
func (n *network) serve(fds []int) error {
	if len(fds) != len(listenAddrs) {
		closeAll(fds)
		return fmt.Errorf("stage 2 sent %d listeners, want %d", len(fds), len(listenAddrs))
	}
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "moat-proxy-listener")
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			closeAll(fds[i+1:])
			return fmt.Errorf("proxy listener: %w", err)
		}
		n.proxy.Serve(l, listenAddrs[i].port == proxySOCKSPort)
	}
	return nil
}

// close: the proxy (the runtime's) closes its listeners when the run ends.
func (n *network) close() {}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
