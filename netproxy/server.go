package netproxy

import (
	"bufio"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("netproxy: server closed")

// Resolver resolves host names on the host side. *net.Resolver satisfies it.
// The proxy asks it for fully qualified names only (with the trailing dot).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Defaults of the Server's optional limits.
const (
	DefaultMaxHeaderBytes = 64 << 10
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultIdleTimeout    = 120 * time.Second
	DefaultDialTimeout    = 15 * time.Second
	DefaultAskTimeout     = 60 * time.Second
)

// Server is moat's filtering proxy: HTTP (CONNECT and absolute-URI
// forwarding, HTTP/1.1 keep-alive) and SOCKS5 (CONNECT, with names or IP
// literals) on the same listener, told apart by the first byte.
//
// The zero value works and allows nothing: every destination is refused
// until rules are set (the Rules field or SetRules). Fields must not be
// changed after the first call to Serve; use SetRules to change the rules.
type Server struct {
	// Rules is the initial rule set. If nil (and SetRules was not called),
	// nothing is allowed.
	Rules *Rules
	// Resolver resolves host names. If nil, net.DefaultResolver is used.
	Resolver Resolver
	// Dial opens outbound connections (to checked IP addresses, or to the
	// parent proxy). If nil, a net.Dialer with DialTimeout is used.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Ask is consulted for hosts on neither list, unless the allow list is
	// strict. It must honour ctx: it is abandoned (and the host refused)
	// after AskTimeout. If nil, such hosts are refused.
	Ask func(ctx context.Context, host string, port int) (bool, error)
	// AskTimeout bounds Ask. If zero, DefaultAskTimeout.
	AskTimeout time.Duration
	// OnViolation is called (synchronously, keep it short) for every
	// refused destination. If nil, violations are only logged.
	OnViolation func(policy.Violation)
	// Credential, if set, is required from every client: "user:password"
	// (Proxy-Authorization: Basic for HTTP, RFC 1929 for SOCKS5). Without
	// a colon it is the password and any user name is accepted.
	Credential string
	// Logger receives debug logs. If nil, nothing is logged.
	Logger *slog.Logger
	// ParentProxy, if set, carries the proxy's own outbound traffic.
	ParentProxy *policy.ParentProxy
	// LocalAddrs lists the host's own interface addresses, which an
	// allowed name must not resolve to. If nil, net.InterfaceAddrs is read
	// (cached for a few seconds). When they cannot be read, the name is
	// refused.
	LocalAddrs func() ([]netip.Addr, error)

	// MaxHeaderBytes bounds a request's header (and a SOCKS handshake).
	// If zero, DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// HeaderTimeout bounds the time to read a request's header. If zero,
	// DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection. If zero, DefaultIdleTimeout.
	IdleTimeout time.Duration
	// DialTimeout bounds name resolution and each outbound dial. If zero,
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// MaxConns bounds the client connections served at once (each holds
	// up to six descriptors with its upstream and the splice pipes); the
	// next ones wait in the listener's backlog until one ends. If zero,
	// DefaultMaxConns. Every Server of the process also shares a bound
	// taken from the descriptor limit, so that a process that serves many
	// sandboxes (moat serve, moatd) keeps descriptors for its API and the
	// other sandboxes whatever one of them opens: a command that opened
	// thousands of tunnels used up moat serve's descriptors, and its API
	// and other sessions stopped answering (found by an attack pass).
	MaxConns int

	rules    atomic.Pointer[Rules]
	rulesSet atomic.Bool

	initOnce sync.Once
	ctx      context.Context
	cancel   context.CancelFunc
	parent   *parentConfig
	parErr   error

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup

	local localCache

	slots chan struct{} // MaxConns

	// Share, if set, is a bound this Server's client connections count
	// against together with those of other Servers: moatd gives every
	// sandbox of one user the same (UserShare), so that one user's
	// sandboxes cannot take all of the process's connections.
	Share *Share
	// Peer, if set, is asked about each accepted connection before it
	// takes a slot of the Share or the process: an error closes it at
	// once, with no answer. A listener on the host's loopback (a shared
	// network) takes connections from every user of the host, and each
	// took a slot of the run's user's share before its credential was
	// read: another user's idle connections to a moatd run's port held
	// that user's whole share, and every connection of the user's
	// sandboxes, sessions and runs was refused (attack pass 78).
	Peer func(net.Conn) error
}

// Share bounds the client connections of several Servers together (and
// of other relays of theirs: AcquireConn). A Share is also held to the
// process's reserve: once only the reserve of the process's slots is
// free, a Share holding its floor or more gets no more (see slotPool).
type Share struct {
	size int
	held int // guarded by the pool's mutex
}

// NewShare returns a Share of n connections at once.
func NewShare(n int) *Share { return &Share{size: max(n, 1)} }

// Size is how many connections the Share allows at once.
func (sh *Share) Size() int { return sh.size }

var (
	userSharesMu sync.Mutex
	userShares   = map[int]*Share{}
)

// UserShare is the Share of a user's Servers in this process, the same
// for every call with uid: a quarter of the process's connection slots
// (at least the pool's floor). moatd runs every user's proxies in one
// process, whose slots bound them all (processPool); one user's
// sandboxes held every slot with tunnels kept open and every other
// user's proxy waited for good, its connections unanswered (attack pass
// 69). Four users' quarters still made the whole: the process's reserve
// now keeps the last quarter for users holding few connections (attack
// pass 72).
func UserShare(uid int) *Share {
	userSharesMu.Lock()
	defer userSharesMu.Unlock()
	sh := userShares[uid]
	if sh == nil {
		p := processPool()
		sh = NewShare(max(p.size/4, p.floor))
		userShares[uid] = sh
	}
	return sh
}

// slotPool is the process's connection slots, which every Server and
// Share of the process draws on. Its last reserve slots go only to a
// connection of a Share that holds fewer than floor (or of no Share):
// four users of moatd, each with a quarter of the slots, held every one
// of them with tunnels to a silent host, and a fifth user's proxy
// answered nothing (attack pass 72). Every slot a Share holds past its
// floor was taken while more than the reserve was free, so taking every
// slot needs at least reserve/floor Shares (users) holding connections
// at once: 16.
type slotPool struct {
	mu      sync.Mutex
	size    int
	used    int
	reserve int
	floor   int
	freed   chan struct{} // closed, and replaced, when a slot is given back
}

func newSlotPool(size int) *slotPool {
	reserve := size / 4
	return &slotPool{size: size, reserve: reserve, floor: max(reserve/16, 1), freed: make(chan struct{})}
}

// take takes a slot for sh (nil: no Share) if the rules allow it now;
// otherwise it returns a channel closed when a slot is next given back.
func (p *slotPool) take(sh *Share) (bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refusal(sh, 1) != nil {
		return false, p.freed
	}
	p.used++
	if sh != nil {
		sh.held++
	}
	return true, nil
}

// refusal says why n slots cannot go to sh now, or is nil. Each of the n
// is held to the rules one slot is: within the process and the Share,
// and past the reserve only while the Share stays within its floor.
// Called with p.mu held.
func (p *slotPool) refusal(sh *Share, n int) error {
	if sh != nil && sh.held+n > sh.size {
		return &SlotError{Share: true, Held: sh.held, Size: sh.size, Want: n, Process: p.size}
	}
	if p.used+n > p.size || (sh != nil && sh.held+n > p.floor && p.size-p.used-n < p.reserve) {
		return &SlotError{Used: p.used, Want: n, Process: p.size, Reserve: p.reserve, Floor: p.floor}
	}
	return nil
}

func (p *slotPool) give(sh *Share) { p.giveN(sh, 1) }

func (p *slotPool) giveN(sh *Share, n int) {
	p.mu.Lock()
	p.used -= n
	if sh != nil {
		sh.held -= n
	}
	close(p.freed)
	p.freed = make(chan struct{})
	p.mu.Unlock()
}

// DescriptorsPerSlot is how many descriptors one slot stands for: a
// proxied connection holds up to six (its two sockets, two splice pipes).
// A slot stands for at most one OS thread as well (threadSlotsFor).
const DescriptorsPerSlot = 6

// SlotError is why TakeSlots refused: the Share holds as many as it may
// (Share), or the process's slots, or all but the reserve, which only a
// Share holding fewer than Floor may use, are taken.
type SlotError struct {
	Share                bool
	Held, Size, Want     int // the Share's (Share)
	Used, Reserve, Floor int // the process's (not Share)
	Process              int // the process's slots
}

func (e *SlotError) Error() string {
	if e.Share {
		return fmt.Sprintf("your share of the process's descriptors and threads is in use: %d of its %d slots (a quarter of the process's %d, %d descriptors and a thread each, from its descriptor and thread limits), %d more wanted",
			e.Held, e.Size, e.Process, DescriptorsPerSlot, e.Want)
	}
	return fmt.Sprintf("the process's descriptors and threads are in use by others: %d of its %d slots (%d descriptors and a thread each, from its descriptor and thread limits), the last %d kept for users holding fewer than %d, %d more wanted",
		e.Used, e.Process, DescriptorsPerSlot, e.Reserve, e.Floor, e.Want)
}

// TakeSlots takes n slots of the process for sh at once, or none, without
// waiting: a *SlotError says why not. It is how the rest of a process that
// serves many users (moatd's sessions, commands and runs, each of which
// holds descriptors of the process) counts what it holds against the same
// Shares and the same reserve as the proxies' connections: four users'
// sessions took every descriptor of moatd, whatever the proxies kept, and
// a fifth user's run failed (attack pass 75). GiveSlots gives them back.
func TakeSlots(sh *Share, n int) error {
	if n <= 0 {
		return nil
	}
	p := processPool()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.refusal(sh, n); err != nil {
		return err
	}
	p.used += n
	if sh != nil {
		sh.held += n
	}
	return nil
}

// GiveSlots gives back what TakeSlots took.
func GiveSlots(sh *Share, n int) {
	if n > 0 {
		processPool().giveN(sh, n)
	}
}

// acquire takes a slot for sh, waiting for one until done is closed or
// wait has passed (wait < 0: no bound).
func (p *slotPool) acquire(done <-chan struct{}, sh *Share, wait time.Duration) bool {
	var expired <-chan time.Time
	if wait >= 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		expired = t.C
	}
	for {
		ok, freed := p.take(sh)
		if ok {
			return true
		}
		select {
		case <-freed:
		case <-done:
			return false
		case <-expired:
			return false
		}
	}
}

