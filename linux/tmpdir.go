//go:build linux

package linux

import (
	"fmt"
	"os"
	"strconv"

	"github.com/moat-sandbox/moat/internal/sys"
	"golang.org/x/sys/unix"
)

// removeRunTree removes the no-namespace tier's TMPDIR, which the command
// owned and could shape as it liked. os.RemoveAll alone stopped at a
// directory the command had left without write or search permission for
// its owner (chmod 0, which moat's metadata broker allows inside the
// writable paths), and the directory stayed in the host's /tmp with what
// the command wrote below it, after the run, for good (found by attack
// pass 85). So each directory below it is given back its owner's rwx
// first, then the tree is removed. A directory is changed through a
// descriptor opened without following a symlink (O_PATH|O_NOFOLLOW|
// O_DIRECTORY), never by its name, so a symlink in the tree cannot lead
// the chmod to a file outside it.
func removeRunTree(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	fd, err := openDirNoFollow(unix.AT_FDCWD, dir)
	if err != nil {
		return err
	}
	ownerRWX(fd)
	unix.Close(fd)
	return os.RemoveAll(dir)
}

func openDirNoFollow(at int, name string) (int, error) {
	return sys.RetryValue(func() (int, error) {
		return unix.Openat(at, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
}

// ownerRWX gives the directory fd (O_PATH) and every directory below it
// read, write and search permission for their owner, as far as it can.
// Each level holds one descriptor while it walks its children.
func ownerRWX(fd int) {
	// chmod through /proc/self/fd changes the inode the descriptor holds
	// (fchmod refuses an O_PATH descriptor).
	if sys.Retry(func() error { return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), 0o700) }) != nil {
		return
	}
	rfd, err := sys.RetryValue(func() (int, error) {
		return unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(rfd), fmt.Sprintf("fd %d", rfd))
	defer f.Close()
	for {
		ents, err := f.ReadDir(256)
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			if cfd, err := openDirNoFollow(fd, e.Name()); err == nil {
				ownerRWX(cfd)
				unix.Close(cfd)
			}
		}
		if err != nil {
			return
		}
	}
}
