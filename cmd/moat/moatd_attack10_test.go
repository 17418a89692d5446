//go:build linux

package main

// moatd's threads. A session's command holds one of the daemon's OS threads
// (its violation observer waits in the kernel for the command's next
// notification), a session about five, a run three. The process may have
// only so many: Go's limit (10,000), and the pids.max of its cgroup, which
// counts threads: under systemd, TasksMax, by default 15 % of the kernel's
// pid_max (4,915 threads where pid_max is 32,768, as on this machine kind).
// Past that the Go runtime cannot start a thread and the daemon dies, and
// with it every user's sandboxes. The slots the daemon counts its users'
// sessions, commands and runs in (netproxy.TakeSlots) were sized from the
// descriptor limit alone.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// pidsCgroup makes a cgroup whose pids.max is max (cgroup v2, or the v1
// pids hierarchy) and returns its directory; it is removed when the test
// ends (after the daemon that ran in it: cleanups run last first).
func pidsCgroup(t *testing.T, max int) string {
	t.Helper()
	var parent string
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(" "+string(b)+" ", " pids ") {
		parent = "/sys/fs/cgroup"
		if b, err := os.ReadFile(parent + "/cgroup.subtree_control"); err != nil || !strings.Contains(" "+strings.TrimSpace(string(b))+" ", " pids ") {
			if err := os.WriteFile(parent+"/cgroup.subtree_control", []byte("+pids"), 0o644); err != nil {
				testutil.Unavailable(t, "the pids controller cannot be enabled for a child of %s: %v", parent, err)
			}
		}
	} else if _, err := os.Stat("/sys/fs/cgroup/pids/cgroup.procs"); err == nil {
		parent = "/sys/fs/cgroup/pids"
	} else {
		testutil.Unavailable(t, "no pids controller (cgroup v2 or v1): %v", err)
	}
	dir, err := os.MkdirTemp(parent, "moatd-threads-")
	if err != nil {
		testutil.Unavailable(t, "a pids cgroup: %v", err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.Remove(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("cgroup %s not removed", dir)
	})
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(fmt.Sprint(max)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDaemonAttackOneUserTakesEveryThread: moatd runs in a cgroup whose
// pids.max is 160 (its TasksMax). One user opens sessions and starts
// background commands in them, within its per-user bounds (16 sessions of
// 32 commands). Before each held command and session counted its threads,
// the daemon died (runtime/cgo: pthread_create failed) after about a
// hundred, and every other user's runs and sessions with it. Now the
// daemon's slots are bounded by the threads it may have too: the user's
// request past its share is answered 429 or 503, the daemon lives, and
// another user's moat run and session work.
func TestDaemonAttackOneUserTakesEveryThread(t *testing.T) {
	testutil.RequireRoot(t) // (before the cgroup: a user may make none)
	cg := pidsCgroup(t, 160)
	f := newSlotsFixtureWrap(t, "moatd-thr-1", "sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg)
	if out, took := f.victimRun(); !strings.Contains(out, "victim-ok") {
		t.Fatalf("the victim's request fails without an attack: the test proves nothing (%v): %s", took, out)
	}
	u := f.user("moatd-thr-0")
	o, e, err := u.as("bash", "-c", filler, "filler", f.d.sock)
	outs := o + e
	if err != nil {
		outs += err.Error()
	}
	held := strings.Count(outs, "command 202") + strings.Count(outs, "session 201")
	t.Logf("the attacker: %d sessions and commands held, %d refused 429, %d 503", held, strings.Count(outs, " 429"), strings.Count(outs, " 503"))
	select {
	case <-f.d.done:
		t.Fatalf("DENIAL: one user's sessions and commands (%d) took every thread moatd may have (pids.max 160), and moatd died:\n%s",
			held, crashLine(f.d.stderr.String()))
	default:
	}
	if out, took := f.victimRun(); !strings.Contains(out, "victim-ok") {
		t.Errorf("DENIAL: another user's moat run failed while one user holds its sessions (%v): %s", took, out)
	}
	f.victimSessionWorks("one user holds its sessions")
	if !strings.Contains(outs, " 429") && !strings.Contains(outs, " 503") {
		t.Errorf("no request past the user's share was refused (429 or 503):\n%s", lastLines(outs, 8))
	}
}

// crashLine is the line of a Go program's crash that says why.
func crashLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "pthread_create") || strings.HasPrefix(l, "fatal error") || strings.Contains(l, "failed to create new OS thread") {
			return l
		}
	}
	return lastLines(s, 8)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
