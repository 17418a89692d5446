//go:build linux

package testutil

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Automounter mounts an indirect autofs at dir (made if missing) and is
// its automounter: every name the kernel asks for is recorded and
// answered "no such name", so the lookup returns. Asked returns the names
// asked for since the last Reset. The mount goes when the test ends. The
// automounter's process group is in "oz mode" (its lookups ask nothing):
// a sleeper's of its own, so that this process's lookups do ask. Root
// only; without autofs in the kernel the test is Unavailable.
type Automounter struct {
	mu    sync.Mutex
	asked []string
	oz    int // the process group whose lookups ask nothing
}

// NewAutomounter is Automounter's constructor (see there).
func NewAutomounter(t testing.TB, dir string) *Automounter {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	oz := exec.Command("sleep", "3600")
	oz.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := oz.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oz.Process.Kill(); oz.Wait() })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("fd=%d,pgrp=%d,minproto=5,maxproto=5,indirect", w.Fd(), oz.Process.Pid)
	if err := syscall.Mount("moat-test", dir, "autofs", 0, opts); err != nil {
		w.Close()
		r.Close()
		Unavailable(t, "no autofs here: %v", err)
	}
	w.Close()
	root, err := os.Open(dir)
	if err != nil {
		syscall.Unmount(dir, syscall.MNT_DETACH)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Unmount(dir, syscall.MNT_DETACH)
		root.Close()
		r.Close()
	})
	a := &Automounter{oz: oz.Process.Pid}
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
			a.mu.Lock()
			a.asked = append(a.asked, name)
			a.mu.Unlock()
			syscall.Syscall(syscall.SYS_IOCTL, root.Fd(), 0x9361 /* AUTOFS_IOC_FAIL */, uintptr(token))
		}
	}()
	return a
}

// Asked is the names asked for since the last Reset.
func (a *Automounter) Asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// Quiet puts cmd in the automounter's own process group, whose lookups
// below the mount ask nothing (to mount a share there, as the automounter
// would have).
func (a *Automounter) Quiet(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: a.oz}
}

// WasAsked reports whether name was asked for since the last Reset,
// waiting up to wait for the request to arrive.
func (a *Automounter) WasAsked(name string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		if slices.Contains(a.Asked(), name) || time.Now().After(deadline) {
			return slices.Contains(a.Asked(), name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Reset forgets the names asked for so far.
func (a *Automounter) Reset() {
	a.mu.Lock()
	a.asked = nil
	a.mu.Unlock()
}
