package gitguard

import (
	"io/fs"
	"os"
	"strconv"

	"github.com/moat-sandbox/moat/internal/sys"
	"golang.org/x/sys/unix"
)

// openRead opens p for reading only if it is a regular file. It returns
// what p is (followed, as git follows it) and, for a regular file, the
// file open for reading; for anything else no file, and nothing opened:
// p is first opened O_PATH (which opens nothing: a device's own open has
// effects, such as arming a watchdog, and a command's sub/.git ->
// /dev/DEVICE had the audit, as root for root's runs, open the device),
// checked with fstat, and only a regular file is reopened, through
// /proc/self/fd, so the file read is the file checked whatever is renamed
// over p meanwhile.
func openRead(p string) (*os.File, fs.FileInfo, error) {
	pfd, err := sys.RetryValue(func() (int, error) { return unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0) })
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	pf := os.NewFile(uintptr(pfd), p)
	defer pf.Close()
	fi, err := pf.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fi, err
	}
	fd, err := sys.RetryValue(func() (int, error) {
		return unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), fi, nil
}
