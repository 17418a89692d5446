//go:build linux

package linux

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
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
	"github.com/moat-sandbox/moat/runtime/gitguard"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// scanResult is what the bounded search under a writable root found.
type scanResult struct {
	// gitDirs are git directories: <worktree>/.git directories, bare
	// repositories, and the targets of .git files (gitdir: pointers) and
	// of their commondir files.
	gitDirs []string
	// gitFiles are .git files (worktree and submodule pointers): rewriting
	// one would point git at a directory the command made.
	gitFiles []string
	// workTrees are directories holding a .git entry.
	workTrees []string
	// hgDirs are Mercurial repositories' .hg directories: their
	// configuration and share pointer (policy.HgProtected) are kept
	// read-only.
	hgDirs []string
	// darcsDirs are darcs repositories' _darcs directories: their
	// policy.DarcsProtected files are kept read-only.
	darcsDirs []string
	// svnDirs are Subversion working copies' .svn directories: their
	// policy.SvnProtected files are kept read-only.
	svnDirs []string
	// svnRepos are Subversion repositories: their policy.SvnRepoProtected
	// entries are kept read-only.
	svnRepos []string
	// named are existing entries with a mandatory name (.vscode, .bashrc,
	// ...) found anywhere within the search depth.
	named []string
	// unlisted are directories within the search depth that the search
	// could not list or look into (a mode such as 0311, 0000 or 0444):
	// what they hold is unknown, so they are protected whole. Skipped, a
	// .vscode or a repository in one was left writable, and the command,
	// which owns the directory, put its mode back and wrote there (attack
	// pass 82, TestUnlistableDirectoryProtectedWhole).
	unlisted []string
}

// maxScanDirs bounds one search; a larger tree within the depth is refused.
const maxScanDirs = 100_000

var mandatoryName = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range policy.MandatoryFiles {
		m[n] = true
	}
	for _, n := range policy.MandatoryDirs {
		m[n] = true
	}
	return m
}()

// scanCache finds git repositories and mandatory names under root, down to
// depth directories below it (root is depth 0). What it finds in each
// directory is cached in cacheDir, with the directory's inode and change
// time (and those of the pointer files it parsed there): a new entry in a
// directory changes that directory's ctime, which no program can set back.
// So a warm start costs one lstat per directory within the depth, and a
// directory that changed (a placeholder made and removed in the working
// directory by the previous run, say) is read again alone.
func scanCache(root string, depth int, cache cacheIO) (scanResult, error) {
	var file string
	old := map[string]scanDir{}
	if cache.dir != "" {
		h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", depth, root)))
		file = filepath.Join(cache.dir, "scan-"+hex.EncodeToString(h[:12]))
		old = readScanCache(cache, file, root, depth)
	}
	r, dirs, changed, err := scan(root, depth, old, cache.rootDo == nil)
	if err != nil {
		return scanResult{}, err
	}
	if file != "" && changed {
		cache.write(file, encodeScanCache(root, depth, dirs)) // a cache that cannot be written is only slower
	}
	return r, nil
}

// cacheIO is where the plan's caches (the search's, the globs') are read
// and written. For a client's sandbox (moatd) the survey runs on a thread
// with the client's credentials, while the cache is root's, one per uid
// (what one user's search found is never another's): rootDo runs the
// file work on a goroutine of the daemon's own. nil: the caller's thread.
type cacheIO struct {
	dir    string
	rootDo func(func())
	// max, if not 0, bounds the bytes of dir's files: after a write the
	// oldest others go until they fit (clientCache).
	max int64
}

// clientCacheBytes bounds each moatd client's plan caches in the
// daemon's state: they are root's files, outside every quota, and a file
// per writable root the client names. A client that renamed a tree of
// 100,000 directories with long names and ran moat again in it left a
// new 56 MB search cache each time, filling root's disk (found by attack
// pass 57; TestClientCacheBounded).
var clientCacheBytes int64 = 64 << 20

