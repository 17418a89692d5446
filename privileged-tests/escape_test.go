//go:build linux

package privtests

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// Reading a denied file, by every route.
func TestReadDenied(t *testing.T) {
	cases := []struct {
		name string
		args func(f *fixture) []string
	}{
		{"direct", func(f *fixture) []string { return []string{"read", f.secret} }},
		{"default secret ~/.ssh", func(f *fixture) []string { return []string{"read", f.home + "/.ssh/id_ed25519"} }},
		{"denied directory", func(f *fixture) []string { return []string{"read", f.outside + "/secretdir/key"} }},
		{"denied directory listing", func(f *fixture) []string { return []string{"list", f.outside + "/secretdir"} }},
		{"symlink", func(f *fixture) []string { return []string{"symlink-read", f.secret, f.work + "/link"} }},
		{"hardlink", func(f *fixture) []string { return []string{"hardlink-read", f.secret, f.outside + "/hl"} }},
		{"dotdot", func(f *fixture) []string { return []string{"read", f.work + "/../outside/./secret.txt"} }},
		{"/proc/self/root", func(f *fixture) []string { return []string{"read", "/proc/self/root" + f.secret} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			args := tc.args(f)
			f.attack(args, func() {
				os.Remove(f.work + "/link")
				os.Remove(f.outside + "/hl")
			})
		})
	}
}

// /proc/1/root: in the sandbox pid 1 is moat's init, whose root is the
// host's. Without moat the same attack reads a same-user process's root.
func TestReadThroughInitRoot(t *testing.T) {
	f := newFixture(t)
	got := f.sandboxed("read", "/proc/1/root"+f.secret)
	if got.escaped() {
		t.Fatalf("ESCAPE: read the secret through /proc/1/root:\n%s", got.out)
	}
	got = f.sandboxed("read", "/proc/1/root/etc/hostname")
	if got.escaped() {
		t.Fatalf("ESCAPE: init's root is reachable:\n%s", got.out)
	}
	sleeper := exec.Command("sleep", "30")
	must(t, sleeper.Start())
	defer sleeper.Process.Kill()
	if base := f.direct("read", "/proc/"+strconv.Itoa(sleeper.Process.Pid)+"/root"+f.secret); !base.escaped() {
		t.Fatalf("a same-user process's root must be readable without moat:\n%s", base.out)
	}
}

// Writing outside the writable paths.
func TestWriteOutside(t *testing.T) {
	cases := []struct {
		name string
		args func(f *fixture) []string
	}{
		{"direct", func(f *fixture) []string { return []string{"write", f.target, "pwned"} }},
		{"planted symlink", func(f *fixture) []string { return []string{"symlink-write", f.target, f.work + "/out", "pwned"} }},
		{"rename over", func(f *fixture) []string { return []string{"rename-over", f.work + "/evil", f.target} }},
		{"hard link over", func(f *fixture) []string { return []string{"link-over", f.work + "/evil", f.outside + "/new"} }},
		{"/proc magic link", func(f *fixture) []string { return []string{"magic-write", f.target, "pwned"} }},
		{"new file next to target", func(f *fixture) []string { return []string{"write", f.outside + "/new", "pwned"} }},
		{"dotdot", func(f *fixture) []string { return []string{"write", f.work + "/../outside/target.txt", "pwned"} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			reset := func() {
				must(t, os.WriteFile(f.target, []byte(targetText+"\n"), 0o644))
				os.Remove(f.work + "/out")
				os.Remove(f.work + "/evil")
				os.Remove(f.outside + "/new")
			}
			f.attack(tc.args(f), func() {
				if got := readFile(t, f.target); got != targetText+"\n" {
					// Only the direct run may change it.
					if strings.Contains(got, "pwned") || strings.Contains(got, "evil") {
						t.Logf("target after a run: %q", got)
					}
				}
				reset()
			})
		})
	}
}

// The sandbox can write its own writable paths (so the tests above are not
// passing because nothing is writable).
func TestWriteAllowed(t *testing.T) {
	f := newFixture(t)
	got := f.sandboxed("write", f.work+"/ok.txt", "fine")
	if !got.escaped() {
		t.Fatalf("writing the working directory must work:\n%s", got.out)
	}
	if readFile(t, f.work+"/ok.txt") != "fine" {
		t.Fatal("the write did not reach the host")
	}
}

