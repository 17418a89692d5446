//go:build linux

package main

// Security review of POST /v1/run (moat run through moatd): attacks by one
// unprivileged user on the root daemon. Each test FAILS while the issue it
// names is present. The attacker is a dedicated user (moatd-attack): some
// attacks signal every process of the attacking user.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// attackUser is a user of its own for the attacks, with a directory under
// the fixture's.
func attackUser(t *testing.T, dir string) *daemonUser {
	t.Helper()
	u := lookupDaemonUser(t, "moatd-attack", true)
	u.dir = filepath.Join(dir, u.name)
	if err := os.Mkdir(u.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(u.dir, u.uid, u.gid)
	t.Cleanup(func() { killUserProcs(u.uid) })
	return u
}

// killUserProcs SIGKILLs (and continues) every process of uid: only the
// dedicated attack user's.
func killUserProcs(uid int) {
	for _, pid := range userProcs(uid) {
		syscall.Kill(pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGCONT)
	}
}

func userProcs(uid int) []int {
	var out []int
	es, _ := os.ReadDir("/proc")
	for _, e := range es {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if procField(pid, "Uid") == strconv.Itoa(uid) {
			out = append(out, pid)
		}
	}
	return out
}

// procField is the first value of a /proc/PID/status field.
func procField(pid int, name string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == name {
			if f := strings.Fields(v); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

// stage2Of waits for a moat-init child of the daemon (the launch started).
func stage2Of(t *testing.T, daemonPid int) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		es, _ := os.ReadDir("/proc")
		for _, e := range es {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cl, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if string(cl) == "moat-init\x00" && procField(pid, "PPid") == strconv.Itoa(daemonPid) {
				return pid
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("no stage 2 started")
	return 0
}

// flockHolder reports whether pid holds a (granted) flock on file.
func flockHolder(file string, pid int) bool {
	var st unix.Stat_t
	if unix.Stat(file, &st) != nil {
		return false
	}
	b, _ := os.ReadFile("/proc/locks")
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || f[1] == "->" || f[1] != "FLOCK" {
			continue
		}
		if f[4] == strconv.Itoa(pid) && strings.HasSuffix(f[5], ":"+strconv.FormatUint(st.Ino, 10)) {
			return true
		}
	}
	return false
}

// TestDaemonAttackStoppedSandboxBlocksEveryone: the journal's global lock
// (STATE/journal/journal.lock, one for every user of the daemon) is held
// from a run's first placeholder until its stage 2 says its mounts are
// done. Stage 2 runs as the client's uid by then, so the client can
// SIGSTOP it (kill -STOP -1): the lock stays held for as long as the
// attacker likes, and every other user's run or session that needs a
// placeholder (any --write tree, the tool cache) hangs. Without moatd the
// attacker cannot stop another user's processes at all.
func TestDaemonAttackStoppedSandboxBlocksEveryone(t *testing.T) {
	d, _, victim, dir := daemonFixture(t)
	att := attackUser(t, dir)
	// moatd keeps a journal per client uid: the attacker's stopped
	// sandbox holds its own journal's lock, and no one else's. (One
	// journal for every user was the flaw: its lock is looked at too.)
	locks := []string{filepath.Join(dir, "state", "journal", "uid-"+strconv.Itoa(att.uid), "journal.lock"),
		filepath.Join(dir, "state", "journal", "journal.lock")}
	lock := ""
	daemonPid := d.cmd.Process.Pid
	var cli *exec.Cmd
	held := false
	for try := 0; try < 20 && !held; try++ {
		marker := testutil.SleepMarker(300)
		cli = moatRunAs(t, d, att, att.dir, "", nil, "--write", ".", "--", "sleep", marker)
		if err := cli.Start(); err != nil {
			t.Fatal(err)
		}
		stage2Of(t, daemonPid) // the client's descriptors are in: its part is done
		// What the attacker runs, as itself: stop all of its processes.
		stopper := exec.Command("bash", "-c", "while [ $SECONDS -lt 3 ]; do kill -STOP -1 2>/dev/null; done")
		stopper.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(att.uid), Gid: uint32(att.gid), Groups: []uint32{uint32(att.gid)}}}
		if out, err := stopper.CombinedOutput(); err != nil {
			t.Fatalf("the stopper: %v\n%s", err, out)
		}
		for _, l := range locks {
			if flockHolder(l, daemonPid) {
				held, lock = true, l
			}
		}
		if !held {
			t.Logf("try %d: stage 2 stopped after its mounts; again", try)
			killUserProcs(att.uid)
			cli.Wait()
		}
	}
	if !held {
		t.Skip("could not stop a stage 2 before its mounts in 20 tries")
	}
	defer func() {
		killUserProcs(att.uid)
		cli.Wait()
	}()
	t.Logf("the daemon holds %s for %s's stopped sandbox", lock, att.name)

	// Another user's run, in a directory of its own.
	vc := moatRunAs(t, d, victim, victim.dir, "", nil, "--write", ".", "--", "echo", "victim-ran")
	var out bytes.Buffer
	vc.Stdout, vc.Stderr = &out, &out
	if err := vc.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- vc.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "victim-ran") {
			t.Errorf("%s's run: %v\n%s", victim.name, err, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Errorf("%s's moat run hung for 20 s: %s (another user) stopped its own sandbox while the daemon held the journal's global lock for it", victim.name, att.name)
		killUserProcs(att.uid) // the attacker lets go: the victim runs
		select {
		case <-done:
			t.Logf("once %s's processes were gone, %s's run ended: %s", att.name, victim.name, strings.TrimSpace(out.String()))
		case <-time.After(30 * time.Second):
			vc.Process.Kill()
			<-done
		}
	}
}

// daemonFDsOn counts the daemon's descriptors open on file (a terminal).
func daemonFDsOn(pid int, file string) int {
	n := 0
	es, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, e := range es {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); err == nil && l == file {
			n++
		}
	}
	return n
}

