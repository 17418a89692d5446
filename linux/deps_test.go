//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// linux is an enforcer behind the runtime: it reads policies, never
// settings files, and never imports the runtime above it or the decision
// pipeline.
func TestDeps(t *testing.T) {
	testutil.Forbid(t, "github.com/moat-sandbox/moat/runtime/settings", "github.com/moat-sandbox/moat/validators",
		"github.com/moat-sandbox/moat/permissions", "github.com/moat-sandbox/moat/darwin")
	for _, dep := range testutil.Deps(t, "", ".") {
		if dep == "github.com/moat-sandbox/moat/runtime" {
			t.Errorf("linux depends on the runtime package above it")
		}
	}
}

// A library reports through errors, violations and the logger it is given:
// nothing in linux writes to the process's stderr or stdout.
func TestNoStdio(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"os.Stderr", "os.Stdout", "fmt.Print", "log.Print"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s", f, bad)
			}
		}
	}
}
