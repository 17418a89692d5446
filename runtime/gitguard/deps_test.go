package gitguard

import (
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// gitguard is used by every platform's runner: the standard library only.
func TestDependencies(t *testing.T) {
	for _, dep := range testutil.Deps(t, "", ".") {
		if dep != "github.com/moat-sandbox/moat/runtime/gitguard" {
			t.Errorf("depends on %s", dep)
		}
	}
}