// AcquireConn takes a connection slot of the process for sh (if not nil,
// counted against it), waiting for one; false when done is closed first.
// ReleaseConn gives it back.
func AcquireConn(done <-chan struct{}, sh *Share) bool {
	return processPool().acquire(done, sh, -1)
}

// AcquireConnWait is AcquireConn waiting at most wait (0: only what is
// free now). For a connection already accepted, which is to be refused
// (RefuseConn) rather than left waiting with no answer.
func AcquireConnWait(done <-chan struct{}, sh *Share, wait time.Duration) bool {
	return processPool().acquire(done, sh, max(wait, 0))
}

// ReleaseConn gives back what AcquireConn took.
func ReleaseConn(sh *Share) { processPool().give(sh) }

// DefaultMaxConns is a Server's bound on client connections served at once
// (a build or an installer opens a few dozen).
const DefaultMaxConns = 512

// SlotWait is how long an accepted connection waits for a slot of the
// process (and of its Share) before it is refused with an answer that says
// so (RefuseConn). A connection used to wait with no answer for as long as
// the slots were held (attack pass 72); a listener that has just refused
// one refuses the next ones at once, until it gets a slot again.
const SlotWait = 3 * time.Second

// processPool bounds the client connections all Servers of the process
// serve at once, and what a daemon's users hold (TakeSlots), from the
// process's descriptor limit (slotsFor) and the OS threads it may have
// (threadSlotsFor).
var processPool = sync.OnceValue(func() *slotPool {
	size := DefaultMaxConns
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil {
		size = slotsFor(rl.Cur)
	}
	// And from the threads it may have: a daemon whose users' sessions
	// held a thread each died at the first one the kernel refused (its
	// cgroup's pids.max: TasksMax), with every user's sandboxes.
	return newSlotPool(min(size, threadSlotsFor(threadLimit())))
})

