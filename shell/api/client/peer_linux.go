//go:build linux

package client

import "golang.org/x/sys/unix"

// fdPeerUID is the user of the process at the other end of the unix
// socket fd (SO_PEERCRED: the credentials the server had when it called
// listen, which it cannot forge).
func fdPeerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
