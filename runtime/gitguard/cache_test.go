package gitguard

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
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
