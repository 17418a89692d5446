//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package bpf

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/bpf/cgroup"
	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestSpec checks the committed object without a kernel: every program,
// map and constant the Go side uses is there, with the expected types.
func TestSpec(t *testing.T) {
	spec, err := loadSockfilter()
	if err != nil {
		t.Fatal(err)
	}
	progs := map[string]ebpf.AttachType{
		sockfilterProgMoatConnect4:   ebpf.AttachCGroupInet4Connect,
		sockfilterProgMoatConnect6:   ebpf.AttachCGroupInet6Connect,
		sockfilterProgMoatSendmsg4:   ebpf.AttachCGroupUDP4Sendmsg,
		sockfilterProgMoatSendmsg6:   ebpf.AttachCGroupUDP6Sendmsg,
		sockfilterProgMoatBind4:      ebpf.AttachCGroupInet4Bind,
		sockfilterProgMoatBind6:      ebpf.AttachCGroupInet6Bind,
		sockfilterProgMoatSockCreate: ebpf.AttachCGroupInetSockCreate,
	}
	if len(spec.Programs) != len(progs) {
		t.Errorf("object has %d programs, want %d", len(spec.Programs), len(progs))
	}
	for name, at := range progs {
		p := spec.Programs[name]
		if p == nil {
			t.Errorf("no program %s", name)
			continue
		}
		if p.AttachType != at {
			t.Errorf("%s attaches as %v, want %v", name, p.AttachType, at)
		}
	}
	if m := spec.Maps[sockfilterMapAllowed]; m == nil || m.Type != ebpf.Hash || m.KeySize != 32 || m.ValueSize != 1 {
		t.Errorf("allowed map: %v", m)
	}
	if m := spec.Maps[sockfilterMapConfigs]; m == nil || m.Type != ebpf.Hash || m.KeySize != 8 || m.ValueSize != 16 {
		t.Errorf("configs map: %v", m)
	}
	if m := spec.Maps[sockfilterMapEvents]; m == nil || m.Type != ebpf.RingBuf {
		t.Errorf("events map: %v", m)
	}
	if vs := spec.Variables[sockfilterVarHaveComm]; vs == nil || !vs.Constant() || vs.Size() != 1 {
		t.Errorf("variable %s: %v", sockfilterVarHaveComm, vs)
	}
	if err := configure(spec, LoadOptions{Filters: 5, Destinations: 3, EventBuffer: 8192}); err != nil {
		t.Fatal(err)
	}
	if spec.Maps[sockfilterMapAllowed].MaxEntries != 3 || spec.Maps[sockfilterMapConfigs].MaxEntries != 5 || spec.Maps[sockfilterMapEvents].MaxEntries != 8192 {
		t.Errorf("configure did not size the maps")
	}
}

func TestAllowEntries(t *testing.T) {
	p := netip.MustParseAddrPort
	got, err := allowEntries(
		[]netip.AddrPort{p("127.0.0.1:3128"), p("[::1]:3128"), p("[::ffff:127.0.0.1]:3128")},
		[]netip.AddrPort{p("127.0.0.1:3128"), p("127.0.0.1:0")})
	if err != nil {
		t.Fatal(err)
	}
	v4 := netip.MustParseAddr("127.0.0.1").As16()
	want := map[destKey]uint8{
		{addr: v4, port: 3128}:                          allowConnect | allowBind, // IPv4 and mapped are one entry
		{addr: netip.IPv6Loopback().As16(), port: 3128}: allowConnect,
		{addr: v4, port: 0}:                             allowBind,
	}
	if !maps.Equal(got, want) {
		t.Errorf("allowEntries = %v, want %v", got, want)
	}
	for _, bad := range []netip.AddrPort{{}, p("127.0.0.1:0"), netip.AddrPortFrom(netip.MustParseAddr("fe80::1%eth0"), 80)} {
		if _, err := allowEntries([]netip.AddrPort{bad}, nil); err == nil {
			t.Errorf("allowEntries accepted %v", bad)
		}
	}
}

func TestCheckOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		ok   bool
	}{
		{Options{}, true},
		{Options{Bind: BindAny, EventBuffer: 1 << 20}, true},
		{Options{Bind: BindAny + 1}, false},
		{Options{EventBuffer: 1000}, false},
		{Options{EventBuffer: 3 << 12}, false},
	} {
		if err := checkOptions(tc.opts); (err == nil) != tc.ok {
			t.Errorf("checkOptions(%+v) = %v", tc.opts, err)
		}
	}
}

