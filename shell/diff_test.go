package shell

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct{ name, old, new, want string }{
		{"equal", "a\n", "a\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"from empty", "", "x\n", "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n"},
		{"to empty", "x\n", "", "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-x\n"},
		{"no newline at the end", "a\nb", "a\nc", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "x\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ny\n",
			"--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-1\n+x\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+y\n"},
	}
	for _, tc := range tests {
		if got := UnifiedDiff("f", tc.old, tc.new); got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// TestUnifiedDiffApplies applies random diffs back.
func TestUnifiedDiffApplies(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	gen := func() string {
		var b strings.Builder
		for i, n := 0, rng.Intn(30); i < n; i++ {
			b.WriteString(strconv.Itoa(rng.Intn(6)) + "\n")
		}
		return b.String()
	}
	for i := 0; i < 2000; i++ {
		old, new := gen(), gen()
		d := UnifiedDiff("f", old, new)
		got, err := applyDiff(old, d)
		if err != nil || got != new {
			t.Fatalf("old %q new %q: diff\n%s\napplied: %q %v", old, new, d, got, err)
		}
	}
}

// applyDiff applies a unified diff of whole lines (every line ends with
// a newline) to old.
func applyDiff(old, diff string) (string, error) {
	if diff == "" {
		return old, nil
	}
	a := splitLines(old)
	var out []string
	pos := 0
	lines := strings.SplitAfter(diff, "\n")
	for i := 2; i < len(lines) && lines[i] != ""; {
		var as, an, bs, bn int
		h := strings.TrimSuffix(lines[i], "\n")
		if _, err := fmt.Sscanf(strings.NewReplacer(",", " ").Replace(h), "@@ -%d %d +%d %d @@", &as, &an, &bs, &bn); err != nil {
			// ranges without a count
			rng := strings.Fields(strings.Trim(h, "@ "))
			parse := func(r string) (int, int) {
				p := strings.SplitN(r[1:], ",", 2)
				s, _ := strconv.Atoi(p[0])
				if len(p) == 1 {
					return s, 1
				}
				n, _ := strconv.Atoi(p[1])
				return s, n
			}
			as, an = parse(rng[0])
			bs, bn = parse(rng[1])
		}
		start := as - 1
		if an == 0 {
			start = as
		}
		out = append(out, a[pos:start]...)
		pos = start
		i++
		for i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@") {
			l := lines[i]
			switch l[0] {
			case ' ':
				if a[pos] != l[1:] {
					return "", fmt.Errorf("context %q != %q", l[1:], a[pos])
				}
				out = append(out, l[1:])
				pos++
			case '-':
				pos++
			case '+':
				out = append(out, l[1:])
			}
			i++
		}
	}
	out = append(out, a[pos:]...)
	return strings.Join(out, ""), nil
}
