//go:build unix

package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/live"
)

// An announcement that cannot be written refuses the run, in the run's own
// register as in the home one: a run the other runs of its state directory
// do not see could write a settings file one of them then loads. It was
// best effort (attack pass 107 made the home copy fail by filling its
// filesystem; the own one fails the same way).
func TestAnnounceFailureRefuses(t *testing.T) {
	st := t.TempDir()
	if err := os.WriteFile(filepath.Join(st, "journal"), nil, 0o600); err != nil { // no register can be made there
		t.Fatal(err)
	}
	w := live.Writer{Since: time.Now(), Roots: []string{t.TempDir()}}
	f, err := announce(st, userState{}, w)
	if !errors.Is(err, errRegister) {
		t.Fatalf("announce in a register that cannot be made: %v, want errRegister", err)
	}
	if f != nil {
		t.Fatal("an announcement file came back with the error")
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "journal"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st = t.TempDir()
	if _, err := announce(st, userState{home: home}, w); !errors.Is(err, errRegister) {
		t.Fatalf("announce with a home register that cannot be made: %v, want errRegister", err)
	}
	if ws := live.Writers(filepath.Join(st, "journal")); len(ws) != 0 {
		t.Fatalf("the own announcement stayed after the copy failed: %v", ws)
	}
}