// Files that would let the command escape later are never writable,
// whether they exist or not.
func TestMandatoryProtections(t *testing.T) {
	cases := []struct {
		name  string
		args  func(f *fixture) []string
		check string // path that must not change under moat
	}{
		{".bashrc (absent, in home)", func(f *fixture) []string { return []string{"write", f.home + "/.bashrc", "evil"} }, ".bashrc"},
		{".git/hooks/pre-commit", func(f *fixture) []string {
			return []string{"write", f.work + "/.git/hooks/pre-commit", "#!/bin/sh\nevil"}
		}, ""},
		{".git/config", func(f *fixture) []string { return []string{"write", f.work + "/.git/config", "[core]\nfsmonitor=evil"} }, ""},
		{".git/config rename over", func(f *fixture) []string { return []string{"rename-over", f.work + "/cfg", f.work + "/.git/config"} }, ""},
		{".git/config hard link", func(f *fixture) []string {
			return []string{"hardlink-write", f.work + "/.git/config", f.work + "/cfg-link", "\n[core]\nfsmonitor=evil\n"}
		}, ""},
		{".git/hooks hard link", func(f *fixture) []string {
			return []string{"hardlink-write", f.work + "/.git/hooks/pre-commit.sample", f.work + "/cfg-link", "\nevil\n"}
		}, ""},
		{".git/commondir (absent)", func(f *fixture) []string { return []string{"write", f.work + "/.git/commondir", f.work + "/evil"} }, ""},
		{".git/modules (absent)", func(f *fixture) []string {
			return []string{"mkdir-write", f.work + "/.git/modules/sub/hooks", "post-checkout", "evil"}
		}, ""},
		{".vscode (absent)", func(f *fixture) []string { return []string{"mkdir-write", f.work + "/.vscode", "tasks.json", "{}"} }, ""},
		{".claude (absent)", func(f *fixture) []string {
			return []string{"mkdir-write", f.work + "/.claude", "settings.json", `{"hooks":{}}`}
		}, ""},
		{".mcp.json (absent)", func(f *fixture) []string { return []string{"write", f.work + "/.mcp.json", "{}"} }, ""},
		{"move .git aside", func(f *fixture) []string {
			return []string{"move-dir", f.work + "/.git", f.work + "/.git-aside", "hooks/pre-commit", "evil"}
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			// Home writable for the .bashrc case.
			settings := f.writeSettings(map[string]any{"allowWrite": []string{f.work, f.home}})
			snapshot := snapshotTree(t, f.work)
			got := f.sandboxedWith(settings, tc.args(f)...)
			if got.escaped() {
				t.Fatalf("ESCAPE under moat: %s", got.out)
			}
			if !strings.Contains(got.out, "blocked:") {
				t.Fatalf("the attack did not run under moat:\n%s", got.out)
			}
			if after := snapshotTree(t, f.work); after != snapshot {
				t.Fatalf("the working tree changed under moat (or a placeholder was left):\nbefore:\n%s\nafter:\n%s", snapshot, after)
			}
			if _, err := os.Lstat(f.home + "/.bashrc"); err == nil {
				t.Fatalf("a placeholder .bashrc was left in the home directory")
			}
			base := f.direct(tc.args(f)...)
			if !base.escaped() {
				t.Fatalf("the attack must work without moat:\n%s", base.out)
			}
		})
	}
}

// scratch are files the attacks make for themselves in the working
// directory (which is writable): not a change to protect against.
var scratch = map[string]bool{"cfg": true, "cfg-link": true, "evil": true}

