//go:build linux

package linux

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// access is what the sandbox lets the command do at a path.
type access uint8

const (
	accRO   access = iota // visible, read-only (the default for the host)
	accRW                 // visible and writable
	accMask               // hidden: an empty read-only directory, or an unreadable file
)

func (a access) String() string {
	switch a {
	case accRW:
		return "read-write"
	case accMask:
		return "hidden"
	}
	return "read-only"
}

// rule is one resolved filesystem rule.
type rule struct {
	path   string // canonical (symlinks resolved)
	source string // where it came from, for messages
}

// view is the resolved filesystem policy: canonical paths and the question
// "what may the command do at path P, and which rule says so". The
// supervisor's violation observer asks it too.
type view struct {
	allowRead, denyRead   []rule
	allowWrite, denyWrite []rule
	// protect are paths that are never writable (mandatory protections,
	// moat's own files), with the reason.
	protect []rule
	// privateTmp is true when /tmp is the run's private tmpfs.
	privateTmp bool
	// exposed are host paths shown read-only inside hidden regions (the
	// working directory under the private /tmp, say).
	exposed []rule
	// unmasked are the denyRead paths that did not exist when the plan
	// was made: nothing is mounted there (gatherNodes).
	unmasked map[string]bool
}

// privateTmpReason marks a path that is writable because it is in the
// run's own /tmp (the host's file at that path is not visible).
const privateTmpReason = "private /tmp"

// within reports whether p is base or below it.
func within(p, base string) bool {
	if base == "/" {
		return true
	}
	// (base+"/" would allocate on every call: the plan asks this of
	// every rule for every path it surveys.)
	return p == base || len(p) > len(base) && p[len(base)] == '/' && p[:len(base)] == base
}

// closest returns the longest rule that contains p, if any.
func closest(p string, rs []rule) (rule, bool) {
	var best rule
	found := false
	for _, r := range rs {
		if within(p, r.path) && (!found || len(r.path) > len(best.path)) {
			best, found = r, true
		}
	}
	return best, found
}

// readable reports whether p is readable: the most specific of denyRead and
// allowRead decides, allowRead winning a tie.
func (v *view) readable(p string) (bool, string) {
	d, dok := closest(p, v.denyRead)
	if !dok {
		return true, ""
	}
	a, aok := closest(p, v.allowRead)
	if aok && len(a.path) >= len(d.path) {
		return true, a.source
	}
	return false, d.source
}

// writable reports whether p is writable, and if not, why.
func (v *view) writable(p string) (bool, string) {
	if ok, why := v.readable(p); !ok {
		return false, "hidden by " + why
	}
	return v.writableSeen(p)
}

// writableMade is writable as a write the command makes is answered: a
// path hidden only by denyRead paths that did not exist when the sandbox
// started (nothing is mounted there) is written as the other rules say, so
// a file the command makes at such a path in a writable tree is its own,
// written and not refused (the violation report said it was).
func (v *view) writableMade(p string) (bool, string) {
	ok, why := v.writable(p)
	if ok || !strings.HasPrefix(why, "hidden by ") || len(v.unmasked) == 0 {
		return ok, why
	}
	for _, d := range v.denyRead {
		if within(p, d.path) && !v.unmasked[d.path] {
			return ok, why
		}
	}
	return v.writableSeen(p)
}

// writableSeen is writable for a path the command can see.
func (v *view) writableSeen(p string) (bool, string) {
	if r, ok := closest(p, v.protect); ok {
		return false, r.source
	}
	if r, ok := closest(p, v.denyWrite); ok {
		return false, "denyWrite " + r.source
	}
	if v.privateTmp && within(p, "/tmp") {
		if _, ok := closest(p, v.allowWrite); !ok {
			if r, ok := closest(p, v.exposed); ok {
				return false, "read-only: " + r.source + " is the host's, shown read-only in the private /tmp"
			}
			return true, privateTmpReason
		}
	}
	if _, ok := closest(p, v.allowWrite); ok {
		return true, ""
	}
	return false, "not in allowWrite"
}

// access is the final state at p.
func (v *view) access(p string) access {
	if ok, _ := v.readable(p); !ok {
		return accMask
	}
	if ok, _ := v.writable(p); ok {
		return accRW
	}
	return accRO
}

