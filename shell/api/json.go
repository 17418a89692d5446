package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/moat-sandbox/moat/internal/jsonin"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// apiError is an answer other than 2xx: a status and the JSON body
// {"error": msg, "field": field}.
type apiError struct {
	status int
	msg    string
	field  string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, field, format string, a ...any) *apiError {
	return &apiError{status: status, field: field, msg: fmt.Sprintf(format, a...)}
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, client.Error{Message: e.msg, Field: e.field})
}

// writeJSON writes v as the body, with ">" and "&" as they are.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // the peer went away: nothing to do
}

// writeBody writes v as JSON after the headers were sent.
func writeBody(w http.ResponseWriter, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // the peer went away: nothing to do
}

// decodeBody decodes the request's body, one JSON object of at most max
// bytes, into v. Unknown fields are refused, naming the field. An empty
// body is {} when emptyOK, else an error.
func decodeBody(w http.ResponseWriter, r *http.Request, max int64, v any, emptyOK bool) *apiError {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		return jsonError(err, max)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == io.EOF && emptyOK {
		return nil
	}
	if err != nil {
		return jsonError(err, max)
	}
	// Go keeps the last of two equal keys, and matches a field's name
	// regardless of case ("command" and "Command" are one field): a filter
	// in front of moat that keeps the first would judge another request
	// than moat runs. Bytes that are not UTF-8 and lone surrogates it
	// decodes as U+FFFD: a command would run with characters its sender
	// never wrote (both found by an attack pass). Every object of a
	// request decodes into a struct: keys are compared folded.
	var je *jsonin.Error
	if err := jsonin.Check(data, true); errors.As(err, &je) {
		return errorf(http.StatusBadRequest, je.Field, "%s", je.Msg)
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return jsonError(err, max)
		}
		return errorf(http.StatusBadRequest, "", "the body must hold one JSON object, and nothing after it")
	}
	return nil
}

// jsonError explains a decoding error, naming the field when there is one.
func jsonError(err error, max int64) *apiError {
	var (
		mb *http.MaxBytesError
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mb):
		return errorf(http.StatusRequestEntityTooLarge, "", "the body is larger than %d bytes", max)
	case err == io.EOF:
		return errorf(http.StatusBadRequest, "", "the body is empty: a JSON object is required")
	case errors.As(err, &se):
		return errorf(http.StatusBadRequest, "", "the body is not valid JSON (at byte %d): %v", se.Offset, se)
	case errors.As(err, &te):
		if te.Field == "" {
			return errorf(http.StatusBadRequest, "", "the body must be a JSON object, not a %s", te.Value)
		}
		if k := te.Type.Kind().String(); (strings.HasPrefix(k, "int") || strings.HasPrefix(k, "uint")) && strings.HasPrefix(te.Value, "number") {
			// "must be a number, not a number 1e3": a fraction, an
			// exponent, or out of range.
			return errorf(http.StatusBadRequest, te.Field, "%q must be a whole number written without a fraction or an exponent, within a 64-bit integer (got %s)", te.Field, strings.TrimPrefix(te.Value, "number "))
		}
		return errorf(http.StatusBadRequest, te.Field, "%q must be a %s, not a %s", te.Field, jsonType(te.Type.Kind().String()), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, "", "the body ends inside a JSON value")
	}
	// encoding/json has no type for this one: `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return errorf(http.StatusBadRequest, name, "unknown field %q", name)
	}
	return errorf(http.StatusBadRequest, "", "the body is not a valid request: %v", err)
}

// jsonType names a Go kind as JSON does.
func jsonType(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"), strings.HasPrefix(kind, "float"):
		return "number"
	case kind == "bool":
		return "boolean"
	case kind == "slice":
		return "array"
	case kind == "struct", kind == "map":
		return "object"
	}
	return kind
}