// snapshotTree lists a tree's entries and file hashes (not .git/objects).
func snapshotTree(t testing.TB, root string) string {
	var b strings.Builder
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(rel, ".git/objects") || strings.HasPrefix(rel, ".git/logs") {
			return nil
		}
		if scratch[rel] {
			return nil
		}
		b.WriteString(rel + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			b.WriteString(fmt.Sprintf(" %x", sha256.Sum256(c)))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

// The nested user namespace + pivot_root + detach trick against a
// protected .git/config (srt 0.0.78 was vulnerable).
func TestNestedUserNamespaceReplace(t *testing.T) {
	f := newFixture(t)
	cfg := f.work + "/.git/config"
	orig := readFile(t, cfg)
	f.attack([]string{"userns-replace", f.work + "/.git"}, func() {
		if got := readFile(t, cfg); got != orig && !strings.Contains(got, "pwned") {
			t.Logf("config: %q", got)
		}
		os.Remove(f.work + "/.git/config.aside")
		must(t, os.WriteFile(cfg, []byte(orig), 0o644))
	})
	if readFile(t, cfg) != orig {
		t.Fatal("config not restored")
	}
}

func TestNoNewUserNamespace(t *testing.T) {
	f := newFixture(t)
	f.attack([]string{"unshare-user"}, nil)
}

// Other processes of the same user: invisible and unreachable.
func TestHostProcesses(t *testing.T) {
	for _, attack := range []string{"ptrace", "kill", "environ"} {
		t.Run(attack, func(t *testing.T) {
			f := newFixture(t)
			hostProcessAttack(t, f, f.sandboxed, attack)
		})
	}
}

// hostProcessAttack starts a same-user process and attacks it with the
// sandboxed run (which must fail, leaving it alive) and without moat.
func hostProcessAttack(t *testing.T, f *fixture, sandboxed func(...string) result, attack string) {
	t.Helper()
	c := exec.Command("sleep", "60")
	c.Env = []string{"MOAT_MARKER=target-env-7c6b"}
	must(t, c.Start())
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	args := []string{attack, strconv.Itoa(c.Process.Pid), "MOAT_MARKER"}
	if got := sandboxed(args...); got.escaped() {
		t.Fatalf("ESCAPE under moat: %s", got.out)
	}
	if err := c.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the target died under moat's attack: %v", err)
	}
	if attack == "ptrace" && ptraceScope() > 0 && os.Geteuid() != 0 {
		testutil.Unavailable(t, "yama ptrace_scope > 0: the direct attack cannot work here")
	}
	if base := f.direct(args...); !base.escaped() {
		t.Fatalf("the attack must work without moat: %s", base.out)
	}
}

func ptraceScope() int {
	b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// TIOCSTI: a command must not type into the caller's terminal, whether its
// stdin is that terminal (moat gives it a pty of its own) or only its stdout.
func TestTIOCSTI(t *testing.T) {
	coldRunsOnly(t)
	for _, tc := range []struct {
		name  string
		stdin bool // the terminal is stdin too
		fd    string
	}{{"stdin is the terminal", true, "0"}, {"stdout is the terminal", false, "1"}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			run := func(bin string, args ...string) result {
				master, slave := openPTY(t)
				defer master.Close()
				cmd := exec.Command(bin, args...)
				cmd.Dir, cmd.Env = f.work, f.env()
				cmd.Stdout, cmd.Stderr = slave, slave
				cmd.Stdin = slave
				if !tc.stdin {
					cmd.Stdin = nil
				}
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1}
				out, err := runOnPTY(cmd, master, slave)
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
				return result{code: code, out: out}
			}
			attack := "tiocsti"
			if tc.fd == "1" {
				attack = "tiocsti-ctty-out"
			}
			if got := run(moatBin, "run", "--settings", f.settings, "--", self, attack, tc.fd); got.escaped() {
				t.Fatalf("ESCAPE under moat: %s", got.out)
			} else if !strings.Contains(got.out, "blocked:") {
				t.Fatalf("the attack did not run under moat (exit %d): %q", got.code, got.out)
			}
			if base := run(self, attack, tc.fd); !base.escaped() {
				if strings.Contains(base.out, "input/output error") {
					testutil.Unavailable(t, "TIOCSTI is disabled on this kernel (dev.tty.legacy_tiocsti=0): %s", base.out)
				}
				t.Fatalf("the attack must work without moat: %q", base.out)
			}
		})
	}
}

