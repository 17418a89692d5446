//go:build linux

package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// stalledMount mounts, at a new directory under dir, a FUSE filesystem
// (allow_other, as an NFS mount is open to every user) whose server
// answers its INIT and no other request: every lookup below it waits, as
// on a mount whose server is gone. The server's descriptor is closed when
// the test ends, which ends every wait (ENOTCONN), and the mount is
// detached.
func stalledMount(t *testing.T, dir string) string {
	t.Helper()
	mnt := filepath.Join(dir, "stalled")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		testutil.Unavailable(t, "/dev/fuse: %v", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40755,user_id=0,group_id=0,allow_other", fd)
	if err := syscall.Mount("moat-test-stalled", mnt, "fuse.stalled", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		syscall.Close(fd)
		testutil.Unavailable(t, "a FUSE mount: %v", err)
	}
	t.Cleanup(func() {
		syscall.Close(fd)
		syscall.Unmount(mnt, syscall.MNT_DETACH)
	})
	go func() {
		buf := make([]byte, 1<<20+4096)
		for {
			n, err := syscall.Read(fd, buf)
			if err == syscall.EINTR || err == syscall.ENOENT {
				continue
			}
			if err != nil || n < 56 {
				return
			}
			if binary.LittleEndian.Uint32(buf[4:]) != 26 { // FUSE_INIT
				continue // never answered
			}
			out := make([]byte, 16+64) // fuse_out_header, fuse_init_out
			binary.LittleEndian.PutUint32(out[0:], uint32(len(out)))
			copy(out[8:16], buf[8:16])                    // unique
			binary.LittleEndian.PutUint32(out[16:], 7)    // major
			binary.LittleEndian.PutUint32(out[20:], 31)   // minor
			copy(out[24:28], buf[48:52])                  // max_readahead
			binary.LittleEndian.PutUint16(out[32:], 16)   // max_background
			binary.LittleEndian.PutUint16(out[34:], 12)   // congestion_threshold
			binary.LittleEndian.PutUint32(out[36:], 4096) // max_write
			binary.LittleEndian.PutUint32(out[40:], 1)    // time_gran
			binary.LittleEndian.PutUint16(out[44:], 1)    // max_pages
			syscall.Write(fd, out)
		}
	}()
	return mnt
}

// stalledFiller asks for a session whose cwd lies on the stalled mount,
// 220 times, eight at a time, hanging up on each after 0.2 s (a check
// moatd started waits on after the hang-up: one after the other, the 220
// took 26 s of the test's time for the same threads).
const stalledFiller = `S=$1 CWD=$2
seq 220 | xargs -P 8 -I{} curl -s -o /dev/null --max-time 0.2 --unix-socket "$S" -X POST -w 'check %{http_code}\n' http://moatd/v1/sessions -d "{\"cwd\":\"$CWD\"}"
echo filled`

// TestDaemonAttackStalledMountTakesThreads: moatd checks a session's
// cwd (and writable paths, a run's, /v1/policy's and /v1/decide's) as
// its user, each on an OS thread of its own, before any slot is taken.
// On a stalled mount the check waits for good, and the client may hang up:
// one user's requests for a session in a directory there, each dropped
// after 0.2 s, took a thread apiece until moatd, in a cgroup of pids.max
// 160, died (runtime/cgo: pthread_create failed), and every user's
// sandboxes with it (attack pass 83). The checks now count in the user's
// slots: past its share the user's requests are answered 429 or 503, the
// daemon lives, and another user's moat run and session work.
func TestDaemonAttackStalledMountTakesThreads(t *testing.T) {
	testutil.RequireRoot(t) // (before the cgroup: a user may make none)
	cg := pidsCgroup(t, 160)
	f := newSlotsFixtureWrap(t, "moatd-thr-1", "sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg)
	mnt := stalledMount(t, f.dir)
	if out, took := f.victimRun(); !strings.Contains(out, "victim-ok") {
		t.Fatalf("the victim's request fails without an attack: the test proves nothing (%v): %s", took, out)
	}
	u := f.user("moatd-thr-0")
	o, e, err := u.as("bash", "-c", stalledFiller, "filler", f.d.sock, filepath.Join(mnt, "x"))
	outs := o + e
	if err != nil {
		outs += err.Error()
	}
	t.Logf("the attacker: %d checks left waiting, %d refused 429, %d 503", strings.Count(outs, "check 000"), strings.Count(outs, " 429"), strings.Count(outs, " 503"))
	select {
	case <-f.d.done:
		t.Fatalf("DENIAL: one user's checks on a stalled mount took every thread moatd may have (pids.max 160), and moatd died:\n%s", crashLine(f.d.stderr.String()))
	default:
	}
	if out, took := f.victimRun(); !strings.Contains(out, "victim-ok") {
		t.Errorf("DENIAL: another user's moat run failed while one user's checks wait (%v): %s", took, out)
	}
	f.victimSessionWorks("one user's checks wait on a stalled mount")
	if !strings.Contains(outs, " 429") && !strings.Contains(outs, " 503") {
		t.Errorf("no request past the user's share was refused (429 or 503):\n%s", lastLines(outs, 8))
	}
}
