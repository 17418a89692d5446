// Package client talks to moat's local API (moat serve) over its unix
// socket. docs/API.md describes the API, docs/openapi.yaml every route.
//
//	c := client.New("/run/user/1000/moat/api.sock")
//	s, err := c.CreateSession(ctx, client.SessionRequest{})
//	res, err := c.Run(ctx, s.ID, client.CommandRequest{Command: "ls"}, nil)
//
// Errors the server answers are *Error, with the status and the field at
// fault.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
)

// MaxEventBytes bounds one line of a command's event stream.
const MaxEventBytes = 64 << 20

// Client is a client of one server. Safe for concurrent use.
type Client struct {
	// HTTP sends the requests; New makes one that dials the socket.
	HTTP *http.Client
	// Base is the URL the paths are joined to ("http://moat" for a unix
	// socket: the host name is not used).
	Base string
	// Socket is the server's unix socket (New sets it): RunAttached dials
	// it itself, to pass descriptors.
	Socket string
	// Peer, if set, judges the process at the other end of every
	// connection made (New's transport's and RunAttached's) before a byte
	// is sent on it: an error closes the connection and fails the request.
	// moat's CLI uses it to talk to moatd only when root serves the socket
	// (PeerRoot). Set it before the first request.
	Peer func(net.Conn) error
}

// New returns a client of the server listening on the unix socket path.
// Its requests show the server's proof (ProofHeader), read once for each
// connection when it is made (Proof). Its HTTP client serves any HTTP
// server on a unix socket that asks for the proof (moat mcp --http
// unix:PATH: give it as the MCP client's HTTP client).
func New(socket string) *Client {
	cl := &Client{Base: "http://moat", Socket: socket}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := cl.dial(ctx, socket)
			if err != nil {
				return nil, err
			}
			return &proofConn{Conn: c, proof: Proof(c)}, nil
		},
		MaxIdleConnsPerHost: 64,
	}
	cl.HTTP = &http.Client{Transport: &proofTransport{tr}}
	return cl
}

// dial connects to socket and, with Peer set, has it judge the server.
func (c *Client) dial(ctx context.Context, socket string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, err
	}
	if c.Peer != nil {
		if err := c.Peer(conn); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

// Close closes the idle connections.
func (c *Client) Close() { c.HTTP.CloseIdleConnections() }

// proofConn is a connection and the proof its server showed when it was
// made.
type proofConn struct {
	net.Conn
	proof string
}

// proofTransport sends each request with the proof of the connection it
// goes on: the transport picks the connection (an idle one, or a new one
// to a server that may have been restarted since), so the header is set
// once it has (httptrace's GotConn comes before the request is written;
// again if the request is retried on another connection).
type proofTransport struct{ *http.Transport }

func (t *proofTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Del(ProofHeader)
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if pc, ok := info.Conn.(*proofConn); ok && pc.proof != "" {
			h.Set(ProofHeader, pc.proof)
		} else {
			h.Del(ProofHeader)
		}
	}}
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), trace))
	r.Header = h
	return t.Transport.RoundTrip(r)
}

// Health is GET /v1/health.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	return h, c.do(ctx, http.MethodGet, "/v1/health", nil, &h)
}

// CreateSession opens a session: a sandbox and a shell on it.
func (c *Client) CreateSession(ctx context.Context, req SessionRequest) (Session, error) {
	var s Session
	return s, c.do(ctx, http.MethodPost, "/v1/sessions", req, &s)
}

// Sessions lists the open sessions.
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	var l SessionList
	err := c.do(ctx, http.MethodGet, "/v1/sessions", nil, &l)
	return l.Sessions, err
}

// Session describes one session.
func (c *Client) Session(ctx context.Context, id string) (Session, error) {
	var s Session
	return s, c.do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id), nil, &s)
}

// CloseSession kills the session's commands and ends its sandbox.
func (c *Client) CloseSession(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/sessions/"+url.PathEscape(id), nil, nil)
}

// Run runs a command in the foreground and returns its "finished" event.
// If onEvent is set it gets every event of the stream as it comes
// (started, output, progress, finished). Cancelling ctx kills the command.
func (c *Client) Run(ctx context.Context, session string, req CommandRequest, onEvent func(Event)) (Event, error) {
	st, err := c.Stream(ctx, session, req)
	if err != nil {
		return Event{}, err
	}
	defer st.Close()
	for {
		line, err := st.Next()
		if err != nil {
			return Event{}, err
		}
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return Event{}, fmt.Errorf("moat api: bad event %q: %w", line, err)
		}
		if onEvent != nil {
			onEvent(ev)
		}
		if ev.Event == "finished" {
			return ev, nil
		}
	}
}