// clientCache is the plan's cache for moatd's client uid: root's, one
// directory per uid under state's, bounded, its file work done by rootDo.
func clientCache(state string, uid int, rootDo func(func())) cacheIO {
	return cacheIO{dir: filepath.Join(state, "cache", "uid-"+strconv.Itoa(uid)), rootDo: rootDo, max: clientCacheBytes}
}

func (c cacheIO) do(fn func()) {
	if c.rootDo == nil {
		fn()
		return
	}
	c.rootDo(fn)
}

// read reads a cache file.
func (c cacheIO) read(file string) (b []byte, err error) {
	c.do(func() { b, err = os.ReadFile(file) })
	return b, err
}

// write replaces a cache file (renamed into place: runs of one supervisor
// write the same cache at once); a cache that cannot be written is only
// slower.
func (c cacheIO) write(file string, data []byte) {
	c.do(func() {
		if c.max > 0 && int64(len(data)) > c.max {
			return
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return
		}
		tmp := tmpName(file)
		if os.WriteFile(tmp, data, 0o600) != nil || os.Rename(tmp, file) != nil {
			os.Remove(tmp)
			return
		}
		if c.max > 0 {
			trimCache(filepath.Dir(file), file, c.max)
		}
	})
}

// trimCache removes dir's oldest files but keep until they hold at most
// max bytes.
func trimCache(dir, keep string, max int64) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type entry struct {
		path  string
		size  int64
		mtime int64
	}
	var files []entry
	var total int64
	for _, e := range es {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		files = append(files, entry{filepath.Join(dir, e.Name()), fi.Size(), fi.ModTime().UnixNano()})
		total += fi.Size()
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mtime < files[j].mtime })
	for _, f := range files {
		if total <= max {
			return
		}
		if f.path != keep && os.Remove(f.path) == nil {
			total -= f.size
		}
	}
}

// stamp identifies the state of a directory or pointer file.
type stamp struct {
	Ino   uint64
	Ctime int64 // ns
}

func stampOf(p string) (stamp, bool) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return stamp{}, false
	}
	// The change time, not the modification time: a command can set a
	// directory's mtime back (touch -d), never its ctime.
	return stamp{Ino: st.Ino, Ctime: st.Ctim.Nano()}, true
}

// scanDir is what the search found in one directory.
type scanDir struct {
	Stamp   stamp
	Subdirs []string // to descend into (not .git, not node_modules)
	GitDir  bool     // a .git directory
	Bare    bool     // the directory is a bare repository
	Named   []string // mandatory names present
	HgDir   bool     // a .hg directory (a Mercurial repository)
	Darcs   bool     // a _darcs directory (a darcs repository)
	Svn     bool     // a .svn directory (a Subversion working copy)
	SvnRepo bool     // the directory is a Subversion repository
	// A .git file, where it points and that target's commondir, with the
	// stamps of the files read: they can change without the directory.
	GitFile                bool
	Target, Common         string
	FileStamp, CommonStamp stamp
}

