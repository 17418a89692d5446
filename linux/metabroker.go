//go:build linux

package linux

import (
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// The metadata broker: in the no-namespace tier as a user, Landlock
// governs no change of a file's mode, owner, times or extended
// attributes (nor, before Landlock ABI 3, its size), and the user owns
// the files outside the writable paths as well as those inside. Checking
// the path the command named and then letting the kernel go on was a race
// the command could win (a symlink swapped, the path in its memory
// rewritten, a descriptor replaced by another thread). So the observer
// makes the change itself: it opens what the path (or descriptor) leads
// to, as the command would, checks where that file is, and changes that
// very file through its own descriptor, or refuses; the command's call is
// answered with the result and never goes on. The supervisor runs as the
// same user, with no more permission than the command on these files.

// metaCall is where a metadata call's arguments are.
type metaCall struct {
	dirfd    int  // argument index of a directory descriptor (-1: AT_FDCWD)
	path     int  // argument index of the path (-1: none: the call is on dirfd)
	flags    int  // argument index of AT_* flags (-1: none)
	nofollow bool // changes a symlink itself (lchown, lsetxattr, ...)
}

var metaCalls = map[string]metaCall{
	"chmod": {-1, 0, -1, false}, "fchmodat": {0, 1, -1, false}, "fchmodat2": {0, 1, 3, false}, "fchmod": {0, -1, -1, false},
	"chown": {-1, 0, -1, false}, "lchown": {-1, 0, -1, true}, "fchownat": {0, 1, 4, false}, "fchown": {0, -1, -1, false},
	"utime": {-1, 0, -1, false}, "utimes": {-1, 0, -1, false}, "futimesat": {0, 1, -1, false}, "utimensat": {0, 1, 3, false},
	"setxattr": {-1, 0, -1, false}, "lsetxattr": {-1, 0, -1, true}, "fsetxattr": {0, -1, -1, false},
	"removexattr": {-1, 0, -1, false}, "lremovexattr": {-1, 0, -1, true}, "fremovexattr": {0, -1, -1, false},
	"truncate": {-1, 0, -1, false},
}

// brokerMetadata performs the metadata call n (name) for the command, or
// refuses it: see above.
func (o *observer) brokerMetadata(n *notif, name string) (unix.Errno, bool) {
	c, ok := metaCalls[name]
	if !ok {
		// setxattrat, removexattrat, file_setattr (Linux 6.13, 6.17): no C
		// library calls them yet; ENOSYS has a caller fall back to the
		// older calls, which come here.
		return unix.ENOSYS, false
	}
	pid, a := int(n.pid), n.args
	nofollow := c.nofollow
	empty := false
	if c.flags >= 0 {
		fl := a[c.flags]
		nofollow = nofollow || fl&unix.AT_SYMLINK_NOFOLLOW != 0
		empty = fl&unix.AT_EMPTY_PATH != 0
	}
	dirfd := unix.AT_FDCWD
	if c.dirfd >= 0 {
		dirfd = int(int32(a[c.dirfd]))
	}
	path, hasPath := "", false
	if c.path >= 0 && !(name == "utimensat" && a[c.path] == 0) { // utimensat(fd, NULL, ...) is futimens
		raw, ok := readString(pid, a[c.path])
		if !ok {
			return unix.EFAULT, false
		}
		path, hasPath = raw, true
		if raw == "" && !empty {
			return unix.ENOENT, false
		}
	}
	if name == "utimensat" && !hasPath && dirfd == unix.AT_FDCWD {
		return unix.EFAULT, false // as the kernel answers utimensat(AT_FDCWD, NULL, ...)
	}
	fd, st, errno := openTarget(pid, dirfd, path, hasPath && path != "", nofollow)
	if errno != 0 {
		return errno, false
	}
	defer unix.Close(fd)
	if errno := o.brokerMayChange(pid, name, fd, &st); errno != 0 {
		return errno, false
	}
	if !o.idValid(n.id) {
		return unix.ENOENT, false // the process went away: nothing to do for it
	}
	if o.writes != nil {
		o.writes.Add(1)
	}
	if o.also != nil {
		o.also.Add(1)
	}
	return metaPerform(pid, name, fd, &st, a), false
}

// openTarget opens (O_PATH) what the call would change, and fstats it:
// path relative to dirfd in the process pid (its cwd for AT_FDCWD), or
// dirfd itself.
func openTarget(pid, dirfd int, path string, hasPath, nofollow bool) (int, unix.Stat_t, unix.Errno) {
	var st unix.Stat_t
	fd, errno := openTargetFD(pid, dirfd, path, hasPath, nofollow)
	if errno != 0 {
		return -1, st, errno
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, errnoOf(err)
	}
	return fd, st, 0
}

// openTargetFD is openTarget's opening.
func openTargetFD(pid, dirfd int, path string, hasPath, nofollow bool) (int, unix.Errno) {
	var base string
	if dirfd == unix.AT_FDCWD {
		base = "/proc/" + strconv.Itoa(pid) + "/cwd"
	} else {
		base = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(dirfd)
	}
	bfd, err := sys.RetryValue(func() (int, error) { return unix.Open(base, unix.O_PATH|unix.O_CLOEXEC, 0) })
	if err != nil {
		if dirfd != unix.AT_FDCWD {
			return -1, unix.EBADF
		}
		return -1, errnoOf(err)
	}
	if !hasPath {
		return bfd, 0
	}
	defer unix.Close(bfd)
	flags := unix.O_PATH | unix.O_CLOEXEC
	if nofollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := sys.RetryValue(func() (int, error) { return unix.Openat(bfd, path, flags, 0) })
	if err != nil {
		return -1, errnoOf(err)
	}
	return fd, 0
}

// metaPerform makes the change on fd (O_PATH; st its fstat) with the
// call's arguments.
func metaPerform(pid int, name string, fd int, st *unix.Stat_t, a [6]uint64) unix.Errno {
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	link := st.Mode&unix.S_IFMT == unix.S_IFLNK
	var err error
	switch name {
	case "chmod", "fchmod":
		err = unix.Chmod(self, uint32(a[1]))
	case "fchmodat", "fchmodat2":
		if link {
			return unix.EOPNOTSUPP // a symlink's mode (fchmodat2 with AT_SYMLINK_NOFOLLOW)
		}
		err = unix.Chmod(self, uint32(a[2]))
	case "chown", "lchown", "fchown":
		err = unix.Fchownat(fd, "", int(int32(a[1])), int(int32(a[2])), unix.AT_EMPTY_PATH)
	case "fchownat":
		err = unix.Fchownat(fd, "", int(int32(a[2])), int(int32(a[3])), unix.AT_EMPTY_PATH)
	case "truncate":
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
		case unix.S_IFDIR:
			return unix.EISDIR
		default:
			return unix.EINVAL
		}
		w, oerr := unix.Open(self, unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if oerr != nil {
			return errnoOf(oerr)
		}
		err = unix.Ftruncate(w, int64(a[1]))
		unix.Close(w)
	case "utime", "utimes", "futimesat", "utimensat":
		ts, ok := times(pid, name, a)
		if !ok {
			return unix.EFAULT
		}
		var p unsafe.Pointer
		if ts != nil {
			p = unsafe.Pointer(&ts[0])
		}
		empty := []byte{0}
		if _, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), uintptr(unsafe.Pointer(&empty[0])), uintptr(p), unix.AT_EMPTY_PATH, 0, 0); e != 0 {
			err = e
		}
	case "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr":
		if link {
			return unix.EPERM // no user.* attribute on a symlink; the others need privilege
		}
		attr, ok := readString(pid, a[1])
		if !ok {
			return unix.EFAULT
		}
		if name == "removexattr" || name == "lremovexattr" || name == "fremovexattr" {
			err = unix.Removexattr(self, attr)
			break
		}
		size := a[3]
		if size > 64<<10 {
			return unix.E2BIG
		}
		val := make([]byte, size)
		if size > 0 && !readBytes(pid, a[2], val) {
			return unix.EFAULT
		}
		err = unix.Setxattr(self, attr, val, int(a[4]))
	default:
		return unix.ENOSYS
	}
	return errnoOf(err)
}

