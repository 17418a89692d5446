//go:build linux

package privtests

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"golang.org/x/sys/unix"
)

// The no-namespace tier: where user namespaces are refused (Docker's
// default seccomp profile, a sysctl, AppArmor), moat refuses to run unless
// --best-effort is given, and then confines the command with Landlock,
// seccomp and (as root) eBPF. These tests refuse user namespaces with a
// seccomp filter of their own, as such a container does.

const denyUsernsEnv = "MOAT_TEST_DENY_USERNS"

// noUserns runs bin args with user namespaces refused.
func (f *fixture) noUserns(bin string, args ...string) result {
	f.t.Helper()
	return f.execEnv(append(f.env(), denyUsernsEnv+"=1"), self, append([]string{bin}, args...)...)
}

// bestEffort runs an attack under `moat run --best-effort` with user
// namespaces refused.
func (f *fixture) bestEffort(args ...string) result {
	f.t.Helper()
	return f.noUserns(moatBin, append([]string{"run", "--best-effort", "--settings", f.settings, "--", self}, args...)...)
}

func landlockABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(v)
}

// The filter works: without moat, no user namespace can be made.
func TestNoUsernsFilterWorks(t *testing.T) {
	f := makeFixture(t)
	if got := f.noUserns(self, "unshare-user"); got.escaped() || !strings.Contains(got.out, "blocked:") {
		t.Fatalf("the test's filter must refuse user namespaces:\n%s", got.out)
	}
}

// Without --best-effort moat refuses, and the command does not run.
func TestNoUsernsFailsClosed(t *testing.T) {
	f := makeFixture(t)
	ran := f.work + "/ran"
	got := f.noUserns(moatBin, "run", "--settings", f.settings, "--", self, "write", ran, "x")
	if got.code == 0 || strings.Contains(got.out, "ESCAPED") {
		t.Fatalf("moat must refuse to run without a user namespace (exit %d):\n%s", got.code, got.out)
	}
	if !strings.Contains(got.out, "user namespace") || !strings.Contains(got.out, "--best-effort") {
		t.Fatalf("the error must name the cause and the way out:\n%s", got.out)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the command ran although moat refused")
	}
}

// With --best-effort the command runs, confined, and moat says what it
// could not enforce.
func TestNoUsernsBestEffort(t *testing.T) {
	f := makeFixture(t)
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock: the no-namespace tier has nothing to confine with")
	}
	got := f.bestEffort("write", f.work+"/ok.txt", "fine")
	if !got.escaped() || readFile(t, f.work+"/ok.txt") != "fine" {
		t.Fatalf("the working directory must be writable:\n%s", got.out)
	}
	for _, want := range []string{"best effort: not enforced: namespaces", "mandatory protections"} {
		if !strings.Contains(got.out, want) {
			t.Errorf("moat must say what it skipped (%q):\n%s", want, got.out)
		}
	}
}

func TestNoUsernsAttacks(t *testing.T) {
	coldRunsOnly(t)
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock: the no-namespace tier has nothing to confine with")
	}
	cases := []struct {
		name string
		args func(f *fixture) []string
	}{
		{"read denied file", func(f *fixture) []string { return []string{"read", f.secret} }},
		{"read default secret", func(f *fixture) []string { return []string{"read", f.home + "/.ssh/id_ed25519"} }},
		{"read denied directory", func(f *fixture) []string { return []string{"read", f.outside + "/secretdir/key"} }},
		{"read through a symlink", func(f *fixture) []string { return []string{"symlink-read", f.secret, f.work + "/link"} }},
		{"write outside", func(f *fixture) []string { return []string{"write", f.target, "pwned"} }},
		{"write through a symlink", func(f *fixture) []string { return []string{"symlink-write", f.target, f.work + "/out", "pwned"} }},
		{"rename over", func(f *fixture) []string { return []string{"rename-over", f.work + "/evil", f.target} }},
		{"hard link over", func(f *fixture) []string { return []string{"link-over", f.work + "/evil", f.outside + "/new"} }},
		{"/proc magic link", func(f *fixture) []string { return []string{"magic-write", f.target, "pwned"} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := makeFixture(t)
			args := tc.args(f)
			reset := func() {
				must(t, os.WriteFile(f.target, []byte(targetText+"\n"), 0o644))
				for _, p := range []string{"/link", "/out", "/evil"} {
					os.Remove(f.work + p)
				}
				os.Remove(f.outside + "/new")
			}
			f.attackWith(f.bestEffort, args, reset)
		})
	}
}

