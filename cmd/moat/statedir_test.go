//go:build linux

package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestStateDirOfAnotherUser: a user whose home is not usable (a service
// account's /nonexistent, a read-only home) gets /var/tmp/moat-UID as its
// state directory (/tmp/moat-UID before), which any other user can make
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
	state := "/var/tmp/moat-" + strconv.Itoa(victim.uid)
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

// TestStateDirParentOfAnotherUser: root runs moat with another user's
// HOME (sudo keeping HOME). Its state directory was made, root's and
// private, inside that user's ~/.local/state, which that user can rename
// away mid-run to put a directory of its own in its place: root's audit
// then wrote its record through that user's symlink into a root-only
// file (found by an attack pass). moat refuses a state directory held by a
// directory another user controls, and makes nothing in it.
func TestStateDirParentOfAnotherUser(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireUserns(t)
	dev := lookupDaemonUser(t, "moatd-test2", true)
	dir, err := os.MkdirTemp("/var/tmp", "moat-statedir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	home := filepath.Join(dir, "home-dev")
	state := filepath.Join(home, ".local", "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{home, filepath.Join(home, ".local"), state} {
		os.Chown(p, dev.uid, dev.gid)
	}
	// Control: a directory root makes there is the user's to move away.
	if err := os.Mkdir(filepath.Join(state, "probe"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := dev.as("mv", filepath.Join(state, "probe"), filepath.Join(state, "probe.moved")); err != nil {
		t.Fatalf("%s cannot move a directory of root's out of its own ~/.local/state: the test proves nothing: %v %s", dev.name, err, errOut)
	}
	os.RemoveAll(filepath.Join(state, "probe.moved"))
	cmd := exec.Command(moatBin(t), "run", "--", "sh", "-c", "echo moat-ran-$((6*7))")
	cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C"}
	out, _ := cmd.CombinedOutput()
	t.Logf("root's run: %s", out)
	if _, err := os.Lstat(filepath.Join(state, "moat")); err == nil {
		t.Errorf("root's run made its state directory in %s's %s:\n%s", dev.name, state, out)
	}
	// Its state is kept where no other user reaches it (/var/lib/moat),
	// and it runs.
	if !strings.Contains(string(out), "moat-ran-42") {
		t.Errorf("root's run with %s's HOME did not run:\n%s", dev.name, out)
	}
	// Named explicitly, such a directory is refused, saying why.
	cmd = exec.Command(moatBin(t), "run", "--", "sh", "-c", "echo moat-ran-$((6*7))")
	cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "XDG_STATE_HOME=" + state, "LANG=C"}
	out, _ = cmd.CombinedOutput()
	if strings.Contains(string(out), "moat-ran-42") || !strings.Contains(string(out), "belongs to uid "+strconv.Itoa(dev.uid)) {
		t.Errorf("root's run kept its state in %s (XDG_STATE_HOME), which %s controls, or did not say why it refused:\n%s", state, dev.name, out)
	}
	if _, err := os.Lstat(filepath.Join(state, "moat")); err == nil {
		t.Errorf("root's run made its state directory in %s's %s", dev.name, state)
	}
}

// TestStateDirSharedPrimaryGroup: a state directory held by a directory
// writable by the user's primary group is the user's only when that group
// is the user's own (user private groups): with a group others share
// (users), a member swapped the state directory mid-run and moat wrote
// its journal and records into that member's tree (found by an attack
// pass).
func TestStateDirSharedPrimaryGroup(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireUserns(t)
	u := lookupDaemonUser(t, "moat-ci", true)
	g, err := user.LookupGroup("users")
	if err != nil {
		t.Skipf("no group users: %v", err)
	}
	gid, _ := strconv.Atoi(g.Gid)
	dir, err := os.MkdirTemp("/var/tmp", "moat-statedir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	shared := filepath.Join(dir, "shared")
	os.Mkdir(shared, 0o775)
	os.Chown(shared, u.uid, gid)
	os.Chmod(shared, 0o2775)
	run := func(env ...string) string {
		cmd := exec.Command(moatBin(t), "run", "--", "sh", "-c", "echo moat-ran-$((6*7))")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(gid), Groups: []uint32{uint32(gid)}}}
		cmd.Dir, cmd.Env = dir, append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + shared, "LANG=C"}, env...)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	out := run("XDG_STATE_HOME=" + shared)
	if strings.Contains(out, "moat-ran-42") || !strings.Contains(out, "writable by others") {
		t.Errorf("a state directory in %s (group users, writable) was used, or moat did not say why not:\n%s", shared, out)
	}
	if out := run(); !strings.Contains(out, "moat-ran-42") {
		t.Errorf("with a HOME of that kind, the default state directory (/var/tmp/moat-UID) was not used:\n%s", out)
	}
}

// TestStateDirInUserNamespace: in a user namespace that maps only the
// user (toolbox, flatpak, unshare -U), root's directories show as the
// overflow uid: moat still runs, its state in the user's home (the check
// refused every path, / among them, found by an attack pass). Another
// user's directories show as the overflow uid too: one that holds a state
// directory named by XDG_STATE_HOME is still refused (the next pass got it
// past the check, and that user could swap the state directory).
func TestStateDirInUserNamespace(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireUserns(t)
	u := lookupDaemonUser(t, "moat-ci", true)
	att := lookupDaemonUser(t, "moatd-attack", true)
	pw, err := user.LookupId(strconv.Itoa(u.uid))
	if err != nil || pw.HomeDir == "" {
		t.Fatalf("moat-ci's home: %v", err)
	}
	home := filepath.Clean(pw.HomeDir)
	if fi, err := os.Stat(home); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != u.uid {
		t.Skipf("moat-ci has no home of its own (%s): %v", home, err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "moat-statedir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	attDir := filepath.Join(dir, "att")
	os.Mkdir(attDir, 0o755)
	os.Chown(attDir, att.uid, att.gid)
	theirs := filepath.Join(attDir, "state")
	os.Mkdir(theirs, 0o755)
	os.Chown(theirs, u.uid, u.gid) // the user's, in a directory of the other user's
	run := func(env ...string) string {
		cmd := exec.Command("unshare", "-U", "--map-current-user", moatBin(t), "run", "--", "sh", "-c", "echo moat-ran-$((6*7))")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{uint32(u.gid)}}}
		cmd.Dir, cmd.Env = dir, append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C"}, env...)
		out, err := cmd.CombinedOutput()
		return fmt.Sprintf("%v\n%s", err, out)
	}
	if out := run(); !strings.Contains(out, "moat-ran-42") {
		t.Errorf("moat in a user namespace that maps only the user did not run: %s", out)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "state", "moat")); err != nil {
		t.Errorf("its state is not in its home: %v", err)
	}
	if out := run("XDG_STATE_HOME=" + theirs); strings.Contains(out, "moat-ran-42") || !strings.Contains(out, "directory "+attDir+" belongs to uid") {
		t.Errorf("in a user namespace, a state directory in %s (%s's) was used, or moat did not name it: %s", attDir, att.name, out)
	}
}

