//go:build linux

package main

// Attack pass 58 on moatd, the supervisor of every user's sandboxes. Each
// test FAILS while the flaw it names is present, and shows the client
// cannot do the same without moat (so it cannot pass vacuously).

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDaemonAttackObserverStatOracle: the violation observer, moatd's
// seccomp supervisor, turns each path the command writes into the line of
// its report: it resolves the parent's symlinks, follows a last symlink
// (readlink) and, for mkdir and the other calls that make a name, looks
// whether the name exists (an EEXIST is not reported). As root, all three
// looked where the client cannot: a mkdir of a name in a directory only
// root may search was reported when the name was missing and not when it
// existed, and a write through a symlink there was reported by where the
// link leads. The observer looks as the client.
func TestDaemonAttackObserverStatOracle(t *testing.T) {
	d, _, _, dir := daemonFixture(t)
	att := attackUser(t, dir)
	proj := filepath.Join(att.dir, "proj")
	if _, stderr, err := att.as("mkdir", proj); err != nil {
		t.Fatalf("mkdir: %v %s", err, stderr)
	}
	locked := filepath.Join(dir, "root-only")
	if err := os.MkdirAll(filepath.Join(locked, "present"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(locked, 0o700)
	if err := os.Symlink("/nowhere/secret-link-target", filepath.Join(locked, "link")); err != nil {
		t.Fatal(err)
	}
	// Control: the client cannot tell by itself.
	_, e1, err1 := att.as("mkdir", filepath.Join(locked, "present"))
	_, e2, err2 := att.as("mkdir", filepath.Join(locked, "missing"))
	if err1 == nil || err2 == nil || strings.ReplaceAll(e1, "present", "NAME") != strings.ReplaceAll(e2, "missing", "NAME") {
		t.Fatalf("%s tells the two apart without moat: %q / %q", att.name, e1, e2)
	}
	if out, stderr, err := att.as("readlink", filepath.Join(locked, "link")); err == nil || strings.Contains(out+stderr, "secret") {
		t.Fatalf("%s reads the link without moat: %q %q", att.name, out, stderr)
	}

	run := func(script string) string {
		t.Helper()
		cmd := moatRunAs(t, d, att, proj, "", []string{"MOAT_DAEMON=required"}, "--write", ".", "--", "sh", "-c", script)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run() // the command fails: what counts is its report
		if !strings.Contains(errb.String(), "running through moatd") && !strings.Contains(errb.String(), "sandbox_violations") {
			t.Logf("moat run: %s%s", out.String(), errb.String())
		}
		var lines []string
		for _, l := range strings.Split(errb.String(), "\n") {
			if strings.HasPrefix(l, "deny ") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	present := strings.ReplaceAll(run("mkdir "+filepath.Join(locked, "present")), "present", "NAME")
	missing := strings.ReplaceAll(run("mkdir "+filepath.Join(locked, "missing")), "missing", "NAME")
	t.Logf("present: %q\nmissing: %q", present, missing)
	if !strings.Contains(missing, filepath.Join(locked, "NAME")) {
		t.Fatalf("a mkdir outside the writable trees was not reported: the test proves nothing: %q", missing)
	}
	if present != missing {
		t.Errorf("ESCAPE: moatd's report tells a name that exists where the client cannot look from a missing one:\npresent: %q\nmissing: %q", present, missing)
	}
	link := run("echo x > " + filepath.Join(locked, "link"))
	t.Logf("link: %q", link)
	if strings.Contains(link, "secret-link-target") {
		t.Errorf("ESCAPE: moatd's report reads a symlink where the client cannot look: %q", link)
	}
	if !strings.Contains(link, filepath.Join(locked, "link")) {
		t.Errorf("the write through the link was not reported as written: %q", link)
	}
}
