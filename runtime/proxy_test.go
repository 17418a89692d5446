package runtime

import (
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// syncer records what a live update gives the kernel filter.
type syncer struct{ got [][]string }

func (s *syncer) SyncNetwork(allowed []string) error {
	s.got = append(s.got, allowed)
	return nil
}

// TestSharedNetworkDirectList: with moat.shareNetwork the command reaches
// what Allowed lists directly (the eBPF allow-list), so it lists only the
// loopback literals the proxy's own rules allow, at the start and after a
// live update. From the raw allow list, a deny entry ("*:5432"), a denied
// address and an entry that does not count under allowManagedDomainsOnly
// were reached directly while the proxy refused them (found by an attack
// pass; the privileged test is TestSharedNetworkDirectAsProxy).
func TestSharedNetworkDirectList(t *testing.T) {
	rule := func(p string, managed bool) policy.DomainRule { return policy.DomainRule{Pattern: p, Managed: managed} }
	for _, c := range []struct {
		name string
		n    policy.Network
		want []string
	}{
		{"allowed", policy.Network{AllowedDomains: []policy.DomainRule{rule("127.0.0.1:5432", false)}}, []string{"127.0.0.1:5432"}},
		{"denied port", policy.Network{AllowedDomains: []policy.DomainRule{rule("127.0.0.1:5432", false)},
			DeniedDomains: []policy.DomainRule{rule("*:5432", false)}}, nil},
		{"denied address", policy.Network{AllowedDomains: []policy.DomainRule{rule("127.0.0.1:5432", false), rule("[::1]:5432", false)},
			DeniedResolvedAddresses: []string{"127.0.0.0/8", "::1/128"}}, nil},
		{"managed only", policy.Network{AllowedDomains: []policy.DomainRule{rule("127.0.0.1:5432", false), rule("127.0.0.1:8000", true)},
			AllowManagedDomainsOnly: true}, []string{"127.0.0.1:8000"}},
	} {
		p, err := newProxy(&policy.Policy{Net: c.n}, nil, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Allowed(); !slices.Equal(got, c.want) {
			t.Errorf("%s: Allowed() = %q, want %q", c.name, got, c.want)
		}
	}

	// A live update under allowManagedDomainsOnly: its entries do not
	// count, so the kernel gets none of them.
	p, err := newProxy(&policy.Policy{Net: policy.Network{
		AllowedDomains:          []policy.DomainRule{rule("127.0.0.1:8000", true)},
		AllowManagedDomainsOnly: true,
	}}, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var s syncer
	if err := p.update(policy.Network{AllowedDomains: []policy.DomainRule{rule("127.0.0.1:5432", false)}}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.got) != 1 || !slices.Equal(s.got[0], []string{"127.0.0.1:8000"}) {
		t.Fatalf("update under managed only gave the kernel %q, want only [127.0.0.1:8000]", s.got)
	}
	if got := p.Allowed(); !slices.Equal(got, []string{"127.0.0.1:8000"}) {
		t.Fatalf("after the update Allowed() = %q", got)
	}
	// An update that denies the port withdraws the literal.
	if err := p.update(policy.Network{DeniedDomains: []policy.DomainRule{rule("*:8000", false)}}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.got) != 2 || len(s.got[1]) != 0 {
		t.Fatalf("an update denying *:8000 gave the kernel %q, want nothing", s.got)
	}
}

// The run's end closes the proxy's listeners: no warning that the
// sandbox's route out stopped (moatd logged one for every listener of
// every run), while a listener closed under a running proxy is still
// reported (the route out lost before the run ended).
func TestProxyCloseSaysNothing(t *testing.T) {
	// The end's warning came from a race (the listener's accept failing
	// before the server knew it was closed): the run's end is tried 200
	// times (about 1 in 16 warned before the fix, here).
	cases := []bool{true}
	for i := 0; i < 200; i++ {
		cases = append(cases, false)
	}
	for _, early := range cases {
		var buf syncBuffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
		p, err := newProxy(&policy.Policy{}, nil, nil, nil, log)
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p.Serve(l, false)
		if early {
			l.Close()
			for deadline := time.Now().Add(5 * time.Second); buf.String() == "" && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
		}
		p.close()
		warned := strings.Contains(buf.String(), "stopped serving a listener")
		if warned != early {
			t.Errorf("listener closed before the proxy: %v; warned: %v: %q", early, warned, buf.String())
		}
	}
}

// syncBuffer is a bytes.Buffer for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
