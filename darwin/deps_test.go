package darwin

import (
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// darwin is an enforcer behind the runtime: it reads policies, never
// settings files, and imports neither the runtime above it, the other
// enforcer, nor the decision pipeline.
func TestDeps(t *testing.T) {
	forbidden := []string{"runtime/settings", "validators", "permissions", "linux", "bpf", "netproxy"}
	for _, goos := range []string{"", "darwin"} {
		for _, dep := range testutil.Deps(t, goos, ".") {
			p, ok := strings.CutPrefix(dep, "github.com/moat-sandbox/moat/")
			if !ok {
				continue
			}
			if p == "runtime" {
				t.Errorf("GOOS=%s: darwin depends on the runtime package above it", goos)
			}
			for _, f := range forbidden {
				if p == f || strings.HasPrefix(p, f+"/") {
					t.Errorf("GOOS=%s: darwin depends on %s", goos, dep)
				}
			}
		}
	}
}
