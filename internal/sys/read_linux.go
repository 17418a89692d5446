//go:build linux

package sys

import (
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ReadRegular reads the regular file at path, of at most max bytes, and
// refuses anything else without opening it: path is first opened O_PATH
// (which opens nothing: a FIFO's open would block for ever, a device's
// open has effects of its own, such as arming a watchdog), checked with
// fstat, and only then reopened for reading through /proc/self/fd, so the
// file read is the file checked, whatever is renamed over path meanwhile.
// A root process reading a path a user named (moatd planning a client's
// run) reads through here. nofollow refuses a symlink as the last
// component.
func ReadRegular(path string, max int64, nofollow bool) ([]byte, error) {
	flags := unix.O_PATH | unix.O_CLOEXEC
	if nofollow {
		flags |= unix.O_NOFOLLOW
	}
	pfd, err := RetryValue(func() (int, error) { return unix.Open(path, flags, 0) })
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: os.ErrInvalid}
	}
	fd, err := RetryValue(func() (int, error) {
		return unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: os.ErrInvalid}
	}
	return b, nil
}

// ReadDir is os.ReadDir that opens only a directory (O_DIRECTORY: a FIFO
// or a device renamed over path since it was seen is refused, not opened)
// and, with nofollow, refuses a symlink as the last component.
func ReadDir(path string, nofollow bool) ([]os.DirEntry, error) {
	flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NONBLOCK | unix.O_CLOEXEC
	if nofollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := RetryValue(func() (int, error) { return unix.Open(path, flags, 0) })
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	es, err := f.ReadDir(-1)
	slices.SortFunc(es, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return es, err
}

// Random fills b from the kernel's random source (getrandom(2)) without
// crypto/rand, whose first use in a process touches its DRBG's code and
// state (about 0.2-0.4 ms of page faults on a cold `moat run` here): for
// identifiers that must be unique, such as a journal record's name.
func Random(b []byte) error {
	for len(b) > 0 {
		n, err := unix.Getrandom(b, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Named("getrandom", err)
		}
		b = b[n:]
	}
	return nil
}
