//go:build linux

package linux

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

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
	// named are existing entries with a mandatory name (.vscode, .bashrc,
	// ...) found anywhere within the search depth.
	named []string
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
// depth directories below it (root is depth 0). The result is cached in
// cacheDir and reused while every directory the search read, and every
// pointer file it parsed, is unchanged (same inode and change time): a new
// entry in a directory changes that directory's ctime, which no program can
// set back. So a warm start costs one
// lstat per directory within the depth, not a walk of the tree.
func scanCache(root string, depth int, cacheDir string) (scanResult, error) {
	var file string
	if cacheDir != "" {
		h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", depth, root)))
		file = filepath.Join(cacheDir, "scan-"+hex.EncodeToString(h[:12]))
		if r, ok := readScanCache(file, root, depth); ok {
			return r, nil
		}
	}
	r, stamps, err := scan(root, depth)
	if err != nil {
		return scanResult{}, err
	}
	if file != "" {
		writeScanCache(file, root, depth, r, stamps) // a cache that cannot be written is only slower
	}
	return r, nil
}

// stamp identifies the state of a directory or pointer file.
type stamp struct {
	path  string
	ino   uint64
	mtime int64 // ns
}

func stampOf(p string) (stamp, bool) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return stamp{}, false
	}
	// The change time, not the modification time: a command can set a
	// directory's mtime back (touch -d), never its ctime.
	return stamp{path: p, ino: st.Ino, mtime: st.Ctim.Nano()}, true
}

func scan(root string, depth int) (scanResult, []stamp, error) {
	var r scanResult
	var stamps []stamp
	type item struct {
		dir string
		d   int
	}
	queue := []item{{root, 0}}
	visited := 0
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		st, ok := stampOf(it.dir)
		if !ok {
			continue
		}
		// Read the directory after taking its stamp: a change in between
		// makes the next start rescan, never trust a stale answer.
		es, err := os.ReadDir(it.dir)
		if err != nil {
			continue
		}
		stamps = append(stamps, st)
		visited++
		if visited > maxScanDirs {
			return r, nil, fmt.Errorf("the search for git repositories under %s read more than %d directories at depth ≤ %d; lower mandatoryDenySearchDepth or narrow allowWrite", root, maxScanDirs, depth)
		}
		has := map[string]os.DirEntry{}
		for _, e := range es {
			has[e.Name()] = e
		}
		if g, ok := has[".git"]; ok {
			p := filepath.Join(it.dir, ".git")
			r.workTrees = append(r.workTrees, it.dir)
			if g.IsDir() {
				r.gitDirs = append(r.gitDirs, p)
			} else if g.Type().IsRegular() {
				r.gitFiles = append(r.gitFiles, p)
				if s, ok := stampOf(p); ok {
					stamps = append(stamps, s)
				}
				if target, ok := readGitPointer(p); ok {
					r.gitDirs = append(r.gitDirs, target)
					if s, ok := stampOf(filepath.Join(target, "commondir")); ok {
						stamps = append(stamps, s)
					}
					if c, ok := readCommondir(target); ok {
						r.gitDirs = append(r.gitDirs, c)
					}
				}
			}
		}
		if isBareRepo(has) {
			r.gitDirs = append(r.gitDirs, it.dir)
		}
		for _, e := range es {
			name := e.Name()
			if mandatoryName[name] {
				r.named = append(r.named, filepath.Join(it.dir, name))
			}
			if it.d < depth && e.IsDir() && name != ".git" && name != "node_modules" {
				queue = append(queue, item{filepath.Join(it.dir, name), it.d + 1})
			}
		}
	}
	return r, stamps, nil
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
	f, err := os.Open(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, _ := f.Read(buf)
	line := string(buf[:n])
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
	c, _, err := canonical(target)
	if err != nil {
		return "", false
	}
	return c, true
}

func readCommondir(gitdir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(gitdir, "commondir"))
	if err != nil || len(b) > 4096 {
		return "", false
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" || strings.ContainsRune(s, 0) {
		return "", false
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(gitdir, s)
	}
	c, _, err := canonical(s)
	if err != nil {
		return "", false
	}
	return c, true
}

const scanCacheMagic = "moat-scan 2"

func readScanCache(file, root string, depth int) (scanResult, bool) {
	f, err := os.Open(file)
	if err != nil {
		return scanResult{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	if !sc.Scan() || sc.Text() != fmt.Sprintf("%s %d %s", scanCacheMagic, depth, root) {
		return scanResult{}, false
	}
	var r scanResult
	var stamps []stamp
	complete := false
	for sc.Scan() {
		line := sc.Text()
		if line == "end" {
			complete = true
			break
		}
		kind, rest, ok := strings.Cut(line, " ")
		if !ok {
			return scanResult{}, false
		}
		switch kind {
		case "s":
			f := strings.SplitN(rest, " ", 3)
			if len(f) != 3 {
				return scanResult{}, false
			}
			ino, e1 := strconv.ParseUint(f[0], 10, 64)
			mt, e2 := strconv.ParseInt(f[1], 10, 64)
			if e1 != nil || e2 != nil {
				return scanResult{}, false
			}
			stamps = append(stamps, stamp{path: f[2], ino: ino, mtime: mt})
		case "g":
			r.gitDirs = append(r.gitDirs, rest)
		case "f":
			r.gitFiles = append(r.gitFiles, rest)
		case "w":
			r.workTrees = append(r.workTrees, rest)
		case "n":
			r.named = append(r.named, rest)
		default:
			return scanResult{}, false
		}
	}
	if !complete || sc.Err() != nil {
		return scanResult{}, false
	}
	return r, stampsValid(stamps)
}

// stampsValid checks that every directory is as it was, a few goroutines
// at a time (one lstat each: the cost of a warm start grows with the
// directories within the search depth, and the syscalls dominate).
func stampsValid(stamps []stamp) bool {
	const workers = 4
	if len(stamps) < 64 {
		for _, st := range stamps {
			if now, ok := stampOf(st.path); !ok || now != st {
				return false
			}
		}
		return true
	}
	var bad atomic.Bool
	var wg sync.WaitGroup
	chunk := (len(stamps) + workers - 1) / workers
	for i := 0; i < len(stamps); i += chunk {
		part := stamps[i:min(i+chunk, len(stamps))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, st := range part {
				if bad.Load() {
					return
				}
				if now, ok := stampOf(st.path); !ok || now != st {
					bad.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	return !bad.Load()
}

func writeScanCache(file, root string, depth int, r scanResult, stamps []stamp) {
	// The format is one path per line: a name with a newline is not cached.
	for _, list := range [][]string{r.gitDirs, r.gitFiles, r.workTrees, r.named} {
		for _, p := range list {
			if strings.ContainsAny(p, "\n\r") {
				return
			}
		}
	}
	for _, s := range stamps {
		if strings.ContainsAny(s.path, "\n\r") {
			return
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %s\n", scanCacheMagic, depth, root)
	for _, s := range stamps {
		fmt.Fprintf(&b, "s %d %d %s\n", s.ino, s.mtime, s.path)
	}
	put := func(k string, ps []string) {
		sort.Strings(ps)
		for _, p := range ps {
			fmt.Fprintf(&b, "%s %s\n", k, p)
		}
	}
	put("g", r.gitDirs)
	put("f", r.gitFiles)
	put("w", r.workTrees)
	put("n", r.named)
	b.WriteString("end\n")
	tmp := fmt.Sprintf("%s.%d.tmp", file, os.Getpid())
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
	}
}

var syscallENOTDIR error = unix.ENOTDIR
