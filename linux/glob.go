//go:build linux

package linux

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	globpkg "github.com/moat-sandbox/moat/internal/glob"
	"github.com/moat-sandbox/moat/internal/sys"
)

// Glob expansion. Patterns in denyRead/allowRead/allowWrite/denyWrite
// expand segment by segment against the disk: a literal segment costs one
// stat, a segment with *, ? or [...] one directory read, and ** walks the
// directories below it: for allow rules at most globDepth levels deep (not
// into node_modules or .git: an allow that reaches less is the safe way to
// be wrong), for deny rules all the way down (a **/*.pem at depth 4 or in
// node_modules was readable: found by an attack pass), bounded by the
// budget of entries read, past which the policy is refused. Results are cached in the state directory with the
// inode and mtime of every directory the expansion read, so a warm start
// costs one lstat per such directory and never walks the tree: a new match
// means a new entry in some directory the pattern reads, which changes that
// directory's mtime.

// globBudget bounds one launch's expansion: directory entries read, and how
// many directories ** spans (the same bound as the search for git
// repositories: mandatoryDenySearchDepth).
type globBudget struct {
	entries int
	depth   int
	stamps  []pathStamp
}

// denyGlobDepth is ** without a depth limit (deny rules).
const denyGlobDepth = math.MaxInt32

// forDeny sets the budget for deny rules (** not limited in depth, and
// walking into node_modules and .git) until the returned function is
// called; the entries read count against the same budget.
func (b *globBudget) forDeny() (restore func()) {
	d := b.depth
	b.depth = denyGlobDepth
	return func() { b.depth = d }
}

// DefaultGlobBudget is the number of directory entries glob expansion may
// read per launch before moat refuses the policy.
const DefaultGlobBudget = 200_000

var errGlobBudget = fmt.Errorf("glob expansion read more than %d directory entries; narrow the pattern (a ** near the top of a large tree)", DefaultGlobBudget)

func (b *globBudget) readDir(dir string) ([]os.DirEntry, error) {
	st, ok := pathStampOf(dir)
	es, err := sys.ReadDir(dir, false) // a FIFO here is not opened
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return nil, nil // gone: matches nothing here
	case err != nil:
		// there but not to be listed (chmod 0311 by a command of an
		// earlier run): a deny rule hides it whole
		if ok {
			b.stamps = append(b.stamps, st)
		}
		return nil, globpkg.ErrUnreadable
	}
	if ok {
		b.stamps = append(b.stamps, st)
	}
	b.entries -= len(es)
	if b.entries < 0 {
		return nil, errGlobBudget
	}
	return es, nil
}

// globCached expands pattern, from the cache when nothing it read changed.
func globCached(pattern string, b *globBudget, cache cacheIO) ([]string, error) {
	file := ""
	if cache.dir != "" {
		h := sha256.Sum256(fmt.Appendf(nil, "glob\x00%d\x00%s", b.depth, pattern))
		file = filepath.Join(cache.dir, "glob-"+hex.EncodeToString(h[:12]))
		if out, ok := readGlobCache(cache, file, pattern, b.depth); ok {
			return out, nil
		}
	}
	b.stamps = b.stamps[:0]
	out, err := glob(pattern, b)
	if err != nil {
		return nil, err
	}
	if file != "" {
		writeGlobCache(cache, file, pattern, b.depth, out, b.stamps)
	}
	return out, nil
}

// glob expands an absolute pattern with *, ?, [...] (per path segment) and
// ** (up to b.depth directories; for deny rules all of them, node_modules
// and .git included): internal/glob, with this launch's budget and the
// cache's stamps.
func glob(pattern string, b *globBudget) ([]string, error) {
	w := globpkg.Walker{Depth: b.depth, AllDirs: b.depth == denyGlobDepth, Unreadable: b.depth == denyGlobDepth, ReadDir: b.readDir,
		Looked: func(dir string) {
			if st, ok := pathStampOf(dir); ok {
				b.stamps = append(b.stamps, st)
			}
		}}
	if b.depth == denyGlobDepth {
		w.Depth = -1
	}
	return w.Expand(pattern)
}

// hasMeta reports whether a segment holds glob syntax.
func hasMeta(s string) bool { return globpkg.HasMeta(s) }

const globCacheMagic = "moat-glob 2"

// pathStamp is a stamp with the path it was taken of.
type pathStamp struct {
	path string
	stamp
}

func pathStampOf(p string) (pathStamp, bool) {
	st, ok := stampOf(p)
	return pathStamp{p, st}, ok
}

func readGlobCache(cache cacheIO, file, pattern string, depth int) ([]string, bool) {
	data, err := cache.read(file)
	if err != nil {
		return nil, false
	}
	// The stamps are checked here, on the caller's thread (the client's,
	// for moatd), not where the file was read.
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	if !sc.Scan() || sc.Text() != fmt.Sprintf("%s %d %s", globCacheMagic, depth, pattern) {
		return nil, false
	}
	var out []string
	for sc.Scan() {
		line := sc.Text()
		if line == "end" {
			return out, sc.Err() == nil
		}
		kind, rest, ok := strings.Cut(line, " ")
		if !ok {
			return nil, false
		}
		switch kind {
		case "s":
			f := strings.SplitN(rest, " ", 3)
			if len(f) != 3 {
				return nil, false
			}
			ino, e1 := strconv.ParseUint(f[0], 10, 64)
			mt, e2 := strconv.ParseInt(f[1], 10, 64)
			now, ok := stampOf(f[2])
			if e1 != nil || e2 != nil || !ok || now.Ino != ino || now.Ctime != mt {
				return nil, false
			}
		case "m":
			// A literal segment that did not exist is not stamped (its
			// parent's mtime is, when the pattern read the parent); check
			// that every match still exists.
			if _, err := os.Lstat(rest); err != nil {
				return nil, false
			}
			out = append(out, rest)
		default:
			return nil, false
		}
	}
	return nil, false
}

func writeGlobCache(cache cacheIO, file, pattern string, depth int, matches []string, stamps []pathStamp) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %s\n", globCacheMagic, depth, pattern)
	for _, s := range stamps {
		if strings.ContainsAny(s.path, "\n\r") {
			return
		}
		fmt.Fprintf(&b, "s %d %d %s\n", s.Ino, s.Ctime, s.path)
	}
	for _, m := range matches {
		if strings.ContainsAny(m, "\n\r") {
			return
		}
		fmt.Fprintf(&b, "m %s\n", m)
	}
	b.WriteString("end\n")
	cache.write(file, []byte(b.String()))
}
