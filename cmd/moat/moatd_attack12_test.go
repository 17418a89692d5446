//go:build linux

package main

// Security review (attack pass 105) of moatd. Each test FAILS while the
// flaw it names is present, and shows the client cannot do the same
// without moat (so it cannot pass vacuously).

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestDaemonAttackLateSecretLooksAsRoot: a run records which of its
// denyRead paths exist when it starts, and is ended when one is made or
// replaced on the host while it runs (latesecrets.go). The daemon looked
// as root: with ~/.docker a link of the client's to a directory only root
// may search, root's lstat of ~/.docker/config.json went through it, and
// once the client turned the link to a config.json of its own, the run
// ended saying the file "was replaced" (it existed in the private
// directory) or "was made" (it did not): an oracle of what exists where
// the client cannot look. Looked at as the client, both answers are the
// same, and the client's own file swapped the same way still ends the run
// (the look is not blind).
func TestDaemonAttackLateSecretLooksAsRoot(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	pw, err := user.Lookup(u1.name)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(pw.HomeDir, ".docker") // its config.json is a default secret
	if _, err := os.Lstat(link); err == nil {
		testutil.Unavailable(t, "%s exists: the test links it", link)
	}
	t.Cleanup(func() { os.Remove(link); os.Remove(link + ".new") })
	// Root's: one holding config.json, one empty; the client can look
	// into neither.
	full, empty := filepath.Join(dir, "root-full-a105"), filepath.Join(dir, "root-empty-a105")
	for _, p := range []string{full, empty} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(full, "config.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := u1.as("stat", filepath.Join(full, "config.json")); err == nil {
		t.Fatal("the client can stat the root-only file without moat: the test proves nothing")
	}
	// The client's own: one to start with, one to turn the link to.
	mine, mine2 := filepath.Join(u1.dir, "mine"), filepath.Join(u1.dir, "mine2")
	for _, p := range []string{mine, mine2} {
		if _, errb, err := u1.as("sh", "-c", `mkdir "$1" && echo '{}' > "$1/config.json"`, "sh", p); err != nil {
			t.Fatalf("%v %s", err, errb)
		}
	}
	// probe starts a run with the link at start, turns it to mine2 while
	// the command runs, and returns what moat said.
	probe := func(start string) string {
		t.Helper()
		if _, errb, err := u1.as("ln", "-sfn", start, link); err != nil {
			t.Fatalf("ln: %v %s", err, errb)
		}
		cmd := moatRunAs(t, d, u1, u1.dir, "", []string{"MOAT_DAEMON=required"}, "--", "sleep", "3")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		if _, e, err := u1.as("sh", "-c", `ln -sfn "$1" "$2.new" && mv -T "$2.new" "$2"`, "sh", mine2, link); err != nil {
			t.Fatalf("swap: %v %s", err, e)
		}
		if err := cmd.Wait(); err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatal(err)
			}
		}
		os.Remove(link)
		return errb.String()
	}
	if out := probe(mine); !strings.Contains(out, "was replaced") {
		t.Fatalf("the client's own config.json replaced while the run ran did not end it (the probe is blind): %s", out)
	}
	fromFull, fromEmpty := probe(full), probe(empty)
	said := func(s string) string {
		switch {
		case strings.Contains(s, "was replaced"):
			return "replaced"
		case strings.Contains(s, "was made"):
			return "made"
		}
		return "nothing"
	}
	if said(fromFull) != said(fromEmpty) {
		t.Fatalf("ESCAPE: the daemon told whether config.json exists in a directory only root may search: with it, %q; without, %q\n%s\n%s", said(fromFull), said(fromEmpty), fromFull, fromEmpty)
	}
	t.Logf("both root-only directories: %s", said(fromFull))
}