// resolver resolves symlinks, remembering directories for the length of
// one launch (the parents moat resolves most, home and the working
// directory, are looked up once). A nil resolver remembers nothing.
type resolver struct {
	dirs sync.Map // string -> canonDir
	// dirBytes is what dirs holds, at most maxResolverBytes: past it a
	// directory is resolved and not remembered. The violation observer
	// resolves the parent of every path the command opens for writing
	// with the launch's resolver, which lives as long as the sandbox (a
	// whole session): remembering each, a command that opened distinct
	// paths through symlinks to "." (s/L3/L7/L1/.../f, 4 KB each) grew
	// its supervisor by 20 MB a second, and moatd, root's one process for
	// every user's sandboxes, was killed by the OOM killer with another
	// user's running command (attack pass 58; TestResolverMemoryBounded).
	dirBytes atomic.Int64

	// stats, while set (between beginStats and endStats), remembers lstat
	// results: the first two planning steps look up the same names many
	// times over (each reserved name in the working directory three
	// times, the home's components for every rule under it), and moat
	// changes nothing on disk until the mount step, which runs after
	// endStats.
	mu    sync.Mutex
	stats map[string]lstatResult
	canon map[string]canonResult
}

type canonResult struct {
	path   string
	exists bool
	err    error
}

type lstatResult struct {
	kind  byte // 'd', 'f', 0 (nothing, or an error)
	link  bool
	multi bool // a regular file with more than one hard link
	err   error
}

func newResolver() *resolver { return &resolver{} }

// beginStats makes rs remember lstat results until endStats: only while
// nothing on disk changes under moat's own hand.
func (rs *resolver) beginStats() {
	if rs != nil {
		rs.mu.Lock()
		rs.stats = map[string]lstatResult{}
		rs.canon = map[string]canonResult{}
		rs.mu.Unlock()
	}
}

func (rs *resolver) endStats() {
	if rs != nil {
		rs.mu.Lock()
		rs.stats, rs.canon = nil, nil
		rs.mu.Unlock()
	}
}

// lstat is os.Lstat of p, remembered between beginStats and endStats.
func (rs *resolver) lstat(p string) lstatResult {
	if rs != nil {
		rs.mu.Lock()
		r, ok := rs.stats[p]
		rs.mu.Unlock()
		if ok {
			return r
		}
	}
	// unix.Lstat, not os.Lstat: no FileInfo to allocate for each of the
	// ~200 paths a plan looks at. The error is the bare errno (errors.Is
	// with fs.ErrNotExist holds for it).
	var r lstatResult
	var st unix.Stat_t
	switch err := sys.Retry(func() error { return unix.Lstat(p, &st) }); {
	case err != nil:
		r.err = err
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		r.kind = 'd'
	default:
		r.kind = 'f'
		r.link = st.Mode&unix.S_IFMT == unix.S_IFLNK
		r.multi = st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1
	}
	if rs != nil {
		rs.mu.Lock()
		if rs.stats != nil {
			rs.stats[p] = r
		}
		rs.mu.Unlock()
	}
	return r
}

