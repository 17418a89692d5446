package client

import (
	"fmt"
	"net"
)

// PeerRoot is a Peer check that passes only a server run by root: moatd.
// A socket served by anyone else (a path in $MOAT_DAEMON_SOCKET that
// another user, or a command of one's own, listens on) would be handed the
// caller's descriptors and told to sandbox a command it could run as it
// pleased, while moat said it ran through moatd.
func PeerRoot(c net.Conn) error {
	uid, err := peerUID(c)
	if err != nil {
		return err
	}
	if uid != 0 {
		return fmt.Errorf("served by uid %d, not root: not moatd", uid)
	}
	return nil
}

// peerUID is the user of the process at the other end of c, a unix
// socket connection.
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, fmt.Errorf("not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid, uerr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { uid, uerr = fdPeerUID(int(fd)) }); err != nil {
		return -1, err
	}
	if uerr != nil {
		return -1, fmt.Errorf("the server's credentials: %w", uerr)
	}
	return uid, nil
}
