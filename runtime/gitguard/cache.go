package gitguard

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

const (
	flagDotGit   uint8 = 1 << iota // the directory holds a .git entry
	flagHEAD                       // ... a HEAD that is not a directory
	flagClaude                     // ... a .claude entry
	flagTool                       // ... a name a tool reads code from (toolNames), or an SQLite journal (sqliteSideFile)
	flagBlocking                   // ... a file git reads by name (worktreeGitFiles) that is a named pipe or device
	flagHg                         // ... a .hg entry (a Mercurial repository)
	flagDarcs                      // ... a _darcs entry (a darcs repository)
	flagSvn                        // ... a .svn entry (a Subversion working copy)
)

// dirInfo is what the audit keeps of one directory.
type dirInfo struct {
	id      fileID
	flags   uint8
	subdirs []string
	// git is the identity (device and inode) of the .git entry, if any:
	// a .git directory put in place of another is a new repository.
	git fileID
}

func readDirInfo(dir string, id fileID) (dirInfo, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return dirInfo{}, err
	}
	d := dirInfo{id: id}
	for _, e := range es {
		// Names compare without case: on a case-folding directory (ext4's
		// +F) git finds ".GIT" when it looks for ".git".
		name := e.Name()
		switch {
		case strings.EqualFold(name, ".git"):
			d.flags |= flagDotGit
			if g, err := lstatID(filepath.Join(dir, name)); err == nil {
				d.git = fileID{dev: g.dev, ino: g.ino}
			}
		case strings.EqualFold(name, "HEAD"):
			// Anything but a directory: git may read it, or never read
			// it and still take the directory as a repository through
			// another one's commondir (a socket HEAD). moat's own
			// placeholders are told apart by the walk (ownPlaceholder).
			if !e.IsDir() {
				d.flags |= flagHEAD
			}
		case strings.EqualFold(name, ".claude"):
			d.flags |= flagClaude
		case strings.EqualFold(name, ".hg"):
			d.flags |= flagHg
		case name == "_darcs":
			d.flags |= flagDarcs
		case name == ".svn":
			d.flags |= flagSvn
		case toolName(name) || sqliteSideFile(name):
			// A tool file, or an SQLite journal (judged by sideFile;
			// since moat-gitguard 6, so a record of 5 is read afresh).
			d.flags |= flagTool
		case blocksOpen(e.Type()) && slices.ContainsFunc(worktreeGitFiles, func(n string) bool { return strings.EqualFold(n, name) }):
			d.flags |= flagBlocking
		}
		if e.IsDir() {
			d.subdirs = append(d.subdirs, name)
		}
	}
	return d, nil
}

// walkCache remembers, per directory, its identity and change time and
// what the audit needs of its entries: a directory whose inode did not
// change since (same change time) has the same entries, so the next audit
// reads it no more. It also remembers where pointer files led.
type walkCache struct {
	root      string
	dirs      map[string]dirInfo
	redirects map[string]string
}

func newCache(root string) *walkCache {
	return &walkCache{root: root, dirs: map[string]dirInfo{}, redirects: map[string]string{}}
}

func (c *walkCache) put(dir string, d dirInfo) { c.dirs[dir] = d }

// lookup returns the cached entries of dir if its inode is unchanged.
func (c *walkCache) lookup(dir string, id fileID) (dirInfo, bool) {
	if c == nil {
		return dirInfo{}, false
	}
	d, ok := c.dirs[dir]
	if !ok || d.id.dev != id.dev || d.id.ino != id.ino || d.id.ctime != id.ctime || id.ctime == maxTime {
		return dirInfo{}, false
	}
	d.id = id
	return d, true
}

// old returns what the previous audit saw of dir, changed or not.
func (c *walkCache) old(dir string) (dirInfo, bool) {
	if c == nil {
		return dirInfo{}, false
	}
	d, ok := c.dirs[dir]
	return d, ok
}

func (c *walkCache) redirect(file string) string {
	if c == nil {
		return ""
	}
	return c.redirects[file]
}

const cacheMagic = "moat-gitguard 6\n"

func cacheFile(dir, root string) string {
	h := sha256.Sum256([]byte(root))
	return filepath.Join(dir, "gitguard-"+hex.EncodeToString(h[:12]))
}

