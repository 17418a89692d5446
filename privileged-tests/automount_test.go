//go:build linux

package privtests

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// An autofs mount of the host answers a lookup below it by asking the
// host's automounter (a root daemon, outside every namespace of the
// sandbox's) for the name looked up: with an automounter's -hosts map
// (/net/HOST), the sandboxed command had it resolve a name of its choosing
// (the data in a DNS query) and send RPC to any address, through the
// host's network, from a sandbox whose network is its own loopback and the
// proxy; a program map ran as root with the name (found by attack pass
// 56). In the sandbox an autofs mount is an empty read-only directory;
// what the host had mounted below it is still there. This test is the
// automounter itself: it mounts autofs on a pipe and reads the requests.
func TestAutomountNotTriggered(t *testing.T) {
	testutil.RequireRoot(t) // mounting autofs takes root
	f := newFixture(t)
	auto := filepath.Join(f.root, "net")
	must(t, os.MkdirAll(auto, 0o755))
	// The automounter's process group is in "oz mode": its own lookups
	// make no request. A sleeper's group of its own, so that the test's
	// lookups (and moat's) do.
	oz := exec.Command("sleep", "600")
	oz.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, oz.Start())
	t.Cleanup(func() { oz.Process.Kill(); oz.Wait() })
	r, w, err := os.Pipe()
	must(t, err)
	opts := fmt.Sprintf("fd=%d,pgrp=%d,minproto=5,maxproto=5,indirect", w.Fd(), oz.Process.Pid)
	if err := unix.Mount("moat-test", auto, "autofs", 0, opts); err != nil {
		testutil.Unavailable(t, "no autofs here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(auto, unix.MNT_DETACH) })
	w.Close()
	// A share the automounter mounted before the run: still there inside.
	shown := filepath.Join(auto, "mounted")
	mk := exec.Command("/bin/sh", "-c", "mkdir "+shown+" && mount -t tmpfs moat-test "+shown+" && echo SHOWN > "+shown+"/file")
	mk.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: oz.Process.Pid}
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("mount below the autofs: %v\n%s", err, out)
	}
	t.Cleanup(func() { unix.Unmount(shown, unix.MNT_DETACH) })

	// The automounter: every request is recorded and answered "no such
	// name" (AUTOFS_IOC_FAIL with its token), so the lookup returns.
	root, err := os.Open(auto)
	must(t, err)
	defer root.Close()
	var (
		mu    sync.Mutex
		asked []string
	)
	go func() {
		buf := make([]byte, 512)
		for {
			n, err := r.Read(buf)
			if err != nil {
				return
			}
			// struct autofs_v5_packet: header (8), token (4), dev (4),
			// ino (8), uid, gid, pid, tgid, len (4 each), name.
			if n < 44 {
				continue
			}
			token := binary.NativeEndian.Uint32(buf[8:])
			size := int(binary.NativeEndian.Uint32(buf[40:]))
			name := string(buf[44:min(44+size, n)])
			mu.Lock()
			asked = append(asked, name)
			mu.Unlock()
			unix.Syscall(unix.SYS_IOCTL, root.Fd(), 0x9361 /* AUTOFS_IOC_FAIL */, uintptr(token))
		}
	}()
	t.Cleanup(func() { r.Close() })
	wasAsked := func(name string) bool {
		deadline := time.Now().Add(2 * time.Second)
		for {
			mu.Lock()
			got := strings.Join(asked, "\n")
			mu.Unlock()
			if strings.Contains("\n"+got+"\n", "\n"+name+"\n") || time.Now().After(deadline) {
				return strings.Contains("\n"+got+"\n", "\n"+name+"\n")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	script := func(key string) string {
		return "ls " + filepath.Join(auto, key) + " 2>&1; cat " + filepath.Join(shown, "file")
	}
	var got result
	if viaSession() {
		got = f.inSession(f.settings, []string{"/bin/sh", "-c", script("exfil-moat.example.test")})
	} else {
		got = f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c", script("exfil-moat.example.test"))
	}
	if wasAsked("exfil-moat.example.test") {
		t.Errorf("ESCAPE under moat: the host's automounter was asked for a name the command chose:\n%s", got.out)
	}
	if !strings.Contains(got.out, "SHOWN") {
		t.Errorf("what the host had mounted below the autofs must stay readable (exit %d):\n%s", got.code, got.out)
	}
	base := f.exec("/bin/sh", "-c", script("exfil-direct.example.test"))
	if !wasAsked("exfil-direct.example.test") {
		t.Errorf("without moat a lookup asks the automounter (or this test cannot fail):\n%s", base.out)
	}
	if !strings.Contains(base.out, "SHOWN") {
		t.Errorf("without moat the mounted share is readable:\n%s", base.out)
	}
}
