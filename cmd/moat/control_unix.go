//go:build unix

package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// controlFile checks --control-fd: a descriptor (3 or more) open for reading.
func controlFile(fd int) (*os.File, error) {
	if fd < 3 {
		return nil, usageError("--control-fd must be 3 or more (0-2 are the command's stdio), got %d", fd)
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, usageError("--control-fd %d is not an open descriptor: %v", fd, err)
	}
	if fl&unix.O_ACCMODE == unix.O_WRONLY {
		return nil, usageError("--control-fd %d is not open for reading", fd)
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "control fd "+strconv.Itoa(fd)), nil
}
