//go:build linux

package linux

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// The mount table is read again when it changes: a kernel filesystem
// mounted below a writable root after an earlier plan is found.
func TestKernelMountsUnderSeesNewMounts(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	roots := []rule{{path: dir, source: "test"}}
	if got, err := kernelMountsUnder(roots, false); err != nil || len(got) != 0 {
		t.Fatalf("before the mount: %v %v", got, err)
	}
	cg := filepath.Join(dir, "cg")
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("none", cg, "cgroup2", 0, ""); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(cg, unix.MNT_DETACH)
	got, err := kernelMountsUnder(roots, false)
	if err != nil || len(got) != 1 || got[0] != cg {
		t.Fatalf("after the mount: %v %v, want [%s]", got, err, cg)
	}
	if _, err := kernelMountsUnder(roots, true); err == nil {
		t.Fatal("the no-namespace tier must refuse a root that holds a kernel filesystem")
	}
	unix.Unmount(cg, unix.MNT_DETACH)
	if got, err := kernelMountsUnder(roots, false); err != nil || len(got) != 0 {
		t.Fatalf("after the unmount: %v %v", got, err)
	}
}

func BenchmarkKernelMountsUnder(b *testing.B) {
	roots := []rule{{path: "/var/tmp/x", source: "x"}, {path: "/home/u/.cache", source: "y"}}
	for i := 0; i < b.N; i++ {
		if _, err := kernelMountsUnder(roots, false); err != nil {
			b.Fatal(err)
		}
	}
}

// Every autofs mount nothing is mounted on is hidden, what is mounted
// below one shown again (an autofs below it judged on its own), and what
// the rules already hide, or another mount hides, left alone (attack pass
// 56: a lookup below an autofs mount asked the host's automounter).
func TestAutofsRules(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	oz := exec.Command("sleep", "600") // the automounter's group: it makes no request
	oz.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := oz.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { oz.Process.Kill(); oz.Wait() }()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	autofs := func(p string) {
		t.Helper()
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		opts := fmt.Sprintf("fd=%d,pgrp=%d,minproto=5,maxproto=5,indirect", w.Fd(), oz.Process.Pid)
		if err := unix.Mount("moat-test", p, "autofs", 0, opts); err != nil {
			testutil.Unavailable(t, "no autofs here: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
	}
	tmpfs := func(p string) { // as the automounter, which alone may make p
		t.Helper()
		c := exec.Command("/bin/sh", "-c", "mkdir -p "+p+" && mount -t tmpfs moat-test "+p)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: oz.Process.Pid}
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		t.Cleanup(func() { unix.Unmount(p, unix.MNT_DETACH) })
	}
	net, host, inner, denied := dir+"/net", dir+"/net/host", dir+"/net/host/x", dir+"/net/denied"
	autofs(net)
	tmpfs(host)
	autofs(inner)
	tmpfs(denied)
	shadowed := dir + "/s/a"
	autofs(shadowed)
	tmpfs(dir + "/s")

	v := &view{denyRead: []rule{{path: denied, source: "test"}}}
	deny, allow, err := autofsRules(v)
	if err != nil {
		t.Fatal(err)
	}
	paths := func(rs []rule) (out []string) {
		for _, r := range rs {
			if within(r.path, dir) {
				out = append(out, r.path)
			}
		}
		return out
	}
	if got := paths(deny); !slices.Equal(got, []string{net, inner}) {
		t.Errorf("hidden: %v, want [%s %s]", got, net, inner)
	}
	if got := paths(allow); !slices.Equal(got, []string{host}) {
		t.Errorf("shown again: %v, want [%s]", got, host)
	}
}
