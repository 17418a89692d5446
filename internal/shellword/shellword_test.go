package shellword

import (
	"errors"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func parseWord(t *testing.T, src string) *syntax.Word {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader("x "+src), "")
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	return f.Stmts[0].Cmd.(*syntax.CallExpr).Args[1]
}

func TestValue(t *testing.T) {
	tests := []struct {
		word  string
		value string
		kind  Kind
	}{
		{`plain`, "plain", 0},
		{`'a b'`, "a b", 0},
		{`"a\"b\$c\\d\x"`, `a"b$c\d\x`, 0},
		{`a\ b`, "a b", 0},
		{`-'-'rf`, "--rf", 0},
		{`'a'\''b'`, "a'b", 0},
		{`""`, "", 0},
		{`"*"`, "*", 0},
		{`\*`, "*", 0},
		{`[`, "[", 0},
		{`a[`, "a[", 0},
		{`HEAD@{1}`, "HEAD@{1}", 0},
		{`"{a,b}"`, "{a,b}", 0},
		{`a~`, "a~", 0},
		{"a\\\nb", "ab", 0},
		{`a$`, "a$", 0},
		{`$(id)`, "", CmdSubst},
		{"`id`", "", CmdSubst},
		{`"$(id)"`, "", CmdSubst},
		{`<(id)`, "", ProcSubst},
		{`$((1+2))`, "", Arith},
		{`"$((1))"`, "", Arith},
		{`$[1]`, "", Arith},
		{`$x`, "", Param},
		{`"${x:-y}"`, "", Param},
		{`$1`, "", Param},
		{`a*`, "", Glob},
		{`a?`, "", Glob},
		{`a[b]`, "", Glob},
		{`--include=*.go`, "", Glob},
		{`~`, "", Tilde},
		{`~/x`, "", Tilde},
		{`x=~/a`, "", Tilde},
		{`a:~`, "", Tilde},
		{`{a,b}`, "", Brace},
		{`x{,.bak}`, "", Brace},
		{`{1..3}`, "", Brace},
		{`$'a\nb'`, "", ANSIC},
		{`$"x"`, "", Locale},
		{`a\`, "", Backslash},
	}
	for _, tc := range tests {
		w := parseWord(t, tc.word)
		v, err := Evaluator{}.Value(w)
		if k := KindOf(err); k != tc.kind || (err == nil && v != tc.value) {
			t.Errorf("Value(%s) = %q, %v; want %q, kind %v", tc.word, v, err, tc.value, tc.kind)
		}
		if err != nil && !errors.Is(err, ErrDynamic) {
			t.Errorf("Value(%s): %v is not ErrDynamic", tc.word, err)
		}
	}
}

// TestSubst: the hook gives a substitution's output; without it, or when
// it declines, the word is dynamic.
func TestSubst(t *testing.T) {
	w := parseWord(t, `"a $(known) b"`)
	ev := Evaluator{Subst: func(cs *syntax.CmdSubst) (string, bool) {
		return "OUT", Source(cs) == "$(known)"
	}}
	if v, err := ev.Value(w); err != nil || v != "a OUT b" {
		t.Errorf("with Subst: %q, %v", v, err)
	}
	if _, err := ev.Value(parseWord(t, `"$(other)"`)); KindOf(err) != CmdSubst {
		t.Errorf("declined: %v", err)
	}
	if _, err := ev.Value(parseWord(t, `$(known)`)); KindOf(err) != CmdSubst {
		t.Errorf("unquoted (split by bash): %v", err)
	}
}

// TestFastPath: the allocation-free paths give what mvdan.cc/sh's expand
// gives.
func TestFastPath(t *testing.T) {
	for _, src := range []string{`plain`, `'single q'`, `a-b_c.d/e=f:g,h@i%j+k`, `'$(id) *'`, `a#x`, `a]`,
		`"a b"`, `a"b"'c'd`, `--msg="hello, world"`, `"x}{,y"`, `'a'"b"`, `"*?[x]~"`, `x="a=~b"`, `"a
b"`, `"a"''`, `"!x"`, `a"]"`, `"a#b"''c`} {
		w := parseWord(t, src)
		fast, err := Evaluator{}.Value(w)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		slow, err := Evaluator{}.expand(w)
		if err != nil || slow != fast {
			t.Errorf("%s: fast %q, expand %q (%v)", src, fast, slow, err)
		}
		if a := Approx(w); a != fast {
			t.Errorf("%s: Approx %q, Value %q", src, a, fast)
		}
	}
}

func TestApprox(t *testing.T) {
	for src, want := range map[string]string{
		`$'\x2d'rf`:    "-rf",
		`"a $x b"`:     "a $x b",
		`$(id)`:        "$(id)",
		`a\ b`:         "a b",
		`~/x`:          "~/x",
		`$'\cA'`:       "\x01",
		`"$((1 + 2))"`: "$((1 + 2))",
	} {
		if got := Approx(parseWord(t, src)); got != want {
			t.Errorf("Approx(%s) = %q; want %q", src, got, want)
		}
	}
}