// slotsFor is how many client connections fit in a descriptor limit: an
// eighth of what is left after keeping a quarter of the limit (at most
// 2048) for the rest of the process, six descriptors a connection with
// some to spare. It used to be at least DefaultMaxConns whatever the
// limit: under a hard limit of a few thousand one sandbox's connections
// took every descriptor of the process (attack pass 63: the netlink
// socket of the host-address check, then every other sandbox moat serve
// or moatd ran).
func slotsFor(limit uint64) int {
	reserve := min(limit/4, 2048)
	return int(max(min((limit-reserve)/8, 1<<21), 16))
}

// refusing bounds the connections being refused at once (RefuseConn):
// past it a connection is closed with no answer, which still ends it.
var refusing = make(chan struct{}, 64)

// RefuseConn answers a connection that gets no slot (AcquireConnWait) in
// its protocol, HTTP "503 Service Unavailable" with X-Proxy-Error:
// no-connection-slot or SOCKS5 "general failure", and closes it. It
// returns at once; the answer takes at most a few seconds of a goroutine
// and the connection's descriptor, no slot.
func RefuseConn(c net.Conn, reason string) {
	select {
	case refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-refusing }()
		refuse(c, reason)
	}()
}

func refuse(c net.Conn, reason string) {
	c.SetDeadline(time.Now().Add(2 * time.Second))
	br := bufio.NewReaderSize(io.LimitReader(c, 4096), 512)
	b, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	if b[0] != socksVersion5 {
		body := "moat proxy: " + oneLine(reason) + "\n"
		fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nX-Proxy-Error: no-connection-slot\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		lingerClose(c)
		return
	}
	// SOCKS5: take the method the client offers (the password one is
	// read and not checked: nothing is granted), then fail its request.
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		c.Close()
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		c.Close()
		return
	}
	method := byte(socksMethodNoneOK)
	for _, m := range methods {
		if m == socksMethodNone || (m == socksMethodPassword && method == socksMethodNoneOK) {
			method = m
		}
	}
	c.Write([]byte{socksVersion5, method})
	if method == socksMethodPassword {
		if _, _, _, err := readSOCKSUserPass(br); err != nil {
			c.Close()
			return
		}
		c.Write([]byte{0x01, 0x00})
	}
	if method != socksMethodNoneOK {
		c.Write([]byte{socksVersion5, socksGeneralFailure, 0x00, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	}
	lingerClose(c)
}

// acquire takes a connection slot of this Server, waiting for one; false
// when the Server closes meanwhile. It is taken before a connection is
// accepted: a Server's own bound holds the next ones in the listener's
// backlog, and no one else's slots are taken by a listener that is idle.
func (s *Server) acquire() bool {
	select {
	case s.slots <- struct{}{}:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// acquireShared takes a slot of the process and of the Server's Share for
// an accepted connection, waiting at most wait. It used to be taken
// before Accept, so a run's idle listeners (two a run) held slots of its
// user's share and of the process while no connection was open, and
// took freed ones from the user's runs with connections waiting (attack
// pass 72).
func (s *Server) acquireShared(wait time.Duration) bool {
	return AcquireConnWait(s.ctx.Done(), s.Share, wait)
}

func (s *Server) release() {
	<-s.slots
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.listeners = make(map[net.Listener]struct{})
		s.conns = make(map[net.Conn]struct{})
		n := s.MaxConns
		if n <= 0 {
			n = DefaultMaxConns
		}
		s.slots = make(chan struct{}, n)
		if s.ParentProxy != nil {
			s.parent, s.parErr = newParentConfig(s.ParentProxy)
		}
	})
}

// SetRules replaces the rule set; connections opened afterwards (and
// later requests on kept-alive connections) use it. Established tunnels
// are not cut. A nil r allows nothing.
func (s *Server) SetRules(r *Rules) {
	s.rules.Store(r)
	s.rulesSet.Store(true)
}

// CurrentRules returns the rule set in force.
func (s *Server) CurrentRules() *Rules {
	if s.rulesSet.Load() {
		return s.rules.Load()
	}
	return s.Rules
}

// Serve accepts connections on l until Close, and serves each one; it
// closes l when it returns. It never assumes it created l (the sandbox launcher passes sockets made in
// the sandbox's network namespace). It returns ErrServerClosed after
// Close, or the listener's error. Serve may be called for several
// listeners at once.
func (s *Server) Serve(l net.Listener) error {
	s.init()
	if s.parErr != nil {
		return s.parErr
	}
	defer l.Close()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()

	var backoff time.Duration
	wait := SlotWait
	for {
		if !s.acquire() {
			return ErrServerClosed
		}
		c, err := l.Accept()
		if err != nil {
			s.release()
			if s.isClosed() {
				return ErrServerClosed
			}
			if !temporaryAcceptError(err) {
				return err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logger().Warn("accept failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return ErrServerClosed
			}
			continue
		}
		backoff = 0
		if s.Peer != nil {
			if err := s.Peer(c); err != nil {
				s.release()
				c.Close()
				s.logger().Debug("connection refused", "err", err)
				continue
			}
		}
		if !s.acquireShared(wait) {
			s.release()
			if s.isClosed() {
				c.Close()
				return ErrServerClosed
			}
			// Refused at once until a slot is had again: the listener's
			// backlog gets its answers rather than SlotWait each.
			wait = 0
			s.logger().Warn("no connection slot: connection refused")
			RefuseConn(c, "no connection slot: this user's sandboxes hold their share of the proxy's connections, or the process's are taken; try again when some end")
			continue
		}
		wait = SlotWait
		if !s.track(c) {
			ReleaseConn(s.Share)
			s.release()
			c.Close()
			return ErrServerClosed
		}
		go func() {
			defer s.wg.Done()
			defer s.release()
			defer ReleaseConn(s.Share)
			defer s.untrack(c)
			s.serveConn(c)
		}()
	}
}

// temporaryAcceptError reports an Accept error after which the listener
// still works: out of descriptors or memory, and the network errors
// accept(2) passes on from a connection that failed before it was taken
// (for TCP: ENETDOWN, EPROTO, ENOPROTOOPT, EHOSTDOWN, ENONET,
// EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH, which its manual says to retry
// like EAGAIN; all but Linux's ENONET, which macOS lacks and a TCP socket
// does not report, are here). Serve ended on those, closing the listener: the sandbox
// lost its only route out for the rest of its run, with nothing said.
func temporaryAcceptError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.ECONNRESET,
		syscall.ENETDOWN, syscall.EPROTO, syscall.ENOPROTOOPT, syscall.EHOSTDOWN, syscall.EHOSTUNREACH, syscall.EOPNOTSUPP, syscall.ENETUNREACH} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Close stops every listener, ends all active connections and waits for
// their goroutines to finish. It is safe to call more than once.
func (s *Server) Close() error {
	s.init()
	s.mu.Lock()
	s.closed = true
	s.cancel()
	var err error
	for l := range s.listeners {
		if e := l.Close(); e != nil && !errors.Is(e, net.ErrClosed) {
			err = e
		}
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

var discardLogger = slog.New(slog.DiscardHandler)

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return discardLogger
}

func (s *Server) maxHeader() int64 {
	if s.MaxHeaderBytes > 0 {
		return int64(s.MaxHeaderBytes)
	}
	return DefaultMaxHeaderBytes
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// limitReader bounds how much of a client connection may be read while a
// header is being parsed; serve loops raise the limit afterwards.
type limitReader struct {
	r   io.Reader
	n   int64
	hit bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		l.hit = true
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

const noLimit = 1 << 62

// clientConn is one accepted connection and its bounded reader.
type clientConn struct {
	s   *Server
	c   net.Conn
	lr  *limitReader
	br  *bufio.Reader
	ctx context.Context
	// src, if set, is what lr reads (the bytes of a tunnel already read,
	// then the connection): br may not hold all that is left of them.
	src io.Reader
}

// serveConn reads the first byte and hands the connection to SOCKS5 or
// HTTP.
func (s *Server) serveConn(c net.Conn) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	cc := &clientConn{s: s, c: c, ctx: ctx}
	cc.lr = &limitReader{r: c, n: s.maxHeader()}
	cc.br = bufio.NewReaderSize(cc.lr, 4096)
	c.SetReadDeadline(time.Now().Add(orDefault(s.HeaderTimeout, DefaultHeaderTimeout)))
	b, err := cc.br.Peek(1)
	if err != nil {
		return
	}
	if b[0] == socksVersion5 {
		cc.serveSOCKS()
		return
	}
	cc.serveHTTP()
}

// pending returns (a copy of) what the client sent beyond what was
// parsed: early data sent before the verdict, bounded by the buffer size.
func (cc *clientConn) pending() []byte {
	n := cc.br.Buffered()
	if n == 0 {
		return nil
	}
	b, _ := cc.br.Peek(n)
	return append([]byte(nil), b...)
}

// checkCredential compares a presented user and password with the
// required credential in constant time.
func (s *Server) checkCredential(user, pass string) bool {
	if s.Credential == "" {
		return true
	}
	wantUser, wantPass, hasUser := strings.Cut(s.Credential, ":")
	if !hasUser {
		return subtle.ConstantTimeCompare([]byte(pass), []byte(s.Credential)) == 1
	}
	u := subtle.ConstantTimeCompare([]byte(user), []byte(wantUser))
	p := subtle.ConstantTimeCompare([]byte(pass), []byte(wantPass))
	return u&p == 1
}

// violation reports a refused destination.
func (s *Server) violation(target, reason string) {
	s.logger().Info("denied", "verdict", "deny", "host", target, "rule", reason)
	if s.OnViolation != nil {
		s.OnViolation(policy.Violation{
			Kind:   policy.NetworkViolation,
			Op:     "connect",
			Target: target,
			Rule:   reason,
			Time:   time.Now(),
		})
	}
}

// lingerClose ends a connection after an error reply without losing the
// reply to a reset: stop writing, read and drop what the client still
// sends (bounded in bytes and time), then close.
func lingerClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	io.CopyN(io.Discard, c, 256<<10)
	c.Close()
}