// Host processes are visible without a pid namespace; they must still be
// out of reach (seccomp refuses ptrace, Landlock refuses /proc/PID access
// across domains and, from ABI 6, signals).
func TestNoUsernsHostProcesses(t *testing.T) {
	coldRunsOnly(t)
	for _, attack := range []string{"ptrace", "environ", "kill"} {
		t.Run(attack, func(t *testing.T) {
			if attack == "kill" && landlockABI() < 6 {
				testutil.Unavailable(t, "Landlock ABI %d < 6: signals cannot be scoped", landlockABI())
			} else if landlockABI() == 0 {
				testutil.Unavailable(t, "no Landlock")
			}
			f := makeFixture(t)
			hostProcessAttack(t, f, f.bestEffort, attack)
		})
	}
}

// Direct TCP, to the internet's stand-in and to a host loopback service,
// is refused: only moat's proxy is reachable.
func TestNoUsernsNetwork(t *testing.T) {
	if landlockABI() < 4 && os.Geteuid() != 0 {
		testutil.Unavailable(t, "Landlock ABI %d < 4 and no eBPF (not root): TCP cannot be confined", landlockABI())
	}
	f := makeFixture(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	args := []string{"tcp", l.Addr().String()}
	got := f.bestEffort(args...)
	if got.escaped() {
		t.Fatalf("ESCAPE: direct TCP to a host service under moat --best-effort:\n%s", got.out)
	} else if !strings.Contains(got.out, "blocked:") {
		t.Fatalf("the attack did not run (exit %d):\n%s", got.code, got.out)
	}
	if base := f.direct(args...); !base.escaped() {
		t.Fatalf("the attack must work without moat:\n%s", base.out)
	}
}

// A run ended by its timeout is audited like any other. Without a pid
// namespace, init learns of the kill by its supervisor's line closing and
// exits without a word of the command: moat took that for a sandbox that
// never ran the command, and skipped the git audit, so a planted
// core.fsmonitor stayed for the user's next git status, outside any
// sandbox (found by an attack pass).
func TestNoUsernsTimeoutStillAudited(t *testing.T) {
	coldRunsOnly(t)
	if _, err := exec.LookPath("git"); err != nil {
		testutil.Unavailable(t, "git is not installed")
	}
	f := makeFixture(t)
	prog := filepath.Join(f.root, "pwn.sh")
	mark := filepath.Join(f.root, "pwned")
	must(t, os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+mark+"\nexit 1\n"), 0o755))
	plant := filepath.Join(f.work, "plant")
	script := `mkdir -p plant/.git/objects plant/.git/refs/heads && printf 'ref: refs/heads/main\n' > plant/.git/HEAD && printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "%s"\n' "` + prog + `" > plant/.git/config`
	userGit := func() bool {
		os.Remove(mark)
		cmd := exec.Command("git", "status")
		cmd.Dir, cmd.Env = plant, f.env()
		cmd.Run()
		_, err := os.Stat(mark)
		return err == nil
	}
	if r := f.exec("/bin/sh", "-c", script); r.code != 0 || !userGit() {
		t.Fatalf("without moat the planted repository must run the program on git status (exit %d):\n%s", r.code, r.out)
	}
	must(t, os.RemoveAll(plant))
	got := f.noUserns(moatBin, "run", "--best-effort", "--timeout", "2s", "--settings", f.settings, "--", "/bin/sh", "-c", script+" && sleep 100")
	if got.code != 124 {
		t.Errorf("a run its timeout ended exits 124, got %d:\n%s", got.code, got.out)
	}
	if userGit() {
		t.Errorf("ESCAPE: after a run its timeout ended, the user's git status ran the planted program:\n%s", got.out)
	}
}

