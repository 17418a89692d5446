package netproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

func envMap(kv []string) map[string]string {
	m := map[string]string{}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		m[k] = v
	}
	return m
}

func TestEnv(t *testing.T) {
	m := envMap(Env(EnvConfig{Addr: "127.0.0.1:3128", MoatPath: "/opt/moat bin/moat"}))
	for k, want := range map[string]string{
		"HTTP_PROXY": "http://127.0.0.1:3128", "http_proxy": "http://127.0.0.1:3128",
		"HTTPS_PROXY": "http://127.0.0.1:3128", "https_proxy": "http://127.0.0.1:3128",
		"ALL_PROXY": "socks5h://127.0.0.1:3128", "all_proxy": "socks5h://127.0.0.1:3128",
		"NO_PROXY": "", "no_proxy": "",
		"GRPC_PROXY": "http://127.0.0.1:3128", "grpc_proxy": "http://127.0.0.1:3128",
		"FTP_PROXY":          "socks5h://127.0.0.1:3128",
		"RSYNC_PROXY":        "127.0.0.1:3128",
		"DOCKER_HTTP_PROXY":  "http://127.0.0.1:3128",
		"DOCKER_HTTPS_PROXY": "http://127.0.0.1:3128",
		"npm_config_proxy":   "http://127.0.0.1:3128", "npm_config_https_proxy": "http://127.0.0.1:3128",
		"YARN_HTTPS_PROXY": "http://127.0.0.1:3128", "PIP_PROXY": "http://127.0.0.1:3128",
		"CLOUDSDK_PROXY_TYPE": "http", "CLOUDSDK_PROXY_ADDRESS": "127.0.0.1", "CLOUDSDK_PROXY_PORT": "3128",
		"MOAT_PROXY":         "http://127.0.0.1:3128",
		"NODE_USE_ENV_PROXY": "1",
		"GIT_SSH_COMMAND":    `ssh -o ControlMaster=no -o ControlPath=none -o 'ProxyCommand='\''/opt/moat bin/moat'\'' ssh-proxy %h %p'`,
	} {
		if got, ok := m[k]; !ok || got != want {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, want)
		}
	}
	if _, ok := m["CLOUDSDK_PROXY_PASSWORD"]; ok {
		t.Error("a password variable without a credential")
	}
	j := m["JAVA_TOOL_OPTIONS"]
	for _, want := range []string{"-Dhttp.proxyHost=127.0.0.1", "-Dhttps.proxyPort=3128", "-Dhttp.nonProxyHosts= ", "-DsocksProxyHost=127.0.0.1"} {
		if !strings.Contains(j, want) {
			t.Errorf("JAVA_TOOL_OPTIONS %q lacks %q", j, want)
		}
	}
	// Nothing may exempt loopback or private ranges from the proxy.
	for k, v := range m {
		if strings.Contains(strings.ToLower(k), "no_proxy") || strings.Contains(k, "noproxy") || strings.Contains(v, "nonProxyHosts=1") {
			for _, bad := range []string{"localhost", "127.", "::1", "10.", "192.168", "169.254"} {
				if strings.Contains(v, bad) {
					t.Errorf("%s=%q exempts %s from the proxy", k, v, bad)
				}
			}
		}
	}

	// The shell in GIT_SSH_COMMAND must hand ssh one ProxyCommand word.
	if sh, err := exec.LookPath("sh"); err == nil {
		out, err := exec.Command(sh, "-c", `set -- `+strings.TrimPrefix(m["GIT_SSH_COMMAND"], "ssh ")+`; for a; do printf '%s\n' "$a"; done`).Output()
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if got := lines[len(lines)-1]; got != `ProxyCommand='/opt/moat bin/moat' ssh-proxy %h %p` {
			t.Fatalf("ssh sees %q", got)
		}
	}
}

