//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"testing"
)

// moat's own state is hidden from every sandbox: another session's saved
// output (a command of one sandbox read what a command of another left,
// whatever their policies: found by an attack pass), the quarantine, the
// journals.
func TestStateDirHidden(t *testing.T) {
	f := newFixture(t)
	for _, rel := range []string{"output/other-session/1-out.txt", "quarantine/20260101T000000Z-x/001-config"} {
		p := filepath.Join(f.state, "moat", rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, []byte(secretText+"\n"), 0o600))
		f.attack([]string{"read", p}, nil)
	}
}
