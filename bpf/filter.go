package bpf

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
)

// ErrUnsupported reports that this host cannot run the filter: not Linux,
// not privileged enough (cgroup eBPF needs root: CAP_BPF and CAP_NET_ADMIN,
// or CAP_SYS_ADMIN), no cgroup2 hierarchy, or a kernel that lacks a program
// type, helper or map the filter uses (Linux 5.8 or later is needed).
var ErrUnsupported = errors.New("bpf: cgroup socket filter unsupported")

// BindPolicy says which bind() calls the filter lets through.
type BindPolicy uint8

const (
	// BindDeny refuses every bind() except to the addresses in
	// [Options.Listen]. It is the zero value.
	BindDeny BindPolicy = iota
	// BindLoopback also allows binding loopback addresses (127.0.0.0/8,
	// ::1, IPv4-mapped 127.0.0.0/8), any port. Wildcard binds (0.0.0.0, ::)
	// stay refused: they would listen on every interface.
	BindLoopback
	// BindAny leaves bind() alone (the bind programs are not attached).
	// Use it when the sandbox has its own network namespace, where every
	// address it can bind is its own.
	BindAny
)

func (b BindPolicy) String() string {
	switch b {
	case BindDeny:
		return "deny"
	case BindLoopback:
		return "loopback"
	case BindAny:
		return "any"
	}
	return "BindPolicy(" + strconv.Itoa(int(b)) + ")"
}

// Options tune a filter. The zero value is the strictest: only the
// allow-list is reachable, no bind() is allowed, events use a 64 KiB ring
// buffer.
type Options struct {
	// AllowLoopback also allows connect() and sendmsg() to any loopback
	// destination: 127.0.0.0/8, ::1, and 0.0.0.0 and ::, which reach the
	// local host. Set it only when the sandbox has its own network
	// namespace, where loopback is the sandbox's own; never when it shares
	// the host's network, where loopback is every local service.
	AllowLoopback bool

	// Bind says which bind() calls are allowed besides Listen.
	Bind BindPolicy

	// Listen lists the addresses the sandbox may bind whatever Bind says:
	// for example the proxy's listeners when the sandbox's stage 2 creates
	// them inside its network namespace (it runs in the cgroup too).
	Listen []netip.AddrPort

	// EventBuffer is the size of the ring buffer in bytes: a power of two
	// and a multiple of the page size. If 0, 64 KiB (about 1300 events
	// waiting to be read).
	EventBuffer int
}

// Event is one refused attempt, reported by the kernel.
type Event struct {
	// Pid is the process (thread group) id, as seen from the host.
	Pid int
	// Tid is the thread that made the call.
	Tid int
	// Comm is the thread's name (up to 15 bytes), or "" on kernels that do
	// not offer it to cgroup programs.
	Comm string
	// Op is "connect", "sendmsg" (an unconnected UDP send), "bind" or
	// "socket" (a socket type the filter refuses to create).
	Op string
	// Proto is "tcp", "udp", "icmp", "icmpv6", "mptcp", "sctp", "raw" (any
	// SOCK_RAW socket) or "proto-N".
	Proto string
	// Addr is the destination (or bind address) as the filter judged it:
	// IPv4 for IPv4 and for IPv4-mapped IPv6 addresses. It is the zero
	// AddrPort for Op "socket".
	Addr netip.AddrPort
}

// String describes the event in one line, e.g.
// "connect tcp 203.0.113.7:443 refused (pid 4242 curl)".
func (e Event) String() string {
	s := e.Op + " " + e.Proto
	if e.Addr.IsValid() {
		s += " " + e.Addr.String()
	}
	s += " refused (pid " + strconv.Itoa(e.Pid)
	if e.Comm != "" {
		s += " " + e.Comm
	}
	return s + ")"
}

const (
	opConnect = 1
	opSendmsg = 2
	opBind    = 3
	opSocket  = 4

	allowConnect = 1
	allowBind    = 2

	sockRaw = 3

	defaultEventBuffer = 64 << 10
)

func opName(op uint8) string {
	switch op {
	case opConnect:
		return "connect"
	case opSendmsg:
		return "sendmsg"
	case opBind:
		return "bind"
	case opSocket:
		return "socket"
	}
	return "op-" + strconv.Itoa(int(op))
}

func protoName(sockType uint8, proto uint16) string {
	if sockType == sockRaw {
		return "raw"
	}
	switch proto {
	case 1:
		return "icmp"
	case 6:
		return "tcp"
	case 17:
		return "udp"
	case 58:
		return "icmpv6"
	case 132:
		return "sctp"
	case 136:
		return "udplite"
	case 262:
		return "mptcp"
	}
	return "proto-" + strconv.Itoa(int(proto))
}

// MaxDestinations is how many allow-list entries one filter may have: its
// allowed destinations and its Options.Listen addresses together (an
// address in both counts once). A filter of its own set ([Attach]) gets a
// map of this size whatever it starts with, so that a live update
// ([Filter.SetAllowed]) can add destinations up to it: sized to the
// initial entries, a cold shareNetwork run's map refused the first
// loopback literal an update added ("key too big for map"). More is
// refused, naming the cap, at Attach and at SetAllowed.
const MaxDestinations = 1024

// destKey is an allow-list entry as the programs look it up: the address
// as 16 bytes (IPv4 as ::ffff:a.b.c.d), the port in host byte order.
type destKey struct {
	addr [16]byte
	port uint16
}

// allowEntries merges the connect allow-list and the bind list into map
// entries with ALLOW_* flags.
func allowEntries(allow, listen []netip.AddrPort) (map[destKey]uint8, error) {
	m := make(map[destKey]uint8, len(allow)+len(listen))
	add := func(ap netip.AddrPort, flag uint8, what string) error {
		a := ap.Addr()
		switch {
		case !a.IsValid():
			return fmt.Errorf("bpf: %s %v: no address", what, ap)
		case a.Zone() != "":
			// The hooks see no scope id: fe80::1%eth0 would allow fe80::1
			// on every interface.
			return fmt.Errorf("bpf: %s %v: addresses with a zone are not supported", what, ap)
		case ap.Port() == 0 && flag == allowConnect:
			return fmt.Errorf("bpf: %s %v: port 0", what, ap)
		}
		m[destKey{addr: a.As16(), port: ap.Port()}] |= flag
		return nil
	}
	for _, ap := range allow {
		if err := add(ap, allowConnect, "allowed destination"); err != nil {
			return nil, err
		}
	}
	for _, ap := range listen {
		if err := add(ap, allowBind, "listen address"); err != nil {
			return nil, err
		}
	}
	if len(m) > MaxDestinations {
		return nil, fmt.Errorf("bpf: %d destinations, more than the %d a filter may have (bpf.MaxDestinations)", len(m), MaxDestinations)
	}
	return m, nil
}

func checkOptions(opts Options) error {
	if opts.Bind > BindAny {
		return fmt.Errorf("bpf: unknown bind policy %v", opts.Bind)
	}
	if n := opts.EventBuffer; n != 0 && (n < 4096 || n&(n-1) != 0) {
		return fmt.Errorf("bpf: event buffer of %d bytes: want a power of two, at least a page", n)
	}
	return nil
}
