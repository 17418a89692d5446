package shellword

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// TestLiteralValue: on every word of the agent corpora, the literal fast
// path gives what mvdan.cc/sh's expand gives, whenever it applies.
func TestLiteralValue(t *testing.T) {
	var cmds []string
	for _, fn := range []string{"../../validators/testdata/agent_commands.txt", "../../permissions/testdata/corpus.jsonl"} {
		f, err := os.Open(fn)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			var s string
			var r struct{ Cmd string }
			switch {
			case json.Unmarshal([]byte(line), &s) == nil:
				cmds = append(cmds, s)
			case json.Unmarshal([]byte(line), &r) == nil:
				cmds = append(cmds, r.Cmd)
			}
		}
		f.Close()
	}
	if len(cmds) < 1000 {
		t.Fatalf("%d commands", len(cmds))
	}
	applied := 0
	for _, c := range cmds {
		f, err := syntax.NewParser().Parse(strings.NewReader(c), "")
		if err != nil {
			continue
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			w, ok := n.(*syntax.Word)
			if !ok {
				return true
			}
			v, ok := literalValue(w)
			if !ok {
				return true
			}
			applied++
			if scanErr := (Evaluator{}).scan(w); scanErr != nil {
				t.Errorf("%q: literal %q, but scan says %v", c, v, scanErr)
			}
			if slow, err := (Evaluator{}).expand(w); err != nil || slow != v {
				t.Errorf("%q: literal %q, expand %q (%v)", c, v, slow, err)
			}
			return true
		})
	}
	if applied < 1000 {
		t.Errorf("the literal path applied to %d words only", applied)
	}
}

// TestHasAny: the byte-set scan answers as strings.ContainsAny.
func TestHasAny(t *testing.T) {
	for _, s := range []string{"", "plain", "a\\b", "x*", "é$", "\xff~", "a`b", "{", "héllo wörld", "[", "?"} {
		if hasAny(s, &unquotedSpecial) != strings.ContainsAny(s, "\\*?[~{$") {
			t.Errorf("%q: unquotedSpecial", s)
		}
		if hasAny(s, &doubleQuotedSpecial) != strings.ContainsAny(s, "\\$`") {
			t.Errorf("%q: doubleQuotedSpecial", s)
		}
	}
}
