package netproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// FuzzServeConn feeds arbitrary client bytes to one connection: the proxy
// must never panic, must answer or close within its header timeout, and
// must never dial anything (the fuzz policy allows nothing but one name
// that resolves to nothing dialable).
func FuzzServeConn(f *testing.F) {
	for _, s := range []string{
		"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"CONNECT a.test:443 HTTP/1.1\r\n\r\n",
		"CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
		"\x05\x01\x00\x05\x01\x00\x03\x06a.test\x00\x50",
		"\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x16",
		"\x05\x02\x00\x02\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00",
		"GET http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"POST http://0x7f.1:80/ HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
	} {
		f.Add([]byte(s))
	}
	rules, err := NewRules(netOf([]string{"a.test"}, nil))
	if err != nil {
		f.Fatal(err)
	}
	s := &Server{
		Rules:         rules,
		Resolver:      &fakeResolver{names: map[string][]netip.Addr{"a.test": {netip.MustParseAddr("203.0.113.99")}}},
		Dial:          func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("fuzz: no dialing") },
		LocalAddrs:    func() ([]netip.Addr, error) { return nil, nil },
		HeaderTimeout: 100 * time.Millisecond,
		IdleTimeout:   100 * time.Millisecond,
	}
	s.init()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	defer l.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		client, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.serveConn(server)
			server.Close()
		}()
		go func() {
			client.SetWriteDeadline(time.Now().Add(time.Second))
			client.Write(data)
			client.(*net.TCPConn).CloseWrite()
		}()
		client.SetReadDeadline(time.Now().Add(3 * time.Second))
		io.Copy(io.Discard, client)
		client.Close()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			t.Fatalf("connection handler still running for %q", data)
		}
	})
}