// The no-namespace tier's TMPDIR, in the host's /tmp, goes with the run
// whatever the command left in it. A directory the command made
// unsearchable for its owner (chmod 0, allowed inside the writable paths)
// stopped moat's removal, and the TMPDIR stayed on the host with what the
// command wrote below it, for good (attack pass 85; as root the removal
// never stopped there). The symlink in the tree must not lead moat's
// chmod out of it.
func TestNoUsernsTmpdirRemoved(t *testing.T) {
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock: no no-namespace tier")
	}
	if root() {
		t.Skip("as root no mode may change in this tier (and root's removal never stopped at one)")
	}
	f := makeFixture(t)
	before, err := os.Lstat(f.outside)
	must(t, err)
	script := `echo "TMPDIR=$TMPDIR" && mkdir -p "$TMPDIR/d/e" && head -c 65536 /dev/zero > "$TMPDIR/d/e/kept" && ln -s ` + f.outside + ` "$TMPDIR/d/link" && chmod 0 "$TMPDIR/d/e" && chmod 500 "$TMPDIR/d" && echo made`
	got := f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "/bin/sh", "-c", script)
	if got.code != 0 || !strings.Contains(got.out, "made") {
		t.Fatalf("the command did not make its tree (exit %d):\n%s", got.code, got.out)
	}
	_, rest, _ := strings.Cut(got.out, "TMPDIR=")
	dir, _, _ := strings.Cut(rest, "\n")
	if !strings.HasPrefix(dir, "/tmp/moat-run-") {
		t.Fatalf("no TMPDIR in the output:\n%s", got.out)
	}
	if _, err := os.Lstat(dir); err == nil {
		os.Chmod(dir+"/d", 0o700)
		os.Chmod(dir+"/d/e", 0o700)
		os.RemoveAll(dir)
		t.Errorf("the run's TMPDIR %s stayed on the host after it:\n%s", dir, got.out)
	}
	if after, err := os.Lstat(f.outside); err != nil || after.Mode() != before.Mode() {
		t.Errorf("the removal changed %s through the symlink: %v, %v", f.outside, before.Mode(), after)
	}
}

// A process tree that keeps forking dies with the run. Without a pid
// namespace init killed its children round by round, and each round ended
// one generation while the next forked again: moat returned after 21-39 s
// and 200 processes stayed on the host, outside any sandbox, where they
// could still write through descriptors they held (found by an attack
// pass). init's kill(-1), in a Landlock signal scope of its own, ends the
// tree at once and reaches nothing else.
func TestNoUsernsForkingTreeDies(t *testing.T) {
	coldRunsOnly(t)
	if _, err := exec.LookPath("perl"); err != nil {
		testutil.Unavailable(t, "perl is not installed")
	}
	if landlockABI() < 6 {
		testutil.Unavailable(t, "Landlock ABI %d < 6: no signal scope, init's rounds remain", landlockABI())
	}
	f := makeFixture(t)
	settings := f.limitSettings(map[string]any{"pids": 64})
	if os.Geteuid() == 0 {
		// Root ignores RLIMIT_NPROC: only the run's cgroup bounds the tree.
		if p := f.noUserns(moatBin, "policy", "--settings", settings); !strings.Contains(p.out, "pids.max") {
			testutil.Unavailable(t, "no pids cgroup bounds a root run here (the fork bomb would be unbounded):\n%s", p.out)
		}
	}
	marker := "moat-hydra-" + testutil.SleepMarker(0)
	// Every process forks again and again, whatever a refused fork says,
	// up to 200 processes of this user (RLIMIT_NPROC, as a user, where
	// moat may have set it lower already; as root the run's pids cgroup
	// holds it).
	script := `$SIG{CHLD} = "IGNORE"; while (1) { fork }`
	start := time.Now()
	got := f.noUserns(moatBin, "run", "--best-effort", "--timeout", "2s", "--settings", settings, "--",
		"/bin/bash", "-c", `ulimit -u 200 2>/dev/null; [ "$(ulimit -u)" -le 200 ] || exit 3; exec perl -e '`+script+`' `+marker)
	took := time.Since(start)
	time.Sleep(200 * time.Millisecond)
	if pids := testutil.Procs("perl -e "+script+" "+marker, os.Getuid()); len(pids) > 0 {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Errorf("ESCAPE: %d processes of the run outlived moat (it returned after %v)", len(pids), took.Round(time.Millisecond))
	}
	if got.code != 124 || took > 15*time.Second {
		t.Errorf("the run must end by its timeout, at once: exit %d after %v\n%s", got.code, took.Round(time.Millisecond), got.out)
	}
}

