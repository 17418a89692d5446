package gitguard

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// One config of 800 KB hard-linked into 2,000 directories with a HEAD
// (each a repository to the walk: 17 MB of disk) was read and parsed
// 2,000 times by every audit of the tree, 47 s each, every later run in it
// paying (attack pass 58). A file read again with the same bytes is
// parsed once an audit: what the audit allocates is about the bytes it
// reads, not a parse of each.
func TestAuditHardLinkedConfigsParsedOnce(t *testing.T) {
	root := t.TempDir()
	var b strings.Builder
	b.WriteString("[core]\n")
	for b.Len() < 800<<10 {
		b.WriteString("\tbare = false ; padding padding\n")
	}
	cfg := filepath.Join(root, "cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const repos = 100
	for i := range repos {
		d := filepath.Join(root, fmt.Sprint(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(cfg, filepath.Join(d, "config")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rep, err := Audit(Options{Roots: []string{root}, Since: time.Now().Add(-time.Hour), QuarantineDir: t.TempDir()})
	runtime.ReadMemStats(&after)
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("audit: %v %+v", err, rep.Findings)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	read := uint64(repos * b.Len())
	t.Logf("allocated %d MiB, read %d MiB", alloc>>20, read>>20)
	if alloc > 3*read {
		t.Errorf("the audit of %d repositories sharing one config allocated %d MiB (read %d MiB): each parsed again", repos, alloc>>20, read>>20)
	}
}
