package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// PackageDir is the source directory of the calling test's package, for a
// test that reads the module's sources. It does not depend on the working
// directory: CI runs test binaries built here from another directory, as
// another user. Where the sources cannot be read (a binary taken to
// another machine, a clone the user cannot read) the test is skipped: what
// it checks was checked where the sources are (go test in the module).
func PackageDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(1)
	if !ok || !filepath.IsAbs(file) {
		t.Skip("the test's source path is unknown (built with -trimpath?)")
	}
	dir := filepath.Dir(file)
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return dir
		}
		if d == filepath.Dir(d) {
			t.Skipf("the module's sources are not readable here (%s)", dir)
		}
	}
}
