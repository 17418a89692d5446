package api

// peerKey keys the peerResult of a connection in its requests' contexts.
type peerKey struct{}

// peerResult is checkPeer's verdict on a connection: nil if its peer may
// use the API.
type peerResult struct {
	err  error
	peer *Peer      // set in daemon mode
	proc *procState // what moat serve read of the peer's process (Linux)
}
