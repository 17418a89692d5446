package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/moat-sandbox/moat/internal/glob"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// What a path rule reaches, for the checks that keep a weaker settings
// file from undoing a stronger one (a project's re-allowing a secret, a
// project's making /etc writable). The sandbox resolves each rule at
// launch: a glob expands against the disk, and every path, matched or
// literal, is taken through its symbolic links. So a rule is judged in
// every form the sandbox may see it in: as written (a glob matching what
// it may), as its symbolic links resolve, and, for a glob, as each match
// on the disk resolves (a repository's "keys -> ~/.ssh" matched by
// Read(./k*) is ~/.ssh to the sandbox).

// pathForm is one form of a rule's path: its components, a component with
// *, ? or [...] matching one name, "**" any number of names.
type pathForm struct {
	comps []string
	via   string // "": as written; else the path it resolved to, for messages
	from  string // the path (or match) that resolved to via
}

func splitPath(p string) []string {
	p = filepath.Clean(p)
	if p == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// hasMeta reports whether a component holds glob syntax, as the sandbox's
// expansion reads it.
func hasMeta(s string) bool { return glob.HasMeta(s) }

// compMatch reports whether some name both components match. Two globs
// are taken to meet (telling whether they do is not worth the doubt).
func compMatch(a, b string) bool {
	ga, gb := hasMeta(a), hasMeta(b)
	switch {
	case !ga && !gb:
		return a == b
	case ga && gb:
		return true
	case ga:
		ok, err := filepath.Match(a, b)
		return ok || err != nil
	default:
		ok, err := filepath.Match(b, a)
		return ok || err != nil
	}
}

// ancestorOrSelf reports whether a path that a names can be one that b
// names or an ancestor of one.
func ancestorOrSelf(a, b []string) bool {
	type key struct{ i, j int }
	memo := map[key]bool{}
	var rec func(i, j int) bool
	rec = func(i, j int) bool {
		if i == len(a) {
			return true // a is used up: b's path is it or lies below it
		}
		k := key{i, j}
		if v, ok := memo[k]; ok {
			return v
		}
		memo[k] = false // (a cycle of ** matching nothing proves nothing)
		var r bool
		switch {
		case j == len(b):
			// b is used up, a is not: only a's ** matching nothing
			// leaves them equal.
			r = a[i] == "**" && rec(i+1, j)
		case a[i] == "**":
			r = rec(i+1, j) || rec(i, j+1) || (b[j] == "**" && rec(i+1, j+1))
		case b[j] == "**":
			r = rec(i, j+1) || rec(i+1, j)
		default:
			r = compMatch(a[i], b[j]) && rec(i+1, j+1)
		}
		memo[k] = r
		return r
	}
	return rec(0, 0)
}

// literalRoot is the part of a form before its first glob component: the
// directory everything it names lies in.
func literalRoot(comps []string) []string {
	for i, c := range comps {
		if hasMeta(c) || c == "**" {
			return comps[:i]
		}
	}
	return comps
}

func joinComps(comps []string) string { return "/" + strings.Join(comps, "/") }

// canonicalPath resolves the symbolic links of p; for a path that does not
// exist, those of its longest existing part, the rest appended (a rule for
// a file that appears later names the place it will appear in). A path
// this user may not look into is kept as written: the sandbox, this user,
// cannot look there either.
func canonicalPath(p string) string {
	p = filepath.Clean(p)
	r, err := filepath.EvalSymlinks(p)
	if err == nil {
		return r
	}
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return p // (a loop, a directory this user may not search)
	}
	dir, base := filepath.Split(p)
	if dir == "" || dir == p || base == "" {
		return p
	}
	return filepath.Join(canonicalPath(filepath.Clean(dir)), base)
}

// reach holds what the checks have resolved so far, and the budget of the
// glob expansions, shared by one Load.
type reach struct {
	depth   int // how many directories ** spans (mandatoryDenySearchDepth)
	entries int // directory entries the expansions may still read
}

// globBudget is the number of directory entries the checks' expansions may
// read in one Load (the sandbox's own bound, linux.DefaultGlobBudget).
const globBudget = 200_000

var errGlobBudget = fmt.Errorf("its glob reads more than %d directory entries; narrow the pattern", globBudget)

// forms returns the forms of rule r the sandbox may see. expand says
// whether a glob's matches on the disk are resolved one by one too.
func (x *reach) forms(r policy.PathRule, expand bool) ([]pathForm, error) {
	out := []pathForm{{comps: splitPath(r.Path)}}
	add := func(from, to string) {
		if to == from {
			return
		}
		c := splitPath(to)
		for _, f := range out {
			if slices.Equal(f.comps, c) {
				return
			}
		}
		out = append(out, pathForm{comps: c, via: to, from: from})
	}
	if !r.Glob {
		add(r.Path, canonicalPath(r.Path))
		return out, nil
	}
	comps := splitPath(r.Path)
	root := literalRoot(comps)
	rootPath := joinComps(root)
	if c := canonicalPath(rootPath); c != rootPath {
		out = append(out, pathForm{comps: append(splitPath(c), comps[len(root):]...), via: c, from: rootPath})
	}
	// A name such as "a[1]" is also what the rule names, if it exists.
	if _, err := os.Lstat(r.Path); err == nil {
		add(r.Path, canonicalPath(r.Path))
	}
	if expand {
		ms, err := x.glob(r.Path)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			add(m, canonicalPath(m))
		}
	}
	return out, nil
}

// glob expands an absolute pattern as the sandbox does (internal/glob):
// ** across at most x.depth directories, not into node_modules or .git.
func (x *reach) glob(pattern string) ([]string, error) {
	w := glob.Walker{Depth: x.depth, ReadDir: func(dir string) ([]os.DirEntry, error) {
		es, err := os.ReadDir(dir)
		if err != nil {
			return nil, nil // unreadable or gone: matches nothing here (an allow rule's)
		}
		if x.entries -= len(es); x.entries < 0 {
			return nil, errGlobBudget
		}
		return es, nil
	}}
	return w.Expand(pattern)
}

// within reports whether p is base or lies below it.
func within(p, base string) bool {
	return base == "/" || p == base || strings.HasPrefix(p, base+"/")
}

// viaNote says how a form came to be, for a message: "" for the rule as
// written.
func viaNote(f pathForm) string {
	if f.via == "" {
		return ""
	}
	return fmt.Sprintf(" (through symbolic links, %s is %s)", f.from, f.via)
}
