//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDaemonAttackSettingsBesideRootlessRun: moatd announced its client's
// live sandboxes in root's register alone, which the client's own moat
// cannot read. A moatd sandbox wrote sub/.claude/settings.json, and the
// same user's rootless run started in sub meanwhile loaded it and ran with
// the widened policy (a listening socket its default policy refuses):
// attack pass 106. moatd now announces the run in the client's own
// register too, as the client. Without moat the file widens the run.
func TestDaemonAttackSettingsBesideRootlessRun(t *testing.T) {
	d, u1, _, _ := daemonFixture(t)
	pw, err := user.LookupId(strconv.Itoa(u1.uid))
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(u1.dir, "proj")
	sub := filepath.Join(proj, "sub")
	if _, stderr, err := u1.as("mkdir", "-p", sub); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	script := filepath.Join(u1.dir, "listen.py")
	if err := os.WriteFile(script, []byte("import socket\ns=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(1); print('ESCAPED')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	widen := `mkdir -p sub/.claude && printf '{"sandbox":{"network":{"allowLocalBinding":true}}}' > sub/.claude/settings.json`
	written := filepath.Join(proj, "written")
	// The later run: the user's own, rootless, default settings discovery.
	later := func() (int, string) {
		cmd := exec.Command(moatBin(t), "run", "--", "python3", script)
		cmd.Dir = sub
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + pw.HomeDir, "LANG=C", "MOAT_DAEMON=off"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u1.uid), Gid: uint32(u1.gid), Groups: []uint32{uint32(u1.gid)}}}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, string(out)
	}
	// Without moat writing it, the file widens the later run.
	if _, stderr, err := u1.as("sh", "-c", "cd "+proj+" && "+widen); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	if _, out := later(); !strings.Contains(out, "ESCAPED") {
		t.Fatalf("a project settings file must widen the run that finds it (or this test proves nothing):\n%s", out)
	}
	os.RemoveAll(filepath.Join(sub, ".claude"))

	// Written by a live moatd sandbox of the same user.
	writer := moatRunAs(t, d, u1, proj, "", []string{"MOAT_DAEMON=required"}, "--write", ".", "--", "sh", "-c", widen+"; touch "+written+"; sleep 5")
	var wout bytes.Buffer
	writer.Stdout, writer.Stderr = &wout, &wout
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Lstat(written); err == nil {
			break
		}
		if time.Now().After(deadline) {
			writer.Process.Kill()
			writer.Wait()
			t.Fatalf("the moatd sandbox did not write: %s", wout.String())
		}
	}
	code, out := later()
	writer.Wait()
	if strings.Contains(out, "ESCAPED") {
		t.Errorf("ESCAPE: a settings file a live moatd sandbox wrote widened the user's rootless run:\n%s", out)
	} else if code != 125 || !strings.Contains(out, "sandboxed command that can write it") {
		t.Errorf("want a refusal naming the file (exit 125), got %d:\n%s", code, out)
	}
}