// TestDaemonAttackPeerInOtherNetns: moatd refused peers in another user
// or mount namespace, or under no_new_privs or seccomp, but not one in a
// network namespace of its own (unshare -n, ip netns exec, a service's
// private network, sharing the host's user and mount namespaces). Its
// sandbox's proxy connects from the daemon's namespace: a command with no
// network at all reached, through moat run, a service on the host's
// loopback that the user's policy allows. The daemon now refuses such a
// peer (403; moat run then runs rootless, in the peer's own network).
func TestDaemonAttackPeerInOtherNetns(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	const marker = "host-loopback-only-a105"
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, marker) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	users := filepath.Join(dir, "users.d")
	if err := os.MkdirAll(users, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := fmt.Sprintf(`{"filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": []}, "network": {"allowedDomains": ["localhost:%d"], "deniedDomains": []}}`, port)
	if err := os.WriteFile(filepath.Join(users, "default.json"), []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://localhost:%d/", port)
	run := func(netns bool, argv ...string) (string, int) {
		t.Helper()
		cmd := moatRunAs(t, d, u1, u1.dir, "", []string{"MOAT_DAEMON=required"}, argv...)
		if argv[0] != "--" {
			cmd = exec.Command(argv[0], argv[1:]...) // without moat
			cmd.Dir, cmd.Env = u1.dir, clientEnv(u1.dir)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u1.uid), Gid: uint32(u1.gid), Groups: []uint32{uint32(u1.gid)}}}
		}
		if netns {
			// A network of its own; the host's user and mount namespaces.
			cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
		}
		out, _ := cmd.CombinedOutput()
		code := 0
		if cmd.ProcessState != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return string(out), code
	}
	if out, _ := run(false, "--", "curl", "-sS", "-m", "5", url); !strings.Contains(out, marker) {
		t.Fatalf("through moatd from the host's network the allowed loopback service does not answer (the probe is blind): %s", out)
	}
	if out, _ := run(true, "curl", "-sS", "-m", "5", url); strings.Contains(out, marker) {
		t.Fatalf("in a network namespace of its own the user reaches the host's loopback without moat: the test proves nothing: %s", out)
	}
	out, code := run(true, "--", "curl", "-sS", "-m", "5", url)
	if strings.Contains(out, marker) {
		t.Fatalf("ESCAPE: a command confined to a network namespace of its own reached the host's loopback service through moatd: %s", out)
	}
	if code != 125 || !strings.Contains(out, "network namespace") {
		t.Fatalf("moatd did not refuse the peer in another network namespace (exit %d, want 125 naming it): %s", code, out)
	}
}

