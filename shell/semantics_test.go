package shell

import (
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func TestInterpret(t *testing.T) {
	ok := func(msg string) Interpretation { return Interpretation{Message: msg} }
	fail := func(msg string) Interpretation { return Interpretation{IsError: true, Message: msg} }
	tests := []struct {
		cmd  string
		code int
		want Interpretation
	}{
		{"grep foo file", 0, ok("")},
		{"grep foo file", 1, ok(MsgNoMatches)},
		{"grep foo missing", 2, fail("Command failed with exit code 2")},
		{"rg foo", 1, ok(MsgNoMatches)},
		{"/usr/bin/grep -r x .", 1, ok(MsgNoMatches)},
		{"diff a b", 1, ok(MsgFilesDiffer)},
		{"diff a missing", 2, fail("Command failed with exit code 2")},
		{"find / -name x", 1, ok(MsgFindPartial)},
		{"test -f x", 1, ok(MsgFalse)},
		{"[ -f x ]", 1, ok(MsgFalse)},
		{"[[ -f x ]]", 1, ok(MsgFalse)},
		{"test a =", 2, fail("Command failed with exit code 2")},
		{"false", 1, fail("Command failed with exit code 1")},
		{"make", 2, fail("Command failed with exit code 2")},
		{"make", 130, fail("Command failed with exit code 130")},
		// the last command of the pipeline or list decides
		{"cat x | grep foo", 1, ok(MsgNoMatches)},
		{"grep foo x | wc -l", 1, fail("Command failed with exit code 1")},
		{"cd src && grep -r TODO .", 1, ok(MsgNoMatches)},
		{"grep x f; diff a b", 1, ok(MsgFilesDiffer)},
		{"grep x f || true; test -d y", 1, ok(MsgFalse)},
		{"(cd a && grep x f)", 1, ok(MsgNoMatches)},
		{"{ make; grep x log; }", 1, ok(MsgNoMatches)},
		{"time grep x f", 1, ok(MsgNoMatches)},
		{"command grep x f", 1, ok(MsgNoMatches)},
		{"LC_ALL=C grep x f", 1, ok(MsgNoMatches)},
		{"! grep x f", 1, fail("Command failed with exit code 1")},
		{"$GREP x f", 1, fail("Command failed with exit code 1")},
		{"if true; then grep x f; fi", 1, fail("Command failed with exit code 1")},
		{"grep 'unterminated", 1, fail("Command failed with exit code 1")},
	}
	for _, tc := range tests {
		if got := Interpret(tc.cmd, tc.code, syntax.LangBash); got != tc.want {
			t.Errorf("Interpret(%q, %d) = %+v, want %+v", tc.cmd, tc.code, got, tc.want)
		}
	}
}

func TestLastCommand(t *testing.T) {
	tests := []struct{ cmd, want string }{
		{"ls", "ls"},
		{"a | b | c", "c"},
		{"a && b || c", "c"},
		{"a; b\nc", "c"},
		{"'grep' x", "grep"},
		{`"/bin/diff" a b`, "diff"},
		{"builtin test -n x", "test"},
		{"exec -- find .", "find"},
		{"sleep 1 &", ""},
		{"", ""},
		{"x=1", ""},
	}
	for _, tc := range tests {
		if got := LastCommand(tc.cmd, syntax.LangBash); got != tc.want {
			t.Errorf("LastCommand(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}
