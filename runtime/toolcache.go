package runtime

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// withToolCache makes the policy's tool cache directories (mode 0700, as
// the user) and returns the policy with them writable and the cache
// variables set (policy.WithToolCache). The cache is a convenience, not a
// protection: when it cannot be made the command runs without it, and the
// returned warning says so.
func withToolCache(pol *policy.Policy, log *slog.Logger, as *enforce.Identity, getenv func(string) string) (*policy.Policy, string) {
	dirs := pol.ToolCacheDirs()
	if len(dirs) == 0 {
		return pol, ""
	}
	mkdir := func(d string) error { return os.MkdirAll(d, 0o700) }
	if as != nil {
		// moatd: the cache is in the client's home, made as the client.
		mkdir = func(d string) error {
			return ascred.Do(as.Uid, as.Gid, as.Groups, func() error { return os.MkdirAll(d, 0o700) })
		}
	}
	for _, d := range append([]string{pol.ToolCache}, dirs...) {
		if err := mkdir(d); err != nil {
			log.Debug("tool cache", "err", err)
			q := *pol
			q.ToolCache = ""
			return &q, "no tool cache (moat.toolCache): " + err.Error()
		}
	}
	q := pol.WithToolCache()
	isDir := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.IsDir()
	}
	if as != nil {
		// moatd: GOMODCACHE is the client's to name; the daemon looks
		// as the client, or it would tell whether any path is a
		// directory through the command's GOPROXY.
		isDir = func(p string) bool {
			return ascred.Do(as.Uid, as.Gid, as.Groups, func() error {
				fi, err := os.Stat(p)
				if err == nil && !fi.IsDir() {
					err = os.ErrInvalid
				}
				return err
			}) == nil
		}
	}
	if proxy := goModProxy(pol, getenv, isDir); proxy != "" {
		q.Env.Set["GOPROXY"] = proxy
	}
	return q, ""
}

// goModProxy: with GOMODCACHE moved into the tool cache, Go would download
// again every module the host's module cache already holds (and fail
// without network). GOPROXY gets the host's download cache first, as a
// file:// proxy (read-only, and verified against go.sum as any proxy is),
// then the user's GOPROXY. "" when the user set GOMODCACHE or GOPROXY in
// moat.env.set, or the host has no download cache.
func goModProxy(pol *policy.Policy, getenv func(string) string, isDir func(string) bool) string {
	if _, ok := pol.Env.Set["GOMODCACHE"]; ok {
		return ""
	}
	if _, ok := pol.Env.Set["GOPROXY"]; ok {
		return ""
	}
	host := getenv("GOMODCACHE")
	if host == "" {
		gopath := filepath.SplitList(getenv("GOPATH"))
		switch {
		case len(gopath) > 0 && filepath.IsAbs(gopath[0]):
			host = filepath.Join(gopath[0], "pkg", "mod")
		case pol.Home != "":
			host = filepath.Join(pol.Home, "go", "pkg", "mod")
		}
	}
	dl := filepath.Join(host, "cache", "download")
	if !filepath.IsAbs(host) || strings.ContainsAny(dl, ",|") {
		return ""
	}
	if !isDir(dl) {
		return ""
	}
	next := getenv("GOPROXY")
	if next == "" {
		next = "https://proxy.golang.org,direct"
	}
	return "file://" + dl + "," + next
}
