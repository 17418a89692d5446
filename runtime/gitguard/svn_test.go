package gitguard

import "testing"

// TestMayNameFileURL: the audit keeps a working copy database made in the
// sandbox only when no file: URL can be in it, as SQLite stores text in
// UTF-8 or UTF-16 of either byte order, in any case.
func TestMayNameFileURL(t *testing.T) {
	for _, c := range []struct {
		b    string
		want bool
	}{
		{"\x00https://svn.example/repo\x00", false},
		{"root file:///var/tmp/x", true},
		{"FILE:///x", true},
		{"f\x00i\x00l\x00e\x00:\x00/\x00", true},
		{"\x00F\x00i\x00L\x00e\x00:", true},
		{"profile: no", true}, // conservative: a substring is enough
		{"", false},
	} {
		if got := mayNameFileURL([]byte(c.b)); got != c.want {
			t.Errorf("mayNameFileURL(%q) = %v, want %v", c.b, got, c.want)
		}
	}
}
