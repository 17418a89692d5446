package darwin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Helpers of the runner that need no Mac (tested everywhere).

// lookPath finds the command as execvp(3) will, in the command's PATH
// (relative entries from dir), so that "not found" and "not executable"
// are moat's answers (127, 126) rather than sandbox-exec's.
func lookPath(name, path, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if e := executable(p); e != 0 {
			return "", &enforce.ExecError{Path: name, Err: e}
		}
		return p, nil
	}
	if path == "" {
		path = "/usr/bin:/bin:/usr/sbin:/sbin"
	}
	last := syscall.ENOENT
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		switch e := executable(p); e {
		case 0:
			return p, nil
		case syscall.EACCES:
			last = e
		}
	}
	return "", &enforce.ExecError{Path: name, Err: last}
}

func executable(p string) syscall.Errno {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return syscall.ENOENT
	case err != nil, fi.IsDir(), fi.Mode()&0o111 == 0:
		return syscall.EACCES
	}
	return 0
}

// lookupEnv is the value of k in env ("" if unset), the last one winning.
func lookupEnv(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
}

// setEnv sets each "K=V" of kvs in env, replacing every earlier K.
func setEnv(env []string, kvs ...string) []string {
	for _, kv := range kvs {
		k, _, _ := strings.Cut(kv, "=")
		out := env[:0]
		for _, e := range env {
			if !strings.HasPrefix(e, k+"=") {
				out = append(out, e)
			}
		}
		env = append(out, kv)
	}
	return env
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return hex.EncodeToString(b)
}

// externalProxyAddrs are the loopback addresses of the external filtering
// proxy the policy names, for the command's proxy variables: a missing
// port is the other one (as the runtime's relay does on Linux).
func externalProxyAddrs(n policy.Network) (httpAddr, socksAddr string) {
	h, s := n.HTTPProxyPort, n.SOCKSProxyPort
	if h == 0 {
		h = s
	}
	if s == 0 {
		s = h
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(h)), net.JoinHostPort("127.0.0.1", strconv.Itoa(s))
}
