// Package netproxy is moat's domain-filtering proxy: the only route from a
// sandboxed command to the network.
//
// One Server speaks HTTP (CONNECT tunnels and absolute-URI forwarding with
// HTTP/1.1 keep-alive) and SOCKS5 (CONNECT with host names, "socks5h", or
// IP literals) on the same listener; the first byte tells them apart
// (0x05 is SOCKS5). The sandbox launcher creates the listening sockets
// inside the sandbox's network namespace and hands them to Server.Serve,
// so the proxy accepts from the sandbox and dials from the host with no
// relay in between. Tunnels are spliced with io.Copy between
// *net.TCPConn, which Linux turns into splice(2).
//
// # What it owns
//
//   - Server: accepting, parsing, the decision for each destination,
//     dialling and relaying; Close ends everything it started.
//   - Rules: a compiled policy.Network (NewRules), swapped at run time with
//     Server.SetRules; MergeUpdate applies a live network-list update
//     without widening past managed settings.
//   - The sandbox environment (Env): the proxy variables tools read.
//   - The client side used inside the sandbox: DialThroughProxy and
//     SSHProxyCommand (the body of "moat ssh-proxy HOST PORT").
//
// The syntax of domain patterns and host canonicalisation live in
// runtime/policy (ParseDomainPattern, CanonicalHost), so that settings are
// validated with the same code the proxy matches with.
//
// # Order of checks
//
// For each destination host:port, in srt's order:
//
//  1. a malformed host (control characters, bad IDNA, "1.2.3.256") is
//     refused with "malformed host";
//  2. the host is canonicalised (lower case, no trailing dot, punycode,
//     every inet_aton IPv4 spelling to a dotted quad, IPv6 compressed,
//     IPv4-mapped IPv6 as IPv4);
//  3. deniedDomains, first match wins, with the entry's own reason;
//  4. allowedDomains (under allowManagedDomainsOnly only managed entries
//     count);
//  5. otherwise Server.Ask, bounded by AskTimeout, unless the allow list
//     is strict or Ask is nil: then "host is not on the allow list";
//  6. the name is resolved once, on the host (Server.Resolver), as a fully
//     qualified name ("api.example.com.": resolv.conf's search list never
//     applies, so the name resolved is the name judged), and each
//     address is checked: deniedResolvedAddresses and IP literals in
//     deniedDomains refuse it; loopback, private (RFC 1918, ULA),
//     link-local, CGNAT, multicast, unspecified, broadcast, reserved, cloud
//     metadata addresses and the host's own interface addresses are refused
//     unless an allowedDomains entry names that address as an IP literal
//     ("127.0.0.1:3000") or the host is "localhost" matched by an explicit
//     "localhost[:port]" entry (then 127.0.0.1 and ::1 are dialled, never
//     DNS). IPv4 inside IPv6 (v4-mapped, NAT64, 6to4, Teredo,
//     IPv4-compatible) is judged as IPv4.
//  7. the proxy dials exactly an address it checked: there is no second
//     lookup, so DNS rebinding cannot swap the address afterwards.
//
// A refusal answers "HTTP/1.1 403 Forbidden" with "X-Proxy-Error:
// blocked-by-allowlist" and one line of body: moat's policy refused the
// destination, the reason, and for a host on neither list the settings that
// allow it (a client that prints the body, curl, shows it); or SOCKS5 reply 0x02
// ("connection not allowed by ruleset"), and calls OnViolation with a
// policy.Violation{Kind: network, Op: "connect", Target: host:port, Rule:
// reason}. A missing or wrong credential answers 407 with
// `Proxy-Authenticate: Basic realm="moat"` (SOCKS5: no acceptable method,
// or authentication failure). An unreachable destination answers 502
// (SOCKS5: host unreachable, connection refused, ...). UDP has no route:
// SOCKS5 UDP ASSOCIATE and BIND answer "command not supported".
//
// With a parent proxy (policy.ParentProxy) the proxy's own outbound
// connections go through it with CONNECT, both for tunnels and for
// forwarded requests, except for destinations its NoProxy list names. The
// parent is given the host name and resolves it in its own network; the
// proxy still resolves the name itself when it can and refuses it if any
// address is refused, but when the host cannot resolve the name at all
// the parent's answer is trusted.
//
// # Limits
//
// A request header (and a SOCKS5 handshake) is bounded by MaxHeaderBytes
// (64 KiB) and must arrive within HeaderTimeout (10 s); a kept-alive
// connection waits IdleTimeout for its next request. Client data sent
// before the verdict stays in a 4 KiB buffer and the kernel's socket
// buffer (TCP flow control does the rest). A bad client, a failed upstream
// or a panic-free parse error ends only its own connection.
//
// # The sandbox's environment
//
// Env returns the variables a sandboxed command gets (ADDR is the proxy's
// in-sandbox address, with the credential in each URL when one is set):
//
//	HTTP_PROXY, HTTPS_PROXY, GRPC_PROXY (both cases)  http://ADDR
//	ALL_PROXY, FTP_PROXY (both cases)                socks5h://ADDR
//	NO_PROXY, no_proxy                               empty (see below)
//	DOCKER_HTTP_PROXY, DOCKER_HTTPS_PROXY            http://ADDR
//	RSYNC_PROXY                                      ADDR (rsync speaks CONNECT)
//	npm_config_proxy, npm_config_https_proxy,
//	npm_config_noproxy, YARN_HTTP_PROXY,
//	YARN_HTTPS_PROXY, PIP_PROXY                      http://ADDR
//	NODE_USE_ENV_PROXY=1                             Node's fetch/http honour the variables
//	CLOUDSDK_PROXY_TYPE/ADDRESS/PORT(/USERNAME/PASSWORD)   gcloud
//	JAVA_TOOL_OPTIONS   -Dhttp(s).proxyHost/Port, -DsocksProxyHost/Port,
//	                    -Dhttp.nonProxyHosts= (the JVM default exempts loopback)
//	MOAT_PROXY          http://ADDR, read by "moat ssh-proxy"
//	GIT_SSH_COMMAND     ssh -o ControlMaster=no -o ControlPath=none
//	                    -o 'ProxyCommand=MOAT ssh-proxy %h %p'
//
// NO_PROXY is empty on purpose: inside the sandbox's network namespace
// loopback is the sandbox's own, so a client that went "direct" to
// localhost would miss a host service the policy allows
// ("localhost:3000", reached through the proxy); and in the shared-network
// mode (root + eBPF) a direct connection is exactly what must not happen.
// It is still set, to mask a value inherited from the host. A caller that
// knows of servers inside the sandbox may list them in EnvConfig.NoProxy.
//
// docs/NETWORK.md tells users what commonly breaks in a sandbox (ssh and
// gpg agents, name lookups, browsers) and the setting that allows each.
//
// # What it must not import
//
// netproxy is pure Go: the standard library, runtime/policy and
// golang.org/x/net (through runtime/policy). It never imports linux/,
// darwin/, bpf/ or golang.org/x/sys/unix: the namespace and eBPF work that
// puts the listener in place belongs to the launcher.
package netproxy
