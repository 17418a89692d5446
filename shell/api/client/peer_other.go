//go:build !linux && !darwin

package client

import "errors"

// fdPeerUID: no way to ask here, so no server passes PeerRoot.
func fdPeerUID(int) (int, error) {
	return -1, errors.New("the server's credentials cannot be read on this system")
}
