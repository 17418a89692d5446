package runtime

// hostEnv are the variables moat reads from its own process's environment
// while it resolves and runs `moat run` (settings and state locations, the
// tool cache, a parent proxy, the daemon's socket, the container probe),
// as opposed to the command's environment, which is the caller's. A
// server that runs `moat run` for another process (moat serve, POST
// /v1/cli/run) serves it only when these are the same in both: otherwise
// the run would differ from the one the caller would have made itself.
// TestHostEnvComplete checks that every variable moat's sources read is
// here or named as not read on that path.
var hostEnv = []string{
	"HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"GOPATH", "GOPROXY", "GOMODCACHE",
	"KUBERNETES_SERVICE_HOST", "TMPDIR",
	"MOAT_DAEMON", "MOAT_DAEMON_SOCKET",
}

// HostEnv returns the names of the variables moat reads from its own
// environment when it resolves and runs a command (see hostEnv).
func HostEnv() []string { return append([]string(nil), hostEnv...) }
