package jsonin

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		body  string
		fold  bool
		field string // "-": no error
		msg   string
	}{
		{`{"command":"echo a","id":"x"}`, true, "-", ""},
		{`{"command":"echo \u00e9 \ud83d\ude00 \\ud800"}`, true, "-", ""}, // a pair, and an escaped backslash
		{`{"a":{"b":1},"c":{"b":2}}`, true, "-", ""},
		{`{"command":"echo a","command":"id"}`, false, "command", "given twice"},
		{`{"command":"echo a","Command":"id"}`, false, "-", ""},
		{`{"command":"echo a","Command":"id"}`, true, "Command", "regardless of case"},
		{`{"background":false,"bac\u212aground":true}`, true, "bac\u212aground", "regardless of case"},
		{`{"x":[{"mode":"default","MODE":"plan"}]}`, true, "MODE", "given twice"},
		{"{\"command\":\"echo \xff\xfe\"}", true, "", "not valid UTF-8 (byte 17 is 0xff)"},
		{`{"command":"echo \ud800 x"}`, true, "", `\ud800 (at byte 17), a lone surrogate`},
		{`{"command":"echo \uDC00"}`, true, "", "lone surrogate"},
		{`{"command":"echo \ud800\u0041"}`, true, "", "lone surrogate"},
		{`{"command":"echo \ud800"}`, true, "", "lone surrogate"},
	} {
		err := Check([]byte(tc.body), tc.fold)
		var e *Error
		switch {
		case tc.field == "-":
			if err != nil {
				t.Errorf("%s: %v, want nothing", tc.body, err)
			}
		case !errors.As(err, &e):
			t.Errorf("%s (fold %v): %v, want an error naming %q", tc.body, tc.fold, err, tc.field)
		case e.Field != tc.field || !strings.Contains(e.Msg, tc.msg):
			t.Errorf("%s: %q naming %q, want %q naming %q", tc.body, e.Msg, e.Field, tc.msg, tc.field)
		}
	}
}
