//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Unprivileged, from a working directory this user cannot write to, with
// Claude Code's settings (the working directory implicitly writable): the
// error says why and what to do, and not "leave it out of allowWrite".
func TestRunImplicitWorkingDirectoryNotWritable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes to any folder: run as a user (CI's rootless suites)")
	}
	tr := newTree(t)
	cc := filepath.Join(filepath.Dir(tr.dir), "cc.json")
	if err := os.WriteFile(cc, []byte(`{"permissions":{"allow":[]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tr.dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(tr.dir, 0o755) })
	r := tr.moat(t, "", tr.env("MOAT_DAEMON=off"), "run", "--settings", cc, "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "only because it is the working directory") || strings.Contains(r.stderr, "leave it out of allowWrite") {
		t.Fatalf("exit %d, %q", r.code, r.stderr)
	}
}
