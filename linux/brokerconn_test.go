//go:build linux

package linux

import (
	"os"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The broker reads a connect's address as the kernel takes it: up to a
// sockaddr_storage, 128 bytes (a common idiom passes sizeof it; x/sys's
// RawSockaddrAny is 112, and such a connect failed under the broker).
func TestReadSockaddrTakesAStorage(t *testing.T) {
	buf := make([]byte, 200)
	addr := uint64(uintptr(unsafe.Pointer(&buf[0])))
	if b, errno := readSockaddr(os.Getpid(), addr, 128); errno != 0 || len(b) != 128 {
		t.Errorf("128 bytes: %d bytes, %v", len(b), errno)
	}
	if _, errno := readSockaddr(os.Getpid(), addr, 129); errno != unix.EINVAL {
		t.Errorf("129 bytes: %v, want EINVAL", errno)
	}
	runtime.KeepAlive(buf)
}