// The unix-socket broker in the no-namespace tier: a swap of the
// descriptor between the broker's check and the connect reached a socket in
// a denyRead directory (found by an attack pass); and the TCP connects the
// broker now makes itself (as the supervisor, which no Landlock domain
// confines) still reach nothing but the proxy.
func TestNoUsernsUnixBroker(t *testing.T) {
	coldRunsOnly(t)
	if landlockABI() < 4 && os.Geteuid() != 0 {
		testutil.Unavailable(t, "Landlock ABI %d < 4 and no eBPF (not root): TCP cannot be confined", landlockABI())
	}
	f := makeFixture(t)
	s := startServers(t, f.root)
	hidden := filepath.Join(f.outside, "secretdir", "agent.sock")
	defer serveUnix(t, hidden, "hidden").Close()
	b, _ := json.Marshal(map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}, "allowUnixSockets": []string{s.unixPath}},
		"filesystem": map[string]any{"denyRead": []string{filepath.Join(f.outside, "secretdir")}, "allowWrite": []string{f.work}, "denyWrite": []string{}},
	})
	settings := filepath.Join(f.root, "nons-broker.json")
	must(t, os.WriteFile(settings, b, 0o644))
	run := func(args ...string) result {
		return f.noUserns(moatBin, append([]string{"run", "--best-effort", "--settings", settings, "--", self}, args...)...)
	}
	if got := run("unix", s.unixPath); !got.escaped() {
		t.Fatalf("the allowed socket must work:\n%s", got.out)
	}
	for _, args := range [][]string{
		{"unix-fdswap", hidden, "20000"},
		{"tcp", "127.0.0.1:" + strconv.Itoa(s.denied)},
	} {
		got := run(args...)
		if got.escaped() {
			t.Errorf("ESCAPE: %v under moat --best-effort:\n%s", args, got.out)
		} else if !strings.Contains(got.out, "blocked:") {
			t.Errorf("the attack did not run (exit %d):\n%s", got.code, got.out)
		}
		if base := f.direct(args...); !base.escaped() {
			t.Errorf("%v must work without moat:\n%s", args, base.out)
		}
	}
}

// TCP Fast Open (a send with MSG_FASTOPEN) makes a connection without
// connect(2), which is all Landlock's TCP rule sees: rootless in this tier
// it reached any port of the host's loopback (found by an attack pass).
// seccomp refuses it where Landlock alone confines TCP; as root the eBPF
// layer judges it as a connect.
func TestNoUsernsTCPFastOpen(t *testing.T) {
	coldRunsOnly(t)
	if landlockABI() < 4 && os.Geteuid() != 0 {
		testutil.Unavailable(t, "Landlock ABI %d < 4 and no eBPF (not root): TCP cannot be confined", landlockABI())
	}
	f := makeFixture(t)
	s := startServers(t, f.root)
	target := "127.0.0.1:" + strconv.Itoa(s.denied)
	for _, how := range []string{"sendto", "sendmsg"} {
		args := []string{"tcp-fastopen", target, how}
		got := f.bestEffort(args...)
		if got.escaped() {
			t.Errorf("ESCAPE: %s with MSG_FASTOPEN reached a host port under moat --best-effort:\n%s", how, got.out)
		} else if !strings.Contains(got.out, "blocked:") {
			t.Errorf("the attack did not run (exit %d):\n%s", got.code, got.out)
		}
		if base := f.direct(args...); !base.escaped() {
			t.Errorf("%s with MSG_FASTOPEN must reach the port without moat:\n%s", how, base.out)
		}
	}
}

