//go:build darwin

package client

import "golang.org/x/sys/unix"

// fdPeerUID is the user of the process at the other end of the unix
// socket fd (LOCAL_PEERCRED: the credentials the server had when it
// called listen).
func fdPeerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
