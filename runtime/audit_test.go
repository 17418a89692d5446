//go:build linux

package runtime

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// TestFailedQuarantineIsAWarning: a plant the git audit could not take
// out is a warning of the run, not only a violation line among the
// others. The plant is made immutable with chattr +i (root only on Linux;
// on macOS any owner may chflags uchg, which the profile now denies, and
// the audit takes off).
func TestFailedQuarantineIsAWarning(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir, err := os.MkdirTemp("/var/tmp", "moat-audit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	dir, _ = filepath.EvalSymlinks(dir)
	w := filepath.Join(dir, "w")
	if out, err := exec.Command("git", "init", "-q", filepath.Join(w, "sub")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	hook := filepath.Join(w, "sub", ".git", "hooks", "pre-commit")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch /tmp/pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+i", hook).CombinedOutput(); err != nil {
		t.Skipf("chattr +i: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", hook).Run() })
	var vs []policy.Violation
	warn := auditGit(enforce.Footprint{WritableRoots: []string{w}}, start, time.Time{}, dir, filepath.Join(dir, "state"), nil, nil, func(v policy.Violation) { vs = append(vs, v) })
	found := false
	for _, v := range vs {
		found = found || (v.Target == hook && strings.Contains(v.Rule, "failed"))
	}
	if !found {
		t.Fatalf("no failed finding for the hook: %+v", vs)
	}
	for _, w := range warn {
		if strings.Contains(w, hook) && strings.Contains(w, "could not take out") {
			return
		}
	}
	t.Errorf("the failed quarantine is not among the run's warnings: %q", warn)
}

// TestAuditWarningsSanitized: the audit's warning that it could not look
// everywhere names the directory, whose name the tree or the command
// chose: a chain of directories past PATH_MAX below one named with
// terminal escapes and a line break printed them raw on the user's
// terminal, as moat's own line (attack pass 82).
func TestAuditWarningsSanitized(t *testing.T) {
	dir, err := os.MkdirTemp("/var/tmp", "moat-audit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	dir, _ = filepath.EvalSymlinks(dir)
	w := filepath.Join(dir, "w")
	evil := "x\x1b]0;OWNED\x07\x1b[2J\nmoat: forged line"
	// A path past PATH_MAX is made one directory at a time, changing
	// into each (bash; os.MkdirAll takes the whole path).
	cmd := exec.Command("bash", "-c", `mkdir -p "$1" && cd "$1" && for i in $(seq 1 25); do mkdir "$2" && cd "$2" || exit 1; done`, "bash", filepath.Join(w, evil), strings.Repeat("d", 200))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	warn := auditGit(enforce.Footprint{WritableRoots: []string{w}}, time.Now(), time.Time{}, dir, filepath.Join(dir, "state"), nil, nil, func(policy.Violation) {})
	if len(warn) == 0 {
		t.Fatal("no warning: the test shows nothing")
	}
	for _, s := range warn {
		if strings.ContainsAny(s, "\x1b\x07\n") {
			t.Errorf("a warning holds the tree's control characters raw: %q", s)
		}
	}
}
