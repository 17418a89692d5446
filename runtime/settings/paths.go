package settings

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// resolver turns the path forms of a settings file into absolute paths.
type resolver struct {
	cwd, home string
	dir       string // directory of the settings file
	file      string
}

// pathKind says what a path field may hold.
type pathKind int

const (
	readPath  pathKind = iota // globs allowed, expanded at launch
	writePath                 // globs allowed; a trailing /** means the directory
	denyPath                  // like readPath, and a trailing / is refused
	plainPath                 // no globs (unix sockets, directories)
)

// srt resolves the srt form: absolute, ~ or ~/p (home), else relative to the
// working directory.
func (r resolver) srt(field, p string, k pathKind) (policy.PathRule, error) {
	var abs string
	switch {
	case p == "~":
		abs = r.home
	case strings.HasPrefix(p, "~/"):
		abs = filepath.Join(r.home, p[2:])
	case filepath.IsAbs(p):
		abs = p
	default:
		abs = filepath.Join(r.cwd, p)
	}
	if strings.HasPrefix(p, "~") && r.home == "" {
		return policy.PathRule{}, &Error{File: r.file, Field: field, Reason: "~ used but there is no home directory"}
	}
	return r.finish(field, p, abs, k)
}

// claude resolves Claude Code's rule form: //abs absolute, ~/p home, /p
// relative to the directory of the settings file, p or ./p relative to the
// working directory.
func (r resolver) claude(field, p string, k pathKind) (policy.PathRule, error) {
	var abs string
	switch {
	case strings.HasPrefix(p, "//"):
		abs = "/" + strings.TrimLeft(p, "/")
	case p == "~":
		abs = r.home
	case strings.HasPrefix(p, "~/"):
		abs = filepath.Join(r.home, p[2:])
	case strings.HasPrefix(p, "/"):
		abs = filepath.Join(r.dir, p[1:])
	default:
		abs = filepath.Join(r.cwd, p)
	}
	if strings.HasPrefix(p, "~") && r.home == "" {
		return policy.PathRule{}, &Error{File: r.file, Field: field, Reason: "~ used but there is no home directory"}
	}
	return r.finish(field, p, abs, k)
}

func (r resolver) finish(field, orig, abs string, k pathKind) (policy.PathRule, error) {
	bad := func(format string, a ...any) (policy.PathRule, error) {
		return policy.PathRule{}, &Error{File: r.file, Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	if strings.TrimSpace(orig) == "" {
		return bad("empty path")
	}
	if strings.ContainsRune(orig, 0) {
		return bad("path contains a NUL byte")
	}
	if strings.HasPrefix(orig, "~") && !strings.HasPrefix(orig, "~/") && orig != "~" {
		return bad("%q: only ~ and ~/... refer to the home directory (~user is not supported)", orig)
	}
	glob := policy.HasGlob(orig)
	if k == denyPath && glob && strings.HasSuffix(orig, "/") {
		return bad("%q: a deny glob ending in / matches nothing (it would fail open); drop the trailing /", orig)
	}
	if glob && k == plainPath {
		return bad("%q: globs are not allowed here", orig)
	}
	// A trailing /** names the directory and everything under it: the
	// directory itself, for a mount-based sandbox.
	for strings.HasSuffix(abs, "/**") {
		abs = strings.TrimSuffix(abs, "/**")
	}
	if abs == "" {
		abs = "/"
	}
	abs = filepath.Clean(abs)
	glob = policy.HasGlob(abs)
	return policy.PathRule{Path: abs, Glob: glob, Source: fmt.Sprintf("%s: %s", r.file, field)}, nil
}
