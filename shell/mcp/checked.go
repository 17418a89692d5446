package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/moat-sandbox/moat/internal/jsonin"
)

// The SDK decodes a message as encoding/json does: of a key given twice the
// last wins ({"command":"echo first","command":"echo second"} ran the
// second, where a filter in front of the server that keeps the first
// judged the first), and bytes that are not UTF-8 and lone surrogates
// become U+FFFD (the command ran with characters its sender never wrote).
// Found by an attack pass. Checked refuses such a request's parameters, a
// call with an "invalid params" error naming the problem, before the
// server sees it; CheckedHandler such a body over HTTP.

// Checked wraps a transport (stdio) so that requests whose parameters are
// ambiguous never reach the server.
func Checked(t sdk.Transport) sdk.Transport { return checkedTransport{t} }

type checkedTransport struct{ sdk.Transport }

func (t checkedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return checkedConn{c}, nil
}

type checkedConn struct{ sdk.Connection }

func (c checkedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || len(req.Params) == 0 {
			return msg, nil
		}
		cerr := jsonin.Check(req.Params, false)
		if cerr == nil {
			return msg, nil
		}
		if req.IsCall() {
			resp := &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + cerr.Error()}}
			if err := c.Connection.Write(ctx, resp); err != nil {
				return nil, err
			}
		}
		// A notification gets no answer: it is dropped.
	}
}

// CheckedHandler refuses (400, a JSON-RPC error) a POST whose body holds a
// key twice, bytes that are not UTF-8 or a lone surrogate, before h reads
// it. maxBody bounds what it reads (413 past it).
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
		if json.Valid(body) {
			if cerr := jsonin.Check(body, false); cerr != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
					"error": map[string]any{"code": jsonrpc.CodeInvalidRequest, "message": "invalid request: " + cerr.Error()}})
				w.Write(b)
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		h.ServeHTTP(w, r)
	})
}