func TestDecodeEvent(t *testing.T) {
	b := make([]byte, eventSize)
	ne := func(off int, v uint32) { copy(b[off:], []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}) }
	ne(0, 4242)
	ne(4, 4243)
	a := netip.MustParseAddr("::ffff:203.0.113.7").As16()
	copy(b[8:24], a[:])
	b[24], b[25] = 0xbb, 0x01 // 443, little-endian
	b[26] = 6
	b[28], b[29], b[30] = 10, opConnect, 1
	copy(b[32:], "curl")
	b[48], b[49] = 0x34, 0x12 // cgroup id 0x1234, little-endian
	ev, cgid, ok := decodeEvent(b)
	if !ok || cgid != 0x1234 {
		t.Fatalf("not decoded, or cgroup id %#x", cgid)
	}
	want := Event{Pid: 4242, Tid: 4243, Comm: "curl", Op: "connect", Proto: "tcp", Addr: netip.MustParseAddrPort("203.0.113.7:443")}
	if ev != want {
		t.Errorf("decodeEvent = %+v, want %+v", ev, want)
	}
	if got := ev.String(); got != "connect tcp 203.0.113.7:443 refused (pid 4242 curl)" {
		t.Errorf("String = %q", got)
	}
	if _, _, ok := decodeEvent(b[:20]); ok {
		t.Error("decoded a short record")
	}
}

// requireFilter skips unless this process can attach filters.
func requireFilter(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t)
	if err := Supported(); err != nil {
		testutil.Unavailable(t, "cgroup socket filter: %v", err)
	}
}

func TestSupported(t *testing.T) {
	err := Supported()
	t.Logf("Supported() = %v", err)
	if os.Geteuid() != 0 {
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Supported() as uid %d = %v, want ErrUnsupported", os.Geteuid(), err)
		}
		return
	}
	if err != nil {
		testutil.Unavailable(t, "Supported: %v", err)
	}
	t.Logf("comm helper available: %v", haveComm())
}

// TestLoad runs the verifier over the programs for each configuration,
// without attaching them.
func TestLoad(t *testing.T) {
	requireFilter(t)
	for _, opts := range []LoadOptions{
		{},
		{NoBind: true, EventBuffer: 1 << 20},
		{Filters: 1024, Destinations: 4096},
	} {
		p, err := Load(opts)
		if err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
		if (p.objs.MoatBind4 == nil) != opts.NoBind {
			t.Errorf("%+v: bind programs loaded: %v", opts, p.objs.MoatBind4 != nil)
		}
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range []LoadOptions{{EventBuffer: 1000}, {Filters: -1}} {
		if _, err := Load(bad); err == nil {
			t.Errorf("Load(%+v) succeeded", bad)
		}
	}
}

// newGroup returns a fresh cgroup under a parent private to this test
// binary; both go away when the test ends.
func newGroup(t *testing.T) *cgroup.Group {
	t.Helper()
	m, err := cgroup.New(fmt.Sprintf("moat-test-bpf-%d", os.Getpid()))
	if err != nil {
		testutil.Unavailable(t, "cgroup2: %v", err)
	}
	g, err := m.Create("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Remove(); err != nil {
			t.Error(err)
		}
		_ = os.Remove(m.Dir) // fails while other tests still use it
	})
	return g
}

