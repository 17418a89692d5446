//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A write through a symlink is a write of what the link leads to, and the
// report must say so: `out.txt -> writable/file` in a read-only directory
// is written and not reported as refused, `evil -> read-only/file` in a
// writable directory is refused and reported by the file it would have
// written. The observer judged the link's own path: it reported a write
// that happened as denied, and said nothing of one the mount refused
// (found by an attack pass).
func TestViolationReportFollowsLastSymlink(t *testing.T) {
	f := newFixture(t)
	ro := filepath.Join(f.outside, "ro")
	must(t, os.MkdirAll(ro, 0o755))
	through := filepath.Join(ro, "out.txt")
	written := filepath.Join(f.work, "through-link.txt")
	must(t, os.Symlink(written, through))
	refused := filepath.Join(ro, "refused.txt")
	evil := filepath.Join(f.work, "evil")
	must(t, os.Symlink(refused, evil))

	r := f.exec(moatBin, "run", "--settings", f.settings, "-c", "echo x > "+through+"; echo y > "+evil+" || echo refused")
	if b, err := os.ReadFile(written); err != nil || string(b) != "x\n" {
		t.Fatalf("the write through %s must reach %s (writable): %q %v\n%s", through, written, b, err, r.out)
	}
	if _, err := os.Stat(refused); err == nil {
		t.Fatalf("ESCAPE: %s (read-only) written through %s:\n%s", refused, evil, r.out)
	}
	if !strings.Contains(r.out, "refused") {
		t.Errorf("the write through %s must fail:\n%s", evil, r.out)
	}
	if strings.Contains(r.out, "deny file-write "+through) || strings.Contains(r.out, "deny file-write "+written) {
		t.Errorf("a write that happened is reported as denied:\n%s", r.out)
	}
	if !strings.Contains(r.out, "deny file-write "+refused) {
		t.Errorf("the refused write must be reported by the file it would have written (%s):\n%s", refused, r.out)
	}
}