// loadCache reads the cache of root; any damage means no cache. Without
// one of its own, root gets what the caches of the trees around it and
// inside it saw (audits of runs that could write another tree than this
// run): what an earlier run left is then judged against what was there,
// whichever tree that run was given.
func loadCache(dir, root string) *walkCache {
	if dir == "" {
		return nil
	}
	if c, err := readCache(cacheFile(dir, root)); err == nil && c.root == root {
		return c
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	type found struct {
		c     *walkCache
		mtime int64
	}
	var all []found
	seen := map[[2]uint64]bool{} // each file once (hard links)
	var total int64
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), "gitguard-") || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || seen[[2]uint64{uint64(st.Dev), st.Ino}] || total+fi.Size() > maxRecordBytes {
			continue // together no more than one record may be
		}
		seen[[2]uint64{uint64(st.Dev), st.Ino}] = true
		total += fi.Size()
		readCacheHook(e.Name())
		c, err := readCache(filepath.Join(dir, e.Name()))
		if err != nil || !(within(root, c.root) || within(c.root, root)) {
			continue
		}
		var mt int64
		if fi, err := e.Info(); err == nil {
			mt = fi.ModTime().UnixNano()
		}
		all = append(all, found{c, mt})
	}
	if len(all) == 0 {
		return nil
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mtime < all[j].mtime })
	merged := newCache(root)
	for _, f := range all { // the newest last, so that it wins
		for p, d := range f.c.dirs {
			if within(p, root) {
				merged.dirs[p] = d
			}
		}
		for k, v := range f.c.redirects {
			if within(k, root) {
				merged.redirects[k] = v
			}
		}
	}
	return merged
}

// readCacheHook is called before loadCache's search decodes a record
// (tests count them).
var readCacheHook = func(name string) {}

// within reports whether p is root or lies under it.
func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// readCache reads a record of the walk: a regular file only, never through
// a symlink, and opened without waiting. The record is the user's file
// (moatd audits a client's trees with the client's own record, in the
// client's ~/.local/state/moat/cache, as the client): a FIFO the user put
// there held the daemon's thread in open(2) for good, and the daemon with
// it: the audits of killed runs, at its start, before it serves anyone;
// its shutdown, which waits for every session's last audit (found by
// attack pass 60; TestCacheFIFONotOpened).
func readCache(file string) (*walkCache, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxRecordBytes {
		return nil, errCache
	}
	return decodeCache(bufio.NewReaderSize(io.LimitReader(f, maxRecordBytes), 64<<10))
}

// maxRecordBytes bounds a record of the walk, and all the records one
// audit reads: a tree of the audit's own bound (DefaultMaxDirs) makes one
// of about 13 MB. Under moatd a record is the client's file, decoded by
// the daemon: a client's 12.9 MB record of a million made-up directories
// and three hard links to it took the daemon from 21 MB to 2.2 GB for one
// audit (found by attack pass 60; TestCacheRecordBounded).
var maxRecordBytes int64 = 32 << 20

func (c *walkCache) save(dir string) {
	if dir == "" || c == nil {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	file := cacheFile(dir, c.root)
	tmp := fmt.Sprintf("%s.%d.%d.tmp", file, os.Getpid(), tmpSeq.Add(1)) // runs of one supervisor write at once
	// A new file, never one found at the name (a symlink planted there
	// led root's record into a root-only file: found by an attack pass).
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return
	}
	w := bufio.NewWriterSize(f, 64<<10)
	c.encode(w)
	if w.Flush() != nil || f.Close() != nil {
		os.Remove(tmp)
		return
	}
	if os.Rename(tmp, file) != nil {
		os.Remove(tmp)
	}
}

func (c *walkCache) encode(w *bufio.Writer) {
	var buf [binary.MaxVarintLen64]byte
	u := func(v uint64) { w.Write(buf[:binary.PutUvarint(buf[:], v)]) }
	s := func(v string) { u(uint64(len(v))); w.WriteString(v) }
	w.WriteString(cacheMagic)
	s(c.root)
	u(uint64(len(c.dirs)))
	for p, d := range c.dirs {
		s(strings.TrimPrefix(p, c.root))
		u(d.id.dev)
		u(d.id.ino)
		u(uint64(d.id.ctime))
		w.WriteByte(d.flags)
		u(d.git.dev)
		u(d.git.ino)
		u(uint64(len(d.subdirs)))
		for _, n := range d.subdirs {
			s(n)
		}
	}
	u(uint64(len(c.redirects)))
	for k, v := range c.redirects {
		s(k)
		s(v)
	}
}

var errCache = errors.New("bad cache")

// cleanAbs reports a clean absolute path.
func cleanAbs(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// entryName reports the name of one directory entry.
func entryName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\x00")
}

