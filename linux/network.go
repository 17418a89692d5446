//go:build linux

package linux

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/netproxy"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/runtime/settings"
)

// The proxy's addresses inside the sandbox's network namespace. The
// namespace is the sandbox's own, so fixed ports cannot collide with
// anything on the host.
const (
	proxyHTTPPort  = 3128
	proxySOCKSPort = 1080
	proxyHost      = "127.0.0.1"
)

// network is the sandbox's route out: listeners that stage 2 creates inside
// the sandbox's network namespace and hands to the supervisor, served by
// moat's proxy from the host side (or relayed as they are to an external
// filtering proxy the policy names). When the supervisor dies, the
// listeners die with it: there is no other route.
type network struct {
	srv      *netproxy.Server
	external int // httpProxyPort / socksProxyPort relay (0: moat's proxy)
	extSOCKS int
	current  policy.Network // the lists in force (updates merge into it)

	// shared: the command runs in the host's network namespace; the proxy
	// listens on the host's loopback (ports chosen now) and requires the
	// per-run credential.
	shared     bool
	credential string
	hostAddrs  []netip.AddrPort

	mu        sync.Mutex
	listeners []net.Listener
	wg        sync.WaitGroup
	closed    bool
}

// listenAddrs are the listeners stage 2 creates, in order.
var listenAddrs = []struct {
	family int
	addr   string
	port   int
}{
	{unix.AF_INET, proxyHost, proxyHTTPPort},
	{unix.AF_INET, proxyHost, proxySOCKSPort},
}

func newNetwork(s Spec, report func(policy.Violation)) (*network, error) {
	n := &network{current: s.Policy.Net}
	if s.Policy.Net.HTTPProxyPort != 0 || s.Policy.Net.SOCKSProxyPort != 0 {
		n.external = s.Policy.Net.HTTPProxyPort
		n.extSOCKS = s.Policy.Net.SOCKSProxyPort
		if n.external == 0 {
			n.external = n.extSOCKS
		}
		if n.extSOCKS == 0 {
			n.extSOCKS = n.external
		}
		return n, nil
	}
	rules, err := netproxy.NewRules(s.Policy.Net)
	if err != nil {
		return nil, fmt.Errorf("network policy: %w", err)
	}
	parent := s.Policy.Net.ParentProxy
	if parent == nil {
		parent = netproxy.ParentFromEnvironment(os.Getenv)
	}
	n.srv = &netproxy.Server{
		Rules:       rules,
		Ask:         s.Ask,
		OnViolation: report,
		ParentProxy: parent,
		Logger:      s.Logger,
	}
	if s.Policy.Net.Shared {
		// Anyone on the host can reach a loopback port: the proxy serves
		// only clients that present this run's credential.
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		n.shared = true
		n.credential = "moat:" + hex.EncodeToString(b[:])
		n.srv.Credential = n.credential
		var fds []int
		for range listenAddrs {
			l, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				n.close()
				return nil, fmt.Errorf("proxy listener: %w", err)
			}
			n.hostAddrs = append(n.hostAddrs, l.Addr().(*net.TCPAddr).AddrPort())
			f, _ := l.(*net.TCPListener).File()
			l.Close()
			fds = append(fds, int(f.Fd()))
			defer f.Close()
		}
		if err := n.serve(dupAll(fds)); err != nil {
			n.close()
			return nil, err
		}
	}
	return n, nil
}

func dupAll(fds []int) []int {
	out := make([]int, len(fds))
	for i, fd := range fds {
		out[i], _ = unix.Dup(fd)
	}
	return out
}

// env is what the command needs to find the proxy.
func (n *network) env(moatPath string) []string {
	if n.shared {
		return netproxy.Env(netproxy.EnvConfig{
			Addr:       n.hostAddrs[0].String(),
			SOCKSAddr:  n.hostAddrs[1].String(),
			Credential: n.credential,
			MoatPath:   moatPath,
		})
	}
	return netproxy.Env(netproxy.EnvConfig{
		Addr:      net.JoinHostPort(proxyHost, strconv.Itoa(proxyHTTPPort)),
		SOCKSAddr: net.JoinHostPort(proxyHost, strconv.Itoa(proxySOCKSPort)),
		MoatPath:  moatPath,
	})
}

// kernelAllow is what the eBPF filter lets the command reach directly: the
// proxy's listeners, and in shared mode the host loopback ports the policy
// names as IP literals ("127.0.0.1:3000").
func (n *network) kernelAllow() []netip.AddrPort {
	if !n.shared {
		return proxyListenerAddrs()
	}
	out := append([]netip.AddrPort(nil), n.hostAddrs...)
	for _, d := range n.current.AllowedDomains {
		if ap, err := netip.ParseAddrPort(d.Pattern); err == nil && ap.Addr().IsLoopback() && ap.Port() != 0 {
			out = append(out, ap)
		}
	}
	return out
}

// serve takes the listener fds stage 2 sent (in listenAddrs order).
func (n *network) serve(fds []int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(fds) != len(listenAddrs) {
		closeAll(fds)
		return fmt.Errorf("stage 2 sent %d listeners, want %d", len(fds), len(listenAddrs))
	}
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "moat-proxy-listener")
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("proxy listener: %w", err)
		}
		if n.closed {
			l.Close()
			continue
		}
		n.listeners = append(n.listeners, l)
		n.wg.Add(1)
		if n.srv != nil {
			go func() { defer n.wg.Done(); _ = n.srv.Serve(l) }()
		} else {
			port := n.external
			if listenAddrs[i].port == proxySOCKSPort {
				port = n.extSOCKS
			}
			go func() { defer n.wg.Done(); relay(l, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))) }()
		}
	}
	return nil
}

// relay passes connections as they are to an external filtering proxy
// (httpProxyPort / socksProxyPort): that proxy decides.
func relay(l net.Listener, to string) {
	defer l.Close()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.DialTimeout("tcp", to, 10*time.Second)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{})
			go func() {
				io.Copy(up, c)
				if tc, ok := up.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
				close(done)
			}()
			io.Copy(c, up)
			<-done
		}()
	}
}

// close ends the proxy: listeners, connections, goroutines.
func (n *network) close() {
	n.mu.Lock()
	n.closed = true
	ls := n.listeners
	n.listeners = nil
	n.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	if n.srv != nil {
		n.srv.Close()
	}
	n.wg.Wait()
}

// update applies a network-list update without widening past what the
// launch policy's managed settings allow.
func (n *network) update(u policy.Network) error {
	if n.srv == nil {
		return errors.New("the policy uses an external proxy (httpProxyPort/socksProxyPort): moat does not filter, so it cannot update lists")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	merged := netproxy.MergeUpdate(n.current, u)
	r, err := netproxy.NewRules(merged)
	if err != nil {
		return err
	}
	n.current = merged
	n.srv.SetRules(r)
	return nil
}

// readControl reads network-list updates, one complete settings document
// (srt format) per line, until EOF, as srt's --control-fd does. A bad line
// is reported on stderr without its content and changes nothing.
func (n *network) readControl(ctx context.Context, r io.Reader, name string, pol *policy.Policy, stderr io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(trimSpace(line)) == 0 {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		u, err := settings.ParseNetworkUpdate(name, line, pol.Cwd, pol.Home)
		if err == nil {
			err = n.update(u)
		}
		if err != nil {
			var se *settings.Error
			reason := err.Error()
			if errors.As(err, &se) {
				reason = se.Field + ": " + se.Reason
			}
			fmt.Fprintf(stderr, "moat: invalid settings on %s (%s): ignored, the previous network lists stay in force\n", name, reason)
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