// Every process the command starts dies with it (no pid namespace: init
// is a subreaper and kills what is left).
func TestNoUsernsNoDaemon(t *testing.T) {
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock")
	}
	f := makeFixture(t)
	pidfile := f.work + "/daemon.pid"
	got := f.bestEffort("daemon", pidfile, testutil.SleepMarker(300))
	if !got.escaped() {
		t.Fatalf("the daemon must start inside the sandbox:\n%s", got.out)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(readFile(t, pidfile)))
	if pid <= 0 {
		t.Fatalf("no daemon pid: %q", readFile(t, pidfile))
	}
	if syscall.Kill(pid, 0) == nil {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("ESCAPE: the daemon (pid %d) outlived moat --best-effort", pid)
	}
}

// A launch that fails after planning began (here: the user namespace is
// refused once stage 2 is cloned, while the plan has made placeholders in
// the working directory) leaves nothing behind: no placeholder, no journal
// record, no announcement, no temporary directory. The same for a command
// that cannot be executed.
func TestFailedLaunchLeavesNothing(t *testing.T) {
	coldRunsOnly(t)
	f := makeFixture(t)
	before := snapshotTree(t, f.work)
	// moat's temporary directories go to a TMPDIR of the test's own: the
	// host's /tmp holds other runs' of the same user (CI runs suites side
	// by side).
	tmp, err := os.MkdirTemp(filepath.Dir(f.work), "tmpdir-")
	if err != nil {
		t.Fatal(err)
	}
	env := append(f.env(), "TMPDIR="+tmp)
	for _, run := range []func() result{
		func() result {
			return f.execEnv(append(slices.Clone(env), denyUsernsEnv+"=1"), self, moatBin, "run", "--settings", f.settings, "--", "true")
		},
		func() result {
			testutil.RequireUserns(t)
			return f.execEnv(env, moatBin, "run", "--settings", f.settings, "--", "/no/such/command")
		},
		func() result {
			testutil.RequireUserns(t)
			return f.execEnv(env, moatBin, "run", "--settings", f.settings, "--", f.work)
		},
	} {
		got := run()
		if got.code == 0 {
			t.Fatalf("the launch must fail:\n%s", got.out)
		}
		if after := snapshotTree(t, f.work); after != before {
			t.Fatalf("a failed launch left files in the working directory (exit %d):\n%s\nbefore:\n%s\nafter:\n%s", got.code, got.out, before, after)
		}
		es, _ := os.ReadDir(filepath.Join(f.state, "moat", "journal"))
		for _, e := range es {
			if e.Name() != "journal.lock" {
				t.Fatalf("a failed launch left %s in the journal (exit %d):\n%s", e.Name(), got.code, got.out)
			}
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "moat-run-*")); len(left) > 0 {
		t.Fatalf("a failed launch left a temporary directory: %v", left)
	}
}

