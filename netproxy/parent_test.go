package netproxy

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// TestParentProxy chains a child proxy to a parent proxy (a second Server
// with a credential). The child still applies its own policy; the parent
// sees every allowed connection, tunnels and forwarded requests alike,
// except for NoProxy destinations.
func TestParentProxy(t *testing.T) {
	parent := newEnv(t, mustRules(t, netOf([]string{"allowed.test", "www.allowed.test", "denied.test", "unresolvable.test"}, nil)),
		func(s *Server) { s.Credential = "corp:pw" })
	parent.res.set("unresolvable.test", addrAllowed)

	child := newEnv(t, mustRules(t, netOf([]string{"allowed.test", "www.allowed.test", "unresolvable.test"}, nil)), func(s *Server) {
		s.ParentProxy = &policy.ParentProxy{
			HTTP:    "http://corp:pw@" + parent.addr,
			HTTPS:   "corp:pw@" + parent.addr, // no scheme: http
			NoProxy: []string{"www.allowed.test, 192.0.2.0/24"},
		}
	})
	// The child may only reach the parent (on loopback), no origin.
	child.setRoute(addrAllowed, "")
	child.setRoute(addrDenied, "")

	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			before := parent.allowed.hits.Load()
			wantOK(t, do(t, child.addr, kind, "allowed.test:80"), "origin allowed")
			if parent.allowed.hits.Load() != before+1 {
				t.Fatal("the request did not go through the parent")
			}
			// The child's own policy still applies.
			wantDenied(t, child, kind, do(t, child.addr, kind, "denied.test:80"), "denied.test:80", ReasonNotAllowed)
			// A name the host cannot resolve is left to the parent.
			wantOK(t, do(t, child.addr, kind, "unresolvable.test:80"), "origin allowed")
		})
	}

	// NoProxy: direct, so with no route from the child it fails (502),
	// and succeeds once the child has a route.
	if r := do(t, child.addr, "connect", "www.allowed.test:80"); r.status != http.StatusBadGateway {
		t.Fatalf("NoProxy destination through the parent? %+v", r)
	}
	child.setRoute(addrAllowed, child.allowed.addr())
	wantOK(t, do(t, child.addr, "connect", "www.allowed.test:80"), "origin allowed")

	// A name the child resolves to a refused address is refused even
	// though the parent would resolve it.
	child.res.set("allowed.test", "127.0.0.1")
	wantDenied(t, child, "connect", do(t, child.addr, "connect", "allowed.test:80"), "allowed.test:80", "loopback")
	child.res.set("allowed.test", addrAllowed)

	// The parent's refusal is the child's 502.
	parent.srv.SetRules(mustRules(t, netOf(nil, nil)))
	if r := do(t, child.addr, "connect", "allowed.test:80"); r.status != http.StatusBadGateway {
		t.Fatalf("parent refused: %+v, want 502", r)
	}
}

func TestParentProxyBadCredential(t *testing.T) {
	parent := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)), func(s *Server) { s.Credential = "corp:pw" })
	child := newEnv(t, mustRules(t, netOf([]string{"allowed.test"}, nil)), func(s *Server) {
		s.ParentProxy = &policy.ParentProxy{HTTPS: "http://corp:nope@" + parent.addr}
	})
	r := do(t, child.addr, "connect", "allowed.test:80")
	if r.status != http.StatusBadGateway {
		t.Fatalf("%+v, want 502", r)
	}
	if want := "407"; !strings.Contains(r.body, want) {
		t.Fatalf("502 body %q does not mention the parent's %s", r.body, want)
	}
}

func TestParentConfig(t *testing.T) {
	for _, bad := range []string{"socks5://x:1", "http://", "ftp://a"} {
		if _, err := newParentConfig(&policy.ParentProxy{HTTP: bad}); err == nil {
			t.Errorf("parent %q accepted", bad)
		}
	}
	s := &Server{ParentProxy: &policy.ParentProxy{HTTP: "gopher://x"}}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := s.Serve(l); err == nil {
		t.Fatal("Serve accepted a bad parent proxy")
	}
	pc, err := newParentConfig(&policy.ParentProxy{HTTP: "http://h:1", NoProxy: []string{"*.corp.example,10.0.0.0/8", ".internal:8080", "[::1]"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host   string
		port   int
		direct bool
	}{
		{"corp.example", 443, true}, {"a.corp.example", 443, true}, {"notcorp.example", 443, false},
		{"10.2.3.4", 80, true}, {"11.0.0.1", 80, false},
		{"x.internal", 8080, true}, {"x.internal", 80, false}, {"::1", 1, true},
	} {
		if got := pc.forTarget(tc.host, tc.port, false) == nil; got != tc.direct {
			t.Errorf("%s:%d direct = %v, want %v", tc.host, tc.port, got, tc.direct)
		}
	}
	if p := ParentFromEnvironment(func(k string) string {
		return map[string]string{"https_proxy": "http://p:3128", "NO_PROXY": "a,b"}[k]
	}); p == nil || p.HTTPS != "http://p:3128" || p.HTTP != "" || fmt.Sprint(p.NoProxy) != "[a b]" {
		t.Fatalf("ParentFromEnvironment: %+v", p)
	}
	if ParentFromEnvironment(func(string) string { return "" }) != nil {
		t.Fatal("ParentFromEnvironment with no variables")
	}
}
