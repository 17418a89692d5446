//go:build linux

package main

import (
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestStateDirOfAnotherUser: a user whose home is not usable (a service
// account's /nonexistent, a read-only home, root without HOME) gets
// /tmp/moat-UID as its state directory, which any other user can make
// first. moat used it as found (found by an attack pass): another user's
// announcement of a "dead run" there made the victim's audit take the
// victim's files, from the epoch on, out of trees the attacker chose, into
// a quarantine the attacker owns (a directory swapped in after moat made
// it: the attacker read the victim's .envrc), and a compiled seccomp
// program the attacker put in its cache was loaded into the victim's
// sandbox (unix sockets, refused by the filter, were allowed). moat now
// refuses a state directory that is not the user's alone, saying so.
func TestStateDirOfAnotherUser(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireUserns(t)
	victim := lookupDaemonUser(t, "moatd-test2", true)
	att := lookupDaemonUser(t, "moatd-attack", true)
	dir, err := os.MkdirTemp("/var/tmp", "moat-statedir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, ".envrc"), []byte("export TOKEN=victim-secret\n"), 0o644)
	os.Chown(proj, victim.uid, victim.gid)
	os.Chown(filepath.Join(proj, ".envrc"), victim.uid, victim.gid)
	os.Chmod(dir, 0o711)
	state := "/tmp/moat-" + strconv.Itoa(victim.uid)
	os.RemoveAll(state)
	t.Cleanup(func() { os.RemoveAll(state) })
	ann := "S 0\nW " + hex.EncodeToString([]byte(proj)) + "\nE\n"
	plant := "set -e; umask 022; mkdir " + state + " " + state + "/journal; mkdir -m 777 " + state + "/cache; chmod 777 " + state + "/cache; printf '" + strings.ReplaceAll(ann, "\n", "\\n") + "' > " + state + "/journal/0000000000000000.live"
	if _, errOut, err := att.as("sh", "-c", plant); err != nil {
		t.Fatalf("as %s: %v %s", att.name, err, errOut)
	}
	run := func(script string) string {
		cmd := exec.Command(moatBin(t), "run", "--", "sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(victim.uid), Gid: uint32(victim.gid), Groups: []uint32{uint32(victim.gid)}}}
		cmd.Dir, cmd.Env = proj, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nonexistent", "LANG=C"}
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	out := run("echo moat-ran-$((6*7))")
	t.Logf("run: %s", out)
	if _, err := os.Stat(filepath.Join(proj, ".envrc")); err != nil {
		t.Errorf("ESCAPE: %s's announcement in %s made %s's audit take %s's .envrc out: %v\n%s", att.name, state, victim.name, victim.name, err, out)
	}
	if strings.Contains(out, "moat-ran-42") || !strings.Contains(out, "state directory "+state+" belongs to uid "+strconv.Itoa(att.uid)) {
		t.Errorf("%s's run used %s, a state directory %s made, or did not say why it refused it:\n%s", victim.name, state, att.name, out)
	}
	// The same user's own: made by its first run, used by the next.
	if err := os.RemoveAll(state); err != nil {
		t.Fatal(err)
	}
	if out := run("echo moat-ran-$((6*7))"); !strings.Contains(out, "moat-ran-42") {
		t.Fatalf("%s's run with a state directory of its own failed:\n%s", victim.name, out)
	}
	if out := run("echo moat-ran-$((6*7))"); !strings.Contains(out, "moat-ran-42") {
		t.Fatalf("%s's second run with a state directory of its own failed:\n%s", victim.name, out)
	}
}
