// Package glob expands the path patterns of moat's settings against the
// disk, segment by segment, as the sandbox reads them: *, ? and [...]
// match within one name (a "[" with no closing "]" is a literal
// character), ** any number of directories. A literal segment costs one
// stat, a segment with a pattern one directory read, ** a walk of the
// directories below it; ** does not follow symbolically linked
// directories. The sandbox's planner (linux) and the settings' checks
// (runtime/settings) expand with the same code, so that a check judges
// the paths the sandbox will see.
package glob

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Walker is one expansion's limits and its view of the disk.
type Walker struct {
	// Depth is how many directories ** spans; a negative Depth has no
	// limit.
	Depth int
	// AllDirs makes ** walk into node_modules and .git, which it skips
	// otherwise.
	AllDirs bool
	// ReadDir lists a directory; entries nil with a nil error match
	// nothing there (gone), ErrUnreadable says it exists but cannot be
	// listed, another error stops the expansion (a budget spent).
	ReadDir func(dir string) ([]os.DirEntry, error)
	// Unreadable makes a directory that cannot be listed a match of its
	// own (deny rules: a name in it may match, and it can be entered by
	// name); otherwise it matches nothing.
	Unreadable bool
	// Looked, if set, is called with each directory a literal segment is
	// looked up in (a match may appear there later: a cache stamps it).
	Looked func(dir string)
}

// ErrUnreadable is what ReadDir returns for a directory that exists but
// cannot be listed (its owner took away the read permission: it may still
// be entered by name).
var ErrUnreadable = errors.New("directory cannot be listed")

// HasMeta reports whether a segment holds pattern syntax.
func HasMeta(s string) bool {
	if strings.ContainsAny(s, "*?") {
		return true
	}
	if i := strings.IndexByte(s, '['); i >= 0 && strings.IndexByte(s[i:], ']') > 0 {
		return true
	}
	return false
}

// Expand returns the paths an absolute pattern matches, in the order the
// walk finds them (lexical when ReadDir sorts).
func (w *Walker) Expand(pattern string) ([]string, error) {
	segs := strings.Split(strings.TrimPrefix(filepath.Clean(pattern), "/"), "/")
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	readDir := func(dir string) ([]os.DirEntry, error) {
		es, err := w.ReadDir(dir)
		if errors.Is(err, ErrUnreadable) {
			if w.Unreadable {
				add(dir)
			}
			return nil, nil
		}
		return es, err
	}
	var walk func(dir string, i, starDepth int) error
	walk = func(dir string, i, starDepth int) error {
		if i == len(segs) {
			add(dir)
			return nil
		}
		s := segs[i]
		switch {
		case s == "**":
			if err := walk(dir, i+1, 0); err != nil { // zero directories
				return err
			}
			if w.Depth >= 0 && starDepth >= w.Depth {
				return nil
			}
			es, err := readDir(dir)
			if err != nil {
				return err
			}
			for _, e := range es {
				if !e.IsDir() || !w.AllDirs && (e.Name() == "node_modules" || e.Name() == ".git") {
					continue
				}
				if err := walk(filepath.Join(dir, e.Name()), i, starDepth+1); err != nil {
					return err
				}
			}
			return nil
		case !HasMeta(s):
			if w.Looked != nil {
				w.Looked(dir)
			}
			next := filepath.Join(dir, s)
			if i < len(segs)-1 {
				if fi, err := os.Stat(next); err != nil || !fi.IsDir() {
					return nil
				}
			} else if _, err := os.Lstat(next); err != nil {
				return nil
			}
			return walk(next, i+1, 0)
		default:
			if _, err := filepath.Match(s, ""); err != nil {
				return fmt.Errorf("bad glob segment %q in %s: %w", s, pattern, err)
			}
			es, err := readDir(dir)
			if err != nil {
				return err
			}
			for _, e := range es {
				if ok, _ := filepath.Match(s, e.Name()); !ok {
					continue
				}
				next := filepath.Join(dir, e.Name())
				if i < len(segs)-1 {
					if fi, err := os.Stat(next); err != nil || !fi.IsDir() {
						continue
					}
				}
				if err := walk(next, i+1, 0); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if err := walk("/", 0, 0); err != nil {
		return nil, err
	}
	return out, nil
}
