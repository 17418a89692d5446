//go:build linux

package linux

import (
	"reflect"
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
