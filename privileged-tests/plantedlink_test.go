//go:build linux

package privtests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A writable path that goes through a symlink a sandboxed command planted
// in a writable tree does not make where it leads writable: an earlier run
// made work/out -> outside, and the next one, given --write out (or an
// allowWrite naming it), wrote there (found by an attack pass).
func TestWriteThroughPlantedLink(t *testing.T) {
	f := newFixture(t)
	link := filepath.Join(f.work, "out")
	if r := f.exec(moatBin, "run", "--settings", f.settings, "-c", "ln -s "+f.outside+" "+link); r.code != 0 {
		t.Fatalf("planting the link: %d\n%s", r.code, r.out)
	}
	target := filepath.Join(f.outside, "planted-through-link")
	withRule := filepath.Join(f.root, "link-rule.json")
	b, _ := json.Marshal(map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{f.work, link}, "denyWrite": []string{}},
	})
	must(t, os.WriteFile(withRule, b, 0o644))
	for _, argv := range [][]string{
		{"run", "--settings", f.settings, "--write", link, "-c", "touch " + target},
		{"run", "--settings", withRule, "-c", "touch " + target},
	} {
		r := f.exec(moatBin, argv...)
		if _, err := os.Stat(target); err == nil {
			t.Fatalf("ESCAPE: %v wrote %s through the planted link:\n%s", argv, target, r.out)
		}
		if r.code != 125 || !strings.Contains(r.out, "symlink inside the writable tree") {
			t.Errorf("%v: exit %d, want 125 naming the link:\n%s", argv, r.code, r.out)
		}
	}
	// Without moat the same user writes there through the link.
	must(t, os.WriteFile(filepath.Join(link, "planted-through-link"), nil, 0o644))
}
