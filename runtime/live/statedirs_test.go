//go:build unix

package live

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
	os.RemoveAll(a)
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

// A directory is listed as the one that was there when it was recorded:
// one removed and made again since (by a sandbox that did not hide it,
// since it was missing when that sandbox was planned), most often with the
// inode it had, is not, until it is recorded again; the other entries keep
// what they were listed as. An entry without a token (of an earlier list)
// is listed as no directory.
func TestListedIsTheSameDirectory(t *testing.T) {
	home := t.TempDir()
	a, b := filepath.Join(t.TempDir(), "moat"), filepath.Join(t.TempDir(), "moat")
	os.Mkdir(a, 0o700)
	os.Mkdir(b, 0o700)
	for _, d := range []string{a, b} {
		if err := RecordStateDir(home, d); err != nil {
			t.Fatal(err)
		}
		if !Listed(home, d) {
			t.Fatalf("%s not listed once recorded", d)
		}
	}
	os.RemoveAll(a)
	os.Mkdir(a, 0o700)
	if Listed(home, a) {
		t.Fatalf("%s, made again, is listed as the directory recorded before", a)
	}
	os.RemoveAll(b)
	os.Mkdir(b, 0o700)
	if err := RecordStateDir(home, a); err != nil {
		t.Fatal(err)
	}
	if !Listed(home, a) || Listed(home, b) {
		t.Fatalf("after %s was recorded again: listed %v, %s listed %v (want true, false)", a, Listed(home, a), b, Listed(home, b))
	}
	if got := StateDirs(home); !slices.Equal(got, []string{b, a}) {
		t.Fatalf("listed %q, want %q", got, []string{b, a})
	}
	os.WriteFile(filepath.Join(home, stateDirsFile), []byte(hex.EncodeToString([]byte(a))+"\n"), 0o600)
	if Listed(home, a) || !slices.Equal(StateDirs(home), []string{a}) {
		t.Fatalf("an entry without a token: Listed %v, StateDirs %q", Listed(home, a), StateDirs(home))
	}
}

// A FIFO or an oversized file in the list's place is no list: reading it
// neither waits nor reads without bound.
func TestStateDirsNotRegular(t *testing.T) {
	home := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(home, stateDirsFile), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() { done <- StateDirs(home) }()
	select {
	case got := <-done:
		if len(got) != 0 {
			t.Fatalf("a FIFO listed %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO in the list's place waited")
	}
	os.Remove(filepath.Join(home, stateDirsFile))
	big := make([]byte, maxStateDirs+1)
	if err := os.WriteFile(filepath.Join(home, stateDirsFile), big, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := StateDirs(home); len(got) != 0 {
		t.Fatalf("an oversized list gave %q", got)
	}
}

// A FIFO in a register is no announcement, and reading the register does
// not wait on it.
func TestWritersSkipFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "x.live"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan []Writer, 1)
	go func() { done <- Writers(dir) }()
	select {
	case ws := <-done:
		if len(ws) != 0 {
			t.Fatalf("a FIFO read as %v", ws)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a register with a FIFO in it waited")
	}
}

// An announcement is never seen before its run holds it: another moat's
// probe of the register (Writers, which locks each file for a moment)
// made the announcing run's own lock fail, and the run went unannounced
// (CI, 20 runs at once). Announcing while another process reads the
// register always succeeds, and no reader sees an announcement as dead.
func TestAnnounceWhileProbed(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan struct{})
	dead := make(chan string, 1)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, w := range Writers(dir) {
				if w.Dead {
					select {
					case dead <- w.ID:
					default:
					}
				}
			}
		}
	}()
	defer close(stop)
	for i := 0; i < 300; i++ {
		f, err := Announce(dir, hex.EncodeToString([]byte{byte(i), byte(i >> 8)}), Writer{Since: time.Now(), Roots: []string{"/x"}})
		if err != nil {
			t.Fatalf("announce %d while the register is read: %v", i, err)
		}
		Withdraw(f)
	}
	select {
	case id := <-dead:
		t.Fatalf("a reader saw the live announcement %s as a dead run's", id)
	default:
	}
}