// TIOCSETD: a command must not set a terminal's line discipline, which on
// a kernel with dev.tty.ldisc_autoload=1 loads the discipline's module (the
// kernel's attack surface grows by code a build never needs). The pty is one
// of the sandbox's own devpts.
func TestLineDisciplineRefused(t *testing.T) {
	if b, err := os.ReadFile("/proc/tty/ldiscs"); err != nil || !strings.Contains(string(b), "n_null") {
		testutil.Unavailable(t, "this kernel has no N_NULL line discipline to set (/proc/tty/ldiscs: %q %v)", b, err)
	}
	f := newFixture(t)
	f.attack([]string{"tiocsetd"}, nil)
}

// modify_ldt: x86's local descriptor table, for DOS and Windows emulators,
// is code with a history of privilege escalations that a build never calls.
func TestModifyLDTRefused(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		testutil.Unavailable(t, "modify_ldt is x86's")
	}
	f := newFixture(t)
	f.attack([]string{"modify_ldt"}, nil)
}

// fanotify: in the no-namespace tier Landlock does not govern
// fanotify_mark, and a command saw, by name, which files of a denyRead
// directory the user's processes opened and wrote. Refused in every tier.
func TestFanotifyRefused(t *testing.T) {
	f := newFixture(t)
	f.attack([]string{"fanotify"}, nil)
	if landlockABI() > 0 && !viaSession() {
		t.Run("no-namespace tier", func(t *testing.T) {
			f := makeFixture(t)
			f.attackWith(f.bestEffort, []string{"fanotify"}, nil)
		})
	}
}

func TestIOURing(t *testing.T) {
	if b, _ := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); strings.TrimSpace(string(b)) == "2" {
		testutil.Unavailable(t, "io_uring is disabled on this kernel")
	}
	f := newFixture(t)
	f.attack([]string{"io_uring"}, nil)
}

