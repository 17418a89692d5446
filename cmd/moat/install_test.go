package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make install copies a built moat to $(PREFIX)/bin (the README's quick
// start, after which its commands say moat), without building, and says
// what to do when there is nothing to copy.
func TestMakeInstall(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Skip("not run in the source tree")
	}
	built := t.TempDir()
	payload := []byte("#!/bin/sh\necho installed moat\n")
	if err := os.WriteFile(filepath.Join(built, "moat"), payload, 0o700); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	prefix := filepath.Join(dest, "prefix")
	cmd := exec.Command(makeBin, "-s", "-C", root, "install", "BIN="+built, "PREFIX="+prefix)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	fi, err := os.Stat(filepath.Join(prefix, "bin", "moat"))
	if err != nil {
		t.Fatalf("make install did not install moat: %v", err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("installed moat has mode %v, want 0755", fi.Mode().Perm())
	}
	if got, _ := os.ReadFile(filepath.Join(prefix, "bin", "moat")); string(got) != string(payload) {
		t.Errorf("installed moat is not the built one: %q", got)
	}
	// DESTDIR for packaging.
	cmd = exec.Command(makeBin, "-s", "-C", root, "install", "BIN="+built, "PREFIX=/usr", "DESTDIR="+dest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install DESTDIR=: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dest, "usr", "bin", "moat")); err != nil {
		t.Errorf("DESTDIR: %v", err)
	}
	cmd = exec.Command(makeBin, "-s", "-C", root, "install", "BIN="+t.TempDir(), "PREFIX="+prefix)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "make build first") {
		t.Errorf("make install with nothing built: %v\n%s", err, out)
	}
}
