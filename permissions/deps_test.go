package permissions

import (
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestDeps keeps the package pure Go: no platform packages, no raw
// syscalls. A decision must be computed the same way on every platform.
func TestDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	testutil.Forbid(t, "github.com/moat-sandbox/moat/linux", "github.com/moat-sandbox/moat/darwin",
		"github.com/moat-sandbox/moat/bpf", "golang.org/x/sys/unix")
}