// A daemon left behind with setsid and a double fork dies with the command.
func TestNoDaemonOutlivesTheCommand(t *testing.T) {
	f := newFixture(t)
	pidfile := f.work + "/daemon.pid"
	marker := testutil.SleepMarker(300)
	got := f.sandboxed("daemon", pidfile, marker)
	if !got.escaped() {
		t.Fatalf("the daemon must start inside the sandbox:\n%s", got.out)
	}
	// The pid written inside is the sandbox's; find the daemon by its
	// command line instead.
	if pids := testutil.Procs("sleep "+marker, os.Getuid()); len(pids) > 0 {
		t.Fatalf("ESCAPE: a process started under moat outlived it: %v", pids)
	}
	os.Remove(pidfile)
	base := f.direct("daemon", pidfile, testutil.SleepMarker(300))
	if !base.escaped() {
		t.Fatalf("the attack must work without moat: %s", base.out)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(readFile(t, pidfile)))
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		t.Fatalf("without moat the daemon must survive (pid %d)", pid)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// No capabilities inside, also as root, also after exec.
func TestNoCapabilities(t *testing.T) {
	f := newFixture(t)
	if got := f.sandboxed("caps"); got.escaped() {
		t.Fatalf("ESCAPE: capabilities inside the sandbox: %s", got.out)
	}
	if os.Geteuid() != 0 {
		t.Skip("without moat an unprivileged user has no capabilities to compare with")
	}
	if base := f.direct("caps"); !base.escaped() {
		t.Fatalf("root without moat must have capabilities: %s", base.out)
	}
}

// No descriptor beyond stdio reaches the command.
func TestNoInheritedDescriptors(t *testing.T) {
	f := newFixture(t)
	leak, err := os.Open(f.target)
	must(t, err)
	defer leak.Close()
	run := func(bin string, args ...string) result {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = f.work, f.env()
		cmd.ExtraFiles = []*os.File{leak}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return result{code: code, out: string(out)}
	}
	if got := run(moatBin, "run", "--settings", f.settings, "--", self, "fds", f.target); got.escaped() {
		t.Fatalf("ESCAPE: the command inherited descriptors: %s", got.out)
	}
	if base := run(self, "fds", f.target); !base.escaped() {
		t.Fatalf("without moat the descriptor must be inherited: %s", base.out)
	}
}

// Nothing moat made is left in the tree, and git sees nothing during a run.
func TestNoGhostFiles(t *testing.T) {
	f := newFixture(t)
	before := snapshotTree(t, f.work)
	got := f.exec(moatBin, "run", "--settings", f.settings, "--", "git", "status", "--porcelain", "--untracked-files=all")
	if got.code != 0 {
		t.Fatalf("git status inside: %d\n%s", got.code, got.out)
	}
	if strings.TrimSpace(strings.Split(got.out, "<sandbox_violations>")[0]) != "" {
		t.Fatalf("git status inside the sandbox shows what moat made:\n%s", got.out)
	}
	if after := snapshotTree(t, f.work); after != before {
		t.Fatalf("moat left files behind:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// The caller's kernel keyrings are not reachable.
func TestKeyrings(t *testing.T) {
	f := newFixture(t)
	// Keyrings hang off a thread's credentials: add the key and start the
	// attacks from one OS thread, so the children inherit it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	desc := fmt.Sprintf("moat-test-%d", os.Getpid())
	id, err := unix.AddKey("user", desc, []byte(secretText), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		testutil.Unavailable(t, "cannot add a key to the session keyring: %v", err)
	}
	defer unix.KeyctlInt(unix.KEYCTL_REVOKE, id, 0, 0, 0)
	f.attack([]string{"keyring", desc}, nil)
}

// No file leases: a lease on a file the command may only read (the user's
// ~/.bashrc, root's /etc/ld.so.cache) held every other process's open of
// it, the host's included, 45 s each (found by attack pass 46).
func TestNoFileLeases(t *testing.T) {
	f := newFixture(t)
	f.attack([]string{"lease", f.target}, nil)
	got := f.sandboxed("lease", f.target)
	if !viaSession() && !strings.Contains(got.out, "F_SETLEASE") {
		t.Errorf("the refused lease must be reported:\n%s", got.out)
	}
	if landlockABI() > 0 && !viaSession() {
		t.Run("no-namespace tier", func(t *testing.T) {
			f := makeFixture(t)
			f.attackWith(f.bestEffort, []string{"lease", f.target}, nil)
		})
	}
}

// A command takes at most half of its user's inotify instances: the kernel
// charges them to the user in every user namespace up to the host's, and
// a command that made them until refused left the user's own programs
// none while it ran (found by attack pass 46).
func TestInotifyInstancesBounded(t *testing.T) {
	f := newFixture(t)
	f.attack([]string{"inotify-half"}, nil)
}

// A command takes at most half of its user's queued signals and POSIX
// timers (RLIMIT_SIGPENDING) and locked System V shared memory
// (RLIMIT_MEMLOCK): the kernel counts them per user, in every user
// namespace up to the host's, and a command that made timers until
// refused left every timer_create and sigqueue of its user's outside,
// root's daemons' as root, EAGAIN while it ran (attack pass 85).
func TestSignalsAndLockedMemoryBounded(t *testing.T) {
	// max keeps the machine usable: half of it is what the attack makes.
	for _, c := range []struct {
		attack   string
		resource int
		max      uint64
	}{{"timers-half", unix.RLIMIT_SIGPENDING, 1 << 18}, {"shmlock-half", unix.RLIMIT_MEMLOCK, 64 << 20}} {
		t.Run(c.attack, func(t *testing.T) {
			var rl unix.Rlimit
			if unix.Getrlimit(c.resource, &rl) != nil || rl.Cur > c.max {
				t.Skipf("the limit is unlimited or above %d, too much to take in a test", c.max)
			}
			args := []string{c.attack, strconv.FormatUint(rl.Cur, 10)}
			f := newFixture(t)
			f.attack(args, nil)
			if landlockABI() > 0 && !viaSession() {
				t.Run("no-namespace tier", func(t *testing.T) {
					f := makeFixture(t)
					f.attackWith(f.bestEffort, args, nil)
				})
			}
		})
	}
}

// Two sandboxes together take at most half of their creator's queued
// signals and POSIX timers: the kernel checks the creator's whole count
// against the limit it had when each sandbox's user namespace was made.
// Under moatd the creator is root, and two sandboxes of an unprivileged
// client, half each, took all of root's: every timer_create and sigqueue
// of root's processes failed while they ran (attack pass 85). Without
// moat two processes of the user take all of its count.
func TestSandboxesTogetherHalfTheSignals(t *testing.T) {
	if viaSession() {
		t.Skip("the first sandbox is a cold run; sessions make theirs the same way")
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_SIGPENDING, &rl) != nil || rl.Cur > 1<<18 {
		t.Skip("the limit is unlimited or too large to take in a test")
	}
	limit := strconv.FormatUint(rl.Cur, 10)
	f := newFixture(t)
	made := func(out string) uint64 {
		_, rest, _ := strings.Cut(out, "made ")
		line, _, _ := strings.Cut(rest, "\n")
		n, err := strconv.ParseUint(line, 10, 64)
		if err != nil {
			t.Fatalf("no count in the attack's output:\n%s", out)
		}
		return n
	}
	// both holds the first run's timers while the second makes its own
	// (the second's release, the work directory, exists: it ends at once).
	both := func(first []string, second func(...string) result) (uint64, uint64) {
		release := filepath.Join(f.work, "release")
		os.Remove(release)
		cmd := exec.Command(first[0], append(first[1:], "timers-hold", limit, release)...)
		cmd.Dir, cmd.Env = f.work, f.env()
		out, err := cmd.StdoutPipe()
		must(t, err)
		cmd.Stderr = cmd.Stdout
		must(t, cmd.Start())
		defer func() {
			os.WriteFile(release, nil, 0o644)
			cmd.Wait()
		}()
		r := bufio.NewReader(out)
		line := ""
		for !strings.HasPrefix(line, "made ") {
			if line, err = r.ReadString('\n'); err != nil {
				t.Fatalf("the first run said no count: %v", err)
			}
		}
		got := second("timers-hold", limit, f.work)
		os.WriteFile(release, nil, 0o644)
		go io.Copy(io.Discard, r)
		return made(line), made(got.out)
	}
	if a, b := both([]string{self}, f.direct); a+b <= rl.Cur/2+1 {
		t.Fatalf("without moat two processes of the user must take more than half of its %s (took %d and %d): the test proves nothing", limit, a, b)
	}
	if a, b := both([]string{moatBin, "run", "--settings", f.settings, "--", self}, f.sandboxed); a+b > rl.Cur/2+1 {
		t.Errorf("ESCAPE: two sandboxes took %d and %d of the user's %s queued signals (more than half)", a, b, limit)
	}
}

// A command starts at most half of its user's processes (RLIMIT_NPROC):
// the kernel checks the user's count on the host, the sandbox's included,
// against the user's limit, and where that was no higher than the
// policy's (RHEL sets 4096 for every user, moat's default), a command
// that forked until refused left the user's shell unable to fork while
// it ran (attack pass 85). The test lowers its own limit to 600 above
// what its user runs now (counted once: the margin leaves room for the
// other suites of the same user that CI runs beside this one). Root is
// exempt from the limit.
func TestForkLeavesTheUserProcesses(t *testing.T) {
	if root() {
		t.Skip("the kernel exempts root from RLIMIT_NPROC (a cgroup holds root's sandbox)")
	}
	tasks := 0
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var uid, threads int
		for _, line := range strings.Split(string(b), "\n") {
			fmt.Sscanf(line, "Uid: %d", &uid)
			fmt.Sscanf(line, "Threads: %d", &threads)
		}
		if uid == os.Getuid() {
			tasks += threads
		}
	}
	if tasks > 200 {
		t.Skipf("this user runs %d tasks: too many to lower its limit for the test", tasks)
	}
	var old unix.Rlimit
	must(t, unix.Getrlimit(unix.RLIMIT_NPROC, &old))
	limit := uint64(tasks) + 600
	if old.Cur <= limit {
		limit = old.Cur
	}
	must(t, unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: limit, Max: old.Max}))
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NPROC, &old) })
	f := newFixture(t)
	f.attack([]string{"fork-half", strconv.FormatUint(limit, 10)}, nil)
}

