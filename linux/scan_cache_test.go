//go:build linux

package linux

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The scan cache round-trips, and a damaged or foreign file is no cache:
// every truncation and a flipped byte anywhere decode to "no cache" or to
// something (never a panic).
func TestScanCacheEncoding(t *testing.T) {
	dirs := map[string]scanDir{
		"/w":   {Stamp: stamp{Ino: 12, Ctime: 1700000000123456789}, Subdirs: []string{"a", "b c"}, Named: []string{".bashrc"}},
		"/w/a": {Stamp: stamp{Ino: 1 << 40, Ctime: -5}, GitDir: true, Bare: true},
		"/w/b c": {GitFile: true, Target: "/elsewhere/.git", Common: "/elsewhere/.git/common",
			FileStamp: stamp{Ino: 7, Ctime: 8}, CommonStamp: stamp{Ino: 9, Ctime: 10}},
	}
	b := encodeScanCache("/w", 3, dirs)
	got, ok := decodeScanCache(b, "/w", 3)
	if !ok || !reflect.DeepEqual(got, dirs) {
		t.Fatalf("round trip: ok=%v\n got %#v\nwant %#v", ok, got, dirs)
	}
	if _, ok := decodeScanCache(b, "/other", 3); ok {
		t.Error("a cache of another root was used")
	}
	if _, ok := decodeScanCache(b, "/w", 4); ok {
		t.Error("a cache of another depth was used")
	}
	for i := 0; i < len(b); i++ {
		if _, ok := decodeScanCache(b[:i], "/w", 3); ok {
			t.Fatalf("a cache truncated to %d of %d bytes was used", i, len(b))
		}
		c := append([]byte(nil), b...)
		c[i] ^= 0xff
		decodeScanCache(c, "/w", 3) // must not panic
	}
	if _, ok := decodeScanCache(append(b, 0), "/w", 3); ok {
		t.Error("a cache with trailing bytes was used")
	}
}

// A moatd client's plan caches are bounded in the daemon's state: they
// are root's files, outside the client's quota, one per writable root
// the client names, and stay when the tree goes. A tree renamed before
// each run left a new search cache each time (56 MB for 100,000
// directories with long names), filling root's disk (attack pass 57).
func TestClientCacheBounded(t *testing.T) {
	defer func(n int64) { clientCacheBytes = n }(clientCacheBytes)
	clientCacheBytes = 60_000
	work, state := t.TempDir(), t.TempDir()
	tree := filepath.Join(work, "t0")
	for i := 0; i < 40; i++ {
		if err := os.MkdirAll(filepath.Join(tree, fmt.Sprintf("%03d%s", i, strings.Repeat("x", 240))), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cache := clientCache(state, 4242, nil)
	var last string
	for i := 1; i <= 12; i++ {
		next := filepath.Join(work, fmt.Sprintf("t%d", i))
		if err := os.Rename(tree, next); err != nil {
			t.Fatal(err)
		}
		tree = next
		if _, err := scanCache(tree, 3, cache); err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", 3, tree)))
		last = filepath.Join(cache.dir, "scan-"+hex.EncodeToString(h[:12]))
	}
	es, err := os.ReadDir(cache.dir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, e := range es {
		fi, _ := e.Info()
		total += fi.Size()
	}
	if total > clientCacheBytes {
		t.Errorf("%d bytes of one client's caches in the daemon's state (%d files), over the %d allowed", total, len(es), clientCacheBytes)
	}
	if fi, err := os.Stat(last); err != nil || fi.Size() < 10_000 {
		t.Errorf("the newest cache is not kept: %v", err)
	}
	if filepath.Dir(cache.dir) != filepath.Join(state, "cache") || filepath.Base(cache.dir) != "uid-4242" {
		t.Errorf("the client's cache is %s, not under the state's cache/uid-4242", cache.dir)
	}
}

// TestScanCacheAcrossNewMandatoryNames: what a release found in a directory
// is not what a later release, which protects more names, must find there.
// The cache told the new release nothing of a name the old one did not
// look for, in every directory whose change time had not moved: after an
// upgrade that added .envrc, a sub/.envrc the old release had searched past
// stayed writable in the sandbox (the mount layer; the audit after the run
// quarantined it), until the directory changed (attack pass 87).
func TestScanCacheAcrossNewMandatoryNames(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", ".envrc"), []byte("export A=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := cacheIO{dir: t.TempDir()}
	// The old release: .envrc is not one of its names.
	delete(mandatoryName, ".envrc")
	restored := false
	restore := func() {
		if !restored {
			mandatoryName[".envrc"] = true
			restored = true
		}
	}
	defer restore()
	old, err := scanCache(root, 3, cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(old.named) != 0 {
		t.Fatalf("the old release found %v", old.named)
	}
	restore()
	got, err := scanCache(root, 3, cache)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "sub", ".envrc"); !reflect.DeepEqual(got.named, []string{want}) {
		t.Fatalf("after the upgrade the search found %v, want [%s]", got.named, want)
	}
	// The new release's own cache still serves it.
	again, err := scanCache(root, 3, cache)
	if err != nil || !reflect.DeepEqual(again.named, got.named) {
		t.Fatalf("warm: %v, %v", again.named, err)
	}
}
