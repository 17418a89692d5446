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
	notes     *[]string // where notes about the paths go (nil: none)
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
	var abs, base string
	switch {
	case p == "~":
		abs = r.home
	case strings.HasPrefix(p, "~/"):
		abs, base = r.home+"/"+p[2:], r.home
	case filepath.IsAbs(p):
		abs = p
	default:
		abs, base = r.cwd+"/"+p, r.cwd
	}
	if strings.HasPrefix(p, "~") && r.home == "" {
		return policy.PathRule{}, &Error{File: r.file, Field: field, Reason: "~ used but there is no home directory"}
	}
	return r.finish(field, p, abs, base, k)
}

// claude resolves Claude Code's rule form: //abs absolute, ~/p home, /p
// relative to the directory of the settings file, p or ./p relative to the
// working directory.
func (r resolver) claude(field, p string, k pathKind) (policy.PathRule, error) {
	var abs, base string
	switch {
	case strings.HasPrefix(p, "//"):
		abs = "/" + strings.TrimLeft(p, "/")
	case p == "~":
		abs = r.home
	case strings.HasPrefix(p, "~/"):
		abs, base = r.home+"/"+p[2:], r.home
	case strings.HasPrefix(p, "/"):
		abs, base = r.dir+"/"+p[1:], r.dir
	default:
		abs, base = r.cwd+"/"+p, r.cwd
	}
	if strings.HasPrefix(p, "~") && r.home == "" {
		return policy.PathRule{}, &Error{File: r.file, Field: field, Reason: "~ used but there is no home directory"}
	}
	return r.finish(field, p, abs, base, k)
}

// finish checks and cleans a resolved path; base is the folder the written
// form is relative to ("" for an absolute one).
func (r resolver) finish(field, orig, abs, base string, k pathKind) (policy.PathRule, error) {
	bad := func(format string, a ...any) (policy.PathRule, error) {
		return policy.PathRule{}, &Error{File: r.file, Field: field, Reason: fmt.Sprintf(format, a...)}
	}
	if strings.TrimSpace(orig) == "" {
		return bad("empty path")
	}
	if strings.ContainsRune(orig, 0) {
		return bad("path contains a NUL byte")
	}
	if i := strings.IndexFunc(orig, func(c rune) bool { return c < 0x20 || c == 0x7f }); i >= 0 {
		return bad("%q contains a control character (%q at byte %d): a path with one cannot be shown or recorded safely", orig, orig[i], i)
	}
	if i := policy.UnsafeChar(orig); i >= 0 {
		return bad("%q contains %s: a path with one cannot be shown or recorded safely", orig, policy.UnsafeCharName(orig, i))
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
	r.noteDotDot(field, orig, abs, base)
	abs = filepath.Clean(abs)
	glob = policy.HasGlob(abs)
	return policy.PathRule{Path: abs, Glob: glob, Source: fmt.Sprintf("%s: %s", r.file, field)}, nil
}

// noteDotDot notes a rule whose ".." takes it outside the folder it names:
// the folder a relative form is relative to (the working directory, the
// settings file's, home), or, for an absolute one, the part before the
// first "..". "work/../../../../etc" names the working directory and is
// /etc: allowed, as written, but the user is told, and moat policy shows
// the cleaned path.
func (r resolver) noteDotDot(field, orig, abs, base string) {
	if r.notes == nil || !strings.Contains(orig, "..") {
		return
	}
	named := filepath.Clean(base)
	if base == "" {
		named = "/"
		for _, part := range strings.Split(abs, "/") {
			if part == ".." {
				break
			}
			named = filepath.Join(named, part)
		}
	}
	clean := filepath.Clean(abs)
	if named == "/" || clean == named || strings.HasPrefix(clean, named+"/") {
		return
	}
	*r.notes = append(*r.notes, fmt.Sprintf("%s: %s: %q is %s, outside %s (its \"..\" climbs out of the folder it names)", r.file, field, orig, clean, named))
}
