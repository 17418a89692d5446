package gitguard

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
)

func ctimeNS(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }

// clockRealtimeCoarse is Linux's CLOCK_REALTIME_COARSE.
const clockRealtimeCoarse = 5

// coarseTick is how far a file's change time may lag the moment of the
// change: Linux stamps inodes from its coarse clock (one scheduler tick:
// 1-10 ms, by CONFIG_HZ), except on filesystems with multigrain
// timestamps and only after a query. Unknown: 10 ms (HZ=100).
func coarseTick() time.Duration {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETRES, clockRealtimeCoarse, uintptr(unsafe.Pointer(&ts)), 0); e != 0 || ts.Nano() <= 0 {
		return 10 * time.Millisecond
	}
	return time.Duration(ts.Nano())
}

// kernelFS reports a directory on a kernel filesystem (proc, sysfs,
// cgroups, ...): it holds no git state a command could have left, and its
// process directories are not the auditor's to read (a writable root that
// holds /proc, --write /, made every audit walk and warn about it).
func kernelFS(dir string) bool {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return false
	}
	switch uint32(st.Type) {
	case 0x9fa0 /* proc */, 0x62656572 /* sysfs */, 0x27e0eb /* cgroup */, 0x63677270, /* cgroup2 */
		0xcafe4a11 /* bpf */, 0x64626720 /* debugfs */, 0x74726163 /* tracefs */, 0x73636673, /* securityfs */
		0x1cd1 /* devpts */, 0x19800202 /* mqueue */, 0x6e736673 /* nsfs */, 0x6165676c /* pstore */, 0xde5e81e4 /* efivarfs */ :
		return true
	}
	return false
}

// birthNS is when the inode at p (not followed) was made, if the
// filesystem keeps it (statx's STATX_BTIME: ext4, xfs, btrfs, tmpfs).
// Unlike the change time, nothing moves it after: a directory born
// during the run was made by the run. Callers look p up through
// birthTime (autofs.go).
func birthNS(p string) (int64, bool) {
	var stx unix.Statx_t
	if err := sys.Retry(func() error {
		return unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_BTIME, &stx)
	}); err != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return 0, false
	}
	return stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec), true
}