// threadsInWrite counts the daemon's threads blocked in write(2).
func threadsInWrite(pid int) int {
	n := 0
	es, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range es {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/syscall", pid, e.Name()))
		if err == nil && strings.HasPrefix(string(b), "1 ") {
			n++
		}
	}
	return n
}

// TestDaemonAttackTerminalRelayLeaksThreads: with a terminal as stdin, the
// daemon relays the sandbox's pty to the client's terminal with a blocking
// write (the client's descriptor is blocking: client.RunAttached calls
// Fd()). A client whose terminal is never read (a pty whose master it
// holds and does not read) leaves that write blocked after the run has
// ended and its slot is free again: each run leaks one OS thread and one
// descriptor in the daemon, without bound (Go aborts the whole daemon at
// 10,000 threads; before that its RLIMIT_NOFILE runs out).
func TestDaemonAttackTerminalRelayLeaksThreads(t *testing.T) {
	d, _, _, dir := daemonFixture(t)
	att := attackUser(t, dir)
	master, slave := testutil.OpenPTY(t)
	defer master.Close() // never read until the end
	defer slave.Close()
	pts, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", slave.Fd()))
	daemonPid := d.cmd.Process.Pid
	const runs = 6
	for i := 0; i < runs; i++ {
		cli := exec.Command(moatBin(t), "run", "--", "head", "-c", "1000000", "/dev/zero")
		cli.Dir = att.dir
		cli.Env = clientEnv(att.dir, "MOAT_DAEMON_SOCKET="+d.sock, "MOAT_DAEMON=required")
		cli.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(att.uid), Gid: uint32(att.gid), Groups: []uint32{uint32(att.gid)}}}
		// stderr elsewhere: the CLI's own note would block on the full terminal.
		cli.Stdin, cli.Stdout, cli.Stderr = slave, slave, nil
		if err := cli.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // the output fills the terminal
		cli.Process.Kill()                  // the connection closes: the run ends
		cli.Wait()
	}
	time.Sleep(5 * time.Second) // the daemon's relay waits 2 s for the output, then gives up
	fds, writers := daemonFDsOn(daemonPid, pts), threadsInWrite(daemonPid)
	if fds > 0 || writers > 0 {
		t.Errorf("%d runs ended (clients gone, slots free), yet the daemon holds %d descriptors of the client's terminal %s and has %d threads blocked in write(2): one leaked per run", runs, fds, pts, writers)
	}
}

