package gitguard

import (
	"io/fs"
	"strconv"

	"golang.org/x/sys/unix"
)

// dirOpenFlags: a directory is opened as a path only (no read permission
// needed: the audit changes modes of directories that have none).
const dirOpenFlags = unix.O_PATH

// chmodFd sets the mode of the file fd holds: fchmod refuses an O_PATH
// descriptor, and /proc/self/fd/N leads to that very inode whatever
// happened to its name since.
func chmodFd(fd int, mode fs.FileMode) error {
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), uint32(mode.Perm()))
}

// unblockAt: nothing a file's owner may set refuses the owner a change the
// directory's mode allows (the immutable and append-only attributes need
// CAP_LINUX_IMMUTABLE to set; a POSIX ACL does not restrict the owner).
func unblockAt(int, string) error { return errCannotUnblock }

// auditorUID is the user the audit's file-system calls run as: the
// thread's file-system uid. moatd's audit of a client runs on a thread
// with the client's (internal/ascred), in a process whose euid is root's:
// taking the euid, the audit never made a search-only directory of the
// client's searchable, and a hook in a hooks directory the command had
// made search-only (chmod 0100) stayed, unseen (found by an attack pass:
// TestDaemonAuditSearchOnlyHooksDir).
func auditorUID() int {
	u, _, _ := unix.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
	return int(u)
}
