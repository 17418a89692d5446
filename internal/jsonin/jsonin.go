// Package jsonin checks a JSON request for what encoding/json decodes
// without a word but another reader of the same text would read otherwise:
// bytes that are not UTF-8 and \u escapes of lone surrogates (both decoded
// as U+FFFD: a command ran with characters its sender never wrote), and a
// key an object holds twice (encoding/json keeps the last; a filter in
// front of moat that keeps the first judges another request than moat
// runs). encoding/json matches a struct's fields by Unicode case folding
// ("Command" and "command", "bac\u212aground" and "background" are one
// field), so Check can compare keys folded as well.
package jsonin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is what Check found: Field is the key given twice, or "".
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string { return e.Msg }

// Check checks data, valid JSON (already decoded), for bytes that are not
// UTF-8, escapes of lone surrogates and, at any depth, a key an object
// holds twice: equal keys, or with fold keys equal under Unicode case
// folding (as encoding/json matches struct fields; use it when every
// object of the request decodes into a struct). It returns nil or an
// *Error.
func Check(data []byte, fold bool) error {
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return &Error{Msg: fmt.Sprintf("the body is not valid UTF-8 (byte %d is 0x%02x): JSON text must be UTF-8", i, data[i])}
	}
	if i := loneSurrogate(data); i >= 0 {
		end := min(i+6, len(data))
		return &Error{Msg: fmt.Sprintf("the body holds %s (at byte %d), a lone surrogate: it stands for no character", data[i:end], i)}
	}
	if k, first := duplicateKey(data, fold); k != "" {
		if first != k {
			return &Error{Field: k, Msg: fmt.Sprintf("%q is given twice (as %q and %q: keys are matched regardless of case)", k, first, k)}
		}
		return &Error{Field: k, Msg: fmt.Sprintf("%q is given twice", k)}
	}
	return nil
}

// loneSurrogate returns the offset of a \u escape in a string of data that
// is a surrogate not in a high-low pair, or -1.
func loneSurrogate(data []byte) int {
	in := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !in {
			in = c == '"'
			continue
		}
		switch c {
		case '"':
			in = false
		case '\\':
			if i+6 > len(data) || data[i+1] != 'u' {
				i++ // an escaped character: skip it
				continue
			}
			r := hex4(data[i+2 : i+6])
			switch {
			case r >= 0xd800 && r < 0xdc00:
				if i+12 <= len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
					if r2 := hex4(data[i+8 : i+12]); r2 >= 0xdc00 && r2 < 0xe000 {
						i += 11
						continue
					}
				}
				return i
			case r >= 0xdc00 && r < 0xe000:
				return i
			}
			i += 5
		}
	}
	return -1
}

// hex4 is the value of four hex digits, -1 if they are not.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}

// foldKey is k with each rune replaced by the least rune of its case
// folding orbit: two keys have the same foldKey exactly when
// strings.EqualFold says they are equal.
func foldKey(k string) string {
	var b strings.Builder
	for _, r := range k {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// duplicateKey returns a key an object of data holds twice (at any depth)
// and the first of the two as written, or "".
func duplicateKey(data []byte, fold bool) (string, string) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func() (string, string)
	walk = func() (string, string) {
		t, err := dec.Token()
		if err != nil {
			return "", ""
		}
		switch t {
		case json.Delim('{'):
			seen := map[string]string{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", ""
				}
				k, _ := kt.(string)
				norm := k
				if fold {
					norm = foldKey(k)
				}
				if first, ok := seen[norm]; ok {
					return k, first
				}
				seen[norm] = k
				if d, f := walk(); d != "" {
					return d, f
				}
			}
			dec.Token() // }
		case json.Delim('['):
			for dec.More() {
				if d, f := walk(); d != "" {
					return d, f
				}
			}
			dec.Token() // ]
		}
		return "", ""
	}
	return walk()
}