// planning reports whether rs is inside a planning pass (beginStats):
// only then does canonical take the shortcuts through remembered parents.
// The violation observer, later, walks every component again (a command
// may have swapped a directory for a symlink meanwhile).
func (rs *resolver) planning() bool {
	if rs == nil {
		return false
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.stats != nil
}

// kind is lstatKind, remembered between beginStats and endStats.
func (rs *resolver) kind(p string) byte { return rs.lstat(p).kind }

// canonical resolves symlinks in p (no memory).
func canonical(p string) (string, bool, error) { return (*resolver)(nil).canonical(p) }

// canonical resolves symlinks in p. For a path that does not exist, the
// longest existing prefix is resolved and the rest appended, so a rule for
// a file that appears later still names the right place.
func (rs *resolver) canonical(p string) (string, bool, error) {
	p = filepath.Clean(p)
	if rs == nil {
		return rs.resolve(p)
	}
	rs.mu.Lock()
	r, ok := rs.canon[p]
	rs.mu.Unlock()
	if ok {
		return r.path, r.exists, r.err
	}
	r.path, r.exists, r.err = rs.resolve(p)
	rs.mu.Lock()
	if rs.canon != nil {
		rs.canon[p] = r
	}
	rs.mu.Unlock()
	return r.path, r.exists, r.err
}

// resolve is canonical without its memory of this planning pass.
func (rs *resolver) resolve(p string) (string, bool, error) {
	// Most rule paths (the default secrets, say) do not exist: one lstat
	// tells, and a path that does not exist needs no mount.
	st := rs.lstat(p)
	planning := rs.planning()
	if errors.Is(st.err, fs.ErrNotExist) && planning {
		// The missing name under its parent's canonical form (lstat
		// follows every component but the last, so p cannot be found
		// through any of them either).
		dir, base := filepath.Split(p)
		if dir == "" || dir == p {
			return p, false, nil
		}
		dir = filepath.Clean(dir)
		if rs.lstat(dir).err == nil {
			if d, err := rs.evalDir(dir); err == nil {
				return filepath.Join(d, base), false, nil
			}
		} else if d, _, err := rs.canonical(dir); err == nil {
			return filepath.Join(d, base), false, nil
		}
	}
	if errors.Is(st.err, fs.ErrNotExist) && !rs.mayHideSymlink(p) {
		return p, false, nil
	}
	// An absolute path that exists and is not a symlink itself is its
	// parent's canonical form (remembered by rs) and its name: no walk of
	// every component again.
	if st.err == nil && !st.link && planning && filepath.IsAbs(p) && p != "/" {
		dir, base := filepath.Split(p)
		if d, err := rs.evalDir(filepath.Clean(dir)); err == nil {
			return filepath.Join(d, base), true, nil
		}
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, true, nil
	} else if errors.Is(err, fs.ErrPermission) {
		// This user cannot look there, so neither can the sandbox (the
		// same user, with no capabilities): keep the path as written.
		return p, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscallENOTDIR) {
		return "", false, err
	}
	dir, base := filepath.Split(p)
	if dir == "" || dir == p {
		return p, false, nil
	}
	d, _, err := rs.canonical(filepath.Clean(dir))
	if err != nil {
		return "", false, err
	}
	return filepath.Join(d, base), false, nil
}

// expand resolves a rule to canonical paths, expanding globs against the
// disk. A glob that matches nothing yields nothing; a literal path that
// does not exist yet is kept (it may appear).
func (rs *resolver) expand(r policy.PathRule, limit *globBudget, cache cacheIO) ([]rule, error) {
	paths := []string{r.Path}
	if r.Glob {
		var err error
		if paths, err = globCached(r.Path, limit, cache); err != nil {
			return nil, err
		}
		// A name such as "a[1]" is also a glob ([1] matches "1"): the
		// literal file, if it exists, is what the rule names too.
		if _, err := os.Lstat(r.Path); err == nil && !slices.Contains(paths, r.Path) {
			paths = append(paths, r.Path)
		}
	}
	out := make([]rule, 0, len(paths))
	for _, p := range paths {
		c, _, err := rs.canonical(p)
		if err != nil {
			return nil, err
		}
		out = append(out, rule{path: c, source: r.Source})
	}
	return out, nil
}

func (rs *resolver) expandAll(rules []policy.PathRule, limit *globBudget, cache cacheIO) ([]rule, error) {
	var out []rule
	for _, r := range rules {
		e, err := rs.expand(r, limit, cache)
		if err != nil {
			return nil, err
		}
		out = append(out, e...)
	}
	return out, nil
}

// dedupe sorts rules by path and drops duplicates.
func dedupe(rs []rule) []rule {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].path < rs[j].path })
	out := rs[:0]
	for i, r := range rs {
		if i > 0 && r.path == rs[i-1].path {
			continue
		}
		out = append(out, r)
	}
	return out
}

// lstatKind says what is at p: 'd' directory, 'f' anything else, 0 nothing.
func lstatKind(p string) byte { return (*resolver)(nil).kind(p) }

// mayHideSymlink reports whether a missing path's parent might be reached
// through a symlink, so that its canonical form differs from it.
func (rs *resolver) mayHideSymlink(p string) bool {
	d := filepath.Dir(p)
	r, err := rs.evalDir(d)
	return err != nil || r != d
}

// evalDir resolves a directory's symlinks, remembered by a resolver.
func (rs *resolver) evalDir(d string) (string, error) {
	if rs != nil {
		if v, ok := rs.dirs.Load(d); ok {
			return v.(canonDir).path, nil
		}
	}
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		return "", err
	}
	rs.remember(d, r)
	return r, nil
}

// canonDir is a remembered directory: its canonical path, and the
// identity of the directory there when it was resolved.
type canonDir struct {
	path     string
	dev, ino uint64
}

