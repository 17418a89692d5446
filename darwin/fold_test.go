package darwin

import (
	"math/rand"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// caseVariants lists every spelling of the ASCII string n in any case.
func caseVariants(n string) []string {
	out := []string{""}
	for i := 0; i < len(n); i++ {
		lo, up := strings.ToLower(n[i:i+1]), strings.ToUpper(n[i:i+1])
		var next []string
		for _, o := range out {
			next = append(next, o+lo)
			if up != lo {
				next = append(next, o+up)
			}
		}
		out = next
	}
	return out
}

// TestFoldedGlobSegment: a glob segment translated with case folding
// matches a name exactly when path/filepath.Match matches one of the
// name's spellings in any case (what a case-insensitive volume takes for
// the same name), negated classes and ranges across the letters included;
// and the non-ASCII letters that fold to k and s (U+212A, U+017F) match
// where k or s would.
func TestFoldedGlobSegment(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	const alpha = "aAbBcCkKsSxXzZqQ0.!_]["
	for _, p := range []string{"[a-c]x", "[^a-c]", "[!a-z]*", "A?b", "[A-Z][^a]", "[Z-a]", "[^A-Z]*", "[0-9a]", "*.PEM", "[^b-y]q", "[\\]k]s", "[^kK]", "hoo[k]s"} {
		re, err := segmentRegex(p, true)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		rx, err := compileSBRegex("^" + re + "$")
		if err != nil {
			t.Fatalf("%s: %q: %v", p, re, err)
		}
		for k := 0; k < 2000; k++ {
			var b strings.Builder
			for i := 1 + r.Intn(4); i > 0; i-- {
				b.WriteByte(alpha[r.Intn(len(alpha))])
			}
			n := b.String()
			want := false
			for _, v := range caseVariants(n) {
				if ok, _ := filepath.Match(p, v); ok {
					want = true
				}
			}
			if got := rx.MatchString(n); got != want {
				t.Fatalf("pattern %q (regex %q), name %q: %v, want %v", p, re, n, got, want)
			}
		}
	}
	re, _ := segmentRegex("hoo[k]s", true)
	if !regexp.MustCompile("^" + re + "$").MatchString("hoo\u212a\u017f") {
		t.Errorf("hoo[k]s folded (%q) does not match the Kelvin sign and the long s", re)
	}
	if got := ciEscape("a.K/s"); got != `[aA]\.(k|K|`+"\u212a"+`)/(s|S|`+"\u017f"+`)` {
		t.Errorf("ciEscape: %q", got)
	}
}