// times reads a times argument as utimensat's two timespecs (nil: now).
func times(pid int, name string, a [6]uint64) ([]unix.Timespec, bool) {
	addr := a[1]
	if name == "futimesat" || name == "utimensat" {
		addr = a[2]
	}
	if addr == 0 {
		return nil, true
	}
	var b [32]byte
	switch name {
	case "utime": // struct utimbuf {time_t actime, modtime}
		if !readBytes(pid, addr, b[:16]) {
			return nil, false
		}
		return []unix.Timespec{{Sec: int64(binary.LittleEndian.Uint64(b[0:]))}, {Sec: int64(binary.LittleEndian.Uint64(b[8:]))}}, true
	case "utimes", "futimesat": // struct timeval[2]
		if !readBytes(pid, addr, b[:]) {
			return nil, false
		}
		tv := func(i int) unix.Timespec {
			return unix.Timespec{Sec: int64(binary.LittleEndian.Uint64(b[i:])), Nsec: int64(binary.LittleEndian.Uint64(b[i+8:])) * 1000}
		}
		return []unix.Timespec{tv(0), tv(16)}, true
	}
	if !readBytes(pid, addr, b[:]) { // struct timespec[2] (UTIME_NOW, UTIME_OMIT kept)
		return nil, false
	}
	return []unix.Timespec{
		{Sec: int64(binary.LittleEndian.Uint64(b[0:])), Nsec: int64(binary.LittleEndian.Uint64(b[8:]))},
		{Sec: int64(binary.LittleEndian.Uint64(b[16:])), Nsec: int64(binary.LittleEndian.Uint64(b[24:]))},
	}, true
}

