package settings

import (
	"os"
	"syscall"
)

// kernelFilesystems are the kernel's pseudo filesystems, by statfs magic
// (linux/magic.h). Their files report themselves as regular but are views
// of the kernel: a read may block until the kernel has something to say
// (/proc/kmsg, tracing's trace_pipe) or answer differently each time. No
// settings file lives there.
var kernelFilesystems = map[uint32]string{
	0x9fa0:     "procfs",
	0x62656572: "sysfs",
	0x64626720: "debugfs",
	0x74726163: "tracefs",
	0x73636673: "securityfs",
	0x62656570: "configfs",
	0x27e0eb:   "cgroupfs",
	0x63677270: "cgroup2fs",
	0xcafe4a11: "bpffs",
	0x6165676c: "pstore",
	0xde5e81e4: "efivarfs",
}

// kernelFilesystem names the kernel's pseudo filesystem f is on, or "".
// (f.Fd would put a non-blocking f into blocking mode: Control does not.)
func kernelFilesystem(f *os.File) (string, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	var st syscall.Statfs_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstatfs(int(fd), &st) }); err != nil {
		return "", err
	}
	if serr != nil {
		return "", serr
	}
	return kernelFilesystems[uint32(st.Type)], nil
}
