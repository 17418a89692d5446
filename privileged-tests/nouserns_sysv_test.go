//go:build linux

package privtests

import (
	"bytes"
	"fmt"
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
