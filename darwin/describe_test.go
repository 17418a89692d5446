package darwin

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/policycases"
	"github.com/moat-sandbox/moat/runtime/enforce"
)

// TestDescribe: what macOS enforces and what it cannot, for moat policy
// and moat doctor, each with a reason.
func TestDescribe(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	e := policycases.NewEnv(root)
	c := policycases.Cases[0]
	if err := c.Build(e); err != nil {
		t.Fatal(err)
	}
	pol := c.Policy(e)
	d, err := Describe(pol)
	if err != nil {
		t.Fatal(err)
	}
	not := map[string]bool{}
	for _, m := range d.Mechanisms {
		if m.By == "" {
			t.Errorf("%s: says nothing of what enforces it", m.Part)
		}
		if !m.Enforced {
			not[m.Part] = true
		}
	}
	for _, part := range []string{"process isolation (pid namespace)", "network namespace", "private /tmp", "syscall filter (seccomp)"} {
		if !not[part] {
			t.Errorf("%q is not reported as unenforced", part)
		}
	}
	if len(d.Protected) == 0 {
		t.Error("no protection listed")
	}
	if !strings.Contains(strings.Join(d.Notes, "\n"), "never run on a Mac") {
		t.Error("the description does not say the runner never ran on a Mac")
	}
	names := map[enforce.Protection]bool{}
	for _, s := range Limits(pol) {
		if s.Reason == "" {
			t.Errorf("%s: no reason", s.Protection)
		}
		names[s.Protection] = true
	}
	for _, n := range []enforce.Protection{"namespaces", "process-isolation", "network", "private-tmp", "process-tree", "sandbox-exec"} {
		if !names[n] {
			t.Errorf("Limits does not name %q", n)
		}
	}
}
