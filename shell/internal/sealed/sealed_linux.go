package sealed

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// File returns a read-only descriptor, at offset 0, of a memfd that holds
// b and is sealed against writes, growth, shrinking and new seals: no
// descriptor of it, however reopened, can change what it holds.
func File(b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("moat-shell-snapshot", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "moat-shell-snapshot")
	defer f.Close()
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			return nil, fmt.Errorf("memfd write: %w", err)
		}
		b = b[n:]
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL); err != nil {
		return nil, fmt.Errorf("memfd seals: %w", err)
	}
	// A read-only descriptor of its own, at offset 0 (the one written
	// through is at the end).
	ro, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("memfd reopen: %w", err)
	}
	return os.NewFile(uintptr(ro), "moat-shell-snapshot"), nil
}