// TestServeRefusesStateDirOfAnotherUser: moat serve's default socket, for
// a user without a home or XDG_RUNTIME_DIR, is in /var/tmp/moat-UID, which
// another user can make first (mode 0777): that user could swap the
// socket and take the clients' requests (found by an attack pass). moat
// serve refuses such a directory, naming it.
func TestServeRefusesStateDirOfAnotherUser(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireUserns(t)
	att := lookupDaemonUser(t, "moatd-attack", true)
	const uid = 4141 // a uid with no home
	state := "/var/tmp/moat-" + strconv.Itoa(uid)
	os.RemoveAll(state)
	t.Cleanup(func() { os.RemoveAll(state) })
	if _, errOut, err := att.as("sh", "-c", "mkdir -m 777 "+state+" && chmod 777 "+state); err != nil {
		t.Fatalf("as %s: %v %s", att.name, err, errOut)
	}
	bin := moatBin(t)
	cmd := exec.Command(bin, "serve")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	cmd.Dir, cmd.Env = "/", []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(out.String(), state) {
			t.Errorf("moat serve: %v, and it did not name %s:\n%s", err, state, out.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Errorf("moat serve served with its socket in %s, a directory %s made:\n%s", state, att.name, out.String())
	}
}

// TestStateDirOfRootWithoutHome: root without a HOME (a systemd service,
// cron) keeps its state in /var/lib/moat, which no other user can make
// first and which outlives a reboot. It was /tmp/moat-0: emptied at boot,
// so the journal of a run the reboot ended (its placeholders, its plants
// to audit) and the quarantine (the originals of what the audit rewrote)
// were lost, and any user could make it first (moat refused it then: a
// denial of service).
func TestStateDirOfRootWithoutHome(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireUserns(t)
	dir, err := os.MkdirTemp("/var/tmp", "moat-statedir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// A repository the command makes, with a hook: the audit moves the hook
	// to the quarantine of the run's state directory.
	cmd := exec.Command(moatBin(t), "run", "--write", ".", "--", "sh", "-c",
		"git init -q r && printf '#!/bin/sh\\necho planted\\n' > r/.git/hooks/pre-commit && chmod +x r/.git/hooks/pre-commit && echo moat-ran-$((6*7))")
	cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C"}
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "moat-ran-42") {
		t.Fatalf("root's run without HOME did not run:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(dir, "r", ".git", "hooks", "pre-commit")); err == nil {
		t.Fatalf("the planted hook stayed:\n%s", out)
	}
	idx, _ := filepath.Glob("/var/lib/moat/quarantine/*/index.txt")
	for _, f := range idx {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), dir) {
			return
		}
	}
	t.Errorf("the quarantine of root's run without HOME is not in /var/lib/moat (%d indexes there):\n%s", len(idx), out)
}
