package gitguard

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// dirOpenFlags: macOS has no O_PATH; a directory the audit changes the
// mode of without read permission fails to open, and is left as it is.
const dirOpenFlags = 0

func chmodFd(fd int, mode fs.FileMode) error { return unix.Fchmod(fd, uint32(mode.Perm())) }

// blockFlags are the file flags an owner may set (chflags uchg, uappnd)
// that refuse a rename or an unlink of the file, or a change of the
// entries of a directory, to its owner too. The SF_ ones need root to set
// and to clear: the audit cannot take them off, and a sandbox cannot set
// them.
const blockFlags = unix.UF_IMMUTABLE | unix.UF_APPEND

// unblockAt takes off the directory pfd and its entry base (not followed,
// if it is a symlink) what their owner may set to refuse the audit a move:
// the flags in blockFlags and the ACL (a deny entry for delete or
// delete_child is final for the owner too). The sandbox's profile denies
// file-write-flags, so a command cannot set the flags; it can set ACLs
// (file-write-acl is not denied). Only ever called after a change was
// refused (unblocked), so the user's own ACLs stay where nothing failed.
func unblockAt(pfd int, base string) error {
	err := unblockFd(pfd)
	// O_SYMLINK opens a symlink itself; O_NONBLOCK keeps a FIFO's open
	// from waiting. A socket does not open: its flags stay (a socket is
	// removed, not moved, and its directory's flags are cleared above).
	fd, oerr := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_SYMLINK|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if oerr != nil {
		return errors.Join(err, oerr)
	}
	defer unix.Close(fd)
	return errors.Join(err, unblockFd(fd))
}

func unblockFd(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	var err error
	if st.Flags&blockFlags != 0 {
		err = unix.Fchflags(fd, int(st.Flags&^blockFlags))
	}
	return errors.Join(err, removeACL(fd))
}

// removeACL removes the ACL of the file fd holds: fchmod_extended(2) (what
// libc's fchmodx_np and chmod -N use) with the owner, the group and the
// mode left as they are and the filesec _FILESEC_REMOVE_ACL (xnu
// bsd/vfs/vfs_syscalls.c: fchmod_extended).
func removeACL(fd int) error {
	const (
		kauthIDNone      = uintptr(^uint32(0) - 100) // KAUTH_UID_NONE, KAUTH_GID_NONE
		modeUnchanged    = ^uintptr(0)               // -1
		filesecRemoveACL = 1                         // _FILESEC_REMOVE_ACL
	)
	_, _, e := unix.Syscall6(unix.SYS_FCHMOD_EXTENDED, uintptr(fd), kauthIDNone, kauthIDNone, modeUnchanged, filesecRemoveACL, 0)
	if e != 0 {
		return e
	}
	return nil
}

// auditorUID is the user the audit runs as.
func auditorUID() int { return os.Geteuid() }
