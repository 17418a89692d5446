package bpf

import (
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestImports keeps bpf and bpf/cgroup apart from the launcher, the proxy
// and the policy packages: linux/ calls them, never the reverse.
func TestImports(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		for _, p := range testutil.Deps(t, goos, ".", "./cgroup") {
			switch {
			case p == "github.com/moat-sandbox/moat/bpf",
				p == "github.com/moat-sandbox/moat/bpf/cgroup",
				strings.HasPrefix(p, "github.com/cilium/ebpf"),
				p == "github.com/moat-sandbox/moat/internal/sys", // EINTR retry, a leaf
				p == "golang.org/x/sys/unix":
			default:
				t.Errorf("GOOS=%s: bpf depends on %s", goos, p)
			}
		}
	}
}
