package permissions

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the package pure Go: no platform packages, no raw
// syscalls. A decision must be computed the same way on every platform.
func TestDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/moat-sandbox/moat/permissions").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/moat-sandbox/moat/"
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{mod + "linux", mod + "darwin", mod + "bpf", "golang.org/x/sys/unix"} {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("permissions depends on %s", dep)
			}
		}
	}
}