// listen opens a TCP or UDP socket on addr (port 0 picks one) for the
// test's duration and returns its address.
func listen(t *testing.T, network, addr string) netip.AddrPort {
	t.Helper()
	var a net.Addr
	if strings.HasPrefix(network, "udp") {
		c, err := net.ListenPacket(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		a = c.LocalAddr()
	} else {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		a = l.Addr()
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

func withPort(addr string, ap netip.AddrPort) string {
	return netip.AddrPortFrom(netip.MustParseAddr(addr), ap.Port()).String()
}

func attach(t *testing.T, g *cgroup.Group, allow []netip.AddrPort, opts Options) *Filter {
	t.Helper()
	f, err := Attach(g.Path(), allow, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// expect is one operation, its result inside the filtered cgroup, and the
// event it must produce there (Op "" for none).
type expect struct {
	op   op
	want string
	ev   Event
}

func ev(opName, proto, addr string) Event {
	e := Event{Op: opName, Proto: proto}
	if addr != "" {
		e.Addr = netip.MustParseAddrPort(addr)
	}
	return e
}

// check runs the cases in a helper inside g, compares results and events,
// and returns the helper's run.
func check(t *testing.T, f *Filter, g *cgroup.Group, cloneflags uintptr, cases []expect) helperRun {
	t.Helper()
	var ops []op
	var want []Event
	for _, c := range cases {
		ops = append(ops, c.op)
		if c.ev.Op != "" {
			want = append(want, c.ev)
		}
	}
	run := runHelper(t, g.FD(), cloneflags, ops)
	for _, c := range cases {
		if got := run.results[c.op.String()]; got != c.want {
			t.Errorf("in the cgroup: %v = %s, want %s", c.op, got, c.want)
		}
	}
	if f != nil {
		got := collect(t, f, run.pid, len(want))
		comm := filepath.Base(os.Args[0])
		for i := range got {
			if got[i].Tid == 0 || (got[i].Comm != "" && !strings.HasPrefix(comm, got[i].Comm)) {
				t.Errorf("event %+v: bad tid or comm (want a prefix of %q)", got[i], comm)
			}
			got[i].Pid, got[i].Tid, got[i].Comm = 0, 0, ""
		}
		if !slices.Equal(got, want) {
			t.Errorf("events for pid %d:\n got %v\nwant %v", run.pid, got, want)
		}
	}
	return run
}

// collect reads events of pid until n arrived (and a moment more, to
// catch extras) or a timeout. Events of other pids fail the test.
func collect(t *testing.T, f *Filter, pid, n int) []Event {
	t.Helper()
	var got []Event
	timeout := time.After(5 * time.Second)
	for {
		grace := time.Duration(0)
		if len(got) >= n {
			grace = 100 * time.Millisecond
		}
		select {
		case e, ok := <-f.Events():
			if !ok {
				return got
			}
			if e.Pid != pid {
				t.Errorf("event from pid %d (helper is %d): %v", e.Pid, pid, e)
				continue
			}
			got = append(got, e)
		case <-time.After(grace + 5*time.Millisecond):
			if len(got) >= n {
				return got
			}
		case <-timeout:
			t.Errorf("timed out with %d of %d events", len(got), n)
			return got
		}
	}
}

// TestFilter is the main scenario: a proxy-like allow-list of one IPv4 and
// one IPv6 listener. Everything else is refused and reported inside the
// cgroup, and the same operations succeed outside it.
func TestFilter(t *testing.T) {
	requireFilter(t)
	proxy4 := listen(t, "tcp4", "127.0.0.1:0")
	other4 := listen(t, "tcp4", "127.0.0.1:0")
	proxy6 := listen(t, "tcp6", "[::1]:0")
	other6 := listen(t, "tcp6", "[::1]:0")
	udp4 := listen(t, "udp4", "127.0.0.1:0")
	udp6 := listen(t, "udp6", "[::1]:0")
	mapped := func(ap netip.AddrPort) string { return withPort("::ffff:127.0.0.1", ap) }

	g := newGroup(t)
	f := attach(t, g, []netip.AddrPort{proxy4, proxy6}, Options{})
	cases := []expect{
		{op{"tcp4", proxy4.String()}, "ok", Event{}},
		{op{"tcp4", other4.String()}, "EPERM", ev("connect", "tcp", other4.String())},
		{op{"tcp4", withPort("127.0.0.2", proxy4)}, "EPERM", ev("connect", "tcp", withPort("127.0.0.2", proxy4))},
		{op{"tcp4", withPort("0.0.0.0", proxy4)}, "EPERM", ev("connect", "tcp", withPort("0.0.0.0", proxy4))},
		{op{"tcp6", proxy6.String()}, "ok", Event{}},
		{op{"tcp6", other6.String()}, "EPERM", ev("connect", "tcp", other6.String())},
		// IPv4-mapped destinations are judged as the IPv4 address.
		{op{"tcp6", mapped(proxy4)}, "ok", Event{}},
		{op{"tcp6", mapped(other4)}, "EPERM", ev("connect", "tcp", other4.String())},
		{op{"tfo4", other4.String()}, "EPERM", ev("connect", "tcp", other4.String())},
		{op{"udp4", udp4.String()}, "EPERM", ev("sendmsg", "udp", udp4.String())},
		{op{"udp6", udp6.String()}, "EPERM", ev("sendmsg", "udp", udp6.String())},
		{op{"udp6", mapped(udp4)}, "EPERM", ev("sendmsg", "udp", udp4.String())},
		{op{"udpconn4", udp4.String()}, "EPERM", ev("connect", "udp", udp4.String())},
		{op{"raw4", "-"}, "EPERM", ev("socket", "raw", "")},
		// MPTCP connects through a TCP subflow, which meets the hook.
		{op{"mptcp4", proxy4.String()}, "ok", Event{}},
		{op{"mptcp4", other4.String()}, "EPERM", ev("connect", "tcp", other4.String())},
		{op{"mptcp6", mapped(other4)}, "EPERM", ev("connect", "tcp", other4.String())},
		{op{"bind4", "127.0.0.1:0"}, "EPERM", ev("bind", "tcp", "127.0.0.1:0")},
	}
	check(t, f, g, 0, cases)

	// Outside the cgroup nothing is refused, so the results above come from
	// the filter and not from a broken host. (127.0.0.2 has no listener:
	// there the host answers ECONNREFUSED.)
	var ops []op
	for _, c := range cases {
		ops = append(ops, c.op)
	}
	outside := runHelper(t, -1, 0, ops)
	for _, o := range ops {
		want := "ok"
		if strings.HasPrefix(o.addr, "127.0.0.2:") {
			want = "ECONNREFUSED"
		}
		if got := outside.results[o.String()]; got != want {
			t.Errorf("outside the cgroup: %v = %s, want %s", o, got, want)
		}
	}
	select {
	case e := <-f.Events():
		t.Errorf("event after the runs: %v", e)
	case <-time.After(50 * time.Millisecond):
	}
	if n := f.Dropped(); n != 0 {
		t.Errorf("Dropped = %d", n)
	}
}

// TestAllowListIsTCPOnly: the allow-list's key has no protocol, and its
// entries are TCP services (the proxy's listeners, the loopback ports a
// shared-network policy names): a UDP datagram to an allowed address and
// port, sent or connected, is refused and reported, and reaches a UDP
// socket on that port outside the cgroup. It passed, and reached a UDP
// service on an allowed TCP literal's port (found by an attack pass).
func TestAllowListIsTCPOnly(t *testing.T) {
	requireFilter(t)
	tcp4 := listen(t, "tcp4", "127.0.0.1:0")
	udp4 := listen(t, "udp4", tcp4.String())
	var allow []netip.AddrPort
	allow = append(allow, tcp4)
	cases := []expect{
		{op{"tcp4", tcp4.String()}, "ok", Event{}},
		{op{"tfo4", tcp4.String()}, "ok", Event{}},
		{op{"udp4", udp4.String()}, "EPERM", ev("sendmsg", "udp", udp4.String())},
		{op{"udpconn4", udp4.String()}, "EPERM", ev("connect", "udp", udp4.String())},
		{op{"udp6", withPort("::ffff:127.0.0.1", udp4)}, "EPERM", ev("sendmsg", "udp", udp4.String())},
	}
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		l.Close()
		tcp6 := listen(t, "tcp6", "[::1]:0")
		udp6 := listen(t, "udp6", tcp6.String())
		allow = append(allow, tcp6)
		cases = append(cases,
			expect{op{"tcp6", tcp6.String()}, "ok", Event{}},
			expect{op{"udp6", udp6.String()}, "EPERM", ev("sendmsg", "udp", udp6.String())},
			expect{op{"udpconn6", udp6.String()}, "EPERM", ev("connect", "udp", udp6.String())})
	}
	g := newGroup(t)
	f := attach(t, g, allow, Options{Bind: BindLoopback})
	check(t, f, g, 0, cases)

	// Outside the cgroup each of them goes through.
	var ops []op
	for _, c := range cases {
		ops = append(ops, c.op)
	}
	outside := runHelper(t, -1, 0, ops)
	for _, o := range ops {
		if got := outside.results[o.String()]; got != "ok" {
			t.Errorf("outside the cgroup: %v = %s, want ok", o, got)
		}
	}
}

// TestPingSocket: ICMP echo sockets reach any host without a sendmsg hook,
// so the filter refuses to create them. The helper runs in a network
// namespace of its own, where it may allow them (ping_group_range).
func TestPingSocket(t *testing.T) {
	requireFilter(t)
	g := newGroup(t)
	f := attach(t, g, nil, Options{})
	check(t, f, g, syscall.CLONE_NEWNET, []expect{
		{op{"ping4", "ownnet"}, "EPERM", ev("socket", "icmp", "")},
	})
	outside := runHelper(t, -1, syscall.CLONE_NEWNET, []op{{"ping4", "ownnet"}})
	if got := outside.results["ping4 ownnet"]; got != "ok" {
		t.Errorf("ping socket outside the cgroup: %s", got)
	}
}

// TestNamespaces: the launch path's shape. The helper starts in the
// cgroup and in new user, pid and network namespaces at once, unprivileged
// on the host (uid 65534). The filter applies, and events carry the pid
// the host sees, not the sandbox's pid 1.
func TestNamespaces(t *testing.T) {
	requireFilter(t)
	testutil.RequireUserns(t)
	g := newGroup(t)
	f := attach(t, g, nil, Options{AllowLoopback: true, Bind: BindAny})
	run := check(t, f, g, syscall.CLONE_NEWUSER|syscall.CLONE_NEWPID|syscall.CLONE_NEWNET, []expect{
		// Allowed by the filter; the namespace's lo is down.
		{op: op{"tcp4", "127.0.0.1:9"}, want: "ENETUNREACH"},
		{op: op{"bind4", "0.0.0.0:8080"}, want: "ok"},
		{op{"tcp4", "192.0.2.1:443"}, "EPERM", ev("connect", "tcp", "192.0.2.1:443")},
		{op{"udp6", "[2001:db8::53]:53"}, "EPERM", ev("sendmsg", "udp", "[2001:db8::53]:53")},
	})
	if run.selfPid != 1 {
		t.Errorf("helper saw itself as pid %d, want 1", run.selfPid)
	}
}

func TestAllowLoopback(t *testing.T) {
	requireFilter(t)
	other4 := listen(t, "tcp4", "127.0.0.1:0")
	other6 := listen(t, "tcp6", "[::1]:0")
	udp4 := listen(t, "udp4", "127.0.0.1:0")
	g := newGroup(t)
	f := attach(t, g, nil, Options{AllowLoopback: true})
	check(t, f, g, 0, []expect{
		{op{"tcp4", other4.String()}, "ok", Event{}},
		{op{"tcp4", withPort("0.0.0.0", other4)}, "ok", Event{}},
		{op{"tcp6", other6.String()}, "ok", Event{}},
		{op{"tcp6", withPort("::ffff:127.0.0.1", other4)}, "ok", Event{}},
		{op{"udp4", udp4.String()}, "ok", Event{}},
		// Not loopback: refused at once (192.0.2.0/24 is TEST-NET-1).
		{op{"tcp4", "192.0.2.1:443"}, "EPERM", ev("connect", "tcp", "192.0.2.1:443")},
		{op{"tcp6", "[2001:db8::1]:443"}, "EPERM", ev("connect", "tcp", "[2001:db8::1]:443")},
		{op{"tcp6", "[::ffff:192.0.2.1]:443"}, "EPERM", ev("connect", "tcp", "192.0.2.1:443")},
		{op{"udp4", "192.0.2.1:53"}, "EPERM", ev("sendmsg", "udp", "192.0.2.1:53")},
	})
}

func TestBindPolicy(t *testing.T) {
	requireFilter(t)
	// A free port for the Listen entry.
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listenAddr := netip.MustParseAddrPort(l.Addr().String())
	l.Close()
	ops := []op{
		{"bind4", listenAddr.String()},
		{"bind4", "127.0.0.1:0"},
		{"bind4", "127.0.0.9:0"},
		{"bind4", "0.0.0.0:0"},
		{"bind6", "[::1]:0"},
		{"bind6", "[::]:0"},
		{"bind6", "[::ffff:127.0.0.1]:0"},
	}
	for _, tc := range []struct {
		bind BindPolicy
		want []string // per op
	}{
		{BindDeny, []string{"ok", "EPERM", "EPERM", "EPERM", "EPERM", "EPERM", "EPERM"}},
		{BindLoopback, []string{"ok", "ok", "ok", "EPERM", "ok", "EPERM", "ok"}},
		{BindAny, []string{"ok", "ok", "ok", "ok", "ok", "ok", "ok"}},
	} {
		t.Run(tc.bind.String(), func(t *testing.T) {
			g := newGroup(t)
			f := attach(t, g, nil, Options{Bind: tc.bind, Listen: []netip.AddrPort{listenAddr}})
			var cases []expect
			for i, o := range ops {
				e := expect{op: o, want: tc.want[i]}
				if e.want == "EPERM" {
					a := netip.MustParseAddrPort(o.addr)
					e.ev = ev("bind", "tcp", netip.AddrPortFrom(a.Addr().Unmap(), a.Port()).String())
				}
				cases = append(cases, e)
			}
			check(t, f, g, 0, cases)
		})
	}
}

// TestSetAllowedGrows: a filter of its own set can take live updates that
// add destinations, up to MaxDestinations. Its map had been sized to the
// entries it started with, and a cold shareNetwork run's first update
// that added a loopback literal failed ("key too big for map: argument
// list too long"). Past the cap, Attach and SetAllowed say what the cap is.
func TestSetAllowedGrows(t *testing.T) {
	requireFilter(t)
	proxy := listen(t, "tcp4", "127.0.0.1:0")
	added := []netip.AddrPort{listen(t, "tcp4", "127.0.0.1:0"), listen(t, "tcp4", "127.0.0.1:0"), listen(t, "tcp4", "127.0.0.1:0")}
	g := newGroup(t)
	f := attach(t, g, []netip.AddrPort{proxy}, Options{})
	var before []expect
	for _, a := range added {
		before = append(before, expect{op{"tcp4", a.String()}, "EPERM", ev("connect", "tcp", a.String())})
	}
	check(t, f, g, 0, before)
	if err := f.SetAllowed(append([]netip.AddrPort{proxy}, added...)); err != nil {
		t.Fatalf("an update adding %d destinations to a filter that started with 1: %v", len(added), err)
	}
	after := []expect{{op{"tcp4", proxy.String()}, "ok", Event{}}}
	for _, a := range added {
		after = append(after, expect{op{"tcp4", a.String()}, "ok", Event{}})
	}
	check(t, f, g, 0, after)

	// Up to the cap, and no further.
	many := func(n int) []netip.AddrPort {
		var out []netip.AddrPort
		for i := range n {
			out = append(out, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1, byte(i >> 8), byte(i)}), 4000))
		}
		return out
	}
	if err := f.SetAllowed(many(MaxDestinations)); err != nil {
		t.Fatalf("SetAllowed of MaxDestinations (%d): %v", MaxDestinations, err)
	}
	err := f.SetAllowed(many(MaxDestinations + 1))
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(MaxDestinations)) {
		t.Fatalf("SetAllowed past the cap: %v, want an error naming %d", err, MaxDestinations)
	}
	if _, err := Attach(newGroup(t).Path(), many(MaxDestinations+1), Options{}); err == nil || !strings.Contains(err.Error(), strconv.Itoa(MaxDestinations)) {
		t.Fatalf("Attach past the cap: %v, want an error naming %d", err, MaxDestinations)
	}
}

