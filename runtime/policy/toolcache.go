package policy

import "path/filepath"

// ToolCacheVars are the variables that point tools at their caches, and
// the directory under Policy.ToolCache each gets. A variable the user sets
// in moat.env.set keeps the user's value. Cargo is not here: its only
// variable, CARGO_HOME, also moves its configuration and credentials.
var ToolCacheVars = []struct{ Name, Dir string }{
	{"GOCACHE", "go-build"},
	{"GOMODCACHE", "go-mod"},
	{"npm_config_cache", "npm"},
	{"YARN_CACHE_FOLDER", "yarn"},
	{"PIP_CACHE_DIR", "pip"},
	{"UV_CACHE_DIR", "uv"},
}

// DefaultToolCache is moat's own tool cache for the sandboxes of this user:
// $XDG_CACHE_HOME/moat/sandbox-cache, or ~/.cache/moat/sandbox-cache; ""
// without a home directory.
func DefaultToolCache(home, xdgCache string) string {
	if filepath.IsAbs(xdgCache) {
		return filepath.Join(xdgCache, "moat", "sandbox-cache")
	}
	if home == "" || !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Join(home, ".cache", "moat", "sandbox-cache")
}

// WithToolCache returns a copy of p in which the tool cache is writable
// and the variables point into it (p itself is not changed); p when there
// is no tool cache. The directories must exist (the runtime makes them).
func (p *Policy) WithToolCache() *Policy {
	if p.ToolCache == "" {
		return p
	}
	q := *p
	q.FS.AllowWrite = append(append([]PathRule(nil), p.FS.AllowWrite...), PathRule{Path: p.ToolCache, Source: "moat.toolCache"})
	q.Env.Set = make(map[string]string, len(p.Env.Set)+len(ToolCacheVars))
	for k, v := range p.Env.Set {
		q.Env.Set[k] = v
	}
	for _, tv := range ToolCacheVars {
		if _, ok := q.Env.Set[tv.Name]; !ok {
			q.Env.Set[tv.Name] = filepath.Join(p.ToolCache, tv.Dir)
		}
	}
	return &q
}

// ToolCacheDirs are the directories WithToolCache points variables to
// (those of the variables moat.env.set does not set).
func (p *Policy) ToolCacheDirs() []string {
	if p.ToolCache == "" {
		return nil
	}
	var dirs []string
	for _, tv := range ToolCacheVars {
		if _, ok := p.Env.Set[tv.Name]; !ok {
			dirs = append(dirs, filepath.Join(p.ToolCache, tv.Dir))
		}
	}
	return dirs
}
