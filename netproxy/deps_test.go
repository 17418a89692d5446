package netproxy

import (
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestImports keeps netproxy pure Go: no linux/, darwin/, bpf/ and no
// golang.org/x/sys/unix (the namespace and eBPF work is the launcher's).
func TestImports(t *testing.T) {
	for _, p := range testutil.Deps(t, "", ".") {
		switch {
		case p == "github.com/moat-sandbox/moat/netproxy",
			p == "github.com/moat-sandbox/moat/runtime/policy",
			p == "golang.org/x/net/idna",
			strings.HasPrefix(p, "golang.org/x/text/"):
		default:
			t.Errorf("netproxy depends on %s", p)
		}
	}
}
