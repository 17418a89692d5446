//go:build linux

package main

// Security review (third round) of moatd: what a client gets beyond what
// its own process has. Each test FAILS while the flaw it names is present,
// and shows the same action works where moat does not stand in the way (so
// it cannot pass vacuously).

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// testGroup makes a group of its own whose members are users (removed
// when the test ends) and returns its gid.
func testGroup(t *testing.T, name string, users ...string) int {
	t.Helper()
	exec.Command("groupdel", name).Run() // left by a killed run
	if out, err := exec.Command("groupadd", "-U", strings.Join(users, ","), name).CombinedOutput(); err != nil {
		t.Fatalf("groupadd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("groupdel", name).CombinedOutput(); err != nil {
			t.Errorf("groupdel %s: %v\n%s", name, err, out)
		}
	})
	g, err := user.LookupGroup(name)
	if err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.Atoi(g.Gid)
	return gid
}

// withGroups runs cmd as u with exactly these supplementary groups (none:
// setpriv --clear-groups).
func withGroups(cmd *exec.Cmd, u *daemonUser, groups ...int) *exec.Cmd {
	gs := []uint32{}
	for _, g := range groups {
		gs = append(gs, uint32(g))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: gs}}
	return cmd
}

// TestDaemonAttackClearedGroupsRegained: moatd took a client's gid and
// supplementary groups from the user database, not from the connecting
// process. A process that its launcher started with fewer groups than
// /etc/group lists (setpriv --clear-groups, a service manager's
// SupplementaryGroups, a CI runner) got a sandbox holding every group of
// the user, and read a file only one of those groups can read, which it
// cannot read itself (nor through rootless moat). The sandbox's groups
// must be the caller's own (`id -G` inside is the caller's), through
// moat run and through a session.
func TestDaemonAttackClearedGroupsRegained(t *testing.T) {
	d, _, _, dir := daemonFixture(t)
	att := attackUser(t, dir)
	grp := testGroup(t, "moatd-atk-grp", att.name)
	secret := filepath.Join(dir, "group-secret")
	const content = "only-group-moatd-atk-grp-reads-this"
	if err := os.WriteFile(secret, []byte(content+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(secret, 0, grp); err != nil {
		t.Fatal(err)
	}
	script := "id -G; cat " + secret
	idG := func(groups ...int) string {
		t.Helper()
		var out bytes.Buffer
		cmd := withGroups(exec.Command("id", "-G"), att, groups...)
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out.String())
	}
	direct := func(groups ...int) bool {
		return withGroups(exec.Command("cat", secret), att, groups...).Run() == nil
	}
	viaRun := func(groups ...int) (string, string) {
		t.Helper()
		cmd := withGroups(moatRunAs(t, d, att, att.dir, "", []string{"MOAT_DAEMON=required"}, "--", "sh", "-c", script), att, groups...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return out.String(), errb.String()
	}

	// Control: with the group, the caller reads it, directly and through
	// the daemon, whose sandbox then has the group.
	if !direct(att.gid, grp) {
		t.Fatalf("%s cannot read %s with group %d: the test proves nothing", att.name, secret, grp)
	}
	want := idG(att.gid, grp)
	out, errs := viaRun(att.gid, grp)
	if first, _, _ := strings.Cut(out, "\n"); first != want || !strings.Contains(out, content) {
		t.Fatalf("with the group, through moatd: id -G %q (the caller's %q) and no secret: the test proves nothing\n%s%s", first, want, out, errs)
	}

	for _, tc := range []struct {
		name   string
		groups []int
	}{
		{"primary group only", []int{att.gid}},
		{"no supplementary group (setpriv --clear-groups)", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if direct(tc.groups...) {
				t.Fatalf("%s reads %s without group %d: the test proves nothing", att.name, secret, grp)
			}
			want := idG(tc.groups...)
			out, errs := viaRun(tc.groups...)
			first, _, _ := strings.Cut(out, "\n")
			if first != want {
				t.Errorf("moat run through moatd: id -G inside is %q, the caller's is %q: the sandbox has groups its caller does not\n%s", first, want, errs)
			}
			if strings.Contains(out, content) {
				t.Errorf("ESCAPE: moat run through moatd read %s (0640 root:%d), which its caller cannot read: %q", secret, grp, out)
			}
		})
	}

	// A session, its requests made by curl with only the primary group.
	sid := att.openSession(t, d, fmt.Sprintf(`{"cwd":%q}`, att.dir))
	code, sout := att.run(t, d, sid, script)
	if code != 200 {
		t.Fatalf("run: %d %s", code, sout)
	}
	if first, _, _ := strings.Cut(sout, "\n"); first != idG(att.gid) {
		t.Errorf("a session through moatd: id -G inside is %q, the caller's (curl's) is %q", first, idG(att.gid))
	}
	if strings.Contains(sout, content) {
		t.Errorf("ESCAPE: a session's command read %s, which its caller cannot read: %q", secret, sout)
	}
}
