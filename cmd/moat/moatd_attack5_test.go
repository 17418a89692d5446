//go:build linux

package main

// Security review (attack pass 57) of moatd: its client's own moat state.
// Each test FAILS while the flaw it names is present, and shows the client
// can do the same without moat (so it cannot pass vacuously).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// freshHomeUser is a user of its own whose home (from the user database,
// where moatd takes it) is a fixed directory made anew for the test, with
// ~/.local/state as most homes have it and no moat state yet.
func freshHomeUser(t *testing.T) *daemonUser {
	t.Helper()
	const name, home = "moatd-home", "/var/tmp/moatd-home-test"
	if _, err := exec.Command("id", name).Output(); err != nil {
		if out, err := exec.Command("useradd", "--no-create-home", "--home-dir", home, "--shell", "/bin/bash", name).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v\n%s", name, err, out)
		}
	}
	u := lookupDaemonUser(t, name, false)
	os.RemoveAll(home)
	if err := os.MkdirAll(filepath.Join(home, ".local", "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{home, filepath.Join(home, ".local"), filepath.Join(home, ".local", "state")} {
		os.Chown(p, u.uid, u.gid)
	}
	u.dir = home
	t.Cleanup(func() {
		killUserProcs(u.uid)
		os.RemoveAll(home)
	})
	return u
}

// TestDaemonAttackSandboxMakesClientState: moatd's git audit keeps its
// record of the trees (and its quarantine) in the client's
// ~/.local/state/moat, which the plan hides and protects in the client's
// sandboxes: the audit trusts the record (a directory whose stamps it
// holds is not read again). Where the directory did not exist yet (the
// user's first run through moatd, or a session opened before its first
// audit made it) it was neither hidden nor protected: a hidden path is no
// protection to reserve, and a missing one needs no mount. A command with
// a writable home made it and wrote a record there; one that gives a new
// repository's directory its own stamps and no .git kept the audit from
// looking in it, and a core.fsmonitor planted there ran at the user's next
// git status. The state now exists (made as the client) before the plan.
func TestDaemonAttackSandboxMakesClientState(t *testing.T) {
	d, _, _, _ := daemonFixture(t)
	u := freshHomeUser(t)
	own := filepath.Join(u.dir, ".local", "state", "moat")
	record := filepath.Join(own, "cache", "gitguard-forged")
	// Control: the user makes it itself, without moat.
	if _, errb, err := u.as("sh", "-c", "mkdir -p "+own+"/cache && echo mine > "+record); err != nil {
		t.Fatalf("the user cannot write its own state without moat: the test proves nothing: %v %s", err, errb)
	}
	os.RemoveAll(own)
	script := "mkdir -p " + own + "/cache; echo forged > " + record

	t.Run("run", func(t *testing.T) {
		cmd := moatRunAs(t, d, u, u.dir, "", []string{"MOAT_DAEMON=required"}, "--write", u.dir, "--", "sh", "-c", script)
		out, _ := cmd.CombinedOutput()
		t.Logf("run: %s", out)
		if b, err := os.ReadFile(record); err == nil {
			t.Errorf("a command through moatd wrote the client's moat state (the git audit's record): %s holds %q\n%s", record, b, out)
		}
		if !strings.Contains(string(out), "running through moatd") {
			t.Fatalf("not through moatd: %s", out)
		}
		os.RemoveAll(own)
	})

	t.Run("session", func(t *testing.T) {
		// The session's plan is made when it opens; the first command's
		// audit (a file written) made the state on the host, where the
		// session's next command found it writable.
		sid := u.openSession(t, d, `{"cwd":"`+u.dir+`","write":["`+u.dir+`"]}`)
		defer u.call(t, d.sock, "DELETE", "/v1/sessions/"+sid, "")
		if code, out := u.run(t, d, sid, "echo x > "+filepath.Join(u.dir, "wrote")); code != 200 {
			t.Fatalf("first command: %d %s", code, out)
		}
		code, out := u.run(t, d, sid, script)
		t.Logf("session: %d %s", code, out)
		if b, err := os.ReadFile(record); err == nil {
			t.Errorf("a session's command through moatd wrote the client's moat state (the git audit's record): %s holds %q\n%d %s", record, b, code, out)
		}
	})
}