// Stream starts a command in the foreground and returns once the server
// has accepted it (a read or kill of the command then finds it); Next
// reads its events as they come. Cancelling ctx, or closing the stream
// before the finished event, kills the command.
func (c *Client) Stream(ctx context.Context, session string, req CommandRequest) (*EventStream, error) {
	req.Background = false
	resp, err := c.send(ctx, http.MethodPost, commandsPath(session), req)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), MaxEventBytes)
	return &EventStream{body: resp.Body, sc: sc}, nil
}

// EventStream is a command's NDJSON event stream.
type EventStream struct {
	body     io.ReadCloser
	sc       *bufio.Scanner
	finished bool
}

// Next returns the next event, one JSON object as the server wrote it.
// After the "finished" event it returns io.EOF; a stream that ends before
// it is an error.
func (s *EventStream) Next() ([]byte, error) {
	if s.finished {
		return nil, io.EOF
	}
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var head struct {
			Event string `json:"event"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, fmt.Errorf("moat api: bad event %q: %w", line, err)
		}
		s.finished = head.Event == "finished"
		return append([]byte(nil), line...), nil
	}
	if err := s.sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("moat api: the event stream ended before the command finished")
}

// Close closes the stream (killing the command if it has not finished).
func (s *EventStream) Close() error { return s.body.Close() }

// RunWait runs a command in the foreground without streaming
// (?stream=false) and returns its "finished" event.
func (c *Client) RunWait(ctx context.Context, session string, req CommandRequest) (Event, error) {
	var ev Event
	return ev, c.do(ctx, http.MethodPost, commandsPath(session)+"?stream=false", req, &ev)
}

// Start starts a command in the background (req.Background is set for
// you) and returns at once.
func (c *Client) Start(ctx context.Context, session string, req CommandRequest) (CommandStatus, error) {
	req.Background = true
	var st CommandStatus
	return st, c.do(ctx, http.MethodPost, commandsPath(session), req, &st)
}

// Read returns a background command's output since the last read, and
// its result once it has finished.
func (c *Client) Read(ctx context.Context, session, command string) (CommandStatus, error) {
	var st CommandStatus
	return st, c.do(ctx, http.MethodGet, commandPath(session, command), nil, &st)
}

// Kill kills a command and waits for it; the answer holds its result.
func (c *Client) Kill(ctx context.Context, session, command string) (CommandStatus, error) {
	var st CommandStatus
	return st, c.do(ctx, http.MethodDelete, commandPath(session, command), nil, &st)
}

// ReadRaw is Read with the result as the server wrote it.
func (c *Client) ReadRaw(ctx context.Context, session, command string) (RawCommandStatus, error) {
	var st RawCommandStatus
	return st, c.do(ctx, http.MethodGet, commandPath(session, command), nil, &st)
}

// KillRaw is Kill with the result as the server wrote it.
func (c *Client) KillRaw(ctx context.Context, session, command string) (RawCommandStatus, error) {
	var st RawCommandStatus
	return st, c.do(ctx, http.MethodDelete, commandPath(session, command), nil, &st)
}

// StartRaw is Start with the result (of a command that did not start) as
// the server wrote it.
func (c *Client) StartRaw(ctx context.Context, session string, req CommandRequest) (RawCommandStatus, error) {
	req.Background = true
	var st RawCommandStatus
	return st, c.do(ctx, http.MethodPost, commandsPath(session), req, &st)
}

// HoldSession ties the session to a connection of its own until ctx ends
// (GET /v1/sessions/{session}/lifeline): when this process goes away, even
// killed, the connection closes and the server closes the session. It
// returns when the session is closed or ctx ends.
func (c *Client) HoldSession(ctx context.Context, session string) error {
	resp, err := c.send(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(session)+"/lifeline", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Decide is moat's decision on a command (POST /v1/decide); nothing runs.
func (c *Client) Decide(ctx context.Context, req DecideRequest) (Decision, error) {
	var d Decision
	return d, c.do(ctx, http.MethodPost, "/v1/decide", req, &d)
}

// Policy is the server's effective policy, as moat policy --json prints
// it.
func (c *Client) Policy(ctx context.Context) (json.RawMessage, error) {
	var p json.RawMessage
	return p, c.do(ctx, http.MethodGet, "/v1/policy", nil, &p)
}

func commandsPath(session string) string {
	return "/v1/sessions/" + url.PathEscape(session) + "/commands"
}

func commandPath(session, command string) string {
	return commandsPath(session) + "/" + url.PathEscape(command)
}

// do sends a request and decodes a 2xx answer into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// send sends a request with body as JSON. An answer that is not 2xx is
// returned as *Error.
func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	e := &Error{Status: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, e) != nil || e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return nil, e
}
