//go:build darwin

package client

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerUID is the user of the process at the other end of c
// (LOCAL_PEERCRED: the credentials the server had when it called listen).
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, fmt.Errorf("not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Xucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, fmt.Errorf("the server's credentials: %w", cerr)
	}
	return int(cred.Uid), nil
}