// Without a mount namespace, Landlock does not govern chmod, chown,
// utimes or extended attributes: as root the command changed the mode of
// any file of root's (chmod 0666 of a 0600 file outside the policy, as
// /etc/shadow would be: found by this project's review). As root moat's
// filter refuses them everywhere; as a user moat says they are not
// enforced on the user's own files.
func TestNoUsernsFileMetadata(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	victim := filepath.Join(f.outside, "meta-victim")
	reset := func() {
		must(t, os.WriteFile(victim, []byte(targetText), 0o600))
		must(t, os.Chmod(victim, 0o600))
	}
	reset()
	script := "chmod 666 " + victim + "; touch -d 2000-01-01 " + victim + "; stat -c '%a %Y' " + victim
	if !root() {
		// As a user: moat makes every mode, owner, times, attribute, size
		// and flags change for the command, on the file it opened and found
		// inside the writable paths (metabroker.go).
		got := f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "/bin/sh", "-c", script)
		if strings.Contains(got.out, "not enforced: file-metadata") {
			t.Errorf("as a user, the no-namespace tier enforces modes, times and flags (moat makes the changes): it must not say otherwise (exit %d):\n%s", got.code, got.out)
		}
		if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o600 || fi.ModTime().Year() == 2000 {
			t.Errorf("ESCAPE: a plain chmod or touch outside the writable paths changed %s: %v %v\n%s", victim, fi, err, got.out)
		}
		// The same with moat.violations off: the check is enforcement, not
		// a report (it was off with the reports).
		quiet := f.moatSettings(map[string]any{"violations": false})
		got = f.noUserns(moatBin, "run", "--best-effort", "--settings", quiet, "--", "/bin/sh", "-c", script)
		if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o600 || fi.ModTime().Year() == 2000 {
			t.Errorf("ESCAPE: with violations off, a chmod or touch outside the writable paths changed %s: %v %v\n%s", victim, fi, err, got.out)
		}
		// A command racing the check: one thread swaps a symlink in the
		// writable tree between a file there and the victim while another
		// chmods the link. moat makes the change itself on the file it
		// opened and checked, so no swap gets past it.
		race := `import os, threading
w = "` + f.work + `"
ok = os.path.join(w, "race-ok"); open(ok, "w").close()
link = os.path.join(w, "race-link")
stop = False
def flip():
    i = 0
    while not stop:
        tmp = link + ".tmp"
        try:
            os.remove(tmp)
        except FileNotFoundError:
            pass
        os.symlink(ok if i % 2 else "` + victim + `", tmp)
        os.replace(tmp, link)
        i += 1
t = threading.Thread(target=flip); t.start()
for _ in range(3000):
    try:
        os.chmod(link, 0o666)
        os.utime(link, (946684800, 946684800))
    except OSError:
        pass
stop = True; t.join()
`
		got = f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "python3", "-c", race)
		if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o600 || fi.ModTime().Year() == 2000 {
			t.Errorf("ESCAPE: a chmod racing a symlink swap changed %s: %v %v\n%.3000s", victim, fi, err, got.out)
		}
		// A file whose path is longer than PATH_MAX, reached by chdir: its
		// path cannot be read back, and the change was made unchecked.
		deep := `import os, sys
os.chdir("` + f.outside + `")
for i in range(18):
    d = "d" * 250
    if sys.argv[1] == "make":
        os.makedirs(d, exist_ok=True)
    os.chdir(d)
if sys.argv[1] == "make":
    open("victim", "w").write("x"); os.chmod("victim", 0o600)
elif sys.argv[1] == "chmod":
    os.chmod("victim", 0o666)
print("mode %o" % (os.stat("victim").st_mode & 0o777))
`
		if r := f.exec("python3", "-c", deep, "make"); !strings.Contains(r.out, "mode 600") {
			t.Fatalf("making the deep file: %s", r.out)
		}
		got = f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "python3", "-c", deep, "chmod")
		if r := f.exec("python3", "-c", deep, "look"); !strings.Contains(r.out, "mode 600") {
			t.Errorf("ESCAPE: a chmod of a file outside the writable paths whose path is longer than PATH_MAX: %s\n%s", r.out, got.out)
		}
		if r := f.exec("python3", "-c", deep, "chmod"); !strings.Contains(r.out, "mode 666") {
			t.Errorf("without moat the user changes the deep file (or this test cannot fail): %s", r.out)
		}
		// Inode flags (chattr +d, FS_IOC_SETFLAGS) on the victim: refused;
		// on a file of the writable tree: set.
		flags := func(p string) string {
			return `import fcntl, os, struct, sys
fd = os.open("` + p + `", os.O_RDONLY)
f = struct.unpack("i", fcntl.ioctl(fd, 0x80086601, struct.pack("i", 0)))[0]
if len(sys.argv) > 1:
    fcntl.ioctl(fd, 0x40086602, struct.pack("i", f | 0x40))
print("flags", "d" if f & 0x40 else "-")
`
		}
		if r := f.exec("python3", "-c", flags(victim)); r.code == 0 {
			got = f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "python3", "-c", flags(victim), "set")
			if r := f.exec("python3", "-c", flags(victim)); !strings.Contains(r.out, "flags -") {
				t.Errorf("ESCAPE: chattr +d of %s outside the writable paths: %s\n%s", victim, r.out, got.out)
			}
			mine := filepath.Join(f.work, "flags-mine")
			must(t, os.WriteFile(mine, nil, 0o644))
			if r := f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "python3", "-c", flags(mine), "set"); r.code != 0 {
				t.Errorf("chattr +d inside the writable paths must work (exit %d):\n%s", r.code, r.out)
			}
			if r := f.exec("python3", "-c", flags(victim), "set"); r.code != 0 || !strings.Contains(f.exec("python3", "-c", flags(victim)).out, "flags d") {
				t.Errorf("without moat the user sets its own file's flags (or this test cannot fail):\n%s", r.out)
			}
			reset()
			f.exec("chattr", "-d", victim)
		} else {
			t.Logf("inode flags not supported here: %s", r.out)
		}
		inside := filepath.Join(f.work, "script.sh")
		must(t, os.WriteFile(inside, []byte("true\n"), 0o644))
		if r := f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "chmod", "+x", inside); r.code != 0 {
			t.Errorf("chmod +x inside the writable paths must work (exit %d):\n%s", r.code, r.out)
		}
		// A symlink in the writable tree to the file: chmod follows it, so
		// the change is the file's (the check judged the link's own path,
		// in the writable tree, and let it through).
		link := filepath.Join(f.work, "meta-link")
		must(t, os.Symlink(victim, link))
		got = f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "chmod", "666", link)
		if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("ESCAPE: a chmod of a symlink in the writable tree changed %s, where it leads: %v %v\n%s", victim, fi, err, got.out)
		}
		// Through a descriptor the command opened for reading: fchmod.
		fchmod := "import os; fd = os.open('" + victim + "', os.O_RDONLY); os.fchmod(fd, 0o666)"
		got = f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "python3", "-c", fchmod)
		if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("ESCAPE: fchmod of a descriptor opened for reading changed %s: %v %v\n%s", victim, fi, err, got.out)
		}
		if base := f.exec("python3", "-c", fchmod); base.code != 0 {
			t.Errorf("without moat the user's fchmod works (or this test cannot fail):\n%s", base.out)
		}
		reset()
		if base := f.exec("chmod", "666", victim); base.code != 0 {
			t.Errorf("without moat the user changes its own file's mode (or this test cannot fail):\n%s", base.out)
		}
		return
	}
	got := f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "/bin/sh", "-c", script)
	fi, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.ModTime().Year() == 2000 {
		t.Errorf("ESCAPE: as root in the no-namespace tier the command changed %s (mode %o, time %v):\n%s", victim, fi.Mode().Perm(), fi.ModTime(), got.out)
	}
	if !strings.Contains(got.out, "deny file-fchmodat") {
		t.Errorf("the refusal must be reported (exit %d):\n%s", got.code, got.out)
	}
	// moat's own TMPDIR is writable, its files' modes are refused too: the
	// tier says so, and plain writes there still work.
	if r := f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "/bin/sh", "-c", "echo x > $TMPDIR/f && cat $TMPDIR/f"); r.code != 0 {
		t.Errorf("writes in the run's TMPDIR must still work (exit %d):\n%s", r.code, r.out)
	}
	reset()
	base := f.exec("/bin/sh", "-c", script)
	if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o666 {
		t.Errorf("without moat root changes the mode (or this test cannot fail): %v %v\n%s", fi, err, base.out)
	}
}

