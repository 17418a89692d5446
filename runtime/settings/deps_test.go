package settings

import (
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestDeps keeps settings platform-free: a policy is built the same way on
// every platform.
func TestDeps(t *testing.T) {
	testutil.Forbid(t, "github.com/moat-sandbox/moat/linux", "github.com/moat-sandbox/moat/darwin",
		"github.com/moat-sandbox/moat/bpf", "github.com/moat-sandbox/moat/netproxy", "golang.org/x/sys/unix")
}
