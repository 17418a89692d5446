//go:build linux

package privtests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/moat-sandbox/moat/internal/testutil"
	"golang.org/x/sys/unix"
)

const sysvMarker = "HOST-SYSV-4d3c2b"

func init() {
	// sysv-shm ID: attach the System V shared memory segment ID (a host
	// program's) and read it; escapes when the marker is there.
	attacks["sysv-shm"] = func(a []string) (string, error) {
		id, err := strconv.Atoi(a[0])
		if err != nil {
			return "", err
		}
		b, err := unix.SysvShmAttach(id, 0, unix.SHM_RDONLY)
		if err != nil {
			return "", fmt.Errorf("shmat %d: %w", id, err)
		}
		defer unix.SysvShmDetach(b)
		if !bytes.HasPrefix(b, []byte(sysvMarker)) {
			return "", fmt.Errorf("segment %d holds no marker", id)
		}
		return fmt.Sprintf("read the host's shared memory segment %d: %q", id, b[:len(sysvMarker)]), nil
	}
	// sysv-msg ID: receive a message from the System V message queue ID
	// (a host program's).
	attacks["sysv-msg"] = func(a []string) (string, error) {
		id, err := strconv.Atoi(a[0])
		if err != nil {
			return "", err
		}
		var m struct {
			typ  int64
			text [64]byte
		}
		n, _, e := unix.Syscall6(unix.SYS_MSGRCV, uintptr(id), uintptr(unsafe.Pointer(&m)), uintptr(len(m.text)), 0, unix.IPC_NOWAIT, 0)
		if e != 0 {
			return "", fmt.Errorf("msgrcv %d: %w", id, e)
		}
		return fmt.Sprintf("received the host's message from queue %d: %q", id, m.text[:n]), nil
	}
}

// Without an IPC namespace, System V IPC is the host's: Landlock governs
// files, and a segment or queue is none. A command read and wrote the
// shared memory of its user's other processes (as root, root's), and read
// their message queues, by the ids /proc/sysvipc lists (found by attack
// pass 65). In this tier seccomp refuses System V IPC.
func TestNoUsernsSysVIPC(t *testing.T) {
	coldRunsOnly(t)
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock: the no-namespace tier has nothing to confine with")
	}
	f := makeFixture(t)
	shm, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	must(t, err)
	t.Cleanup(func() { unix.SysvShmCtl(shm, unix.IPC_RMID, nil) })
	b, err := unix.SysvShmAttach(shm, 0, 0)
	must(t, err)
	copy(b, sysvMarker)
	defer unix.SysvShmDetach(b)
	q, _, e := unix.Syscall(unix.SYS_MSGGET, unix.IPC_PRIVATE, unix.IPC_CREAT|0o600, 0)
	if e != 0 {
		t.Fatalf("msgget: %v", e)
	}
	t.Cleanup(func() { unix.Syscall(unix.SYS_MSGCTL, q, unix.IPC_RMID, 0) })
	for i := 0; i < 2; i++ { // one for the sandbox, one for the direct run
		m := struct {
			typ  int64
			text [64]byte
		}{typ: 1}
		copy(m.text[:], sysvMarker)
		if _, _, e := unix.Syscall6(unix.SYS_MSGSND, q, uintptr(unsafe.Pointer(&m)), uintptr(len(sysvMarker)), 0, 0, 0); e != 0 {
			t.Fatalf("msgsnd: %v", e)
		}
	}
	for _, args := range [][]string{{"sysv-shm", strconv.Itoa(shm)}, {"sysv-msg", strconv.Itoa(int(q))}} {
		got := f.bestEffort(args...)
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

// A command that uses up the processes its user may have takes moat's too:
// without a user namespace the command and moat share the user's
// RLIMIT_NPROC (and a container's pids.max, and the kernel's pid_max).
// A command planted a core.fsmonitor, then forked until the kernel
// refused; moat's next thread was refused (pthread_create: EAGAIN), moat
// died before its git audit, and the user's git status ran the planted
// program (found by attack pass 65). The command's RLIMIT_NPROC now keeps
// a reserve for moat.
func TestNoUsernsProcessFloodKeepsAudit(t *testing.T) {
	if root() {
		// Not part of a root run: the kernel exempts root from
		// RLIMIT_NPROC, and the run's pids cgroup bounds the tree.
		t.Skip("root is exempt from RLIMIT_NPROC")
	}
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock: the no-namespace tier has nothing to confine with")
	}
	for _, tool := range []string{"git", "perl", "prlimit"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.Unavailable(t, "%s is not installed", tool)
		}
	}
	f := makeFixture(t)
	prog := filepath.Join(f.root, "pwn.sh")
	mark := filepath.Join(f.root, "pwned")
	must(t, os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+mark+"\nexit 1\n"), 0o755))
	userGit := func() bool {
		os.Remove(mark)
		cmd := exec.Command("git", "status")
		cmd.Dir, cmd.Env = f.work, f.env()
		cmd.Run()
		_, err := os.Stat(mark)
		return err == nil
	}
	plant := `git config core.fsmonitor "` + prog + `"`
	if r := f.exec("/bin/sh", "-c", plant); r.code != 0 || !userGit() {
		t.Fatalf("without moat the planted setting must run the program on git status (exit %d):\n%s", r.code, r.out)
	}
	git(t, f.work, "config", "--unset", "core.fsmonitor")
	// Fork until refused, then make the supervisor work (every open for
	// writing is reported to it) while nothing is left.
	flood := `$SIG{CHLD} = "IGNORE"; my $n = 0; while (1) { my $p = fork; last unless defined $p; if (!$p) { sleep 20; exit 0 } $n++ } print "forked $n\n"; for (1..2000) { open(my $f, ">", "junk$_"); close $f } sleep 3`
	limit := strconv.Itoa(userTaskCount(os.Getuid()) + 300)
	got := f.execEnv(append(f.env(), denyUsernsEnv+"=1"), "prlimit", "--nproc="+limit, self, moatBin, "run", "--best-effort", "--settings", f.settings, "--",
		"/bin/sh", "-c", plant+" && perl -e '"+flood+"'")
	if strings.Contains(got.out, "pthread_create failed") || strings.Contains(got.out, "SIGABRT") || got.code != 0 {
		t.Errorf("moat must outlive a command that uses up its user's processes (exit %d):\n%.3000s", got.code, got.out)
	}
	if !strings.Contains(got.out, "forked ") {
		t.Errorf("the flood did not run:\n%.3000s", got.out)
	}
	if userGit() {
		t.Errorf("ESCAPE: after a run that used up its user's processes, the user's git status ran the planted program:\n%.3000s", got.out)
	}
}

// userTaskCount counts the tasks whose real uid is uid (RLIMIT_NPROC's
// count).
func userTaskCount(uid int) int {
	es, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range es {
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		real, threads := -1, 0
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if fs := strings.Fields(v); len(fs) > 0 {
					real, _ = strconv.Atoi(fs[0])
				}
			} else if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if real == uid {
			n += threads
		}
	}
	return n
}
