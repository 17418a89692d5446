package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/netproxy"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// proxy is moat's proxy for one run (enforce.Proxy): moat's own server,
// or a plain relay to the external filtering proxy the policy names
// (httpProxyPort / socksProxyPort). It serves only the listeners the
// enforcer hands it; when the run ends they close, and with them every
// route out.
type proxy struct {
	srv               *netproxy.Server
	extHTTP, extSOCKS int

	// share bounds the connections of the user's sandboxes together when
	// moat runs the sandbox for another user (moatd): nil otherwise.
	share  *netproxy.Share
	uid    int             // the sandbox's user, whose connections alone a host listener serves
	ctx    context.Context // ends with close: the relay's connections end
	cancel context.CancelFunc

	mu         sync.Mutex
	current    policy.Network // the lists in force (updates merge into it)
	credential string
	listeners  []net.Listener
	closed     bool
	wg         sync.WaitGroup
}

// newProxy makes the run's proxy. as is the user a root supervisor runs
// the sandbox for (moatd), or nil: every sandbox of one user shares that
// user's bound on connections (netproxy.UserShare), so that one user
// cannot take the connections of the process that serves them all.
func newProxy(pol *policy.Policy, as *enforce.Identity, ask func(context.Context, string, int) (bool, error), report func(policy.Violation), log *slog.Logger) (*proxy, error) {
	p := &proxy{current: pol.Net}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.uid = os.Getuid()
	if as != nil {
		p.share = netproxy.UserShare(as.Uid)
		p.uid = as.Uid
	}
	if n := pol.Net; n.HTTPProxyPort != 0 || n.SOCKSProxyPort != 0 {
		p.extHTTP, p.extSOCKS = n.HTTPProxyPort, n.SOCKSProxyPort
		if p.extHTTP == 0 {
			p.extHTTP = p.extSOCKS
		}
		if p.extSOCKS == 0 {
			p.extSOCKS = p.extHTTP
		}
		return p, nil
	}
	rules, err := netproxy.NewRules(pol.Net)
	if err != nil {
		return nil, fmt.Errorf("network policy: %w", err)
	}
	parent := pol.Net.ParentProxy
	if parent == nil {
		parent = netproxy.ParentFromEnvironment(os.Getenv)
	}
	p.srv = &netproxy.Server{Rules: rules, Ask: ask, OnViolation: report, ParentProxy: parent, Logger: log, Share: p.share}
	return p, nil
}

func (p *proxy) Serve(l net.Listener, socks bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		l.Close()
		return
	}
	p.listeners = append(p.listeners, l)
	p.wg.Add(1)
	if p.srv != nil {
		go func() {
			defer p.wg.Done()
			// The sandbox's route out ended before the run did: say so
			// (it was dropped unsaid). Not when the run's end closed it
			// (close cancels ctx before it closes the listeners): moatd
			// logged this warning for every listener of every run.
			if err := p.srv.Serve(l); err != nil && !errors.Is(err, netproxy.ErrServerClosed) && p.ctx.Err() == nil && p.srv.Logger != nil {
				p.srv.Logger.Warn("the sandbox's network proxy stopped serving a listener: the command's connections through it are refused from now on", "err", err)
			}
		}()
		return
	}
	port := p.extHTTP
	if socks {
		port = p.extSOCKS
	}
	go func() { defer p.wg.Done(); p.relay(l, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))) }()
}

func (p *proxy) RequireCredential() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.credential != "" {
		return p.credential, nil
	}
	if p.srv == nil {
		return "", errors.New("the policy names an external proxy (httpProxyPort/socksProxyPort): moat cannot require a credential for it")
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	p.credential = "moat:" + hex.EncodeToString(b[:])
	p.srv.Credential = p.credential
	// A credential is required where anyone on the host can reach the
	// proxy's ports: only the run's user's connections are served (and
	// take a slot of that user's share), where the host can tell.
	p.srv.Peer = peerOwnedBy(p.uid)
	return p.credential, nil
}

