//go:build linux

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// globBudget bounds the directory entries glob expansion may read in one
// launch, so a pattern such as /**/x cannot make start-up walk the disk.
// Patterns expand segment by segment: only the directories a pattern names
// are read, and ** reads the subtree below it (skipping node_modules and
// .git), which is what the budget limits.
type globBudget struct{ entries int }

// DefaultGlobBudget is the number of directory entries glob expansion may
// read per launch before moat refuses the policy.
const DefaultGlobBudget = 200_000

var errGlobBudget = fmt.Errorf("glob expansion read more than %d directory entries; narrow the pattern (a ** near the top of a large tree)", DefaultGlobBudget)

func (b *globBudget) readDir(dir string) ([]os.DirEntry, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil // unreadable or gone: matches nothing here
	}
	b.entries -= len(es)
	if b.entries < 0 {
		return nil, errGlobBudget
	}
	return es, nil
}

// glob expands an absolute pattern with *, ?, [...] (per path segment) and
// ** (any number of directories). Symlinked directories are not followed by
// **. It returns matches in lexical order.
func glob(pattern string, b *globBudget) ([]string, error) {
	segs := strings.Split(strings.TrimPrefix(filepath.Clean(pattern), "/"), "/")
	var out []string
	seen := map[string]bool{}
	var walk func(dir string, i int) error
	walk = func(dir string, i int) error {
		if i == len(segs) {
			if !seen[dir] {
				seen[dir] = true
				out = append(out, dir)
			}
			return nil
		}
		s := segs[i]
		switch {
		case s == "**":
			if err := walk(dir, i+1); err != nil { // zero directories
				return err
			}
			es, err := b.readDir(dir)
			if err != nil {
				return err
			}
			for _, e := range es {
				if !e.IsDir() || e.Name() == "node_modules" || e.Name() == ".git" {
					continue
				}
				if err := walk(filepath.Join(dir, e.Name()), i); err != nil {
					return err
				}
			}
			return nil
		case !hasMeta(s):
			next := filepath.Join(dir, s)
			if i < len(segs)-1 {
				if fi, err := os.Stat(next); err != nil || !fi.IsDir() {
					return nil
				}
			} else if _, err := os.Lstat(next); err != nil {
				return nil
			}
			return walk(next, i+1)
		default:
			if _, err := filepath.Match(s, ""); err != nil {
				return fmt.Errorf("bad glob segment %q in %s: %w", s, pattern, err)
			}
			es, err := b.readDir(dir)
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
				if err := walk(next, i+1); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if err := walk("/", 0); err != nil {
		return nil, err
	}
	return out, nil
}

// hasMeta reports whether a segment holds glob syntax. A "[" with no
// closing "]" is a literal character (a name such as "a[1").
func hasMeta(s string) bool {
	if strings.ContainsAny(s, "*?") {
		return true
	}
	if i := strings.IndexByte(s, '['); i >= 0 && strings.IndexByte(s[i:], ']') > 0 {
		return true
	}
	return false
}
