package permissions

import "testing"

// TestContainsDropOrTruncate: the one-pass scan answers as the two
// containsFold calls it replaces.
func TestContainsDropOrTruncate(t *testing.T) {
	words := []string{"", "d", "dro", "drop", "DROP", "dRoP", "xdropx", "Drop table", "trunc", "truncate",
		"TRUNCATE", "truncat", "xTrUnCaTeX", "dr op", "\xc4rop", "Dro", "TRUNCATE TABLE x", "psql -c 'DROP'", "t", "dropt"}
	for _, a := range words {
		for _, b := range []string{"", " ", "x", "ru", "p"} {
			s := a + b
			want := containsFold(s, "drop") || containsFold(s, "truncate")
			if got := containsDropOrTruncate(s); got != want {
				t.Errorf("%q: %v, want %v", s, got, want)
			}
		}
	}
	for _, c := range loadCorpus(t) {
		if got, want := containsDropOrTruncate(c), containsFold(c, "drop") || containsFold(c, "truncate"); got != want {
			t.Errorf("%q: %v, want %v", c, got, want)
		}
	}
}
