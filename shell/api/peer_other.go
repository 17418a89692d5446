//go:build !linux && !darwin

package api

import (
	"errors"
	"net"
)

// checkPeer refuses every peer: this system gives no way to check the
// peer's user here.
func checkPeerCred(net.Conn) error {
	return errors.New("the API cannot check who connects on this system")
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
