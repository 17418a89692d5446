package validators

import (
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestDependencies keeps the package pure Go and platform-free: it must not
// depend, even indirectly, on moat's platform packages or on x/sys/unix
// (tailscale's deptest pattern).
func TestDependencies(t *testing.T) {
	testutil.Forbid(t, "github.com/moat-sandbox/moat/linux", "github.com/moat-sandbox/moat/darwin",
		"github.com/moat-sandbox/moat/bpf", "golang.org/x/sys/unix")
}