// Native AIO is not there (io_setup answers ENOSYS): its count of events
// is the machine's (fs.aio-max-nr), and a command took all of it, so that
// every other process's io_setup, root's included, failed with EAGAIN
// while it ran (attack pass 80).
func TestAIOEventsNotTaken(t *testing.T) {
	f := newFixture(t)
	f.attack([]string{"aio-hog"}, nil)
	if landlockABI() > 0 && !viaSession() {
		t.Run("no-namespace tier", func(t *testing.T) {
			f := makeFixture(t)
			f.attackWith(f.bestEffort, []string{"aio-hog"}, nil)
		})
	}
}

// The sandbox's devpts instance holds at most 256 pseudo-terminals: the
// machine's (kernel.pty.max, less kernel.pty.reserve for the host's own
// devpts) are one count for every other instance, and a command opened
// all of them, so that every other sandbox with a terminal, any user's,
// and every container failed to start (attack pass 80). Without moat the
// attack opens the host's own (it stops past half of the shared count).
func TestPseudoTerminalsBounded(t *testing.T) {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil || rl.Max < 2048 {
		t.Skip("the descriptor limit is below the attack's needs")
	}
	f := newFixture(t)
	f.attack([]string{"pty-half"}, nil)
}

// The machine's pool of huge pages (vm.nr_hugepages, reserved for the
// host's databases and VMs) is not the command's: with MAP_HUGETLB a
// command took every page of it, and the host's processes, root's too,
// got none while it ran (attack pass 80). As root the test reserves two
// pages for itself; as a user it needs a pool with free pages.
func TestHugePagesNotTaken(t *testing.T) {
	const knob = "/proc/sys/vm/nr_hugepages"
	if root() {
		old, err := os.ReadFile(knob)
		must(t, err)
		if strings.TrimSpace(string(old)) == "0" {
			if err := os.WriteFile(knob, []byte("2"), 0o644); err != nil {
				testutil.Unavailable(t, "reserve huge pages: %v", err)
			}
			t.Cleanup(func() { os.WriteFile(knob, old, 0o644) })
		}
	}
	free := 0
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "HugePages_Free:" {
			free, _ = strconv.Atoi(f[1])
		}
	}
	if free == 0 {
		t.Skip("no free huge pages in the machine's pool (root reserves them for the test)")
	}
	f := newFixture(t)
	f.attack([]string{"hugetlb-hog"}, nil)
	if landlockABI() > 0 && !viaSession() {
		t.Run("no-namespace tier", func(t *testing.T) {
			f := makeFixture(t)
			f.attackWith(f.bestEffort, []string{"hugetlb-hog"}, nil)
		})
	}
}