// TestDaemonAttackPeerInChroot: moatd did not compare a peer's root
// directory (moat serve does): a process jailed by chroot (a build
// chroot, an SFTP jail) that reaches the daemon's socket got a sandbox
// made in the host's tree, and read a file of its user's outside its
// jail, which it cannot name without moat. The daemon now refuses such a
// peer (403).
func TestDaemonAttackPeerInChroot(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	const marker = "outside-the-jail-a105"
	secret := filepath.Join(u1.dir, "outside.txt")
	if _, errb, err := u1.as("sh", "-c", `echo "$1" > "$2"`, "sh", marker, secret); err != nil {
		t.Fatalf("%v %s", err, errb)
	}
	// The jail: moat (static) and a hard link to the daemon's socket.
	jail := filepath.Join(dir, "jail")
	for _, p := range []string{"bin", "run", "work"} {
		if err := os.MkdirAll(filepath.Join(jail, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chown(filepath.Join(jail, "work"), u1.uid, u1.gid)
	b, err := os.ReadFile(moatBin(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jail, "bin", "moat"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(d.sock, filepath.Join(jail, "run", "moatd.sock")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(jail, secret)); err == nil {
		t.Fatal("the file is inside the jail: the test proves nothing")
	}
	// Through moatd from the host's root the command reads it (the probe
	// is not blind).
	out, err := moatRunAs(t, d, u1, u1.dir, "", []string{"MOAT_DAEMON=required"}, "--", "cat", secret).CombinedOutput()
	if !strings.Contains(string(out), marker) {
		t.Fatalf("through moatd from the host's root the user's file is not read (the probe is blind): %v %s", err, out)
	}
	cmd := exec.Command("/bin/moat", "run", "--", "cat", secret)
	cmd.Dir = "/work"
	cmd.Env = []string{"PATH=/bin", "HOME=/work", "MOAT_DAEMON_SOCKET=/run/moatd.sock", "MOAT_DAEMON=required"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: jail, Credential: &syscall.Credential{Uid: uint32(u1.uid), Gid: uint32(u1.gid), Groups: []uint32{uint32(u1.gid)}}}
	out, _ = cmd.CombinedOutput()
	if strings.Contains(string(out), marker) {
		t.Fatalf("ESCAPE: a chrooted client read a file outside its jail through moatd: %s", out)
	}
	if !strings.Contains(string(out), "root directory") {
		t.Fatalf("moatd did not refuse the chrooted peer naming its root directory: %s", out)
	}
}

// TestDaemonAttackStdioCopiedAsRoot: moat run hands its descriptors 0-2
// to moatd, which copies a file's through a pipe (linux/stdio.go), and it
// copied them as root. The kernel judges some reads and writes by who
// makes them, not by who opened the file: /proc/PID/stat of another
// user's process, open to all, gave the command through stdin the
// addresses the kernel hides from the user (its code, stack, heap and
// arguments: its ASLR layout), and a file given as stdout on a full
// filesystem was written past the user's share into root's reserved
// blocks (as past a quota: CAP_SYS_RESOURCE). The copying now runs with
// the client's credentials and no capability.
func TestDaemonAttackStdioCopiedAsRoot(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	client := func(script string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command("sh", append([]string{"-c", script, "sh", moatBin(t)}, args...)...)
		cmd.Dir = u1.dir
		cmd.Env = clientEnv(u1.dir, "MOAT_DAEMON_SOCKET="+d.sock, "MOAT_DAEMON=required")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u1.uid), Gid: uint32(u1.gid), Groups: []uint32{uint32(u1.gid)}}}
		out, err := cmd.Output()
		return string(out), err
	}
	t.Run("proc-stat", func(t *testing.T) {
		// A process of root's (not the daemon: its own stat is open to it).
		victim := exec.Command("sleep", "60")
		if err := victim.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
		stat := fmt.Sprintf("/proc/%d/stat", victim.Process.Pid)
		startStack := func(s string) string { // field 28
			if i := strings.LastIndexByte(s, ')'); i >= 0 {
				if f := strings.Fields(s[i+1:]); len(f) > 25 {
					return f[25]
				}
			}
			return "?"
		}
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		if startStack(string(b)) == "0" {
			t.Fatalf("root sees no stack address in %s: the test proves nothing: %s", stat, b)
		}
		mine, errb, err := u1.as("cat", stat)
		if err != nil || startStack(mine) != "0" {
			t.Fatalf("the user sees the stack address of root's process without moat (%v %s): the test proves nothing: %s", err, errb, mine)
		}
		out, err := client(`exec "$1" run -- cat < ` + stat)
		if err != nil {
			t.Fatalf("moat run: %v %s", err, out)
		}
		if got := startStack(out); got != "0" {
			t.Fatalf("ESCAPE: through moatd the command read the stack address of root's process (%s), hidden from the user: %s", got, out)
		}
	})
	t.Run("reserved-blocks", func(t *testing.T) {
		for _, tool := range []string{"mkfs.ext4", "losetup"} {
			if _, err := exec.LookPath(tool); err != nil {
				testutil.Unavailable(t, "%s: %v", tool, err)
			}
		}
		// A small ext4 with 40% of its blocks reserved for root.
		img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "fsmnt")
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("sh", "-c", `truncate -s 64M "$1" && mkfs.ext4 -q -F -m 40 "$1" && mount -o loop "$1" "$2"`, "sh", img, mnt).CombinedOutput(); err != nil {
			testutil.Unavailable(t, "a loop-mounted ext4: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", mnt).Run() })
		own := filepath.Join(mnt, "u")
		if err := os.Mkdir(own, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(own, u1.uid, u1.gid)
		// The user fills its share; a write of its own then fails.
		u1.as("sh", "-c", `dd if=/dev/zero of="$1/fill" bs=1M; sync`, "sh", own)
		if _, _, err := u1.as("sh", "-c", `head -c 4M /dev/zero > "$1/more" && sync`, "sh", own); err == nil {
			t.Fatal("the user writes 4 MB more on the full filesystem without moat: the test proves nothing")
		}
		client(`"$1" run -- head -c 16M /dev/zero > "$2/viamoatd"; sync`, own)
		fi, err := os.Stat(filepath.Join(own, "viamoatd"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 4<<20 {
			t.Fatalf("ESCAPE: through moatd the user wrote %d bytes on a filesystem full for it (root's reserved blocks)", fi.Size())
		}
	})
}

// TestDaemonAttackClientRlimitsEscaped: a sandbox of moatd's got the
// daemon's resource limits (root's) and the policy's, never the client's:
// a client under a hard RLIMIT_CPU of one second (an administrator's
// limits.conf; the user cannot raise a hard limit) ran a command that
// spun for as long as it liked, and one under a hard limit of 64 open
// files got 20,000. Rootless moat run keeps them (its sandbox inherits
// them); through moatd, no limit is above the client's own now.
func TestDaemonAttackClientRlimitsEscaped(t *testing.T) {
	d, u1, _, _ := daemonFixture(t)
	limited := `ulimit -S -t 1 && ulimit -H -t 1 && ulimit -S -n 64 && ulimit -H -n 64 && `
	// Without moat the user cannot raise them again.
	if out, errb, err := u1.as("sh", "-c", limited+`ulimit -H -t`); err != nil || strings.TrimSpace(out) != "1" {
		t.Fatalf("the limits cannot be set (%v %s): %s", err, errb, out)
	}
	if _, _, err := u1.as("sh", "-c", limited+`ulimit -H -t unlimited`); err == nil {
		t.Fatal("the user raises its hard RLIMIT_CPU without moat: the test proves nothing")
	}
	if got := runThroughMoatd(t, d, u1, limited, `echo "$(ulimit -H -t) $(ulimit -H -n)"`); got != "1 64" {
		t.Fatalf("ESCAPE: through moatd the command's hard CPU time and open-file limits are %q, above the client's own \"1 64\"", got)
	}
}

// runThroughMoatd runs, as u, the shell prefix (which sets the client
// process's state) and then moat run through d of a command script, and
// returns the command's output, trimmed.
func runThroughMoatd(t *testing.T, d *daemon, u *daemonUser, prefix, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", prefix+`exec "$1" run -- sh -c "$2"`, "sh", moatBin(t), script)
	cmd.Dir = u.dir
	cmd.Env = clientEnv(u.dir, "MOAT_DAEMON_SOCKET="+d.sock, "MOAT_DAEMON=required")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{uint32(u.gid)}}}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("moat run: %v %s %s", err, out, errb.String())
	}
	return strings.TrimSpace(string(out))
}

