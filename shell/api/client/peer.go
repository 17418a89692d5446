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