// The command gets a terminal of its own when stdin is a terminal, with a
// name that exists inside, and cannot see the caller's.
func TestPTY(t *testing.T) {
	f := newFixture(t)
	master, slave := openPTY(t)
	defer master.Close()
	outer, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", slave.Fd()))
	cmd := exec.Command(moatBin, "run", "--settings", f.settings, "-c", "tty; test -t 0 && test -t 1 && echo both-tty; stty size; ls /dev/pts")
	cmd.Dir, cmd.Env = f.work, f.env()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 111})
	out, err := runOnPTY(cmd, master, slave)
	if err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if !strings.Contains(out, "/dev/pts/0") || !strings.Contains(out, "both-tty") || !strings.Contains(out, "33 111") {
		t.Fatalf("the command's terminal: %q", out)
	}
	if strings.Contains(out, outer+"\r\n") && outer != "/dev/pts/0" {
		t.Fatalf("the caller's terminal %s is visible: %q", outer, out)
	}
}

// A process of the sandbox may not write another's memory through
// /proc/PID/mem (ptrace and process_vm_writev are refused by seccomp, but
// this is an open): a program an allowed command ran rewrote the session
// shell's exit trap, and the next command ran in / with a PATH of its
// choosing (found by an attack pass). Without moat the same user writes
// its child's memory that way.
func TestProcMemNotWritable(t *testing.T) {
	f := newFixture(t)
	f.attack([]string{"procmem"}, nil)
}
