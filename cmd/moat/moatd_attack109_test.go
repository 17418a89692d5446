//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDaemonAttackEmptyReservedNameHidden: a reserved name (.claude,
// .mcp.json) that the client's denyRead names and that exists empty was
// bound read-only, not masked: what the user wrote there while the
// command ran (a token into the empty .mcp.json, in place; a credentials
// file into the empty .claude) was read by the command (attack pass 109;
// the plan's look, whether one is empty, is the client's). Without moat
// the user reads both.
func TestDaemonAttackEmptyReservedNameHidden(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	proj := filepath.Join(u1.dir, "proj")
	claude, mcp := filepath.Join(proj, ".claude"), filepath.Join(proj, ".mcp.json")
	cred, marker := filepath.Join(claude, ".credentials.json"), filepath.Join(proj, "started")
	if _, stderr, err := u1.as("sh", "-c", "mkdir -p "+claude+" && : > "+mcp); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	users := filepath.Join(dir, "users.d")
	if err := os.MkdirAll(users, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := `{"filesystem": {"denyRead": ["` + claude + `", "` + mcp + `"], "allowWrite": ["."], "denyWrite": []}, "network": {"allowedDomains": [], "deniedDomains": []}}`
	if err := os.WriteFile(filepath.Join(users, "default.json"), []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	read := "cat " + cred + " " + mcp + " 2>/dev/null | grep -q TOKEN && echo ESCAPED"
	cmd := moatRunAs(t, d, u1, proj, "", []string{"MOAT_DAEMON=required"}, "--", "sh", "-c", "touch "+marker+"; sleep 1; "+read)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Lstat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the command did not start:\n%s", out.String())
		}
	}
	if _, stderr, err := u1.as("sh", "-c", "echo CLAUDE-TOKEN > "+cred+" && echo MCP-TOKEN > "+mcp); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	cmd.Wait()
	if strings.Contains(out.String(), "ESCAPED") {
		t.Fatalf("ESCAPE: what the user wrote into the hidden, empty reserved names was read:\n%s", out.String())
	}
	if stdout, stderr, err := u1.as("sh", "-c", read); err != nil || !strings.Contains(stdout, "ESCAPED") {
		t.Fatalf("the user must read both without moat: %v %s %s", err, stdout, stderr)
	}
}
