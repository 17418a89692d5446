package bpf

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports keeps bpf and bpf/cgroup apart from the launcher, the proxy
// and the policy packages: linux/ calls them, never the reverse.
func TestImports(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	for _, goos := range []string{"linux", "darwin"} {
		cmd := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".", "./cgroup")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (GOOS=%s): %v", goos, err)
		}
		for _, p := range strings.Fields(string(out)) {
			switch {
			case p == "github.com/moat-sandbox/moat/bpf",
				p == "github.com/moat-sandbox/moat/bpf/cgroup",
				strings.HasPrefix(p, "github.com/cilium/ebpf"),
				p == "golang.org/x/sys/unix":
			default:
				t.Errorf("GOOS=%s: bpf depends on %s", goos, p)
			}
		}
	}
}
