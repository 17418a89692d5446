package main

import (
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// The CLI wires flags to the runtime: it never reaches past it into an
// enforcer.
func TestImportsOnlyTheRuntime(t *testing.T) {
	for _, goos := range []string{"", "darwin"} {
		for _, imp := range testutil.Imports(t, goos) {
			for _, bad := range []string{"github.com/moat-sandbox/moat/linux", "github.com/moat-sandbox/moat/darwin", "github.com/moat-sandbox/moat/bpf"} {
				if imp == bad || strings.HasPrefix(imp, bad+"/") {
					t.Errorf("GOOS=%s: cmd/moat imports %s (it must go through runtime)", goos, imp)
				}
			}
		}
	}
}
