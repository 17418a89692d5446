package gitguard

import (
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// gitguard is used by every platform's runner: the standard library, and
// golang.org/x/sys/unix for the descriptor-relative calls its changes are
// made with (act.go), only.
func TestDependencies(t *testing.T) {
	for _, dep := range testutil.Deps(t, "", ".") {
		if dep != "github.com/moat-sandbox/moat/runtime/gitguard" && dep != "golang.org/x/sys/unix" {
			t.Errorf("depends on %s", dep)
		}
	}
}