// readDir reads one directory for the search.
func readDir(dir string, st stamp) (scanDir, error) {
	// Only a directory, not through a symlink: what was renamed over one
	// since it was listed (a FIFO, a symlink) is refused, not opened
	// (moatd searches a client's tree as root).
	es, err := sys.ReadDir(dir, true)
	if err != nil {
		return scanDir{}, err
	}
	// Listed is not enough: a directory that cannot be searched (mode
	// 0444) lists its names, but nothing in it can be looked at (its
	// subdirectories, its .git), and its owner can make it searchable
	// again inside the sandbox.
	if _, err := os.Lstat(dir + "/."); err != nil {
		return scanDir{}, err
	}
	d := scanDir{Stamp: st}
	has := map[string]os.DirEntry{}
	for _, e := range es {
		has[e.Name()] = e
	}
	if g, ok := has[".git"]; ok {
		p := filepath.Join(dir, ".git")
		if g.IsDir() {
			d.GitDir = true
		} else if g.Type().IsRegular() || g.Type()&os.ModeSymlink != 0 {
			// A .git symlink is a pointer too: git follows it to a git
			// directory (or to a .git file). Taken for neither, the
			// repository it led to, deeper than the search or in a
			// node_modules, had no protection during the run (attack
			// pass 82, TestDotGitSymlinkProtected).
			read := readGitPointer
			if !g.Type().IsRegular() {
				read = readGitLink
			}
			if target, ok := read(p); ok || g.Type().IsRegular() {
				d.GitFile = true
				d.FileStamp, _ = stampOf(p)
				if ok {
					d.Target = target
					d.CommonStamp, _ = stampOf(filepath.Join(target, "commondir"))
					if c, ok := readCommondir(target); ok {
						d.Common = c
					}
				}
			}
		}
	}
	d.Bare = isBareRepo(has)
	if h, ok := has[".hg"]; ok && h.IsDir() {
		d.HgDir = true
	}
	if h, ok := has["_darcs"]; ok && h.IsDir() {
		d.Darcs = true
	}
	if h, ok := has[".svn"]; ok && h.IsDir() {
		d.Svn = true
	}
	d.SvnRepo = isSvnRepo(has)
	for _, e := range es {
		name := e.Name()
		if mandatoryName[name] || fossilRepoName(name, e) {
			d.Named = append(d.Named, name)
		}
		if e.IsDir() && name != ".git" && name != "node_modules" {
			d.Subdirs = append(d.Subdirs, name)
		}
	}
	return d, nil
}

// fresh reports whether a cached directory is still what it was.
func (d scanDir) fresh(dir string, now stamp) bool {
	if d.Stamp != now {
		return false
	}
	if d.GitFile {
		if s, _ := stampOf(filepath.Join(dir, ".git")); s != d.FileStamp {
			return false
		}
		if d.Target != "" {
			if s, _ := stampOf(filepath.Join(d.Target, "commondir")); s != d.CommonStamp {
				return false
			}
		}
	}
	return true
}

// prestamp takes the stamps of the cached directories a few at a time (the
// lstat calls are what a warm search costs); a directory that is gone has a
// zero stamp.
func prestamp(old map[string]scanDir) map[string]stamp {
	if len(old) < 256 {
		return nil
	}
	paths := make([]string, 0, len(old))
	for p := range old {
		paths = append(paths, p)
	}
	sts := make([]stamp, len(paths))
	const workers = 4
	var wg sync.WaitGroup
	chunk := (len(paths) + workers - 1) / workers
	for i := 0; i < len(paths); i += chunk {
		lo, hi := i, min(i+chunk, len(paths))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := lo; j < hi; j++ {
				sts[j], _ = stampOf(paths[j])
			}
		}()
	}
	wg.Wait()
	m := make(map[string]stamp, len(paths))
	for i, p := range paths {
		m[p] = sts[i]
	}
	return m
}

// flags are the findings the cache keeps as one number's bits, in order
// (a new one goes last: the cache's magic changes with the layout).
func (d *scanDir) flags() [7]*bool {
	return [7]*bool{&d.GitDir, &d.Bare, &d.GitFile, &d.HgDir, &d.Darcs, &d.Svn, &d.SvnRepo}
}

// sameFindings compares what two reads of a directory found (not their
// stamps).
func (d scanDir) sameFindings(e scanDir) bool {
	return slices.Equal(d.Subdirs, e.Subdirs) && d.GitDir == e.GitDir && d.Bare == e.Bare && d.HgDir == e.HgDir && d.Darcs == e.Darcs && d.Svn == e.Svn && d.SvnRepo == e.SvnRepo &&
		slices.Equal(d.Named, e.Named) && d.GitFile == e.GitFile && d.Target == e.Target && d.Common == e.Common
}