func TestEnvCredential(t *testing.T) {
	m := envMap(Env(EnvConfig{Addr: "127.0.0.1:3128", Credential: "moat:t@k/en", NoProxy: []string{"db.sandbox"}}))
	if got, want := m["HTTPS_PROXY"], "http://moat:t%40k%2Fen@127.0.0.1:3128"; got != want {
		t.Errorf("HTTPS_PROXY = %q, want %q", got, want)
	}
	if got, want := m["ALL_PROXY"], "socks5h://moat:t%40k%2Fen@127.0.0.1:3128"; got != want {
		t.Errorf("ALL_PROXY = %q, want %q", got, want)
	}
	if m["CLOUDSDK_PROXY_USERNAME"] != "moat" || m["CLOUDSDK_PROXY_PASSWORD"] != "t@k/en" {
		t.Errorf("CLOUDSDK credential: %q %q", m["CLOUDSDK_PROXY_USERNAME"], m["CLOUDSDK_PROXY_PASSWORD"])
	}
	if m["NO_PROXY"] != "db.sandbox" || m["no_proxy"] != "db.sandbox" {
		t.Errorf("NO_PROXY = %q", m["NO_PROXY"])
	}
	if !strings.Contains(m["JAVA_TOOL_OPTIONS"], "-Djava.net.socks.password=t@k/en") {
		t.Errorf("JAVA_TOOL_OPTIONS = %q", m["JAVA_TOOL_OPTIONS"])
	}
	if _, ok := m["GIT_SSH_COMMAND"]; ok {
		t.Error("GIT_SSH_COMMAND without a moat path")
	}
	// A password alone gets the user name "moat".
	if got := envMap(Env(EnvConfig{Addr: "127.0.0.1:1", Credential: "tok"}))["HTTP_PROXY"]; got != "http://moat:tok@127.0.0.1:1" {
		t.Errorf("HTTP_PROXY = %q", got)
	}
	// The proxy accepts what Env hands out.
	addr, cred, err := parseProxyURL(m["MOAT_PROXY"])
	if err != nil || addr != "127.0.0.1:3128" || cred != "moat:t@k/en" {
		t.Errorf("parseProxyURL(MOAT_PROXY) = %q %q %v", addr, cred, err)
	}
}

// sshLikeServer sends a banner as soon as a client connects (server speaks
// first, as SSH does), then echoes.
func sshLikeServer(t *testing.T) (string, int) {
	addr, port, _ := sshLikeServerRecording(t)
	return addr, port
}

// sshLikeServerRecording also reports the first line each client sends.
func sshLikeServerRecording(t *testing.T) (string, int, chan string) {
	lines := make(chan string, 16)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.WriteString(c, "SSH-2.0-test\r\n")
				br := bufio.NewReader(c)
				line, _ := br.ReadString('\n')
				select {
				case lines <- line:
				default:
				}
				io.WriteString(c, line)
				io.Copy(c, br)
			}()
		}
	}()
	return l.Addr().String(), l.Addr().(*net.TCPAddr).Port, lines
}

func TestDialThroughProxyAndSSHProxyCommand(t *testing.T) {
	_, port := sshLikeServer(t)
	e := newEnv(t, mustRules(t, netOf([]string{fmt.Sprintf("127.0.0.1:%d", port), "git.test:22"}, []string{"*:2222"})),
		func(s *Server) { s.Credential = "moat:tok" })
	e.res.set("git.test", "203.0.113.50")
	sshAddr, _ := sshLikeServer(t)
	e.setRoute("203.0.113.50", sshAddr)

	c, err := DialThroughProxy(e.addr, "git.test", 22, "moat:tok")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if l, _ := br.ReadString('\n'); l != "SSH-2.0-test\r\n" {
		t.Fatalf("banner %q", l)
	}
	c.Close()

	_, err = DialThroughProxy(e.addr, "git.test", 2222, "moat:tok")
	var pe *ProxyError
	if !errors.As(err, &pe) || pe.Status != 403 || !strings.Contains(pe.Reason, `"*:2222"`) {
		t.Fatalf("denied dial: %v", err)
	}
	_, err = DialThroughProxy(e.addr, "git.test", 22, "moat:bad")
	if !errors.As(err, &pe) || pe.Status != 407 {
		t.Fatalf("bad credential: %v", err)
	}

	// SSHProxyCommand pipes stdin and stdout.
	getenv := func(k string) string {
		if k == EnvProxyVar {
			return envMap(Env(EnvConfig{Addr: e.addr, Credential: "moat:tok"}))[EnvProxyVar]
		}
		return ""
	}
	var out strings.Builder
	err = SSHProxyCommand(getenv, "127.0.0.1", fmt.Sprint(port), strings.NewReader("hello\n"), &out)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "SSH-2.0-test\r\nhello\n" {
		t.Fatalf("ssh-proxy output %q", out.String())
	}
	err = SSHProxyCommand(getenv, "evil.test", "22", strings.NewReader(""), io.Discard)
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), ReasonNotAllowed) {
		t.Fatalf("ssh-proxy to a denied host: %v", err)
	}
	if err := SSHProxyCommand(func(string) string { return "" }, "h", "22", nil, nil); err == nil {
		t.Fatal("ssh-proxy without MOAT_PROXY")
	}
}