// TestDaemonAttackClientNiceEscaped: a user cannot lower its nice value
// (an administrator's batch user, a service's Nice=), nor its
// oom_score_adj below what a privileged process set, but a client at nice
// 15 and oom_score_adj 900 ran its commands through moatd at the daemon's
// 0 and 0. No longer below the client's own.
func TestDaemonAttackClientNiceEscaped(t *testing.T) {
	d, u1, _, _ := daemonFixture(t)
	lowered := `echo 900 > /proc/self/oom_score_adj && renice -n 15 -p $$ >/dev/null && `
	// Without moat the user cannot lower them again.
	if out, errb, err := u1.as("sh", "-c", lowered+`echo "$(nice) $(cat /proc/self/oom_score_adj)"`); err != nil || strings.TrimSpace(out) != "15 900" {
		t.Fatalf("cannot set them (%v %s): %s", err, errb, out)
	}
	if _, _, err := u1.as("sh", "-c", lowered+`renice -n 0 -p $$`); err == nil {
		t.Fatal("the user lowers its nice value without moat: the test proves nothing")
	}
	if got := runThroughMoatd(t, d, u1, lowered, `echo "$(nice) $(cat /proc/self/oom_score_adj)"`); got != "15 900" {
		t.Fatalf("ESCAPE: through moatd the command's nice value and oom_score_adj are %q, below the client's own \"15 900\"", got)
	}
}

// TestDaemonAttackClientUmask: a moatd sandbox had the daemon's umask
// (022 where it was started from a shell), not the client's: a client
// under umask 077 made, through moat run, files any user could read,
// where without moat (and with rootless moat) they are its alone.
func TestDaemonAttackClientUmask(t *testing.T) {
	d, u1, _, _ := daemonFixture(t)
	if _, errb, err := u1.as("sh", "-c", `cd "$1" && umask 077 && echo x > plain`, "sh", u1.dir); err != nil {
		t.Fatalf("%v %s", err, errb)
	}
	if fi, err := os.Stat(filepath.Join(u1.dir, "plain")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("without moat the file is not 0600 (%v): the test proves nothing", err)
	}
	cmd := exec.Command("sh", "-c", `umask 077 && exec "$1" run --write . -- sh -c 'echo x > viamoatd'`, "sh", moatBin(t))
	cmd.Dir = u1.dir
	cmd.Env = clientEnv(u1.dir, "MOAT_DAEMON_SOCKET="+d.sock, "MOAT_DAEMON=required")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u1.uid), Gid: uint32(u1.gid), Groups: []uint32{uint32(u1.gid)}}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("moat run: %v %s", err, out)
	}
	fi, err := os.Stat(filepath.Join(u1.dir, "viamoatd"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("ESCAPE: under the client's umask 077 the command made a file of mode %o through moatd", fi.Mode().Perm())
	}
}
