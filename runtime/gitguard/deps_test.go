package gitguard

import (
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// gitguard is used by every platform's runner: the standard library, and
// golang.org/x/sys/unix for the descriptor-relative calls its changes are
// made with (act.go), and internal/sys (EINTR retries, a leaf of the
// same two), only.
func TestDependencies(t *testing.T) {
	for _, dep := range testutil.Deps(t, "", ".") {
		switch dep {
		case "github.com/moat-sandbox/moat/runtime/gitguard", "golang.org/x/sys/unix", "github.com/moat-sandbox/moat/internal/sys":
		default:
			t.Errorf("depends on %s", dep)
		}
	}
}
