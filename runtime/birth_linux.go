package runtime

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
)

// birthNS is when the inode at p (not followed) was made, if the
// filesystem keeps it (statx's STATX_BTIME: ext4, xfs, btrfs, tmpfs).
// A file made in place of another can get the old one's inode number
// (ext4 hands a freed number out again at once), but not its birth.
func birthNS(p string) (int64, bool) {
	var stx unix.Statx_t
	if err := sys.Retry(func() error {
		return unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_BTIME, &stx)
	}); err != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return 0, false
	}
	return stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec), true
}