// dirID is the identity of the directory p leads to (stat: every symlink
// followed).
func dirID(p string) (dev, ino uint64, ok bool) {
	var st unix.Stat_t
	if sys.Retry(func() error { return unix.Stat(p, &st) }) != nil {
		return 0, 0, false
	}
	return uint64(st.Dev), st.Ino, true
}

// remember keeps d's canonical form r, within maxResolverBytes.
func (rs *resolver) remember(d, r string) {
	if rs == nil {
		return
	}
	dev, ino, ok := dirID(r)
	if !ok {
		return
	}
	n := int64(len(d) + len(r) + resolverEntryCost)
	if rs.dirBytes.Add(n) > maxResolverBytes {
		rs.dirBytes.Add(-n)
	} else if _, loaded := rs.dirs.LoadOrStore(d, canonDir{path: r, dev: dev, ino: ino}); loaded {
		rs.dirBytes.Add(-n)
	}
}

// evalDirNow is evalDir while the sandbox runs (the violation observer):
// a remembered directory is taken only while d still leads to it (one
// stat). The resolver lives as long as the sandbox, and a command that
// swapped a directory it had written in for a symlink had its refused
// writes through it reported by the directory's old path, allowed, and so
// not at all, in every later command of a session too (attack pass 58;
// TestObserverResolvesSwappedDirectory). The plan's own comment said the
// observer walks every component again; the memory kept it from that.
func (rs *resolver) evalDirNow(d string) (string, error) {
	if r, ok := rs.stillThere(d); ok {
		return r, nil
	}
	r, err := kernelEval(d)
	if err != nil {
		return "", err
	}
	rs.remember(d, r)
	return r, nil
}

// stillThere is d's remembered canonical form while d still leads to the
// directory it was resolved to (one stat); one that leads elsewhere now
// is forgotten.
func (rs *resolver) stillThere(d string) (string, bool) {
	if rs == nil {
		return "", false
	}
	v, ok := rs.dirs.Load(d)
	if !ok {
		return "", false
	}
	c := v.(canonDir)
	if dev, ino, ok := dirID(d); ok && dev == c.dev && ino == c.ino {
		return c.path, true
	}
	if rs.dirs.CompareAndDelete(d, v) {
		rs.dirBytes.Add(-int64(len(d) + len(c.path) + resolverEntryCost))
	}
	return "", false
}

// kernelEval is filepath.EvalSymlinks of the directory d, by the kernel:
// d opened (O_PATH) and the path of what was opened read back. One walk of
// d, at most 40 symlinks as for the command's own call, where
// EvalSymlinks lstats every prefix of d (each a walk from the root: the
// square of d's depth) and follows up to 255 symlinks. The observer
// resolves the parent of each path the command writes, outside the
// command's cgroup and CPU limit: 3,000 opens of a file 1,900 directories
// deep cost the command 2 s of CPU and its supervisor 523 s, 250 times as
// much (attack pass 58; TestObserverResolutionLinear).
func kernelEval(d string) (string, error) {
	fd, err := sys.RetryValue(func() (int, error) {
		return unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return "", &os.PathError{Op: "open", Path: d, Err: err}
	}
	defer unix.Close(fd)
	r, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(r) || strings.HasSuffix(r, " (deleted)") {
		return "", &os.PathError{Op: "resolve", Path: d, Err: unix.ENOENT}
	}
	return r, nil
}

// evalDirAs is evalDir with fn's credentials (the violation observer's
// look, for moatd's client) where they matter: when borrow is set, d is
// resolved here first, and again in look only when a symlink on the way
// made the answer another path. A directory without a symlink, or one
// that cannot be resolved, gives the path as it is written whoever
// resolves it; only a symlink's target is what another user may not read.
func (rs *resolver) evalDirAs(d string, look func(func()), borrow bool) (string, error) {
	if !borrow {
		return rs.evalDirNow(d)
	}
	if r, ok := rs.stillThere(d); ok {
		return r, nil
	}
	r, err := kernelEval(d)
	if err != nil {
		return "", err
	}
	if r == d {
		rs.remember(d, r)
		return r, nil
	}
	r, err = d, errors.New("not resolved")
	look(func() { r, err = rs.evalDirNow(d) })
	return r, err
}

// maxResolverBytes bounds what a resolver remembers of directories (their
// paths and canonical forms): a plan remembers a few hundred, some tens of
// kilobytes.
const maxResolverBytes = 4 << 20

// resolverEntryCost is what a remembered directory costs beyond its two
// strings (sync.Map's entry, the interface values, the strings' headers).
const resolverEntryCost = 128
