package gitguard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// encoded is c as save writes it.
func encoded(c *walkCache) []byte {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	c.encode(w)
	w.Flush()
	return b.Bytes()
}

// Under moatd the record of the walk is the client's own file, which it
// can write as it likes. A subdirectory name with a "/" (through a symlink
// in the tree, or ".." out of it), or a directory that is not a clean path
// under the record's root, had the walk look at any path of the host, and
// root's lstat ahead of the walk answer for it: a forged record is no
// record at all.
func TestCacheRejectsSlashedNames(t *testing.T) {
	const root = "/var/tmp/proj"
	good := func() *walkCache {
		c := newCache(root)
		c.put(root, dirInfo{id: fileID{dev: 1, ino: 2, ctime: 3}, subdirs: []string{"sub", ".git", "...", "a b"}})
		c.put(root+"/sub", dirInfo{id: fileID{dev: 1, ino: 4, ctime: 5}, subdirs: []string{"x"}})
		c.redirects[root+"/sub/.git"] = "/elsewhere\x00id"
		return c
	}
	// Control: what the walk records reads back.
	if c, err := decodeCache(bufio.NewReader(bytes.NewReader(encoded(good())))); err != nil || len(c.dirs) != 2 || c.root != root {
		t.Fatalf("a record the walk makes does not read back: %v %+v", err, c)
	}
	slash := newCache("/")
	slash.put("/", dirInfo{subdirs: []string{"home"}})
	slash.put("/home", dirInfo{})
	if c, err := decodeCache(bufio.NewReader(bytes.NewReader(encoded(slash)))); err != nil || len(c.dirs) != 2 {
		t.Fatalf("a record of / does not read back: %v %+v", err, c)
	}

	for _, tc := range []struct {
		name  string
		forge func(c *walkCache)
	}{
		{"a name through a symlink", func(c *walkCache) {
			d := c.dirs[root+"/sub"]
			d.subdirs = []string{"link/present"}
			c.dirs[root+"/sub"] = d
		}},
		{"a name out of the tree", func(c *walkCache) { d := c.dirs[root]; d.subdirs = []string{"../../../root/x"}; c.dirs[root] = d }},
		{"a name ..", func(c *walkCache) { d := c.dirs[root]; d.subdirs = []string{".."}; c.dirs[root] = d }},
		{"a name .", func(c *walkCache) { d := c.dirs[root]; d.subdirs = []string{"."}; c.dirs[root] = d }},
		{"an empty name", func(c *walkCache) { d := c.dirs[root]; d.subdirs = []string{""}; c.dirs[root] = d }},
		{"a name with a NUL", func(c *walkCache) { d := c.dirs[root]; d.subdirs = []string{"a\x00b"}; c.dirs[root] = d }},
		{"a directory out of the tree", func(c *walkCache) { c.dirs[root+"/../../root/x"] = dirInfo{} }},
		{"a directory beside the root", func(c *walkCache) { c.dirs[root+"x"] = dirInfo{} }},
		{"a directory not clean", func(c *walkCache) { c.dirs[root+"/sub/"] = dirInfo{} }},
		{"a directory with a dot", func(c *walkCache) { c.dirs[root+"/./sub"] = dirInfo{} }},
		{"a root not clean", func(c *walkCache) { c.root = root + "/sub/.." }},
		{"a relative root", func(c *walkCache) { c.root = "var/tmp/proj" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.forge(c)
			b := encoded(c)
			if got, err := decodeCache(bufio.NewReader(bytes.NewReader(b))); err == nil {
				t.Errorf("a forged record decodes (root %q, %d directories)", got.root, len(got.dirs))
			}
			// Read as the audit reads it: its own file, then the files of
			// the trees around it.
			dir := t.TempDir()
			os.WriteFile(cacheFile(dir, root), b, 0o600)
			os.WriteFile(filepath.Join(dir, "gitguard-0123456789abcdef01234567"), b, 0o600)
			if got := loadCache(dir, root); got != nil {
				t.Errorf("a forged record is loaded (root %q, %d directories)", got.root, len(got.dirs))
			}
		})
	}
}

// The directories a record knows are looked at ahead of the walk only
// through Options.Parallel, on threads with the audit's credentials: a
// goroutine of prestat's own ran on any thread of the process, with root's
// credentials under moatd (whose audit runs on one thread with the
// client's). Without the hook nothing is looked at ahead; a share the hook
// could not run is left to the walk; an audit finds the same either way.
func TestPrestatOnlyThroughTheHook(t *testing.T) {
	dir := t.TempDir()
	w := filepath.Join(dir, "w")
	c := newCache(w)
	for i := 0; i < 300; i++ {
		p := filepath.Join(w, fmt.Sprintf("d%03d", i))
		if i%2 == 0 {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		c.put(p, dirInfo{})
	}
	if s := prestat(c, nil); s != nil {
		t.Fatalf("without the hook, prestat looked at %d paths on goroutines of its own", len(s.m))
	}
	// A hook that runs nothing: nothing was looked at (every lstat ahead
	// of the walk is made by a share the hook ran).
	if s := prestat(c, func(func()) error { return errors.New("no thread") }); s != nil && len(s.m) != 0 {
		t.Fatalf("a hook that ran nothing, and yet %d paths were looked at", len(s.m))
	}
	var calls atomic.Int32
	s := prestat(c, func(fn func()) error { calls.Add(1); fn(); return nil })
	if s == nil || len(s.m) != 300 || calls.Load() == 0 {
		t.Fatalf("through the hook (%d calls): %+v", calls.Load(), s)
	}
	for p, r := range s.m {
		if _, err := os.Lstat(p); (err == nil) != (r.err == nil) {
			t.Errorf("%s: prestat says %v, lstat %v", p, r.err, err)
		}
	}
	var n atomic.Int32
	s = prestat(c, func(fn func()) error {
		if n.Add(1) == 1 {
			return errors.New("no thread")
		}
		fn()
		return nil
	})
	if s == nil || len(s.m) != 300-75 {
		t.Fatalf("one share of four refused: %+v (want %d entries)", s, 300-75)
	}

	// A warm audit goes through the hook, and finds what it finds without.
	for i := 0; i < 300; i++ {
		os.MkdirAll(filepath.Join(w, fmt.Sprintf("e%03d", i)), 0o755)
	}
	opts := Options{Roots: []string{w}, Home: filepath.Join(dir, "home"), Since: time.Now(),
		QuarantineDir: filepath.Join(dir, "q"), CacheDir: filepath.Join(dir, "cache")}
	if _, err := Audit(opts); err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	opts.Parallel = func(fn func()) error { calls.Add(1); fn(); return nil }
	with, err := Audit(opts)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() == 0 {
		t.Error("a warm audit of 451 directories made no call of Options.Parallel")
	}
	opts.Parallel = nil
	without, err := Audit(opts)
	if err != nil {
		t.Fatal(err)
	}
	if with.Dirs != without.Dirs || with.Read != without.Read || len(with.Findings)+len(without.Findings) != 0 || len(with.Incomplete)+len(without.Incomplete) != 0 {
		t.Errorf("with the hook: %+v; without: %+v", with, without)
	}
}