func (p *proxy) Env(httpAddr, socksAddr, moatPath string) []string {
	p.mu.Lock()
	cred := p.credential
	p.mu.Unlock()
	return netproxy.Env(netproxy.EnvConfig{Addr: httpAddr, SOCKSAddr: socksAddr, Credential: cred, MoatPath: moatPath})
}

func (p *proxy) Allowed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.srv != nil {
		return loopbackLiterals(p.srv.CurrentRules())
	}
	r, err := netproxy.NewRules(p.current)
	if err != nil {
		return nil
	}
	return loopbackLiterals(r)
}

// loopbackLiterals are the destinations a command sharing the host's
// network reaches directly: the allowed loopback host:port literals that
// the proxy's own rules r allow (netproxy.Rules.DirectLiterals), never
// one the proxy would refuse (a deny entry, a denied address, an entry
// that does not count under allowManagedDomainsOnly: the raw allow list
// had been used, found by an attack pass).
func loopbackLiterals(r *netproxy.Rules) []string {
	var out []string
	for _, ap := range r.DirectLiterals(netip.Addr.IsLoopback) {
		out = append(out, ap.String())
	}
	return out
}

// update applies live network lists, never wider than what the launch
// policy's managed settings allow. A process whose kernel filter holds part
// of the lists (enforce.NetworkSyncer) gets them first; if it cannot, the
// update is not applied.
func (p *proxy) update(u policy.Network, proc any) error {
	if p.srv == nil {
		return errors.New("the policy uses an external proxy (httpProxyPort/socksProxyPort): moat does not filter, so it cannot update lists")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	merged := netproxy.MergeUpdate(p.current, u)
	r, err := netproxy.NewRules(merged)
	if err != nil {
		return err
	}
	if s, ok := proc.(enforce.NetworkSyncer); ok {
		if err := s.SyncNetwork(loopbackLiterals(r)); err != nil {
			return fmt.Errorf("the sandbox's kernel filter could not take the update (not applied): %w", err)
		}
	}
	p.current = merged
	p.srv.SetRules(r)
	return nil
}

// close ends the proxy: listeners, connections, goroutines.
func (p *proxy) close() {
	p.mu.Lock()
	p.cancel()
	p.closed = true
	ls := p.listeners
	p.listeners = nil
	p.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	if p.srv != nil {
		p.srv.Close()
	}
	p.wg.Wait()
}

// relay passes connections as they are to an external filtering proxy:
// that proxy decides. Its connections count against the process's bound
// and the user's share as the Server's do (netproxy.AcquireConn), and end
// with the proxy (close). They had no bound and outlived the run: one
// user's sandbox opened connections until moatd had no descriptor left,
// and every user's moat run failed (pipe2: too many open files), also
// after that sandbox had ended (attack pass 69).
func (p *proxy) relay(l net.Listener, to string) {
	defer l.Close()
	wait := netproxy.SlotWait
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, or a connection reset before it was
			// taken: wait a little rather than end the relay.
			select {
			case <-time.After(50 * time.Millisecond):
				continue
			case <-p.ctx.Done():
				return
			}
		}
		// The slot is taken for an accepted connection, as the Server's
		// is: an idle listener holds none, and one that gets none is
		// answered so (attack pass 72).
		if !netproxy.AcquireConnWait(p.ctx.Done(), p.share, wait) {
			wait = 0
			netproxy.RefuseConn(c, "no connection slot: this user's sandboxes hold their share of the relay's connections, or the process's are taken; try again when some end")
			continue
		}
		wait = netproxy.SlotWait
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer netproxy.ReleaseConn(p.share)
			defer c.Close()
			stopC := context.AfterFunc(p.ctx, func() { c.Close() })
			defer stopC()
			d := net.Dialer{Timeout: 10 * time.Second}
			up, err := d.DialContext(p.ctx, "tcp", to)
			if err != nil {
				return
			}
			defer up.Close()
			stopUp := context.AfterFunc(p.ctx, func() { up.Close() })
			defer stopUp()
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
