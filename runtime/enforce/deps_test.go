package enforce

import (
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// The contract between the runtime and the enforcers is types only.
func TestDeps(t *testing.T) {
	for _, dep := range testutil.Deps(t, "", ".") {
		switch dep {
		case "github.com/moat-sandbox/moat/runtime/enforce", "github.com/moat-sandbox/moat/runtime/policy", "golang.org/x/net/idna", "golang.org/x/text/secure/bidirule", "golang.org/x/text/transform", "golang.org/x/text/unicode/bidi", "golang.org/x/text/unicode/norm":
		default:
			t.Errorf("depends on %s", dep)
		}
	}
}