// TestDaemonAttackConcurrentSessionsPassPerUserLimit: reserve counts a
// user's open sessions, not those being opened (pending): requests sent at
// once all pass the check, so one user opens more than
// --max-sessions-per-user, up to --max-sessions, and every other user then
// gets 429 (sessions and runs alike).
func TestDaemonAttackConcurrentSessionsPassPerUserLimit(t *testing.T) {
	d, _, _, dir := daemonFixture(t)
	att := attackUser(t, dir)
	const n = 40
	body := fmt.Sprintf(`{"cwd":%q}`, att.dir)
	codes := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _, _ := att.as("curl", "-sS", "--max-time", "120", "--unix-socket", d.sock, "-X", "POST", "-o", "/dev/null", "-w", "%{http_code}",
				"-H", "Content-Type: application/json", "--data-binary", body, "http://moatd/v1/sessions")
			codes[i] = out
		}()
	}
	wg.Wait()
	created := 0
	for _, c := range codes {
		if c == "201" {
			created++
		}
	}
	if created > 16 {
		t.Errorf("one user opened %d sessions with %d requests at once; --max-sessions-per-user is 16", created, n)
	}
}

// TestDaemonAttackGoModCacheStatOracle: with the tool cache on, the daemon
// stats $GOMODCACHE/cache/download as root, GOMODCACHE taken from the
// client's environment, and puts file://... in the command's GOPROXY when
// it is a directory. Through a symlink the client learns whether any path
// is a directory, where it cannot look itself.
func TestDaemonAttackGoModCacheStatOracle(t *testing.T) {
	d, _, _, dir := daemonFixture(t)
	att := attackUser(t, dir)
	private := filepath.Join(dir, "root-only")
	if err := os.MkdirAll(filepath.Join(private, "hidden-project"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(private, 0o700)
	if _, _, err := att.as("stat", filepath.Join(private, "hidden-project")); err == nil {
		t.Fatalf("%s can stat %s without moat: the attack proves nothing", att.name, private)
	}
	probe := func(target string) string {
		t.Helper()
		cache := filepath.Join(att.dir, "probe", "cache")
		os.RemoveAll(filepath.Join(att.dir, "probe"))
		if err := os.MkdirAll(cache, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(filepath.Join(att.dir, "probe"), att.uid, att.gid)
		os.Chown(cache, att.uid, att.gid)
		link := filepath.Join(cache, "download")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		os.Lchown(link, att.uid, att.gid)
		cmd := moatRunAs(t, d, att, att.dir, "", []string{"MOAT_DAEMON=required", "GOMODCACHE=" + filepath.Join(att.dir, "probe"), "GOPROXY=off"},
			"--", "sh", "-c", "echo \"$GOPROXY\"")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("moat run: %v\n%s", err, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	there := probe(filepath.Join(private, "hidden-project"))
	missing := probe(filepath.Join(private, "no-such-project"))
	if there != missing {
		t.Errorf("GOPROXY in the sandbox tells a path %s cannot stat from one that does not exist (root's stat through the client's GOMODCACHE): %q vs %q", att.name, there, missing)
	}
}

// TestDaemonAttackFIFOHangsRunForever: while planning, the daemon reads as
// root a .git pointer file's target's commondir, a path the client names,
// without checking it is a regular file: a FIFO there blocks root's open(2)
// for ever. The run never ends, not even when the client goes away: its
// slot, a daemon thread and its descriptors stay taken until the daemon
// restarts (16 such runs and the user can never run again; the daemon's
// --max-sessions pool shrinks for everyone).
func TestDaemonAttackFIFOHangsRunForever(t *testing.T) {
	d, _, _, dir := daemonFixture(t)
	att := attackUser(t, dir)
	proj := filepath.Join(att.dir, "proj")
	gd := filepath.Join(att.dir, "gd")
	fifo := filepath.Join(gd, "commondir")
	if _, stderr, err := att.as("sh", "-c", fmt.Sprintf("mkdir -p %s %s && echo 'gitdir: %s' > %s/.git && mkfifo %s", proj, gd, gd, proj, fifo)); err != nil {
		t.Fatalf("setup: %v %s", err, stderr)
	}
	defer func() {
		// Let the daemon's open(2) go, whatever happened.
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			unix.Close(fd)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli := exec.CommandContext(ctx, moatBin(t), "run", "--write", proj, "--", "true")
	cli.Dir = att.dir
	cli.Env = clientEnv(att.dir, "MOAT_DAEMON_SOCKET="+d.sock, "MOAT_DAEMON=required")
	cli.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(att.uid), Gid: uint32(att.gid), Groups: []uint32{uint32(att.gid)}}}
	cli.WaitDelay = 2 * time.Second // the daemon holds the client's stdout and stderr
	out, _ := cli.CombinedOutput()
	if ctx.Err() == nil {
		t.Logf("the run ended: %s", out)
		return
	}
	time.Sleep(3 * time.Second) // the client is gone: its connection closed
	stuck := 0
	es, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", d.cmd.Process.Pid))
	for _, e := range es {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", d.cmd.Process.Pid, e.Name())); err == nil && string(b) == "wait_for_partner" {
			stuck++
		}
	}
	if stuck > 0 {
		t.Errorf("the client went away 3 s ago, yet %d daemon thread(s) still wait, as root, in open(2) of %s's FIFO %s: the run (and its slot) never ends", stuck, att.name, fifo)
	}
}

// TestDaemonAttackDecideFollowsLinksAsRoot: the permission engine follows
// symbolic links to judge paths, and under moatd it did so as root: a
// client's link into a directory only root may search came back in the
// decision's reason with its target ("l is a symbolic link to ..."), and
// so did another user's /proc/PID/cwd (found by an attack pass). The
// decision, and a session's gate, now follow links as the client.
func TestDaemonAttackDecideFollowsLinksAsRoot(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	private := filepath.Join(dir, "root-only")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	const marker = "ROOT-ONLY-LINK-TARGET-4711"
	target := filepath.Join(dir, marker)
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(private, "lnk")); err != nil {
		t.Fatal(err)
	}
	if out, errb, err := u1.as("readlink", filepath.Join(private, "lnk")); err == nil || strings.Contains(out, marker) {
		t.Fatalf("the client reads the link itself (or this test cannot fail): %q %q %v", out, errb, err)
	}
	link := filepath.Join(u1.dir, "l")
	if _, errb, err := u1.as("ln", "-s", filepath.Join(private, "lnk"), link); err != nil {
		t.Fatalf("ln: %v %s", err, errb)
	}
	body := fmt.Sprintf(`{"command":"cat l","cwd":%q}`, u1.dir)
	code, resp := u1.call(t, d.sock, "POST", "/v1/decide", body)
	if code != 200 {
		t.Fatalf("decide: %d %s", code, resp)
	}
	if strings.Contains(resp, marker) {
		t.Errorf("ESCAPE: moatd told the client where a link it cannot read leads: %s", resp)
	}
	// Another user's process: /proc/PID/cwd is checked by ptrace access,
	// which root's CAP_SYS_PTRACE passed on the client's thread too.
	sleeper := exec.Command("sleep", "60")
	sleeper.Dir = private
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	cwd := fmt.Sprintf("/proc/%d/cwd", sleeper.Process.Pid)
	if out, _, err := u1.as("readlink", cwd); err == nil || strings.Contains(out, "root-only") {
		t.Fatalf("the client reads root's process's cwd itself (or this test cannot fail): %q %v", out, err)
	}
	if _, errb, err := u1.as("ln", "-s", cwd, filepath.Join(u1.dir, "c")); err != nil {
		t.Fatalf("ln: %v %s", err, errb)
	}
	code, resp = u1.call(t, d.sock, "POST", "/v1/decide", fmt.Sprintf(`{"command":"cat c/x","cwd":%q}`, u1.dir))
	if code != 200 || strings.Contains(resp, "root-only") {
		t.Errorf("ESCAPE: moatd told the client another user's process's working directory: %d %s", code, resp)
	}
}