// TestGitOverSSHCommand runs the real ssh client with the ProxyCommand
// line Env produces (the test binary stands in for moat), against a fake
// server: ssh must get the server's banner through the proxy.
func TestGitOverSSHCommand(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client")
	}
	_, port, lines := sshLikeServerRecording(t)
	e := newEnv(t, mustRules(t, netOf([]string{fmt.Sprintf("127.0.0.1:%d", port)}, nil)))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := envMap(Env(EnvConfig{Addr: e.addr, MoatPath: self}))
	cmdline := m["GIT_SSH_COMMAND"] + ` -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 -p ` + fmt.Sprint(port) + ` git@127.0.0.1 true`
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Env = append(os.Environ(), EnvProxyVar+"="+m[EnvProxyVar], "NETPROXY_TEST_SSH_PROXY=1", "PATH="+os.Getenv("PATH"))
	out, _ := cmd.CombinedOutput()
	// The fake server is no SSH server, so ssh fails after the banners;
	// what matters is that ssh's own banner crossed the tunnel.
	if strings.Contains(string(out), "ssh-proxy:") {
		t.Fatalf("ssh-proxy failed: %s", out)
	}
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "SSH-2.0-") {
			t.Fatalf("server got %q from ssh; ssh said %s", l, out)
		}
	default:
		t.Fatalf("ssh's banner never reached the server; ssh said %s", out)
	}
}

func init() {
	// When the test binary is run as "moat ssh-proxy HOST PORT" by ssh.
	if os.Getenv("NETPROXY_TEST_SSH_PROXY") == "1" && len(os.Args) == 4 && os.Args[1] == "ssh-proxy" {
		if err := SSHProxyCommand(os.Getenv, os.Args[2], os.Args[3], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "ssh-proxy:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

func TestSpecialAddresses(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1", "loopback"}, {"127.255.1.2", "loopback"}, {"::1", "loopback"},
		{"0.0.0.0", "unspecified"}, {"::", "unspecified"},
		{"10.1.1.1", "private"}, {"172.16.0.1", "private"}, {"172.31.255.1", "private"}, {"192.168.1.1", "private"},
		{"fd12::1", "private (ULA)"},
		{"169.254.1.1", "link-local"}, {"fe80::1", "link-local"},
		{"100.64.0.1", "shared (CGNAT)"},
		{"224.0.0.1", "multicast"}, {"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"169.254.169.254", "cloud metadata"}, {"100.100.100.200", "cloud metadata"}, {"168.63.129.16", "cloud metadata"},
		{"192.0.0.192", "cloud metadata"}, {"fd00:ec2::254", "cloud metadata"}, {"fd00:ec2::1", "cloud metadata"},
		{"::ffff:127.0.0.1", "loopback"}, {"::ffff:169.254.169.254", "cloud metadata"},
		{"64:ff9b::a9fe:a9fe", "cloud metadata"}, {"64:ff9b:1::7f00:1", "loopback"},
		{"2002:7f00:1::", "loopback"}, {"2002:a00:1::1", "private"},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"}, // Teredo client 127.0.0.1
		{"::7f00:1", "loopback"},
		{"8.8.8.8", ""}, {"203.0.113.10", ""}, {"2606:4700::1111", ""}, {"172.32.0.1", ""}, {"2002:808:808::1", ""},
	} {
		if got := policy.SpecialAddr(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("policy.SpecialAddr(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

func TestNewRulesErrors(t *testing.T) {
	_, err := NewRules(policy.Network{
		AllowedDomains:          []policy.DomainRule{{Pattern: "*.com"}, {Pattern: "ok.example"}, {Pattern: "*", Source: "/etc/x.json: network.allowedDomains[2]"}},
		DeniedDomains:           []policy.DomainRule{{Pattern: "http://x"}},
		DeniedResolvedAddresses: []string{"10.0.0.0/33", "nonsense"},
	})
	if err == nil {
		t.Fatal("bad rules accepted")
	}
	for _, want := range []string{"allowedDomains[0]", "/etc/x.json: network.allowedDomains[2]", "deniedDomains[0]", "deniedResolvedAddresses[0]", "deniedResolvedAddresses[1]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if !errors.Is(err, policy.ErrDomainPattern) {
		t.Error("error does not wrap policy.ErrDomainPattern")
	}
	var r *Rules
	if ok, ask, reason := r.Check("example.com", 443); ok || ask || reason != ReasonNotAllowed {
		t.Errorf("nil rules: %v %v %q", ok, ask, reason)
	}
	r = mustRules(t, netOf([]string{"example.com"}, []string{"bad.example.com"}))
	if ok, _, _ := r.Check("EXAMPLE.com.", 1); !ok {
		t.Error("Check does not canonicalise")
	}
	if ok, ask, reason := r.Check("bad.example.com", 1); ok || ask || !strings.Contains(reason, "bad.example.com") {
		t.Errorf("deny: %v %v %q", ok, ask, reason)
	}
	if _, ask, _ := r.Check("other.example", 1); !ask {
		t.Error("unlisted host under a non-strict list should be asked about")
	}
	if _, _, reason := r.Check("a\x00b", 1); reason != "malformed host" {
		t.Errorf("malformed: %q", reason)
	}
}
