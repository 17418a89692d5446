//go:build unix

package live

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The list of state directories keeps each existing directory once and
// drops the ones that went; a damaged line is no entry.
func TestRecordStateDir(t *testing.T) {
	home := t.TempDir()
	a, b := filepath.Join(t.TempDir(), "moat"), filepath.Join(t.TempDir(), "moat")
	os.Mkdir(a, 0o700)
	os.Mkdir(b, 0o700)
	for _, d := range []string{a, b, a} {
		if err := RecordStateDir(home, d); err != nil {
			t.Fatal(err)
		}
	}
	if got := StateDirs(home); !slices.Equal(got, []string{a, b}) {
		t.Fatalf("listed %q, want %q", got, []string{a, b})
	}
	os.Remove(a)
	c := filepath.Join(t.TempDir(), "moat")
	os.Mkdir(c, 0o700)
	if err := RecordStateDir(home, c); err != nil {
		t.Fatal(err)
	}
	if got := StateDirs(home); !slices.Equal(got, []string{b, c}) {
		t.Fatalf("listed %q after %s went, want %q", got, a, []string{b, c})
	}
	if err := RecordStateDir(home, "relative/moat"); err == nil {
		t.Fatal("a relative state directory was listed")
	}
	os.WriteFile(filepath.Join(home, stateDirsFile), []byte("zz\n2e2e\n2f746d70\n\n"), 0o600) // not hex, "..", "/tmp"
	if got := StateDirs(home); !slices.Equal(got, []string{"/tmp"}) {
		t.Fatalf("a damaged list gave %q", got)
	}
}
