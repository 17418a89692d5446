package shell

import (
	"reflect"
	"strings"
	"testing"
)

func TestHintFilter(t *testing.T) {
	tag := `<claude-code-hint plugin-name="my-lsp" install-command="npm install -g my-lsp" reason="Better TypeScript" />`
	hint := Hint{Attrs: map[string]string{"plugin-name": "my-lsp", "install-command": "npm install -g my-lsp", "reason": "Better TypeScript"}}
	tests := []struct {
		name  string
		in    string
		out   string
		hints []Hint
	}{
		{"none", "hello\nworld\n", "hello\nworld\n", nil},
		{"alone", tag + "\n", "", []Hint{hint}},
		{"between lines", "a\n" + tag + "\nb\n", "a\nb\n", []Hint{hint}},
		{"indented, CRLF", "a\n  \t" + tag + " \r\nb", "a\nb", []Hint{hint}},
		{"last line without newline", "a\n" + tag, "a\n", []Hint{hint}},
		{"single quotes", "<claude-code-hint v='1' type='plugin' />\n", "", []Hint{{Attrs: map[string]string{"v": "1", "type": "plugin"}}}},
		{"entities", `<claude-code-hint reason="a &quot;b&quot; &lt;c&gt;" />` + "\n", "", []Hint{{Attrs: map[string]string{"reason": `a "b" c`}}}},
		{"control chars sanitised", "<claude-code-hint reason=\"a\x1b[31mb\" />\n", "", []Hint{{Attrs: map[string]string{"reason": "a [31mb"}}}},
		{"inside text is kept", "see " + tag + " here\n", "see " + tag + " here\n", nil},
		{"not closed is kept", "<claude-code-hint reason=\"x\">\n", "<claude-code-hint reason=\"x\">\n", nil},
		{"other tag is kept", "<claude-code-hintx a=\"1\" />\n", "<claude-code-hintx a=\"1\" />\n", nil},
		{"unquoted attr is kept", "<claude-code-hint a=1 />\n", "<claude-code-hint a=1 />\n", nil},
		{"prefix of the tag is kept", "<claude\n<clau", "<claude\n<clau", nil},
		{"too many hints are dropped", strings.Repeat(tag+"\n", maxHints+3), "", repeatHint(hint, maxHints)},
	}
	for _, tc := range tests {
		// Every way of cutting the input into two chunks gives the same.
		for cut := 0; cut <= len(tc.in); cut++ {
			var h hintFilter
			got := string(h.write([]byte(tc.in[:cut]))) + string(h.write([]byte(tc.in[cut:]))) + string(h.flush())
			if got != tc.out {
				t.Fatalf("%s (cut at %d): output %q, want %q", tc.name, cut, got, tc.out)
			}
			if !reflect.DeepEqual(h.hints, tc.hints) {
				t.Fatalf("%s (cut at %d): hints %v, want %v", tc.name, cut, h.hints, tc.hints)
			}
		}
	}
}

func repeatHint(h Hint, n int) []Hint {
	out := make([]Hint, n)
	for i := range out {
		out[i] = h
	}
	return out
}

// TestHintFilterStreams checks that ordinary output is not held back.
func TestHintFilterStreams(t *testing.T) {
	var h hintFilter
	if got := string(h.write([]byte("progress 10%"))); got != "progress 10%" {
		t.Errorf("a partial line that cannot be a hint was held back: %q", got)
	}
	if got := string(h.write([]byte(" <claude-code-hint a=\"1\" />\n"))); got != " <claude-code-hint a=\"1\" />\n" {
		t.Errorf("the rest of a line already passed on was filtered: %q", got)
	}
	if got := string(h.write([]byte("<claude-"))); got != "" {
		t.Errorf("a possible hint was passed on: %q", got)
	}
	if got := string(h.write([]byte(strings.Repeat("x", maxHintLine)))); !strings.HasPrefix(got, "<claude-") {
		t.Errorf("an overlong line was held back: %q", got)
	}
	off := hintFilter{off: true}
	if got := string(off.write([]byte("<claude-code-hint a=\"1\" />\n"))); got == "" {
		t.Error("a filter that is off removed a hint")
	}
}