// Without namespaces the host's /dev and processes are the command's to
// see: it read and wrote other terminals (another session's keystrokes),
// read and wrote the host's shared memory, and lowered the limits of the
// supervisor (its git audit then failed to open anything), of its init
// (processes outlived the run) and of any host process of its uid (found
// by an attack pass). Each must fail under moat and work without it.
func TestNoUsernsHostDevicesAndProcesses(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	// A terminal of the host's, this user's.
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts := fmt.Sprintf("/dev/pts/%d", n)
	// Shared memory of the host's, this user's.
	shm := fmt.Sprintf("/dev/shm/moat-test-%d", time.Now().UnixNano())
	must(t, os.WriteFile(shm, []byte(secretText), 0o600))
	t.Cleanup(func() { os.Remove(shm) })
	// A process of the host's, this user's.
	victim := exec.Command("sleep", "30")
	must(t, victim.Start())
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	pid := strconv.Itoa(victim.Process.Pid)

	script := "timeout 2 head -c 1 " + pts + " </dev/null >/dev/null 2>&1; [ $? -eq 124 ] && echo ESCAPED-PTS-READ; " +
		"echo typed > " + pts + " && echo ESCAPED-PTS-WRITE; " +
		"grep -q " + secretText + " " + shm + " && echo ESCAPED-SHM-READ; " +
		"echo x >> " + shm + " && echo ESCAPED-SHM-WRITE; " +
		"prlimit --pid " + pid + " --nofile=3:3 && echo ESCAPED-PRLIMIT; " +
		"prlimit --nofile=512:512 && echo OWN-LIMIT-OK"
	got := f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "/bin/sh", "-c", script)
	if strings.Contains(got.out, "ESCAPED") {
		t.Errorf("ESCAPE in the no-namespace tier:\n%s", got.out)
	}
	if !strings.Contains(got.out, "OWN-LIMIT-OK") {
		t.Errorf("the command must still set its own limits (exit %d):\n%s", got.code, got.out)
	}
	if b, _ := os.ReadFile("/proc/" + pid + "/limits"); !strings.Contains(string(b), "Max open files") || strings.Contains(string(b), "Max open files            3 ") {
		t.Errorf("the host process's limit changed:\n%s", b)
	}
	base := f.exec("/bin/sh", "-c", script)
	for _, want := range []string{"ESCAPED-PTS-READ", "ESCAPED-PTS-WRITE", "ESCAPED-SHM-READ", "ESCAPED-SHM-WRITE", "ESCAPED-PRLIMIT"} {
		if !strings.Contains(base.out, want) {
			t.Errorf("without moat the same user gets %s (or this test cannot fail):\n%s", want, base.out)
		}
	}
}