// readBytes reads len(buf) bytes at addr of the process pid.
func readBytes(pid int, addr uint64, buf []byte) bool {
	if len(buf) == 0 {
		return true
	}
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	return err == nil && n == len(buf)
}

// brokerInodeFlags sets a file's inode flags or fsxattr (chattr,
// FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR) for the command, on the file its
// descriptor holds, if that file is inside the writable paths.
func (o *observer) brokerInodeFlags(n *notif) (unix.Errno, bool) {
	pid, a := int(n.pid), n.args
	fd, st, errno := openTarget(pid, int(int32(a[0])), "", false, false)
	if errno != 0 {
		return errno, false
	}
	defer unix.Close(fd)
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
		return unix.ENOTTY, false // (a device is never opened here)
	}
	if errno := o.brokerMayChange(pid, "chattr", fd, &st); errno != 0 {
		return errno, false
	}
	size := 4 // FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS: an int
	if uint32(a[1]) == 0x401c5820 {
		size = 28 // FS_IOC_FSSETXATTR: struct fsxattr
	}
	arg := make([]byte, size)
	if !readBytes(pid, a[2], arg) {
		return unix.EFAULT, false
	}
	if !o.idValid(n.id) {
		return unix.ENOENT, false
	}
	f, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return errnoOf(err), false
	}
	defer unix.Close(f)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(f), uintptr(uint32(a[1])), uintptr(unsafe.Pointer(&arg[0]))); e != 0 {
		return e, false
	}
	return 0, false
}

// brokerMayChange decides whether the broker may change the file fd holds
// (st: its fstat): a file with no name left (made and unlinked by the
// command, a memfd), an anonymous pipe or a socket is the command's own; a
// file of a filesystem must be inside the writable paths, by a path that
// leads to that very inode in this mount namespace. A path too long to
// read back (ENAMETOOLONG: the check was skipped and the change made;
// found by an attack pass), or one that now names another inode (renamed
// meanwhile, or a file of another mount namespace reached through
// /proc/PID/root), is refused.
func (o *observer) brokerMayChange(pid int, op string, fd int, st *unix.Stat_t) unix.Errno {
	if st.Nlink == 0 {
		return 0
	}
	target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err == nil && !strings.HasPrefix(target, "/") {
		if t := st.Mode & unix.S_IFMT; t == unix.S_IFIFO || t == unix.S_IFSOCK || strings.HasPrefix(target, "anon_inode:") {
			return 0 // pipe:[N], socket:[N], anon_inode:...
		}
	}
	var here unix.Stat_t
	if err != nil || !strings.HasPrefix(target, "/") || unix.Lstat(target, &here) != nil || here.Dev != st.Dev || here.Ino != st.Ino {
		o.report(policy.Violation{Kind: policy.FileViolation, Op: op, Target: policy.Sanitize(target),
			Rule: "moat cannot tell where this file is (its path is too long, or leads elsewhere now): only files inside the writable paths change", Pid: pid})
		return unix.EPERM
	}
	if ok, why := o.view.writable(target); !ok {
		if !within(target, "/proc") && !within(target, "/dev") { // (refused, unreported there, as before)
			o.report(policy.Violation{Kind: policy.FileViolation, Op: op, Target: target, Rule: why, Pid: pid})
		}
		return unix.EPERM
	}
	return 0
}