func scan(root string, depth int, old map[string]scanDir, parallel bool) (scanResult, map[string]scanDir, bool, error) {
	var r scanResult
	dirs := map[string]scanDir{}
	changed := false
	type item struct {
		dir string
		d   int
	}
	queue := []item{{root, 0}}
	var pre map[string]stamp
	if parallel && !gitguard.Automounter() {
		// Not for a client's sandbox: the look-ahead runs on goroutines,
		// which would look with root's credentials, not the client's.
		// Nor where the host has an autofs mount: a directory the cache
		// knows may be a symlink to /net/DATA now, and an lstat below it
		// would ask the host's automounter for DATA (attack pass 56,
		// TestPlanAutofsNotAsked); the search stamps each directory
		// below one it found a directory.
		pre = prestamp(old)
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		st, ok := pre[it.dir]
		if !ok {
			st, ok = stampOf(it.dir)
		}
		if !ok || st == (stamp{}) {
			continue
		}
		d, ok := old[it.dir]
		if !ok || !d.fresh(it.dir, st) {
			prev := d
			var err error
			if d, err = readDir(it.dir, st); err != nil {
				// Still a directory, but not one the search can read
				// (its permissions, an I/O error): fail closed, the
				// plan keeps it read-only whole. Gone, or swapped for
				// something else since its parent was read: nothing
				// to protect.
				if fi, lerr := os.Lstat(it.dir); lerr == nil && fi.IsDir() {
					r.unlisted = append(r.unlisted, it.dir)
				}
				continue
			}
			// Only a change of what was found makes the cache worth
			// writing again: the working directory's ctime moves with
			// every run's placeholders, its entries do not.
			if !ok || !prev.sameFindings(d) {
				changed = true
			}
		}
		dirs[it.dir] = d
		if len(dirs) > maxScanDirs {
			return r, nil, false, fmt.Errorf("the search for git repositories under %s read more than %d directories at depth ≤ %d; lower mandatoryDenySearchDepth or narrow allowWrite", root, maxScanDirs, depth)
		}
		if d.GitDir || d.GitFile {
			r.workTrees = append(r.workTrees, it.dir)
		}
		if d.GitDir {
			r.gitDirs = append(r.gitDirs, filepath.Join(it.dir, ".git"))
		}
		if d.GitFile {
			r.gitFiles = append(r.gitFiles, filepath.Join(it.dir, ".git"))
			if d.Target != "" {
				r.gitDirs = append(r.gitDirs, d.Target)
			}
			if d.Common != "" {
				r.gitDirs = append(r.gitDirs, d.Common)
			}
		}
		if d.Bare {
			r.gitDirs = append(r.gitDirs, it.dir)
		}
		if d.HgDir {
			r.hgDirs = append(r.hgDirs, filepath.Join(it.dir, ".hg"))
		}
		if d.Darcs {
			r.darcsDirs = append(r.darcsDirs, filepath.Join(it.dir, "_darcs"))
		}
		if d.Svn {
			r.svnDirs = append(r.svnDirs, filepath.Join(it.dir, ".svn"))
		}
		if d.SvnRepo {
			r.svnRepos = append(r.svnRepos, it.dir)
		}
		for _, n := range d.Named {
			r.named = append(r.named, filepath.Join(it.dir, n))
		}
		if it.d < depth {
			for _, s := range d.Subdirs {
				queue = append(queue, item{filepath.Join(it.dir, s), it.d + 1})
			}
		}
	}
	if len(dirs) != len(old) {
		changed = true
	}
	return r, dirs, changed, nil
}

// isBareRepo mirrors git's test for a git directory: HEAD, objects/ and refs/.
func isBareRepo(has map[string]os.DirEntry) bool {
	h, ok1 := has["HEAD"]
	o, ok2 := has["objects"]
	f, ok3 := has["refs"]
	return ok1 && ok2 && ok3 && !h.IsDir() && o.IsDir() && f.IsDir()
}

