//go:build darwin

package api

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// checkPeer reads the peer's credentials from the socket (LOCAL_PEERCRED):
// it must be this server's user. The socket's mode (0600) already keeps
// other users out; this holds even if the mode were widened.
func checkPeerCred(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("not a unix socket (%T): the API answers only on unix sockets", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Xucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("LOCAL_PEERCRED: %w", cerr)
	}
	if int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("the peer runs as uid %d, not as the server's user (%d)", cred.Uid, os.Geteuid())
	}
	return nil
}

// checkDaemonPeer refuses every peer: moat's daemon mode is Linux-only.
func checkDaemonPeer(net.Conn) (*Peer, error) {
	return nil, errors.New("the daemon mode needs Linux")
}

// hostNamespaces has nothing to read here (daemon mode is Linux-only).
func hostNamespaces() ([2]string, error) { return [2]string{}, nil }

// procState is what moat serve reads of a peer's process: nothing here
// (POST /v1/cli/run is Linux-only).
type procState struct{}

// checkPeer is checkPeerCred; nothing more of the peer is read here.
func checkPeer(c net.Conn) (*procState, error) { return nil, checkPeerCred(c) }
