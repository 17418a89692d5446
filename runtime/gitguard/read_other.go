//go:build !linux

package gitguard

import (
	"io/fs"
	"os"
	"syscall"
)

// openRead opens p for reading only if it is a regular file (see
// read_linux.go). Without O_PATH the file is opened before it is checked:
// O_NONBLOCK keeps a FIFO's open from waiting, but a device's open runs
// (not covered off Linux).
func openRead(p string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fi, err
	}
	return f, fi, nil
}
