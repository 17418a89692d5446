package netproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Rules is a compiled, immutable network policy: the allow and deny lists,
// the strict and managed-only switches, and the extra refused address
// ranges. Build it with NewRules; swap it on a running Server with SetRules.
//
// A nil *Rules allows nothing.
type Rules struct {
	allow, deny []rule
	strict      bool
	managedOnly bool
	deniedNets  []netip.Prefix
}

type rule struct {
	pat policy.DomainPattern
	src policy.DomainRule
}

// NewRules compiles the network part of a policy. Every entry must parse
// (policy.ParseDomainPattern); the errors of all bad entries are joined.
func NewRules(n policy.Network) (*Rules, error) {
	r := &Rules{strict: n.StrictAllowlist, managedOnly: n.AllowManagedDomainsOnly}
	var errs []error
	for i, d := range n.DeniedDomains {
		p, err := policy.ParseDomainPattern(d.Pattern, true)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", fieldName(d, "deniedDomains", i), err))
			continue
		}
		r.deny = append(r.deny, rule{p, d})
	}
	for i, d := range n.AllowedDomains {
		p, err := policy.ParseDomainPattern(d.Pattern, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", fieldName(d, "allowedDomains", i), err))
			continue
		}
		if n.AllowManagedDomainsOnly && !d.Managed {
			continue // does not count: only managed allow entries do
		}
		r.allow = append(r.allow, rule{p, d})
	}
	for i, c := range n.DeniedResolvedAddresses {
		p, err := parseCIDR(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("deniedResolvedAddresses[%d]: %w", i, err))
			continue
		}
		r.deniedNets = append(r.deniedNets, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

func fieldName(d policy.DomainRule, list string, i int) string {
	if d.Source != "" {
		return d.Source
	}
	return fmt.Sprintf("network.%s[%d]", list, i)
}

// parseCIDR accepts a CIDR or a single address (as a /32 or /128).
func parseCIDR(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.ContainsRune(s, '/') {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return netip.Prefix{}, fmt.Errorf("%q: IPv4-mapped prefix shorter than /96", s)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ReasonNotAllowed is the reason given for a host on neither list when
// nobody may be asked (strict allow list, or no Ask callback).
const ReasonNotAllowed = "host is not on the allow list"

// check runs the srt order on a canonical host: deny list first (first
// match wins), then the allow list. It returns the verdict of the lists
// (Passthrough: on neither) and the matching rule.
func (r *Rules) check(host string, port int) (policy.Verdict, *rule) {
	if r == nil {
		return policy.Passthrough, nil
	}
	for i := range r.deny {
		if r.deny[i].pat.Match(host, port) {
			return policy.Deny, &r.deny[i]
		}
	}
	for i := range r.allow {
		if r.allow[i].pat.Match(host, port) {
			return policy.Allow, &r.allow[i]
		}
	}
	return policy.Passthrough, nil
}

// Strict reports whether hosts on neither list are refused without asking.
func (r *Rules) Strict() bool { return r == nil || r.strict }

// denyReason is the text a deny entry gives: its own reason, or a generic
// one naming the entry.
func (ru *rule) denyReason() string {
	if ru.src.Reason != "" {
		return ru.src.Reason
	}
	return fmt.Sprintf("denied by deniedDomains entry %q", ru.src.Pattern)
}

// Check tells whether host:port is allowed by the lists alone (before any
// address check): allowed, denied with a reason, or unlisted (ask = true).
// The host is canonicalised first; a malformed host is denied.
func (r *Rules) Check(host string, port int) (allowed bool, ask bool, reason string) {
	h, err := policy.CanonicalHost(host)
	if err != nil {
		return false, false, "malformed host"
	}
	v, ru := r.check(h, port)
	switch v {
	case policy.Deny:
		return false, false, ru.denyReason()
	case policy.Allow:
		return true, false, ""
	}
	return false, !r.Strict(), ReasonNotAllowed
}

// addrExempt reports whether an allowed IP-literal entry names a exactly,
// which lifts the special-range refusal for it ("127.0.0.1:3000").
func (r *Rules) addrExempt(a netip.Addr, port int) bool {
	if r == nil {
		return false
	}
	for i := range r.allow {
		p := &r.allow[i].pat
		if p.Addr.IsValid() && p.Addr == a && (p.Port == 0 || p.Port == port) {
			return true
		}
	}
	return false
}

// addrDenied reports whether a resolved address falls into
// deniedResolvedAddresses or is named by an IP literal in deniedDomains.
func (r *Rules) addrDenied(a netip.Addr, port int) (string, bool) {
	if r == nil {
		return "", false
	}
	for _, p := range r.deniedNets {
		if p.Contains(a) {
			return fmt.Sprintf("address %s is in deniedResolvedAddresses %s", a, p), true
		}
	}
	for i := range r.deny {
		p := &r.deny[i].pat
		if p.Addr.IsValid() && p.Addr == a && (p.Port == 0 || p.Port == port) {
			return r.deny[i].denyReason(), true
		}
	}
	return "", false
}

// DirectLiterals are the destinations a command may reach without the
// proxy, for a kernel allow-list (moat.shareNetwork's eBPF filter): the
// counted allowedDomains entries that are an IP literal with a port, whose
// address keep accepts (nil: all), and that the proxy itself would connect
// to. That is, for the address and port, the lists decide Allow
// (deniedDomains first, so "*:5432" or a denied literal wins; under
// allowManagedDomainsOnly an unmanaged entry does not count) and neither
// an IP literal of deniedDomains nor deniedResolvedAddresses refuses the
// address. An entry the proxy would refuse is never reachable directly:
// the raw allow list had been used, and a direct connect reached what the
// proxy refused (found by an attack pass).
func (r *Rules) DirectLiterals(keep func(netip.Addr) bool) []netip.AddrPort {
	if r == nil {
		return nil
	}
	var out []netip.AddrPort
	for i := range r.allow {
		p := &r.allow[i].pat
		if !p.Addr.IsValid() || p.Port == 0 || (keep != nil && !keep(p.Addr)) {
			continue
		}
		ap := netip.AddrPortFrom(p.Addr, uint16(p.Port))
		if !slices.Contains(out, ap) && r.literalAllowed(p.Addr, p.Port) {
			out = append(out, ap)
		}
	}
	return out
}

// literalAllowed is authorize's decision for an IP literal, without
// asking anyone: the lists allow it, and refuseAddr lets the address
// through (no denied address; named by an allowed literal, so no special
// range or host address counts against it).
func (r *Rules) literalAllowed(a netip.Addr, port int) bool {
	a = a.Unmap().WithZone("")
	if v, _ := r.check(a.String(), port); v != policy.Allow {
		return false
	}
	if _, denied := r.addrDenied(a, port); denied {
		return false
	}
	return r.addrExempt(a, port)
}

// MergeUpdate applies a network-list update (received while a command
// runs) on top of the current network policy without widening it past
// what managed settings allow:
//
//   - managed entries of current (allowed and denied) are always kept, and
//     entries of the update never count as managed;
//   - the update's allowed and denied lists replace the unmanaged ones;
//   - AllowManagedDomainsOnly and StrictAllowlist can be turned on by an
//     update, never off;
//   - DeniedResolvedAddresses only grow;
//   - the parent proxy and external proxy ports stay those of current.
func MergeUpdate(current, update policy.Network) policy.Network {
	out := current
	out.AllowedDomains = mergeRules(current.AllowedDomains, update.AllowedDomains)
	out.DeniedDomains = mergeRules(current.DeniedDomains, update.DeniedDomains)
	out.AllowManagedDomainsOnly = current.AllowManagedDomainsOnly || update.AllowManagedDomainsOnly
	out.StrictAllowlist = current.StrictAllowlist || update.StrictAllowlist
	seen := make(map[string]bool)
	out.DeniedResolvedAddresses = nil
	for _, c := range append(append([]string(nil), current.DeniedResolvedAddresses...), update.DeniedResolvedAddresses...) {
		if !seen[c] {
			seen[c] = true
			out.DeniedResolvedAddresses = append(out.DeniedResolvedAddresses, c)
		}
	}
	return out
}

func mergeRules(current, update []policy.DomainRule) []policy.DomainRule {
	var out []policy.DomainRule
	for _, d := range current {
		if d.Managed {
			out = append(out, d)
		}
	}
	for _, d := range update {
		d.Managed = false
		out = append(out, d)
	}
	return out
}
