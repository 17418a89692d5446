package shell

import (
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestDeps keeps shell free of the platform packages: it reaches the
// sandbox only through the Runner interface.
func TestDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	testutil.Forbid(t, "github.com/moat-sandbox/moat/linux", "github.com/moat-sandbox/moat/darwin",
		"github.com/moat-sandbox/moat/bpf", "golang.org/x/sys/unix")
}

// TestNoHostRunner: no package of shell/ but the tests may import hostrun,
// the unsandboxed test runner, so nothing can run a command unsandboxed by
// surprise.
func TestNoHostRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, goos := range []string{"", "darwin"} {
		for _, dep := range testutil.Deps(t, goos, nonTestPackages...) {
			if strings.HasSuffix(dep, "/shell/internal/hostrun") {
				t.Errorf("GOOS=%s: a non-test package of shell/ imports %s", goos, dep)
			}
		}
	}
}

// nonTestPackages are the packages of shell/ a library user can import.
var nonTestPackages = []string{".", "./jsonl", "./sandbox", "./api", "./api/client", "./mcp"}
