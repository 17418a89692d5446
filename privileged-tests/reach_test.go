//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestRootRunPastOtherUsersPrivateDir: root's sandbox maps root alone, so
// its capabilities do not open another user's 0700 directory to it, and
// stage 2 could not bind what the plan (made with root's capabilities)
// wanted to protect in there: a root run whose writable tree held another
// user's private repository (or, with --write /, any host with a 0700
// home holding a .bashrc) failed, blaming the kernel's support for mounts
// (found by a CI run, 2026-11-29). What the command cannot reach
// needs no protection: the run goes on, and the command still cannot
// write there.
func TestRootRunPastOtherUsersPrivateDir(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFixture(t)
	w := filepath.Join(f.root, "w")
	other := filepath.Join(w, "other")
	for _, d := range []string{filepath.Join(other, ".git", "hooks"), filepath.Join(other, ".git", "objects"), filepath.Join(other, ".git", "refs")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(other, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(other, ".bashrc"), []byte("# theirs\n"), 0o644))
	const nobody = 65534
	must(t, filepath.Walk(other, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	}))
	must(t, os.Chmod(other, 0o700))
	r := f.exec(moatBin, "run", "--settings", f.settings, "--write", w, "--", "/bin/sh", "-c",
		"echo RAN; touch "+other+"/planted 2>/dev/null && echo ESCAPED-WROTE; exit 0")
	if r.code != 0 || !strings.Contains(r.out, "RAN") {
		t.Fatalf("a root run with another user's private repository in its tree did not run (exit %d):\n%s", r.code, r.out)
	}
	if r.escaped() {
		t.Fatalf("the command wrote in another user's 0700 directory:\n%s", r.out)
	}
	if _, err := os.Lstat(filepath.Join(other, "planted")); err == nil {
		t.Fatal("the command's file is in the other user's directory")
	}
	// A denyRead rule there: nothing to mask, the kernel refuses already.
	s := f.writeSettings(map[string]any{"denyRead": []string{filepath.Join(other, ".bashrc")}, "allowWrite": []string{w}})
	r = f.exec(moatBin, "run", "--settings", s, "--", "/bin/sh", "-c", "echo RAN; cat "+other+"/.bashrc 2>/dev/null && echo ESCAPED-READ; exit 0")
	if r.code != 0 || !strings.Contains(r.out, "RAN") || r.escaped() {
		t.Fatalf("a denyRead rule in another user's private directory (exit %d):\n%s", r.code, r.out)
	}
}
