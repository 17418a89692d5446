//go:build linux

package main

// Security review (third round) of moatd: what a client gets beyond what
// its own process has. Each test FAILS while the flaw it names is present,
// and shows the same action works where moat does not stand in the way (so
// it cannot pass vacuously).

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
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

	"golang.org/x/sys/unix"
)

// testGroup is a group of its own whose members are exactly users, and
// its gid. It is kept (privileged-tests/accounts.sh makes it before the
// suites start, as make test-go runs it): a groupadd or groupdel while
// the suites run rewrites /etc/gshadow, which root's sandboxes hide, and
// ends the sandboxes of the tests running then (exit 125).
func testGroup(t *testing.T, name string, users ...string) int {
	t.Helper()
	members := strings.Join(users, ",")
	if g, err := user.LookupGroup(name); err != nil {
		if out, err := exec.Command("groupadd", "-U", members, name).CombinedOutput(); err != nil {
			t.Fatalf("groupadd %s: %v\n%s", name, err, out)
		}
	} else if out, _ := exec.Command("getent", "group", g.Name).Output(); !strings.HasSuffix(strings.TrimSpace(string(out)), ":"+members) {
		if out, err := exec.Command("gpasswd", "-M", members, name).CombinedOutput(); err != nil {
			t.Fatalf("gpasswd -M %s %s: %v\n%s", members, name, err, out)
		}
	}
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

// gitguardRecord is a record of the git audit's walk (runtime/gitguard's
// cache, format "moat-gitguard 6") as a client can write it in its own
// state directory: root, and per directory its path under root, identity
// (dev, ino, ctime in ns), flags, .git identity and subdirectory names.
type gitguardDir struct {
	rel      string
	dev, ino uint64
	ctime    int64
	subdirs  []string
}

func gitguardRecord(root string, dirs []gitguardDir) []byte {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	var buf [binary.MaxVarintLen64]byte
	u := func(v uint64) { w.Write(buf[:binary.PutUvarint(buf[:], v)]) }
	str := func(v string) { u(uint64(len(v))); w.WriteString(v) }
	w.WriteString("moat-gitguard 6\n")
	str(root)
	u(uint64(len(dirs)))
	for _, d := range dirs {
		str(d.rel)
		u(d.dev)
		u(d.ino)
		u(uint64(d.ctime))
		w.WriteByte(0)
		u(0)
		u(0)
		u(uint64(len(d.subdirs)))
		for _, n := range d.subdirs {
			str(n)
		}
	}
	u(0) // no pointer records
	w.Flush()
	return b.Bytes()
}

// TestDaemonAttackAuditStatOracle: moatd runs the git audit after a run
// with the client's credentials, on one thread (ascred.Do), but the audit
// looked at the directories its record of the tree knows ahead of the
// walk on goroutines of its own (gitguard's prestat), which ran on other
// threads with root's credentials. The record is the client's own file
// (~/.local/state/moat/cache/gitguard-*), so the client names the paths
// root looks at, and root's answer decides what the walk does next: a
// directory root finds is read as the client (EACCES: "git audit
// incomplete"), one root does not find is passed over in silence. The
// client learns whether a directory exists where it cannot look: here in
// a root-only directory of its own tree (with a "/" in a recorded name,
// anywhere on the host: TestCacheRejectsSlashedNames). The audit of an
// existing and of a missing directory must say the same; the client
// itself cannot tell the two apart (stat fails alike).
func TestDaemonAttackAuditStatOracle(t *testing.T) {
	d, _, _, dir := daemonFixture(t)
	att := attackUser(t, dir)
	proj := filepath.Join(att.dir, "proj")
	locked := filepath.Join(proj, "locked")
	if _, stderr, err := att.as("mkdir", proj); err != nil {
		t.Fatalf("mkdir: %v %s", err, stderr)
	}
	if err := os.MkdirAll(filepath.Join(locked, "present"), 0o700); err != nil {
		t.Fatal(err)
	}
	// Control: the client cannot tell by itself.
	_, e1, err1 := att.as("stat", filepath.Join(locked, "present"))
	_, e2, err2 := att.as("stat", filepath.Join(locked, "missing"))
	if err1 == nil || err2 == nil || strings.ReplaceAll(e1, "present", "NAME") != strings.ReplaceAll(e2, "missing", "NAME") {
		t.Fatalf("%s tells the two apart without moat: %q / %q", att.name, e1, e2)
	}
	pw, err := user.Lookup(att.name)
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(pw.HomeDir, ".local", "state", "moat", "cache")
	if _, stderr, err := att.as("mkdir", "-p", cacheDir); err != nil {
		t.Fatalf("mkdir: %v %s", err, stderr)
	}
	root, err := filepath.EvalSymlinks(proj)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte(root))
	record := filepath.Join(cacheDir, "gitguard-"+hex.EncodeToString(h[:12]))
	t.Cleanup(func() { os.Remove(record) })
	var st unix.Stat_t
	if err := unix.Lstat(locked, &st); err != nil { // the client can lstat it: its own tree
		t.Fatal(err)
	}

	// A record whose directory at rel (its identity as it is: unchanged,
	// so the walk goes by the record) holds one subdirectory, sub.
	audit := func(rel string, id unix.Stat_t, sub, name string) string {
		t.Helper()
		dirs := []gitguardDir{
			{rel: ""}, // the run writes here: read again
			{rel: rel, dev: id.Dev, ino: id.Ino, ctime: id.Ctim.Nano(), subdirs: []string{sub}},
			{rel: rel + "/" + sub},
		}
		for i := 0; i < 300; i++ { // enough for the look ahead of the walk
			dirs = append(dirs, gitguardDir{rel: fmt.Sprintf("/f%03d", i)})
		}
		if err := os.WriteFile(record, gitguardRecord(root, dirs), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chown(record, att.uid, att.gid)
		cmd := moatRunAs(t, d, att, proj, "", []string{"MOAT_DAEMON=required"}, "--write", ".", "--", "sh", "-c", "echo x > wrote")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("moat run: %v\n%s%s", err, out.String(), errb.String())
		}
		var lines []string
		for _, l := range strings.Split(errb.String(), "\n") {
			if strings.Contains(l, "git audit") {
				lines = append(lines, strings.ReplaceAll(l, name, "NAME"))
			}
		}
		t.Logf("%s: %q", name, lines)
		return strings.Join(lines, "\n")
	}
	present, missing := audit("/locked", st, "present", "present"), audit("/locked", st, "missing", "missing")
	if present != missing {
		t.Errorf("ESCAPE: the audit through moatd tells an existing directory where the client cannot look from a missing one:\npresent: %q\nmissing: %q", present, missing)
	}
	if !strings.Contains(present, filepath.Join(locked, "NAME")) {
		t.Fatalf("the audit did not go by the client's record (it never looked at %s): the test proves nothing: %q", filepath.Join(locked, "NAME"), present)
	}

	// Anywhere on the host: a recorded name with a "/" through a symlink
	// of the client's to a root-only directory outside its tree (as
	// /root). Such a record is now no record at all (so the walk goes
	// nowhere near it), and the outputs are the same.
	far := filepath.Join(dir, "root-only")
	if err := os.MkdirAll(filepath.Join(far, "present"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := att.as("sh", "-c", "mkdir "+proj+"/sub && ln -s "+far+" "+proj+"/sub/link"); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	var sst unix.Stat_t
	if err := unix.Lstat(filepath.Join(proj, "sub"), &sst); err != nil {
		t.Fatal(err)
	}
	present, missing = audit("/sub", sst, "link/present", "present"), audit("/sub", sst, "link/missing", "missing")
	if present != missing {
		t.Fatalf("ESCAPE: through a recorded name with a \"/\", the audit through moatd tells an existing directory of root's from a missing one:\npresent: %q\nmissing: %q", present, missing)
	}
}
