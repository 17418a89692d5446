package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/moat-sandbox/moat/internal/jsonin"
)

// The SDK decodes a message as encoding/json does: of a key given twice the
// last wins ({"command":"echo first","command":"echo second"} ran the
// second, where a filter in front of the server that keeps the first
// judged the first), and bytes that are not UTF-8 and lone surrogates
// become U+FFFD (the command ran with characters its sender never wrote).
// Found by an attack pass. CheckedIO refuses such a message over stdio,
// CheckedHandler such a body over HTTP, before the SDK reads it. Both look
// at the whole message, not only a request's parameters: "method" or
// "params" given twice, and a client's answer to an elicitation with
// {"action":"decline","action":"accept"}, ran a command a filter saw as a
// listing or as declined, when only the parameters were checked (attack
// pass 73).

// CheckedIO is the SDK's stdio transport (sdk.IOTransport) on r and w,
// with every message checked whole before the SDK reads it (jsonin.Check).
// A refused request gets an "invalid request" error with its id (id null
// when its id is itself ambiguous); a refused answer of the client's is
// handed on as an error answer with its id, so that what waits for it (an
// elicitation: the command is not run) fails, saying why; a refused
// notification is dropped.
func CheckedIO(r io.ReadCloser, w io.WriteCloser) sdk.Transport {
	return &checkedIO{r: r, w: &lockedWriter{w: w}}
}

type checkedIO struct {
	r io.ReadCloser
	w *lockedWriter
}

func (t *checkedIO) Connect(ctx context.Context) (sdk.Connection, error) {
	pr, pw := io.Pipe()
	go t.filter(pw)
	return (&sdk.IOTransport{Reader: pipeReader{pr, t.r}, Writer: t.w}).Connect(ctx)
}

// filter reads the client's messages as the SDK's stdio transport frames
// them (one JSON value, then a line end) and hands each the check lets
// through to the SDK on pw, one a line.
func (t *checkedIO) filter(pw *io.PipeWriter) {
	lim := &frameLimit{r: t.r, limit: sdk.DefaultMaxLineLength}
	dec := json.NewDecoder(lim)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			pw.CloseWithError(err) // io.EOF: the client's end, as the SDK reads it
			return
		}
		// The SDK refuses anything but a line end after a value; each
		// value goes to it on a line of its own, so the check is here.
		var tr [1]byte
		if n, _ := dec.Buffered().Read(tr[:]); n > 0 && tr[0] != '\n' && tr[0] != '\r' {
			pw.CloseWithError(errors.New("invalid trailing data at the end of stream"))
			return
		}
		lim.count = 0
		msg := []byte(raw)
		if cerr := jsonin.Check(raw, false); cerr != nil {
			if msg = t.refuse(raw, cerr); msg == nil {
				continue
			}
		}
		if _, err := pw.Write(append(msg, '\n')); err != nil {
			return
		}
	}
}

// refuse answers a message the check refused, and returns what the SDK
// should read instead (nil: nothing).
func (t *checkedIO) refuse(raw []byte, cerr error) []byte {
	id, hasID, call, answer := envelope(raw)
	switch {
	case answer && id != nil:
		return errorMessage(id, jsonrpc.CodeInvalidRequest, "moat refused the client's answer: "+cerr.Error())
	case call && !hasID:
		return nil // a notification: no answer
	}
	t.w.Write(append(errorMessage(id, jsonrpc.CodeInvalidRequest, "invalid request: "+cerr.Error()), '\n'))
	return nil
}

// envelope reads the top level of a JSON-RPC message: its id when it is
// given once, as a string or a number (nil otherwise), whether it has an
// id at all, whether it is a request (method) or an answer (result or
// error). A batch (an array) has none of these.
func envelope(raw []byte) (id json.RawMessage, hasID, call, answer bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false, false, false
	}
	ids := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false, false, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false, false, false
		}
		switch tok {
		case "id":
			ids++
			id = v
		case "method":
			call = true
		case "result", "error":
			answer = true
		}
	}
	if ids != 1 || len(id) == 0 || !(id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9') || jsonin.Check(id, false) != nil {
		id = nil
	}
	return id, ids > 0, call, answer
}

// errorMessage is a JSON-RPC error answer (id nil: null).
func errorMessage(id json.RawMessage, code int64, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	type wireError struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{code, msg}})
	return b
}

// lockedWriter keeps the refusals filter writes from interleaving with the
// SDK's messages (the SDK writes each in one call).
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// pipeReader is what the SDK reads: the filter's pipe; closing it closes
// the client's end too, which ends the filter.
type pipeReader struct {
	*io.PipeReader
	client io.Closer
}

func (p pipeReader) Close() error {
	p.PipeReader.Close()
	return p.client.Close()
}

// frameLimit bounds what one message may take, as the SDK's own stdio
// transport does (sdk.DefaultMaxLineLength): the decoder would otherwise
// buffer a value without end.
type frameLimit struct {
	r            io.Reader
	limit, count int
}

func (f *frameLimit) Read(p []byte) (int, error) {
	if f.count >= f.limit {
		return 0, fmt.Errorf("a message is longer than %d bytes", f.limit)
	}
	p = p[:min(len(p), f.limit-f.count)]
	n, err := f.r.Read(p)
	f.count += n
	return n, err
}

// CheckedHandler refuses (400, a JSON-RPC error) a POST whose body is not
// one JSON value, or holds a key twice, bytes that are not UTF-8 or a lone
// surrogate, before h reads it. maxBody bounds what it reads (413 past it).
func CheckedHandler(h http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				http.Error(w, "the body is too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		// A body that is not one JSON value is refused too, not handed on
		// unchecked: the SDK reads the first value of it and ignores what
		// follows, so a key given twice followed by " x" ran the last
		// (attack pass 73).
		var cerr error
		if !json.Valid(body) {
			cerr = errors.New("the body is not one JSON value (a JSON-RPC message or batch, nothing after it)")
		} else {
			cerr = jsonin.Check(body, false)
		}
		if cerr != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(errorMessage(nil, jsonrpc.CodeInvalidRequest, "invalid request: "+cerr.Error()))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		h.ServeHTTP(w, r)
	})
}
