package main

import (
	"encoding/json"
	"io"
)

// newJSONEncoder is the one encoder setting of everything moat prints as
// JSON (moat check --json and --jsonl, moat policy --json and --seatbelt
// --json, moat doctor --json, moat version --json): "<", ">" and "&" as
// they are, never \u003c, \u003e, \u0026 (the output is not HTML), and
// indented when the output is one document for a person to read as well.
// moat session --jsonl and the local API encode their events the same way.
func newJSONEncoder(w io.Writer, indent bool) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc
}
