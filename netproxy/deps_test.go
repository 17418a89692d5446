package netproxy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps netproxy pure Go: no linux/, darwin/, bpf/ and no
// golang.org/x/sys/unix (the namespace and eBPF work is the launcher's).
func TestImports(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
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
