package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/moat-sandbox/moat/shell/api/client"
)

// PeerChecked wraps a unix socket listener for another server of this
// process (moat mcp --http unix:): a connection whose peer is not this
// process's user in its user and mount namespaces, confined as it is (the
// checks moat serve makes), is answered 403 and closed, and never reaches
// the caller's Accept. Without it a command of a narrower sandbox that may
// reach unix sockets called moat mcp's bash tool, ran under its policy, and
// answered the elicitation of its own "ask" (found by an attack pass).
func PeerChecked(l net.Listener) net.Listener { return &peerListener{l} }

type peerListener struct{ net.Listener }

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if _, err := checkPeer(c); err != nil {
			go forbidConn(c, err.Error())
			continue
		}
		return c, nil
	}
}

// forbidConn answers a refused peer 403 and closes its connection, after
// reading its request's header (a close with the request unread resets the
// connection, and the client sees no answer).
func forbidConn(c net.Conn, why string) {
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 4096)
	var head []byte
	for len(head) < 64<<10 && !bytes.Contains(head, []byte("\r\n\r\n")) {
		n, err := c.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			break
		}
	}
	body, _ := json.Marshal(client.Error{Message: why})
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n", len(body)+1, body)
	c.Close()
}
