package netproxy

import (
	"net"
	"net/url"
	"sort"
	"strings"
)

// EnvConfig describes the proxy as the sandboxed command sees it.
type EnvConfig struct {
	// Addr is the proxy's address inside the sandbox, "127.0.0.1:PORT".
	// HTTP and SOCKS5 share it.
	Addr string
	// SOCKSAddr, if set, is a separate SOCKS5 address. If empty, Addr.
	SOCKSAddr string
	// Credential, if set, is put in every proxy URL: "user:password", or a
	// password alone (then the user name is "moat").
	Credential string
	// MoatPath is the moat binary's path inside the sandbox. If set,
	// GIT_SSH_COMMAND runs ssh with "ProxyCommand=MOATPATH ssh-proxy %h %p".
	MoatPath string
	// NoProxy lists destinations that are truly local to the sandbox and
	// should be reached directly. Empty by default: loopback inside the
	// sandbox's network namespace is the sandbox's own, so "localhost"
	// there is never the host's, and everything meant for the outside,
	// loopback services the policy allows ("localhost:3000") included,
	// must go through the proxy. NO_PROXY is set (empty) either way so that
	// a value inherited from the host does not leak in.
	NoProxy []string
}

// EnvProxyVar is the variable that tells "moat ssh-proxy" (and other moat
// helpers run inside the sandbox) where the proxy is: an http:// URL with
// the credential in it.
const EnvProxyVar = "MOAT_PROXY"

// Env returns the environment a sandboxed command needs to use the proxy,
// as sorted "KEY=VALUE" strings. See the package documentation for what
// each variable is for. Variables the command already has under these
// names should be replaced, except JAVA_TOOL_OPTIONS, to which the caller
// may prepend the command's own value.
func Env(c EnvConfig) []string {
	socksAddr := c.SOCKSAddr
	if socksAddr == "" {
		socksAddr = c.Addr
	}
	user, pass, hasCred := splitCredential(c.Credential)
	mkURL := func(scheme, addr string) string {
		u := url.URL{Scheme: scheme, Host: addr}
		if hasCred {
			u.User = url.UserPassword(user, pass)
		}
		return u.String()
	}
	httpURL := mkURL("http", c.Addr)
	socksURL := mkURL("socks5h", socksAddr)
	noProxy := strings.Join(c.NoProxy, ",")

	env := map[string]string{}
	both := func(k, v string) {
		env[k] = v
		env[strings.ToLower(k)] = v
	}
	both("HTTP_PROXY", httpURL)
	both("HTTPS_PROXY", httpURL)
	both("ALL_PROXY", socksURL)
	both("NO_PROXY", noProxy)
	both("GRPC_PROXY", httpURL)
	both("FTP_PROXY", socksURL)
	env["DOCKER_HTTP_PROXY"] = httpURL
	env["DOCKER_HTTPS_PROXY"] = httpURL
	// rsync speaks HTTP CONNECT to RSYNC_PROXY ([user:pass@]host:port).
	rsync := c.Addr
	if hasCred {
		rsync = url.UserPassword(user, pass).String() + "@" + c.Addr
	}
	env["RSYNC_PROXY"] = rsync
	// Package managers that read their own settings before the standard
	// variables.
	env["npm_config_proxy"] = httpURL
	env["npm_config_https_proxy"] = httpURL
	env["npm_config_noproxy"] = noProxy
	env["YARN_HTTP_PROXY"] = httpURL
	env["YARN_HTTPS_PROXY"] = httpURL
	env["PIP_PROXY"] = httpURL
	// Node.js (>= 22.21, 24.5) makes fetch and http use HTTP(S)_PROXY.
	env["NODE_USE_ENV_PROXY"] = "1"
	// Google Cloud CLI.
	host, port, _ := net.SplitHostPort(c.Addr)
	env["CLOUDSDK_PROXY_TYPE"] = "http"
	env["CLOUDSDK_PROXY_ADDRESS"] = host
	env["CLOUDSDK_PROXY_PORT"] = port
	if hasCred {
		env["CLOUDSDK_PROXY_USERNAME"] = user
		env["CLOUDSDK_PROXY_PASSWORD"] = pass
	}
	env["JAVA_TOOL_OPTIONS"] = javaOptions(c.Addr, socksAddr, user, pass, hasCred, c.NoProxy)
	env[EnvProxyVar] = httpURL
	if c.MoatPath != "" {
		env["GIT_SSH_COMMAND"] = SSHCommand(c.MoatPath)
	}

	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// SSHCommand returns the ssh command line (for GIT_SSH_COMMAND) that
// reaches SSH servers through the proxy with "moat ssh-proxy". Connection
// sharing is off: its control sockets are unix sockets, which the sandbox
// does not allow.
func SSHCommand(moatPath string) string {
	proxyCmd := "ProxyCommand=" + shellQuote(moatPath) + " ssh-proxy %h %p"
	return "ssh -o ControlMaster=no -o ControlPath=none -o " + shellQuote(proxyCmd)
}

func splitCredential(cred string) (user, pass string, ok bool) {
	if cred == "" {
		return "", "", false
	}
	if u, p, found := strings.Cut(cred, ":"); found {
		return u, p, true
	}
	return "moat", cred, true
}

// javaOptions sets the JVM's standard proxy properties. nonProxyHosts is
// set explicitly because the JVM's default exempts loopback, which inside
// the sandbox would bypass the proxy.
func javaOptions(httpAddr, socksAddr, user, pass string, hasCred bool, noProxy []string) string {
	h, p, _ := net.SplitHostPort(httpAddr)
	sh, sp, _ := net.SplitHostPort(socksAddr)
	nph := strings.Join(noProxy, "|")
	opts := []string{
		"-Dhttp.proxyHost=" + h, "-Dhttp.proxyPort=" + p,
		"-Dhttps.proxyHost=" + h, "-Dhttps.proxyPort=" + p,
		"-Dhttp.nonProxyHosts=" + nph,
		"-DsocksProxyHost=" + sh, "-DsocksProxyPort=" + sp,
		"-Djava.net.useSystemProxies=false",
	}
	if hasCred {
		// The JDK itself answers a 407 only through an Authenticator; these
		// properties serve Gradle and SOCKS (java.net.socks.*), and Basic is
		// re-enabled for tunnels (the JDK disables it by default).
		opts = append(opts,
			"-Dhttp.proxyUser="+user, "-Dhttp.proxyPassword="+pass,
			"-Dhttps.proxyUser="+user, "-Dhttps.proxyPassword="+pass,
			"-Djava.net.socks.username="+user, "-Djava.net.socks.password="+pass,
			"-Djdk.http.auth.tunneling.disabledSchemes=",
			"-Djdk.http.auth.proxying.disabledSchemes=",
		)
	}
	return strings.Join(opts, " ")
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
