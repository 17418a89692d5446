//go:build unix

// Package reportfd makes the descriptor 3 a session's processes report on
// (the working directory, the exported environment, the snapshot): a
// one-way unix socket, not a pipe. A pipe can be reopened through
// /proc/PID/fd/N by any process of the same user that can see the shell:
// a program the command ran wrote a forged report through bash's saved
// copy of descriptor 3 (found by an attack pass). A socket cannot be
// opened through /proc (ENXIO), so only the shell and the forks that
// inherit the descriptor can write on it.
package reportfd

import (
	"os"
	"syscall"

	"github.com/moat-sandbox/moat/internal/sys"
)

// Pair returns the host's end, to read (non-blocking, in Go's poller:
// deadlines work), and the process's end, to write (blocking, as a shell
// expects). Both are close-on-exec; the caller hands child to the process
// and closes its copy once the process has it.
func Pair() (host, child *os.File, err error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, sys.Named("socketpair", err)
	}
	// One way: the host only reads, the process only writes.
	syscall.Shutdown(fds[0], syscall.SHUT_WR)
	syscall.Shutdown(fds[1], syscall.SHUT_RD)
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, sys.Named("setnonblock", err)
	}
	return os.NewFile(uintptr(fds[0]), "moat-report"), os.NewFile(uintptr(fds[1]), "moat-report-child"), nil
}
