package policy

import (
	"net/netip"
)

// special is one address range an allowed host name must not resolve to.
type special struct {
	prefix netip.Prefix
	what   string
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// specialV4 and specialV6 are refused unless the policy names the address
// as an IP literal. More specific entries come first so the reason is the
// most precise one (metadata before link-local).
var specialV4 = []special{
	{mustPrefix("169.254.169.254/32"), "cloud metadata"},
	{mustPrefix("100.100.100.200/32"), "cloud metadata"},
	{mustPrefix("168.63.129.16/32"), "cloud metadata"},
	{mustPrefix("192.0.0.192/32"), "cloud metadata"},
	{mustPrefix("0.0.0.0/8"), "unspecified"},
	{mustPrefix("127.0.0.0/8"), "loopback"},
	{mustPrefix("10.0.0.0/8"), "private"},
	{mustPrefix("172.16.0.0/12"), "private"},
	{mustPrefix("192.168.0.0/16"), "private"},
	{mustPrefix("169.254.0.0/16"), "link-local"},
	{mustPrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{mustPrefix("224.0.0.0/4"), "multicast"},
	{mustPrefix("255.255.255.255/32"), "broadcast"},
	{mustPrefix("240.0.0.0/4"), "reserved"},
}

var specialV6 = []special{
	{mustPrefix("fd00:ec2::254/128"), "cloud metadata"},
	{mustPrefix("fd00:ec2::/32"), "cloud metadata"},
	{mustPrefix("::/128"), "unspecified"},
	{mustPrefix("::1/128"), "loopback"},
	{mustPrefix("fc00::/7"), "private (ULA)"},
	{mustPrefix("fe80::/10"), "link-local"},
	{mustPrefix("fec0::/10"), "site-local"},
	{mustPrefix("ff00::/8"), "multicast"},
}

var (
	nat64      = mustPrefix("64:ff9b::/96")
	nat64Local = mustPrefix("64:ff9b:1::/48")
	sixToFour  = mustPrefix("2002::/16")
	teredo     = mustPrefix("2001::/32")
	v4compat   = mustPrefix("::/96")
)

// embeddedV4 returns the IPv4 address an IPv6 address carries in the
// common translation and tunnelling forms (IPv4-mapped, NAT64 well-known
// and local-use prefixes, 6to4, Teredo client, IPv4-compatible).
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	if a.Is4() {
		return a, true
	}
	if a.Is4In6() {
		return a.Unmap(), true
	}
	b := a.As16()
	switch {
	case nat64.Contains(a), nat64Local.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	case teredo.Contains(a):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	case v4compat.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback():
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	}
	return netip.Addr{}, false
}

// SpecialAddr names the special range a falls into (loopback, private,
// link-local, cloud metadata, ...), or "" if none: the addresses an
// allowed host name must not resolve to (netproxy), and that a project's
// settings may not allow (runtime/settings). An IPv6 address that carries
// an IPv4 address is judged by both.
func SpecialAddr(a netip.Addr) string {
	a = a.WithZone("")
	if v4, ok := embeddedV4(a); ok {
		for _, s := range specialV4 {
			if s.prefix.Contains(v4) {
				return s.what
			}
		}
		if a.Is4() || a.Is4In6() {
			return ""
		}
	}
	for _, s := range specialV6 {
		if s.prefix.Contains(a) {
			return s.what
		}
	}
	return ""
}