// TestListenGap documents a known gap (doc.go): listen() without bind()
// autobinds an ephemeral port, which no bind hook sees.
func TestListenGap(t *testing.T) {
	requireFilter(t)
	g := newGroup(t)
	f := attach(t, g, nil, Options{Bind: BindDeny})
	check(t, f, g, 0, []expect{{op: op{"listen4", "-"}, want: "ok"}})
}

// TestInheritedSocket documents that the hooks judge a socket by the
// cgroup it was created in: a socket made outside and handed to the
// sandbox is not filtered (doc.go; the launcher closes such fds).
func TestInheritedSocket(t *testing.T) {
	requireFilter(t)
	other := listen(t, "tcp4", "127.0.0.1:0")
	g := newGroup(t)
	attach(t, g, nil, Options{})
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock := os.NewFile(uintptr(fd), "outside")
	defer sock.Close()
	run := runHelper(t, g.FD(), 0, []op{{"tcp4", other.String()}, {"tcpfd4", other.String()}}, sock)
	if got := run.results["tcp4 "+other.String()]; got != "EPERM" {
		t.Errorf("socket created inside: %s, want EPERM", got)
	}
	if got := run.results["tcpfd4 "+other.String()]; got != "ok" {
		t.Errorf("socket created outside: %s, want ok (unfiltered)", got)
	}
}