// decodeCache reads a record of the walk. Under moatd the record is the
// client's own file (in its state directory), which it can write as it
// likes: the walk joins a directory's path and its subdirectories' names
// and goes by what the record says of the result, so a name with a "/"
// (through a symlink, or ".." out of the tree) made the walk, and root's
// lstat ahead of it, look at any path of the host (found by an attack
// pass). decodeCache takes only what readDirInfo and the walk make: a
// clean absolute root, directories under it by their clean paths, and
// names of single entries; anything else is no record at all. (Where
// pointer files led is only compared with where they lead now, never
// looked at.)
func decodeCache(r *bufio.Reader) (*walkCache, error) {
	magic := make([]byte, len(cacheMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != cacheMagic {
		return nil, errCache
	}
	u := func() (uint64, error) { return binary.ReadUvarint(r) }
	s := func() (string, error) {
		n, err := u()
		if err != nil || n > 1<<16 {
			return "", errCache
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return string(b), err
	}
	root, err := s()
	if err != nil || !cleanAbs(root) {
		return nil, errCache
	}
	c := newCache(root)
	n, err := u()
	if err != nil || n > 10_000_000 {
		return nil, errCache
	}
	for i := uint64(0); i < n; i++ {
		rel, err := s()
		if err != nil {
			return nil, errCache
		}
		var d dirInfo
		var v [3]uint64
		for j := range v {
			if v[j], err = u(); err != nil {
				return nil, errCache
			}
		}
		d.id = fileID{dev: v[0], ino: v[1], ctime: int64(v[2])}
		if d.flags, err = r.ReadByte(); err != nil {
			return nil, errCache
		}
		if d.git.dev, err = u(); err != nil {
			return nil, errCache
		}
		if d.git.ino, err = u(); err != nil {
			return nil, errCache
		}
		ns, err := u()
		if err != nil || ns > 1<<20 {
			return nil, errCache
		}
		for k := uint64(0); k < ns; k++ {
			name, err := s()
			if err != nil || !entryName(name) {
				return nil, errCache
			}
			d.subdirs = append(d.subdirs, name)
		}
		dir := root + rel
		if !cleanAbs(dir) || !within(dir, root) {
			return nil, errCache
		}
		c.dirs[dir] = d
	}
	nr, err := u()
	if err != nil || nr > 1<<20 {
		return nil, errCache
	}
	for i := uint64(0); i < nr; i++ {
		k, err1 := s()
		v, err2 := s()
		if err1 != nil || err2 != nil {
			return nil, errCache
		}
		c.redirects[k] = v
	}
	return c, nil
}

// stats holds lstat results taken ahead of the walk.
type stats struct {
	m map[string]statResult
}

type statResult struct {
	fi  os.FileInfo
	err error
}

func (s *stats) lstat(p string) (os.FileInfo, error) {
	if s != nil {
		if r, ok := s.m[p]; ok {
			return r.fi, r.err
		}
	}
	return os.Lstat(p)
}

// prestat lstats every directory the cache knows, a few at a time, each
// share through par (Options.Parallel: on a thread with the audit's own
// credentials). Without par nothing is looked at ahead of the walk: a
// goroutine of its own could lstat with other credentials than the
// audit's. A share par could not run is left to the walk.
func prestat(c *walkCache, par func(func()) error) *stats {
	if c == nil || len(c.dirs) < 256 || par == nil {
		return nil
	}
	if autofsMounts() != nil {
		// A directory the record knows may be a symlink now, to
		// /net/DATA: an lstat of a path below it would ask the host's
		// automounter for DATA (attack pass 56, autofs.go,
		// TestAuditAutofsNotAsked). The walk lstats each directory it
		// reaches, below one it found a directory in this very walk.
		return nil
	}
	paths := make([]string, 0, len(c.dirs))
	for p := range c.dirs {
		paths = append(paths, p)
	}
	res := make([]statResult, len(paths))
	done := make([]bool, len(paths))
	const workers = 4
	var wg sync.WaitGroup
	chunk := (len(paths) + workers - 1) / workers
	for i := 0; i < len(paths); i += chunk {
		lo, hi := i, min(i+chunk, len(paths))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = par(func() {
				for j := lo; j < hi; j++ {
					fi, err := os.Lstat(paths[j])
					res[j] = statResult{fi, err}
					done[j] = true
				}
			})
		}()
	}
	wg.Wait()
	s := &stats{m: make(map[string]statResult, len(paths))}
	for i, p := range paths {
		if done[i] {
			s.m[p] = res[i]
		}
	}
	return s
}

// tmpSeq numbers this process's temporary cache files.
var tmpSeq atomic.Uint64
