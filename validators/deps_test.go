package validators

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the package pure Go and platform-free: it must not
// depend, even indirectly, on moat's platform packages or on x/sys/unix
// (tailscale's deptest pattern).
func TestDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not available")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/moat-sandbox/moat/validators").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/moat-sandbox/moat/linux",
		"github.com/moat-sandbox/moat/darwin",
		"github.com/moat-sandbox/moat/bpf",
		"golang.org/x/sys/unix",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("validators depends on %s", dep)
			}
		}
		if dep == "C" || dep == "runtime/cgo" {
			t.Errorf("validators depends on cgo (%s)", dep)
		}
	}
}