// readGitPointer parses a .git file ("gitdir: <path>") as git does: the
// first line, surrounding whitespace trimmed, relative to the file's
// directory. Anything odd (no prefix, NUL, too large) yields nothing.
func readGitPointer(p string) (string, bool) {
	if gitguard.AutofsOnWay(p, true) {
		return "", false // a .git symlink to /net/DATA (see below)
	}
	// Only a regular file is read (moatd plans as root, in a client's
	// tree: a FIFO there must not block it, a device must not be opened).
	b, err := sys.ReadRegular(p, 4096, false)
	if err != nil {
		return "", false
	}
	line := string(b)
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	line = strings.TrimPrefix(line, "\ufeff")
	target, ok := strings.CutPrefix(line, "gitdir:")
	target = strings.TrimSpace(target)
	if !ok || target == "" || strings.ContainsRune(target, 0) {
		return "", false
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(p), target)
	}
	if gitguard.AutofsOnWay(target, true) {
		// Below an autofs mount nothing covers: a lookup would ask the
		// host's automounter for a name the command chose (gitdir:
		// /net/DATA.attacker.tld/x; attack pass 56,
		// TestPlanAutofsNotAsked). Nothing there is a repository.
		return "", false
	}
	c, _, err := canonical(target)
	if err != nil {
		return "", false
	}
	return c, true
}

// readGitLink reads a .git symlink as git does: what it leads to is the
// git directory, or a .git file whose pointer (relative to the symlink's
// directory, as git reads it) names one. A symlink that leads nowhere, or
// to anything else, yields nothing: git takes it for no repository.
func readGitLink(p string) (string, bool) {
	if gitguard.AutofsOnWay(p, true) {
		return "", false // as readGitPointer
	}
	c, exists, err := canonical(p)
	if err != nil || !exists {
		return "", false
	}
	var st unix.Stat_t
	if err := unix.Lstat(c, &st); err != nil {
		return "", false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return c, true
	case unix.S_IFREG:
		return readGitPointer(p)
	}
	return "", false
}

func readCommondir(gitdir string) (string, bool) {
	if gitguard.AutofsOnWay(filepath.Join(gitdir, "commondir"), true) {
		return "", false // as readGitPointer
	}
	b, err := sys.ReadRegular(filepath.Join(gitdir, "commondir"), 4096, false)
	if err != nil {
		return "", false
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" || strings.ContainsRune(s, 0) {
		return "", false
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(gitdir, s)
	}
	if gitguard.AutofsOnWay(s, true) {
		return "", false // as readGitPointer
	}
	c, _, err := canonical(s)
	if err != nil {
		return "", false
	}
	return c, true
}

// scanCacheMagic heads the cache file; a new layout gets a new magic.
const scanCacheMagic = "moat-scan 7\n"

