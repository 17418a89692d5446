//go:build linux || darwin

package gitguard

import (
	"os"
	"strings"
	"testing"
	"time"
)

// As the user, the audit makes each directory it reaches searchable
// (chmodDir), and looked at each through its resolved parent: the square
// of its depth, the cube of a chain's. A chain 1,900 directories deep
// made one run's audit take 110 s, rootless (attack pass 58). A directory
// that has the bits costs one lstat.
func TestAuditDeepChainRootless(t *testing.T) {
	root, err := os.MkdirTemp("/var/tmp", "gitguard-deep-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	d := root + strings.Repeat("/a", 900)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := Audit(Options{Roots: []string{root}, Since: time.Now().Add(-time.Hour), QuarantineDir: t.TempDir(), CacheDir: t.TempDir()})
	took := time.Since(start)
	if err != nil || len(rep.Incomplete) != 0 {
		t.Fatalf("audit: %v %v", err, rep.Incomplete)
	}
	t.Logf("a chain of 900 directories: %v", took)
	if took > 3*time.Second {
		t.Errorf("the audit of a chain of 900 directories took %v", took)
	}
}
