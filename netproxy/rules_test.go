package netproxy

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// TestDirectLiterals: what moat.shareNetwork's kernel filter lets a command
// reach directly is what the proxy itself would connect to, never more.
// The raw allow list had been used: with 127.0.0.1:5432 allowed and
// "*:5432" denied, the proxy refused 127.0.0.1:5432 and a direct connect
// reached it; likewise a denied address, and an entry that does not count
// under allowManagedDomainsOnly (found by an attack pass). Each case is
// also checked against the proxy's own decision (authorize).
func TestDirectLiterals(t *testing.T) {
	user := func(p string) policy.DomainRule { return policy.DomainRule{Pattern: p} }
	managed := func(p string) policy.DomainRule { return policy.DomainRule{Pattern: p, Managed: true} }
	cases := []struct {
		name string
		n    policy.Network
		want []string
	}{
		{"allowed", policy.Network{AllowedDomains: []policy.DomainRule{user("127.0.0.1:5432")}}, []string{"127.0.0.1:5432"}},
		{"denied on every host of the port", policy.Network{
			AllowedDomains: []policy.DomainRule{user("127.0.0.1:5432")},
			DeniedDomains:  []policy.DomainRule{user("*:5432")}}, nil},
		{"denied everywhere", policy.Network{
			AllowedDomains: []policy.DomainRule{user("127.0.0.1:5432")},
			DeniedDomains:  []policy.DomainRule{user("*")}}, nil},
		{"denied address, any port", policy.Network{
			AllowedDomains: []policy.DomainRule{user("127.0.0.1:5432")},
			DeniedDomains:  []policy.DomainRule{user("127.0.0.1")}}, nil},
		{"denied in another spelling", policy.Network{
			AllowedDomains: []policy.DomainRule{user("127.0.0.1:5432"), user("[::1]:5432")},
			DeniedDomains:  []policy.DomainRule{user("127.1:5432"), user("[0:0::1]")}}, nil},
		{"a deny of another port leaves it", policy.Network{
			AllowedDomains: []policy.DomainRule{user("127.0.0.1:5432")},
			DeniedDomains:  []policy.DomainRule{user("127.0.0.1:9999"), user("*:22")}}, []string{"127.0.0.1:5432"}},
		{"deniedResolvedAddresses", policy.Network{
			AllowedDomains:          []policy.DomainRule{user("127.0.0.1:5432"), user("[::1]:6000"), user("127.0.0.2:7000")},
			DeniedResolvedAddresses: []string{"127.0.0.0/31", "::1"}}, []string{"127.0.0.2:7000"}},
		{"managed only: a user entry does not count", policy.Network{
			AllowedDomains:          []policy.DomainRule{user("127.0.0.1:5432"), managed("127.0.0.1:8000")},
			AllowManagedDomainsOnly: true}, []string{"127.0.0.1:8000"}},
		{"not literals with a port, not kept", policy.Network{
			AllowedDomains: []policy.DomainRule{user("127.0.0.1"), user("localhost:3000"), user("10.0.0.5:5432"),
				user("[::1]:3000"), user("127.1:6000"), user("[::ffff:127.0.0.1]:6001"), user("127.0.0.1:6000")}},
			[]string{"[::1]:3000", "127.0.0.1:6000", "127.0.0.1:6001"}},
	}
	// A live update under allowManagedDomainsOnly adds nothing the proxy
	// refuses either.
	upd := MergeUpdate(policy.Network{AllowedDomains: []policy.DomainRule{managed("127.0.0.1:8000")}, AllowManagedDomainsOnly: true},
		policy.Network{AllowedDomains: []policy.DomainRule{managed("127.0.0.1:5432")}, DeniedDomains: []policy.DomainRule{user("127.0.0.1:8000")}})
	cases = append(cases, struct {
		name string
		n    policy.Network
		want []string
	}{"update under managed only", upd, nil})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustRules(t, c.n)
			var got []string
			for _, ap := range r.DirectLiterals(netip.Addr.IsLoopback) {
				got = append(got, ap.String())
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("DirectLiterals = %q, want %q", got, c.want)
			}
			// The proxy's own decision for every literal of the lists.
			s := &Server{Rules: r, LocalAddrs: func() ([]netip.Addr, error) { return nil, nil }}
			for _, d := range append(append([]policy.DomainRule(nil), c.n.AllowedDomains...), c.n.DeniedDomains...) {
				p, err := policy.ParseDomainPattern(d.Pattern, true)
				if err != nil || !p.Addr.IsValid() || p.Port == 0 || !p.Addr.IsLoopback() {
					continue
				}
				ap := netip.AddrPortFrom(p.Addr, uint16(p.Port))
				_, err = s.authorize(context.Background(), p.Addr.String(), p.Port, false)
				if direct := slices.Contains(got, ap.String()); direct != (err == nil) {
					t.Errorf("%s: direct %v, but the proxy's decision is %v", ap, direct, err)
				}
			}
		})
	}
	var nilRules *Rules
	if got := nilRules.DirectLiterals(nil); got != nil {
		t.Fatalf("nil rules: %v", got)
	}
}