// TestCloseKeepsEnforcing: Close releases moat's handles, and the cgroup
// stays filtered (fail closed) until it is removed.
func TestCloseKeepsEnforcing(t *testing.T) {
	requireFilter(t)
	proxy := listen(t, "tcp4", "127.0.0.1:0")
	other := listen(t, "tcp4", "127.0.0.1:0")
	g := newGroup(t)
	f := attach(t, g, []netip.AddrPort{proxy}, Options{})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-f.Events(); ok {
		t.Error("Events not closed by Close")
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	check(t, nil, g, 0, []expect{
		{op: op{"tcp4", proxy.String()}, want: "ok"},
		{op: op{"tcp4", other.String()}, want: "EPERM"},
		{op: op{"udp4", other.String()}, want: "EPERM"},
	})
	if err := f.Detach(); err == nil {
		t.Error("Detach after Close succeeded")
	}
}

// TestAttachSurvivesExit: a process attaches and exits without closing
// anything (as a crashed moat would); the cgroup stays filtered.
func TestAttachSurvivesExit(t *testing.T) {
	requireFilter(t)
	proxy := listen(t, "tcp4", "127.0.0.1:0")
	other := listen(t, "tcp4", "127.0.0.1:0")
	g := newGroup(t)
	cmd := exec.Command(os.Args[0], proxy.String())
	cmd.Env = append(os.Environ(), "MOAT_BPF_ATTACH="+g.Path())
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "attached" {
		t.Fatalf("attaching process: %v: %s", err, out)
	}
	check(t, nil, g, 0, []expect{
		{op: op{"tcp4", proxy.String()}, want: "ok"},
		{op: op{"tcp4", other.String()}, want: "EPERM"},
		{op: op{"tcp6", withPort("::ffff:127.0.0.1", other)}, want: "EPERM"},
		{op: op{"udp4", other.String()}, want: "EPERM"},
	})
}

// TestDetachAndReplace: two filters on one cgroup allow only what both
// allow; detaching one leaves the other in force; detaching the last opens
// the cgroup.
func TestDetachAndReplace(t *testing.T) {
	requireFilter(t)
	a := listen(t, "tcp4", "127.0.0.1:0")
	b := listen(t, "tcp4", "127.0.0.1:0")
	g := newGroup(t)
	old := attach(t, g, []netip.AddrPort{a}, Options{})
	repl := attach(t, g, []netip.AddrPort{a, b}, Options{})
	check(t, nil, g, 0, []expect{
		{op: op{"tcp4", a.String()}, want: "ok"},
		{op: op{"tcp4", b.String()}, want: "EPERM"},
	})
	if err := old.Detach(); err != nil {
		t.Fatal(err)
	}
	check(t, nil, g, 0, []expect{
		{op: op{"tcp4", a.String()}, want: "ok"},
		{op: op{"tcp4", b.String()}, want: "ok"},
		{op: op{"udp4", "127.0.0.1:9"}, want: "EPERM"},
	})
	if err := repl.Detach(); err != nil {
		t.Fatal(err)
	}
	check(t, nil, g, 0, []expect{
		{op: op{"udp4", "127.0.0.1:9"}, want: "ok"},
		{op: op{"raw4", "-"}, want: "ok"},
	})
}

// TestDropped: a flood of refused attempts that nobody reads is counted,
// and every attempt is still refused.
func TestDropped(t *testing.T) {
	requireFilter(t)
	g := newGroup(t)
	f := attach(t, g, nil, Options{EventBuffer: 4096})
	n := 1000
	run := runHelper(t, g.FD(), 0, []op{{"repeat", fmt.Sprintf("%d:tcp4:127.0.0.1:9", n)}})
	if got := run.results[fmt.Sprintf("repeat %d:tcp4:127.0.0.1:9", n)]; got != "EPERM" {
		t.Fatalf("last attempt: %s", got)
	}
	// Every attempt ends up either queued on Events or counted.
	deadline := time.Now().Add(5 * time.Second)
	for f.Dropped()+uint64(len(f.Events())) < uint64(n) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got := 0
	for range f.Events() {
		got++
	}
	dropped := f.Dropped()
	// The channel holds at most eventQueue events; the rest are dropped
	// either there or, when the reader is slow (a busy machine), already in
	// the kernel's ring buffer. Both kinds are counted, so the sum is exact.
	if got == 0 || got > eventQueue || dropped == 0 || uint64(got)+dropped != uint64(n) {
		t.Errorf("%d events delivered + %d dropped, want 1..%d delivered and the rest of %d attempts dropped", got, dropped, eventQueue, n)
	}
}

func TestAttachErrors(t *testing.T) {
	requireFilter(t)
	if _, err := Attach(t.TempDir(), nil, Options{}); err == nil || !strings.Contains(err.Error(), "not a cgroup2") {
		t.Errorf("Attach to a plain directory: %v", err)
	}
	if _, err := Attach("/nonexistent/cgroup", nil, Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Attach to a missing directory: %v", err)
	}
	g := newGroup(t)
	if _, err := Attach(g.Path(), []netip.AddrPort{{}}, Options{}); err == nil {
		t.Error("Attach accepted an invalid destination")
	}
}

// TestNoLeaks: attaching and closing filters leaves no file descriptors or
// goroutines behind.
func TestNoLeaks(t *testing.T) {
	requireFilter(t)
	g := newGroup(t)
	count := func() (int, int) {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(fds), runtime.NumGoroutine()
	}
	// Warm up: the feature probes and the object parse run once.
	f, err := Attach(g.Path(), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Detach()
	fds, goroutines := count()
	for i := range 3 {
		f, err := Attach(g.Path(), nil, Options{Bind: BindPolicy(i)})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			err = f.Close()
		} else {
			err = f.Detach()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		nf, ng := count()
		if nf <= fds && ng <= goroutines {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fds %d -> %d, goroutines %d -> %d", fds, nf, goroutines, ng)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSharedSet: one loaded set of programs filters two cgroups, each by
// its own rules, and each filter gets only its own cgroup's events. A
// cgroup below a filtered one (which no rule names) is refused everything;
// a shared filter's Close takes its rules out (its cgroup is then refused
// everything: fail closed); closing the set leaves the other filter's
// attachment enforcing its rules.
func TestSharedSet(t *testing.T) {
	requireFilter(t)
	a := listen(t, "tcp4", "127.0.0.1:0")
	b := listen(t, "tcp4", "127.0.0.1:0")
	p, err := Load(LoadOptions{Filters: 4, Destinations: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	g1, g2 := newGroup(t), newGroup(t)
	f1, err := p.Attach(g1.Path(), []netip.AddrPort{a}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f2, err := p.Attach(g2.Path(), []netip.AddrPort{b}, Options{AllowLoopback: true, Bind: BindAny})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Attach(g1.Path(), nil, Options{}); err == nil || !strings.Contains(err.Error(), "already has a filter") {
		t.Errorf("a second filter of the set on one cgroup: %v", err)
	}
	if _, err := p.Attach(g2.Path(), nil, Options{EventBuffer: 8192}); err == nil {
		t.Error("a shared set's filter took an event buffer of its own")
	}
	// Each cgroup by its rules; check fails on an event from another pid,
	// so a filter that got the other cgroup's events fails here.
	check(t, f1, g1, 0, []expect{
		{op: op{"tcp4", a.String()}, want: "ok"},
		{op: op{"tcp4", b.String()}, want: "EPERM", ev: ev("connect", "tcp", b.String())},
		{op: op{"udp4", "127.0.0.1:9"}, want: "EPERM", ev: ev("sendmsg", "udp", "127.0.0.1:9")},
	})
	check(t, f2, g2, 0, []expect{
		{op: op{"tcp4", b.String()}, want: "ok"},
		{op: op{"tcp4", a.String()}, want: "ok"}, // loopback, allowed here
		{op: op{"tcp4", "192.0.2.1:80"}, want: "EPERM", ev: ev("connect", "tcp", "192.0.2.1:80")},
		{op: op{"raw4", "-"}, want: "EPERM", ev: ev("socket", "raw", "")},
	})
	// A cgroup below g2: no rule names it.
	child := filepath.Join(g2.Path(), "child")
	if err := os.Mkdir(child, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(child) })
	cfd, err := unix.Open(child, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(cfd)
	before := p.Unknown()
	run := runHelper(t, cfd, 0, []op{{"tcp4", b.String()}, {"tcp4", a.String()}})
	for k, got := range run.results {
		if got != "EPERM" {
			t.Errorf("in a cgroup below a filtered one: %s = %s, want EPERM", k, got)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); p.Unknown() < before+2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if p.Unknown() < before+2 {
		t.Errorf("refusals below a filtered cgroup counted as unknown: %d, want %d", p.Unknown()-before, 2)
	}
	// Closing f1 takes its rules out: g1 is refused everything.
	if err := f1.Close(); err != nil {
		t.Fatal(err)
	}
	check(t, nil, g1, 0, []expect{{op: op{"tcp4", a.String()}, want: "EPERM"}})
	// Closing the set: f2's attachment keeps enforcing its rules.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-f2.Events(); ok {
		t.Error("Events of a filter still open after its set's Close")
	}
	check(t, nil, g2, 0, []expect{
		{op: op{"tcp4", b.String()}, want: "ok"},
		{op: op{"raw4", "-"}, want: "EPERM"},
	})
	if err := f2.Close(); err != nil {
		t.Errorf("Close of a filter after its set's: %v", err)
	}
	if _, err := p.Attach(g1.Path(), nil, Options{}); err == nil {
		t.Error("Attach from a closed set succeeded")
	}
}

// BenchmarkAttach: what a run pays for its filter, loading a set of its
// own (Attach) or attaching a loaded one (Programs.Attach), then detaching
// (the cgroup is reused; a run removes it instead).
//
//	go test -run XXX -bench Attach ./bpf/   # as root
func BenchmarkAttach(b *testing.B) {
	if os.Geteuid() != 0 || Supported() != nil {
		b.Skip("needs root and the filter")
	}
	m, err := cgroup.New(fmt.Sprintf("moat-bench-bpf-%d", os.Getpid()))
	if err != nil {
		b.Skip(err)
	}
	g, err := m.Create("")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { g.Remove(); os.Remove(m.Dir) }()
	allow := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:3128"), netip.MustParseAddrPort("[::1]:3128")}
	opts := Options{AllowLoopback: true, Bind: BindAny, Listen: allow}
	b.Run("own", func(b *testing.B) {
		for b.Loop() {
			f, err := Attach(g.Path(), allow, opts)
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Detach(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("shared", func(b *testing.B) {
		p, err := Load(LoadOptions{Filters: 1024, Destinations: 8192, EventBuffer: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		for b.Loop() {
			f, err := p.Attach(g.Path(), allow, opts)
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Detach(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
