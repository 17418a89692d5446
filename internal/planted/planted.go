// Package planted answers, for both enforcers, what a sandboxed command
// could have planted on the way of a path the next run is given: a
// symlink it made in a tree it could write. Such a link, followed when
// the next run's policy is resolved, widens that run to wherever the link
// leads (one run plants work/out -> $HOME, the next is given --write out).
// Linux and macOS ask the same question with the same answer; only the
// trees differ.
package planted

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Link is a symlink inside a writable tree, found on the way of a path a
// policy names.
type Link struct {
	Path   string // the path as the policy wrote it
	Source string // where the policy took it from
	Link   string // the symlink, its directory's symlinks resolved
	Tree   string // the writable tree that holds it
	To     string // where it leads now
	// For says what naming To itself would do ("" : make it writable).
	For string
}

func (l *Link) Error() string {
	what := l.For
	if what == "" {
		what = "make it writable"
	}
	return fmt.Sprintf("%s (%s): %s is a symlink inside the writable tree %s, to %s: a sandboxed command could have made it; name %s itself to %s", l.Path, l.Source, l.Link, l.Tree, l.To, l.To, what)
}

// FindLink walks the absolute path p as written, one component at a time
// from the root, and returns the first component that is a symlink lying
// strictly inside a writable tree (nil if none does; the walk stops where
// the path does not exist). inside reports, for a path whose directories'
// symlinks are resolved, the writable tree holding it strictly below its
// top; resolveDir resolves a directory's symlinks (the spelling the trees
// use). A component whose directory does not resolve is checked as
// written.
func FindLink(p, source string, inside func(node string) (tree string, ok bool), resolveDir func(string) (string, error)) *Link {
	if !filepath.IsAbs(p) {
		return nil
	}
	q := "/"
	for _, c := range strings.Split(strings.Trim(filepath.Clean(p), "/"), "/") {
		if c == "" {
			continue
		}
		q = filepath.Join(q, c)
		fi, err := os.Lstat(q)
		if err != nil {
			return nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		node := q
		if d, err := resolveDir(filepath.Dir(q)); err == nil {
			node = filepath.Join(d, c)
		}
		for _, n := range []string{node, q} {
			if t, ok := inside(n); ok {
				to, err := filepath.EvalSymlinks(q)
				if err != nil {
					to, _ = os.Readlink(q)
				}
				return &Link{Path: p, Source: source, Link: n, Tree: t, To: to}
			}
		}
	}
	return nil
}

// ResolveOutsideWritable resolves the symlinks of the absolute path p up
// to the first directory for which writable is true; the rest stays as
// written: a symlink there may have been planted, and is not followed (a
// socket path dev.sock -> /var/run/docker.sock in the working directory).
// A path that does not resolve (a loop, too many links) is kept as
// written.
func ResolveOutsideWritable(p string, writable func(dir string) bool) string {
	dir, rest, _ := SplitOutsideWritable(p, writable, os.Readlink)
	return filepath.Join(append([]string{dir}, rest...)...)
}

// SplitOutsideWritable is ResolveOutsideWritable in two parts, with the
// symlinks read by readlink (os.Readlink, or a test's machine): the
// directory it reached, resolved (no symlink in it), and the components
// after it, as written; in says whether it stopped because that directory
// is writable. A path that does not resolve is returned as written, whole.
func SplitOutsideWritable(p string, writable func(dir string) bool, readlink func(string) (string, error)) (dir string, rest []string, in bool) {
	rest = strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for links := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		if writable(cur) {
			return cur, append([]string{name}, rest...), true
		}
		next := filepath.Join(cur, name)
		t, err := readlink(next)
		if err != nil {
			cur = next // not a symlink (or nothing there: the rest is as written)
			continue
		}
		if links++; links > 40 {
			return p, nil, false
		}
		if filepath.IsAbs(t) {
			cur = "/"
		}
		rest = append(strings.Split(strings.TrimPrefix(t, "/"), "/"), rest...)
	}
	return cur, nil, false
}
