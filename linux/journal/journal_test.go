//go:build linux

package journal

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func setup(t *testing.T) (dir, tree string) {
	root := t.TempDir()
	dir = filepath.Join(root, "journal")
	tree = filepath.Join(root, "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, tree
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestCreateAndClose(t *testing.T) {
	dir, tree := setup(t)
	j, err := Begin(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, f := filepath.Join(tree, ".vscode"), filepath.Join(tree, "commondir")
	if err := j.Create(d, Dir, ""); err != nil {
		t.Fatal(err)
	}
	if err := j.Create(f, File, CommondirContent); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f); string(b) != CommondirContent {
		t.Fatalf("content %q", b)
	}
	j.Unlock()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(d) || exists(f) {
		t.Fatal("placeholders left behind")
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("journal directory: %v", es)
	}
}

// A Node placeholder is a socket inode of mode 0; it is removed at the end,
// by a sweep after a killed run, and never when something else took its
// name meanwhile.
func TestNodePlaceholder(t *testing.T) {
	dir, tree := setup(t)
	p := filepath.Join(tree, ".bashrc")
	j, err := Begin(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Create(p, Node, ""); err != nil {
		t.Fatal(err)
	}
	if k, ok := j.KindOf(p); !ok || k != Node {
		t.Fatalf("KindOf: %q %v", k, ok)
	}
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0 {
		t.Fatalf("placeholder: %v %v", fi.Mode(), err)
	}
	j.Unlock()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(p) {
		t.Fatal("placeholder left behind")
	}

	// Killed: the sweep removes it.
	j, _ = Begin(dir)
	j.Create(p, Node, "")
	j.Unlock()
	j.rec.Close()
	if err := SweepDir(dir); err != nil {
		t.Fatal(err)
	}
	if exists(p) {
		t.Fatal("a dead run's socket placeholder survived the sweep")
	}

	// Replaced by the user's own file: kept.
	j, _ = Begin(dir)
	j.Create(p, Node, "")
	j.Unlock()
	os.Remove(p)
	os.WriteFile(p, nil, 0o644)
	j.Close()
	if !exists(p) {
		t.Fatal("removed the file that replaced the placeholder")
	}
}

// A placeholder two runs share is removed by the last one only.
func TestSharedPlaceholder(t *testing.T) {
	dir, tree := setup(t)
	p := filepath.Join(tree, ".claude")
	a, _ := Begin(dir)
	if err := a.Create(p, Dir, ""); err != nil {
		t.Fatal(err)
	}
	a.Unlock()
	b, _ := Begin(dir)
	if ok, err := b.Adopt(p); !ok || err != nil {
		t.Fatalf("adopt: %v %v", ok, err)
	}
	b.Unlock()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !exists(p) {
		t.Fatal("removed while another live run uses it")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(p) {
		t.Fatal("the last user did not remove it")
	}
}

// A placeholder that was used (files put in it, replaced) is not removed.
func TestNeverRemovesUsedPlaceholder(t *testing.T) {
	dir, tree := setup(t)
	d := filepath.Join(tree, ".vscode")
	j, _ := Begin(dir)
	j.Create(d, Dir, "")
	j.Unlock()
	os.WriteFile(filepath.Join(d, "settings.json"), []byte("{}"), 0o644) // the user's, meanwhile
	j.Close()
	if !exists(filepath.Join(d, "settings.json")) {
		t.Fatal("removed a directory someone put files in")
	}
}

// Records of dead runs are swept: their placeholders go, their records go.
func TestSweepDeadRun(t *testing.T) {
	dir, tree := setup(t)
	d := filepath.Join(tree, ".mcp.json")
	j, _ := Begin(dir)
	j.Create(d, Dir, "")
	j.Unlock()
	// Simulate death: drop the record lock without closing the journal.
	j.rec.Close()
	if err := SweepDir(dir); err != nil {
		t.Fatal(err)
	}
	if exists(d) {
		t.Fatal("a dead run's placeholder survived the sweep")
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("journal directory: %v", es)
	}
}

// A creation whose record line was never written (death in between) is
// still removed, from its intent line.
func TestSweepIntentOnly(t *testing.T) {
	dir, tree := setup(t)
	d := filepath.Join(tree, ".vscode")
	j, _ := Begin(dir)
	j.append("I 0 d - " + hex.EncodeToString([]byte(d)))
	os.Mkdir(d, 0o755)
	j.Unlock()
	j.rec.Close()
	SweepDir(dir)
	if exists(d) {
		t.Fatal("an unrecorded placeholder survived")
	}
}

// A path can hold a newline: it must never forge a record of its own.
// Here a working directory whose name carries a whole placeholder record
// (with the real device and inode of an empty directory of the user's)
// gets a placeholder, the run dies, and the sweep removes the placeholder
// and nothing else.
func TestHostileNamesCannotForgeRecords(t *testing.T) {
	dir, tree := setup(t)
	victim := filepath.Join(tree, "victim")
	os.Mkdir(victim, 0o755)
	var st unix.Stat_t
	if err := unix.Lstat(victim, &st); err != nil {
		t.Fatal(err)
	}
	for _, forged := range []string{
		fmt.Sprintf("x\nP %d %d - d %s", st.Dev, st.Ino, victim),
		fmt.Sprintf("x\nP %d %d - d %s", st.Dev, st.Ino, hex.EncodeToString([]byte(victim))),
		fmt.Sprintf("x\nP %d %d - d %s\n", st.Dev, st.Ino, victim),
		"x\nI 0 d - " + victim,
		"x\nI 0 d - " + hex.EncodeToString([]byte(victim)),
		"x\r\nI 0 d - " + hex.EncodeToString([]byte(victim)) + "\n",
	} {
		work := filepath.Join(tree, forged)
		if err := os.MkdirAll(work, 0o755); err != nil {
			t.Fatal(err)
		}
		j, err := Begin(dir)
		if err != nil {
			t.Fatal(err)
		}
		ph := filepath.Join(work, ".claude")
		if err := j.Create(ph, Dir, ""); err != nil {
			t.Fatal(err)
		}
		j.Unlock()
		j.rec.Close() // the run dies: its record stays, unlocked
		if err := SweepDir(dir); err != nil {
			t.Fatal(err)
		}
		if exists(ph) {
			t.Errorf("%q: the placeholder survived the sweep", forged)
		}
		if !exists(victim) {
			t.Fatalf("%q: a forged record removed the user's directory %s", forged, victim)
		}
	}
}

// A user's directory is never taken for a placeholder.
func TestSweepKeepsForeignEntries(t *testing.T) {
	dir, tree := setup(t)
	d := filepath.Join(tree, ".vscode")
	os.Mkdir(d, 0o755)
	j, _ := Begin(dir)
	if err := j.Create(d, Dir, ""); err == nil {
		t.Fatal("Create over an existing user directory must fail")
	}
	j.Unlock()
	j.Close()
	if !exists(d) {
		t.Fatal("removed the user's directory")
	}
}

func TestRecover(t *testing.T) {
	dir, tree := setup(t)
	d := filepath.Join(tree, ".claude")
	j, _ := Begin(dir)
	j.Create(d, Dir, "")
	j.Unlock()
	if err := Recover(dir, j.ID()); err != nil {
		t.Fatal(err)
	}
	if exists(d) {
		t.Fatal("Recover left the placeholder")
	}
}

// TestRecoverOutlastsTheDeadSupervisorsHolds: init starts the clean-up
// when its line to the supervisor hangs up, and the kernel may not have
// released the dying supervisor's other descriptors yet (its directory's
// flock, its pins). Recover tries again meanwhile: it left every
// placeholder in the directory (CI, under load: the next run's sweep
// would have removed them, but a user who does not run again keeps them).
func TestRecoverOutlastsTheDeadSupervisorsHolds(t *testing.T) {
	for _, how := range []string{"flock", "pin"} {
		t.Run(how, func(t *testing.T) {
			dir, tree := setup(t)
			p := filepath.Join(tree, "HEAD")
			j, _ := Begin(dir)
			if err := j.Create(p, Node, ""); err != nil {
				t.Fatal(err)
			}
			j.Unlock()
			// The dead supervisor's descriptor, not yet released.
			f, err := os.Open(tree)
			if err != nil {
				t.Fatal(err)
			}
			var st unix.Stat_t
			unix.Lstat(p, &st)
			if how == "flock" {
				err = unix.Flock(int(f.Fd()), unix.LOCK_SH)
			} else {
				lk := unix.Flock_t{Type: unix.F_RDLCK, Start: int64(st.Ino & pinMask), Len: 1}
				err = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
			}
			if err != nil {
				t.Fatal(err)
			}
			go func() { time.Sleep(300 * time.Millisecond); f.Close() }()
			if err := Recover(dir, j.ID()); err != nil {
				t.Fatal(err)
			}
			if exists(p) {
				t.Fatal("Recover left the placeholder: the supervisor's descriptor was released 300 ms after it started")
			}
			if _, err := os.Stat(filepath.Join(dir, j.ID()+".run")); err == nil {
				t.Fatal("Recover left the record")
			}
		})
	}
}

// SweepAll sweeps moatd's journals of one uid each, besides its own: what
// a killed daemon's runs left is removed when it starts again, for users
// who do not run again.
func TestSweepAllPerUserJournals(t *testing.T) {
	dir, tree := setup(t)
	var ps []string
	for _, sub := range []string{"", "uid-1000", "uid-1001"} {
		d := filepath.Join(tree, "ph"+sub)
		j, err := Begin(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Create(d, Dir, ""); err != nil {
			t.Fatal(err)
		}
		j.Unlock()
		j.rec.Close() // died
		ps = append(ps, d)
	}
	if err := SweepAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if exists(p) {
			t.Errorf("a dead run's placeholder %s survived SweepAll", p)
		}
	}
}

// Journals of different uids (moatd's) are one register: a run of one
// adopts another's placeholder, under that journal's lock, and neither
// the other's Close nor a sweep of its journal removes it while the
// adopting run lives.
func TestSharedJournalsAcrossUids(t *testing.T) {
	top, tree := setup(t)
	d := filepath.Join(tree, ".vscode")
	j1, err := Begin(filepath.Join(top, "uid-1001"))
	if err != nil {
		t.Fatal(err)
	}
	if err := j1.Create(d, Dir, ""); err != nil {
		t.Fatal(err)
	}
	j1.Unlock()
	j2, err := Begin(filepath.Join(top, "uid-1002"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := j2.Adopt(d); err != nil || !ok {
		t.Fatalf("another uid's run did not adopt the placeholder: %v %v", ok, err)
	}
	j2.Unlock()
	if err := j1.Close(); err != nil {
		t.Fatal(err)
	}
	if !exists(d) {
		t.Fatal("the first run's Close removed a placeholder another uid's live run adopted")
	}
	// The first uid's journal swept (as its next run would): kept too.
	if err := SweepDir(filepath.Join(top, "uid-1001")); err != nil {
		t.Fatal(err)
	}
	if !exists(d) {
		t.Fatal("a sweep of the first uid's journal removed a placeholder another uid's live run uses")
	}
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(d) {
		t.Fatal("the last run's Close left the placeholder")
	}
}

// Adopting another journal's placeholder waits for that journal's lock,
// and gives up with an error naming the path when it is held too long
// (moatd: a user holding its journal cannot hold up another's run for
// ever).
func TestAdoptWaitsForTheOwnersLock(t *testing.T) {
	top, tree := setup(t)
	d := filepath.Join(tree, ".idea")
	j1, err := Begin(filepath.Join(top, "uid-1001"))
	if err != nil {
		t.Fatal(err)
	}
	if err := j1.Create(d, Dir, ""); err != nil {
		t.Fatal(err)
	}
	// j1 keeps its lock (its sandbox never reports its mounts).
	j2, err := Begin(filepath.Join(top, "uid-1002"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = j2.Adopt(d)
	if err == nil || !strings.Contains(err.Error(), d) {
		t.Errorf("Adopt while the owner holds its lock: %v, want an error naming %s", err, d)
	}
	t.Logf("gave up after %v", time.Since(start).Round(time.Millisecond))
	j2.Close()
	j1.Close()
}

// A command that took its owner's permissions off the directory holding
// placeholders (chmod 000 .) kept every placeholder there for good: the
// removal was refused, and the record went all the same (found by an
// attack pass). moat opens the directory up for the removal and puts its
// mode back; what it still cannot remove stays recorded for the next
// run's sweep. (As root nothing is refused: the test holds trivially.)
func TestCloseOpensUpItsParent(t *testing.T) {
	dir, tree := setup(t)
	sub := filepath.Join(tree, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(sub, ".bashrc")
	j, err := Begin(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Create(p, Node, ""); err != nil {
		t.Fatal(err)
	}
	j.Unlock()
	if err := os.Chmod(sub, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(sub, 0o755)
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	fi, err := os.Stat(sub)
	if err != nil || fi.Mode().Perm() != 0 {
		t.Fatalf("the directory's mode was not put back: %v %v", fi.Mode(), err)
	}
	os.Chmod(sub, 0o755)
	if exists(p) {
		t.Fatal("the placeholder stayed in a directory the command made unreadable")
	}

	// What cannot be removed (its directory out of reach) stays recorded,
	// and the next sweep removes it.
	if os.Geteuid() == 0 {
		return // root reaches everything
	}
	j, _ = Begin(dir)
	if err := j.Create(p, Node, ""); err != nil {
		t.Fatal(err)
	}
	j.Unlock()
	os.Chmod(tree, 0)
	err = j.Close()
	os.Chmod(tree, 0o755)
	if err == nil {
		t.Fatal("Close said nothing of a placeholder it could not remove")
	}
	if !exists(p) {
		t.Fatal("the placeholder was removed after all: the test cannot tell")
	}
	if err := SweepDir(dir); err != nil {
		t.Fatal(err)
	}
	if exists(p) {
		t.Fatal("the placeholder's record was dropped: the sweep did not remove it")
	}
}

// TestRecordFailsAfterCreate: the journal's record of a placeholder could
// not be written (its filesystem full) after the placeholder was made.
// Create fails, and the run's Close must still remove it: the placeholder
// was in no list, Close removed the record with its intent, and an empty
// .zprofile (a socket inode of mode 0) stayed in the user's tree for good,
// through the next runs and the next moatd (attack pass 87: moatd's state
// directory full). RLIMIT_FSIZE stands for the full disk: the record holds
// the intent and not one byte more.
func TestRecordFailsAfterCreate(t *testing.T) {
	for _, kind := range []Kind{Node, Dir, File} {
		dir, tree := setup(t)
		j, err := Begin(dir)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(tree, ".zprofile")
		var old unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
		lim := unix.Rlimit{Cur: uint64(len(intentLine(kind, "", p)) + 1), Max: old.Max}
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatal(err)
		}
		err = j.Create(p, kind, "")
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
		if err == nil {
			t.Fatalf("%c: Create recorded past the file size limit", kind)
		}
		if !exists(p) {
			t.Fatalf("%c: the record failed before the placeholder was made (%v): the test does not test", kind, err)
		}
		j.Unlock()
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		if exists(p) {
			t.Fatalf("%c: placeholder left behind after its record failed (%v)", kind, err)
		}
	}
}

// TestTornRecordLineIgnored: a record's last line cut short by a full
// disk (a short write) may still parse, as a record of another path: the
// placeholder's path cut before its last element is the directory above
// it. Only whole lines are records.
func TestTornRecordLineIgnored(t *testing.T) {
	dir, tree := setup(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	whole := intentLine(Dir, "", filepath.Join(tree, ".vscode"))
	torn := intentLine(Dir, "", filepath.Join(tree, ".idea"))
	torn = torn[:len(torn)-len(hex.EncodeToString([]byte("/.idea")))] // the path is now tree's
	file := filepath.Join(dir, "0000000000000000.run")
	if err := os.WriteFile(file, []byte(whole+"\n"+torn), 0o600); err != nil {
		t.Fatal(err)
	}
	_, is := parseRecord(file)
	if len(is) != 1 || is[0].path != filepath.Join(tree, ".vscode") {
		t.Fatalf("intents %+v, want only %s's", is, filepath.Join(tree, ".vscode"))
	}
}

// TestHoldKeepsAnotherJournalsPlaceholder: a run of another journal (a
// state directory of its own) that mounts over this run's placeholder
// (Hold, then Pin) keeps it from removal, whatever the records say: the
// kernel detaches a mount over a name unlinked in another mount namespace
// (the command then made .vscode/tasks.json: privileged-tests'
// TestPlaceholderOfAnotherJournal). The record stays for a later sweep,
// which removes it once no run pins it; a run that claims it (Claim)
// removes it at its own close.
func TestHoldKeepsAnotherJournalsPlaceholder(t *testing.T) {
	dir, tree := setup(t)
	other := filepath.Join(filepath.Dir(dir), "other-journal")
	p := filepath.Join(tree, ".vscode")
	mount := func(j *Journal, create bool) {
		t.Helper()
		if err := j.Hold(t.Context(), tree); err != nil {
			t.Fatal(err)
		}
		if create {
			if err := j.Create(p, Node, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := j.Pin(p); err != nil {
			t.Fatal(err)
		}
		j.Unlock()
	}
	j1, err := Begin(dir)
	if err != nil {
		t.Fatal(err)
	}
	mount(j1, true)
	j2, err := Begin(other)
	if err != nil {
		t.Fatal(err)
	}
	if adopted, err := j2.Adopt(p); err != nil || adopted {
		t.Fatalf("another journal's run adopted %s (%v, %v): the test is not of two journals", p, adopted, err)
	}
	mount(j2, false)
	if err := j1.Close(); err != nil {
		t.Fatal(err)
	}
	if !exists(p) {
		t.Fatal("the placeholder went while another journal's run had it pinned")
	}
	if err := SweepDir(dir); err != nil {
		t.Fatal(err)
	}
	if !exists(p) {
		t.Fatal("a sweep removed the placeholder while another journal's run had it pinned")
	}
	if err := j2.Close(); err != nil { // it recorded nothing
		t.Fatal(err)
	}
	if err := SweepDir(dir); err != nil {
		t.Fatal(err)
	}
	if exists(p) {
		t.Fatal("the placeholder stayed after every run ended and the journal swept")
	}

	// A run that claims the other journal's placeholder (the one its
	// sandbox mounts over) removes it at its close, once no run pins it:
	// that journal may never run again.
	j1, _ = Begin(dir)
	mount(j1, true)
	j2, _ = Begin(other)
	if claimed, err := j2.Claim(p); !claimed || err != nil {
		t.Fatalf("Claim of another journal's placeholder: %v %v", claimed, err)
	}
	if claimed, _ := j2.Claim(filepath.Join(tree, "nothing")); claimed {
		t.Fatal("Claim of nothing")
	}
	mount(j2, false)
	if err := j1.Close(); err != nil {
		t.Fatal(err)
	}
	if !exists(p) {
		t.Fatal("the placeholder went while the claiming run had it pinned")
	}
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(p) {
		t.Fatal("the claiming run's close left the placeholder (no run pins it any more)")
	}
	// The first journal's record of it, kept, goes at that journal's
	// next sweep (its placeholder gone already).
	if err := SweepDir(dir); err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 { // journal.lock
		t.Fatalf("the journal kept records: %v", es)
	}
}

// TestPinIsPerName: a live run that holds the directory for another name
// keeps only that one; a placeholder no run pins goes at its owner's close
// (20 runs at once in one project left HEAD behind while the directory was
// what was held: cmd/moat's TestRunConcurrent).
func TestPinIsPerName(t *testing.T) {
	dir, tree := setup(t)
	p, q := filepath.Join(tree, "HEAD"), filepath.Join(tree, ".bashrc")
	j1, _ := Begin(dir)
	if err := j1.Hold(t.Context(), tree); err != nil {
		t.Fatal(err)
	}
	if err := j1.Create(p, Node, ""); err != nil {
		t.Fatal(err)
	}
	if err := j1.Pin(p); err != nil {
		t.Fatal(err)
	}
	j1.Unlock()
	j2, _ := Begin(filepath.Join(filepath.Dir(dir), "other-journal"))
	if err := j2.Hold(t.Context(), tree); err != nil {
		t.Fatal(err)
	}
	if err := j2.Create(q, Node, ""); err != nil {
		t.Fatal(err)
	}
	if err := j2.Pin(q); err != nil {
		t.Fatal(err)
	}
	j2.Unlock()
	if err := j1.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(p) {
		t.Fatal("a placeholder no live run pins stayed because another run holds its directory for another name")
	}
	if !exists(q) {
		t.Fatal("the other run's placeholder went")
	}
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(q) {
		t.Fatal("the other run's placeholder stayed after its close")
	}
}

// TestHoldGivesUpOnAnExclusiveFlock: a process that holds a directory
// locked exclusively (a command of another sandbox can flock a directory
// it opens) makes Hold fail after adoptWait, saying why, instead of
// waiting as long as that process likes.
func TestHoldGivesUpOnAnExclusiveFlock(t *testing.T) {
	dir, tree := setup(t)
	f, err := os.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	j, err := Begin(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	start := time.Now()
	err = j.Hold(t.Context(), tree)
	if err == nil || !strings.Contains(err.Error(), "locked exclusively") {
		t.Fatalf("Hold under another process's exclusive flock: %v", err)
	}
	if d := time.Since(start); d < adoptWait || d > adoptWait+5*time.Second {
		t.Errorf("Hold gave up after %v, want about %v", d, adoptWait)
	}
}
