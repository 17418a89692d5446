package netproxy_test

import (
	"fmt"
	"net"
	"strings"

	"github.com/moat-sandbox/moat/netproxy"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// The launcher compiles the network policy, serves the listener it made
// inside the sandbox's network namespace, and gives the command the proxy
// variables. Here a plain loopback listener stands in for that socket.
func Example() {
	rules, err := netproxy.NewRules(policy.Network{
		AllowedDomains: []policy.DomainRule{{Pattern: "*.github.com"}, {Pattern: "localhost:3000"}},
		DeniedDomains:  []policy.DomainRule{{Pattern: "gist.github.com", Reason: "no pastes"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := &netproxy.Server{
		Rules:       rules,
		OnViolation: func(v policy.Violation) { fmt.Println(v.Line()) },
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	go srv.Serve(l)
	defer srv.Close()

	// A refused destination, as a tool inside the sandbox sees it.
	_, err = netproxy.DialThroughProxy(l.Addr().String(), "gist.github.com", 443, "")
	fmt.Println(err)

	for _, kv := range netproxy.Env(netproxy.EnvConfig{Addr: "127.0.0.1:3128"}) {
		if strings.HasPrefix(kv, "HTTPS_PROXY=") || strings.HasPrefix(kv, "ALL_PROXY=") {
			fmt.Println(kv)
		}
	}
	// Output:
	// deny network-connect gist.github.com:443 (no pastes)
	// proxy refused gist.github.com:443: 403 Forbidden: moat's sandbox network policy refused gist.github.com:443: no pastes
	// ALL_PROXY=socks5h://127.0.0.1:3128
	// HTTPS_PROXY=http://127.0.0.1:3128
}
