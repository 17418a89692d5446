package gitguard

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// dirOpenFlags: macOS has no O_PATH; a directory the audit changes the
// mode of without read permission fails to open, and is left as it is.
const dirOpenFlags = 0

func chmodFd(fd int, mode fs.FileMode) error { return unix.Fchmod(fd, uint32(mode.Perm())) }
