//go:build linux

package testutil

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// RequireUserns skips (or fails in strict mode) when this user cannot
// create a user namespace.
func RequireUserns(t testing.TB) {
	t.Helper()
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" && os.Geteuid() != 0 {
		Unavailable(t, "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)")
	}
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
	}
	if err := cmd.Run(); err != nil {
		Unavailable(t, "cannot create a user namespace: %v", err)
	}
}