// A project's allowLocalBinding, harmless in the sandbox's own network
// namespace, let a repository's server listen on the host's ports in the
// no-namespace tier (found by an attack pass): moat refuses it there; the
// user's own settings may still allow it.
func TestNoUsernsProjectLocalBinding(t *testing.T) {
	f := makeFixture(t)
	must(t, os.MkdirAll(filepath.Join(f.work, ".claude"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.work, ".claude", "settings.json"), []byte(`{"sandbox":{"network":{"allowLocalBinding":true}}}`), 0o644))
	got := f.noUserns(moatBin, "run", "--best-effort", "--", self, "listen", "127.0.0.1:0")
	if got.escaped() {
		t.Fatalf("ESCAPE: a project's allowLocalBinding listened on the host's network:\n%s", got.out)
	}
	if got.code != 125 || !strings.Contains(got.out, "allowLocalBinding comes from the project's settings") {
		t.Fatalf("want moat to refuse the project's allowLocalBinding here (exit 125), got %d:\n%s", got.code, got.out)
	}
	// The user's own settings may.
	must(t, os.Remove(filepath.Join(f.work, ".claude", "settings.json")))
	must(t, os.MkdirAll(filepath.Join(f.home, ".claude"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.home, ".claude", "settings.json"), []byte(`{"sandbox":{"network":{"allowLocalBinding":true}}}`), 0o644))
	if got := f.noUserns(moatBin, "run", "--best-effort", "--", self, "listen", "127.0.0.1:0"); strings.Contains(got.out, "comes from the project") {
		t.Fatalf("the user's own allowLocalBinding was refused:\n%s", got.out)
	}
}
