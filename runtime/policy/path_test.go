package policy

import (
	"fmt"
	"strings"
	"testing"
)

// CheckPath (every rule path, --write's too) refuses what cannot be shown
// or recorded safely: control characters, Unicode line separators,
// bidirectional controls; the error never holds them raw.
func TestCheckPathUnsafeCharacters(t *testing.T) {
	for _, r := range []rune{'\n', '\t', 0x7f, 0x85, 0x9b, 0x2028, 0x2029, 0x202a, 0x202e, 0x2066, 0x2069, 0x200e, 0x200f, 0x061c} {
		p := "/var/tmp/a" + string(r) + "b"
		err := CheckPath(p)
		if err == nil {
			t.Errorf("%U: accepted", r)
			continue
		}
		if strings.ContainsRune(err.Error(), r) {
			t.Errorf("%U: the error holds it raw: %v", r, err)
		}
		if r > 0x7f && !strings.Contains(err.Error(), fmt.Sprintf("%U at byte 10", r)) {
			t.Errorf("%U: %v", r, err)
		}
	}
	for _, p := range []string{"/var/tmp/café", "/var/tmp/日本", "/var/tmp/a b", "/var/tmp/\u00a0x"} {
		if err := CheckPath(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
}