// scanCacheHeader is the magic and a digest of the names the search looks
// for. A directory's entry holds what the search found there, not what it
// passed over: a release that protects a name more (pass 64 added
// .devcontainer.json, pass 66 .qwen) read an older release's entries and
// left that name writable in every directory that had not changed since
// (attack pass 87). The names are in the header, so such a cache is no
// cache; a change in how the search reads a directory still bumps the
// magic by hand.
func scanCacheHeader() []byte {
	names := make([]string, 0, len(mandatoryName))
	for n := range mandatoryName {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.Sum256([]byte(strings.Join(names, "\x00")))
	return fmt.Appendf(nil, "%snames %x\n", scanCacheMagic, h[:12])
}

// The cache is a flat binary file, decoded in half gob's time (0.65 against
// 1.3 ms for 3,000 directories), which a start in a large tree pays: the
// magic, then uvarint-prefixed strings and varints, in this order: root, depth, the number of directories, and
// for each its path and scanDir's fields.

// readScanCache reads what a previous search found; a damaged or foreign
// cache is no cache.
func readScanCache(cache cacheIO, file, root string, depth int) map[string]scanDir {
	b, err := cache.read(file)
	if err != nil {
		return nil
	}
	dirs, ok := decodeScanCache(b, root, depth)
	if !ok {
		return nil
	}
	return dirs
}

func decodeScanCache(b []byte, root string, depth int) (map[string]scanDir, bool) {
	r := cacheReader{b: b}
	head := scanCacheHeader()
	if !bytes.HasPrefix(b, head) {
		return nil, false
	}
	r.b = r.b[len(head):]
	if r.str() != root || r.int() != int64(depth) {
		return nil, false
	}
	n := r.int()
	if r.bad || n < 0 || n > int64(len(r.b)) {
		return nil, false
	}
	dirs := make(map[string]scanDir, n)
	for i := int64(0); i < n && !r.bad; i++ {
		p := r.str()
		var d scanDir
		d.Stamp = r.stamp()
		d.Subdirs = r.strs()
		fl := r.int()
		for i, f := range d.flags() {
			*f = fl&(1<<i) != 0
		}
		d.Named = r.strs()
		d.Target, d.Common = r.str(), r.str()
		d.FileStamp, d.CommonStamp = r.stamp(), r.stamp()
		dirs[p] = d
	}
	if r.bad || len(r.b) != 0 {
		return nil, false
	}
	return dirs, true
}

func encodeScanCache(root string, depth int, dirs map[string]scanDir) []byte {
	w := cacheWriter{b: scanCacheHeader()}
	w.str(root)
	w.int(int64(depth))
	w.int(int64(len(dirs)))
	for p, d := range dirs {
		w.str(p)
		w.stamp(d.Stamp)
		w.strs(d.Subdirs)
		var fl int64
		for i, f := range d.flags() {
			if *f {
				fl |= 1 << i
			}
		}
		w.int(fl)
		w.strs(d.Named)
		w.str(d.Target)
		w.str(d.Common)
		w.stamp(d.FileStamp)
		w.stamp(d.CommonStamp)
	}
	return w.b
}

type cacheWriter struct{ b []byte }

func (w *cacheWriter) int(v int64) { w.b = binary.AppendVarint(w.b, v) }
func (w *cacheWriter) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}
func (w *cacheWriter) strs(ss []string) {
	w.int(int64(len(ss)))
	for _, s := range ss {
		w.str(s)
	}
}
func (w *cacheWriter) stamp(s stamp) {
	w.b = binary.AppendUvarint(w.b, s.Ino)
	w.int(s.Ctime)
}

type cacheReader struct {
	b   []byte
	bad bool
}

func (r *cacheReader) int() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *cacheReader) str() string {
	l, n := binary.Uvarint(r.b)
	if n <= 0 || l > uint64(len(r.b)-n) {
		r.bad = true
		return ""
	}
	s := string(r.b[n : n+int(l)])
	r.b = r.b[n+int(l):]
	return s
}

func (r *cacheReader) strs() []string {
	k := r.int()
	if k < 0 || k > int64(len(r.b)) {
		r.bad = true
		return nil
	}
	if k == 0 {
		return nil
	}
	out := make([]string, 0, k)
	for i := int64(0); i < k && !r.bad; i++ {
		out = append(out, r.str())
	}
	return out
}

func (r *cacheReader) stamp() stamp {
	ino, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return stamp{}
	}
	r.b = r.b[n:]
	return stamp{Ino: ino, Ctime: r.int()}
}

var syscallENOTDIR error = unix.ENOTDIR

// tmpSeq numbers the temporary files of one process: runs of one
// supervisor (moat serve, moatd) write the same cache at once.
var tmpSeq atomic.Uint64

// tmpName is a temporary name beside file, unique to this process and call,
// for a write that is renamed into place.
func tmpName(file string) string {
	return fmt.Sprintf("%s.%d.%d.tmp", file, os.Getpid(), tmpSeq.Add(1))
}
