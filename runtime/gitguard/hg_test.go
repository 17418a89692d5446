package gitguard

import (
	"slices"
	"testing"
)

// An hgrc that hg clone writes is kept; anything that could run a
// program is not (attack pass 89).
func TestHgrcHarmless(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"# example\n[paths]\ndefault = /src\n\n[ui]\n# username = x\n", true},
		{"[ui]\nusername = Jane <j@x>\n", true},
		{"[paths]\ndefault = /a\n  /b\n", true},
		{"[hooks]\npre-status = touch x\n", false},
		{"[paths]\ndefault = /a\n[extensions]\nevil = /x.py\n", false},
		{"[ui]\neditor = sh -c x\n", false},
		{"[paths]\r[alias]\rst = !x\r", false}, // a lone CR ends a line for hg
		{"%include /x\n", false},
		{"[paths]\n%unset default\n", false},
		{"[ paths]\ndefault = /a\n", false},
		{"default = /a\n", false},
		{"  continued\n", false},
		{"[paths\n", false},
	} {
		if got := hgrcHarmless([]byte(c.text)); got != c.want {
			t.Errorf("hgrcHarmless(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

func TestHgIncludes(t *testing.T) {
	got := hgIncludes([]byte("%include ../shared.rc\n%include ~/x.rc\r%include /abs\n%include $HOME/y\n%includex z\n #%include no\n"), "/r/.hg", "/home/u")
	want := []string{"/r/shared.rc", "/home/u/x.rc", "/abs"}
	if !slices.Equal(got, want) {
		t.Errorf("hgIncludes = %v, want %v", got, want)
	}
}
