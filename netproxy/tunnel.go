package netproxy

import (
	"io"
	"net"
)

type closeWriter interface{ CloseWrite() error }

// tunnel splices client and upstream both ways until both directions end.
// clientPending is early data the client sent before the verdict;
// upPending is data the upstream sent before the tunnel began. With
// *net.TCPConn on both sides io.Copy uses splice(2) on Linux, so bytes do
// not pass through user space.
//
// A direction that ends with EOF half-closes its destination (CloseWrite)
// and the other direction carries on; a direction that fails closes both
// connections, which ends the other one too.
func tunnel(client net.Conn, clientPending []byte, up net.Conn, upPending []byte) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(up, client, clientPending)
	}()
	pipe(client, up, upPending)
	<-done
	client.Close()
	up.Close()
}

// pipe copies src to dst after writing pending.
func pipe(dst, src net.Conn, pending []byte) {
	if len(pending) > 0 {
		if _, err := dst.Write(pending); err != nil {
			dst.Close()
			src.Close()
			return
		}
	}
	_, err := io.Copy(dst, src)
	if err != nil {
		dst.Close()
		src.Close()
		return
	}
	if cw, ok := dst.(closeWriter); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	// Cannot half-close: end the whole connection.
	dst.Close()
	src.Close()
}
