//go:build linux

package api

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// checkPeer reads the peer's credentials from the socket (SO_PEERCRED):
// it must be this server's user, and its process must share this
// process's user and mount namespaces. The socket's mode (0600) already
// keeps other users out; this holds even if the mode were widened, and
// keeps out a command of one of the server's own sandboxes (each runs in
// new namespaces) that could reach the socket.
func checkPeer(c net.Conn) error {
	cred, err := peerCred(c)
	if err != nil {
		return err
	}
	if int(cred.Uid) != os.Geteuid() {
		return fmt.Errorf("the peer runs as uid %d, not as the server's user (%d)", cred.Uid, os.Geteuid())
	}
	if cred.Pid <= 0 {
		return errors.New("the peer's process is not visible from the server's PID namespace")
	}
	for _, ns := range []string{"user", "mnt"} {
		mine, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return fmt.Errorf("cannot read the server's %s namespace: %v", ns, err)
		}
		theirs, err := os.Readlink("/proc/" + strconv.Itoa(int(cred.Pid)) + "/ns/" + ns)
		if err != nil {
			return fmt.Errorf("cannot read the peer's %s namespace: %v", ns, err)
		}
		if mine != theirs {
			return fmt.Errorf("the peer runs in another %s namespace (a sandboxed command?)", ns)
		}
	}
	return nil
}

// peerCred returns the credentials of a unix socket's peer.
func peerCred(c net.Conn) (*syscall.Ucred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("not a unix socket (%T): the API answers only on unix sockets", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return cred, nil
}
