//go:build unix

// Package live keeps the register of live sandboxes and what each can
// write: a run announces its writable trees (minus what is read-only to the
// command) while it runs, so that another moat does not load a settings
// file a live sandbox could have written since it started.
//
// The register is a directory of "<id>.live" files, each flock'ed by its
// run: a file nobody holds belongs to a dead run and is removed.
package live

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Writer is what a live run can write: its writable trees minus its
// read-only paths, since it started.
type Writer struct {
	ID       string
	Since    time.Time
	Roots    []string
	ReadOnly []string
	// As is the uid the sandbox ran as when it is not this process's
	// (moatd: a client's); -1 or 0 when it is.
	As int
	// AsGroups are, with As, the gid and then the supplementary groups the
	// sandbox ran with (the client's own, when it connected); empty in an
	// announcement of an older moat, which did not record them.
	AsGroups []int
	// Dead: the run ended without withdrawing its announcement (it was
	// killed): its sandbox could write Roots from Since on, and no audit
	// looked at them.
	Dead bool
	file string
}

// Writes reports whether p lies in what the run can write.
func (w Writer) Writes(p string) bool {
	in := func(p, base string) bool { return base == "/" || p == base || strings.HasPrefix(p, base+"/") }
	for _, ro := range w.ReadOnly {
		if in(p, ro) {
			return false
		}
	}
	for _, r := range w.Roots {
		if in(p, r) {
			return true
		}
	}
	return false
}

// Announce records, for as long as the returned file stays open, what this
// run can write (one "<id>.live" file in dir, flock'ed). Another moat
// reading a settings file a live sandbox could have written since it
// started refuses to trust it (LiveWriters).
func Announce(dir, id string, w Writer) (*os.File, error) {
	return AnnounceOwned(dir, id, w, os.Geteuid())
}

// AnnounceOwned is Announce in a register that uid owns: moatd's copy of a
// client's run in the client's own register (made with the client's
// file-system credentials), which the client's other runs read.
func AnnounceOwned(dir, id string, w Writer, uid int) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	if err := checkOwnedBy(dir, uid); err != nil {
		return nil, err
	}
	// Made under another name, locked and written, then renamed into
	// place (the lock is the open file's, and goes with it): readers see
	// only complete announcements their run holds. Made at its name, the
	// file was there unlocked for a moment, and another moat's probe of
	// it (isLive's lock, let go at once) made this run's lock fail, or
	// its audit of killed runs took it for one and removed it: the run
	// went unannounced (CI, 20 runs at once, once the failure refused the
	// run rather than pass unsaid).
	final := filepath.Join(dir, id+".live")
	tmp := filepath.Join(dir, "."+id+".new")
	fd, err := unix.Open(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("live: %w", &os.PathError{Op: "open", Path: tmp, Err: err})
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		os.Remove(tmp)
		return nil, fmt.Errorf("live: lock %s: %w", tmp, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "S %d\n", w.Since.UnixNano())
	if w.As > 0 {
		fmt.Fprintf(&b, "U %d\n", w.As)
		if len(w.AsGroups) > 0 {
			b.WriteString("G")
			for _, g := range w.AsGroups {
				fmt.Fprintf(&b, " %d", g)
			}
			b.WriteString("\n")
		}
	}
	for _, r := range w.Roots {
		fmt.Fprintf(&b, "W %s\n", hex.EncodeToString([]byte(r)))
	}
	for _, r := range w.ReadOnly {
		fmt.Fprintf(&b, "R %s\n", hex.EncodeToString([]byte(r)))
	}
	b.WriteString("E\n")
	f := os.NewFile(uintptr(fd), final) // (named for Withdraw once renamed)
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("live: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("live: %w", err)
	}
	return f, nil
}

// Withdraw ends an announcement.
func Withdraw(f *os.File) {
	if f == nil {
		return
	}
	os.Remove(f.Name())
	f.Close()
}

// LiveWriters lists the runs that hold their announcement (live ones).
func LiveWriters(dir string) []Writer {
	var out []Writer
	for _, w := range Writers(dir) {
		if !w.Dead {
			out = append(out, w)
		}
	}
	return out
}

// Writers lists every announcement: live runs' and those of runs killed
// before they withdrew theirs (Dead: what they could write was never
// audited; Claim, then Done after the audit, removes one). A damaged
// announcement of a dead run is removed.
func Writers(dir string) []Writer {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Writer
	for _, e := range es {
		id, ok := strings.CutSuffix(e.Name(), ".live")
		if !ok {
			continue
		}
		file := filepath.Join(dir, e.Name())
		dead := !isLive(file)
		w, ok := readAnnouncement(file)
		if !ok {
			if dead {
				os.Remove(file)
			}
			continue
		}
		w.ID, w.Dead, w.file = id, dead, file
		out = append(out, w)
	}
	return out
}

// Claim takes a dead run's announcement for its audit: ok is false when
// another moat holds it (a live run, or another audit). Done ends the
// claim: after the audit, the announcement is removed.
func Claim(w Writer) (done func(audited bool), ok bool) {
	f, err := os.OpenFile(w.file, os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	// Still there (not removed by the audit that held it before us)?
	if _, err := os.Stat(w.file); err != nil {
		f.Close()
		return nil, false
	}
	return func(audited bool) {
		if audited {
			os.Remove(w.file)
		}
		f.Close()
	}, true
}

func readAnnouncement(file string) (Writer, bool) {
	// (Not a FIFO's wait, nor through a symlink.)
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return Writer{}, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return Writer{}, false
	}
	var w Writer
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	complete := false
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		switch k {
		case "S":
			ns, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return Writer{}, false
			}
			w.Since = time.Unix(0, ns)
		case "U":
			uid, err := strconv.Atoi(v)
			if err != nil || uid <= 0 {
				return Writer{}, false
			}
			w.As = uid
		case "G":
			w.AsGroups = nil
			for _, f := range strings.Fields(v) {
				g, err := strconv.Atoi(f)
				if err != nil || g < 0 {
					return Writer{}, false
				}
				w.AsGroups = append(w.AsGroups, g)
			}
		case "W", "R":
			b, err := hex.DecodeString(v)
			if err != nil || !cleanAbs(string(b)) {
				return Writer{}, false
			}
			if k == "W" {
				w.Roots = append(w.Roots, string(b))
			} else {
				w.ReadOnly = append(w.ReadOnly, string(b))
			}
		case "E":
			complete = true
		}
	}
	// An announcement being written counts from "now": its run is live.
	if !complete && w.Since.IsZero() {
		w.Since = time.Now().Add(-time.Second)
	}
	return w, true
}

// checkOwnedBy refuses a directory that uid does not own or that someone
// else could write to.
func checkOwnedBy(dir string, uid int) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("live: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("live: %s is not a directory", dir)
	}
	if int(st.Uid) != uid || st.Mode&0o022 != 0 {
		return fmt.Errorf("live: %s must be owned by uid %d and not writable by others", dir, uid)
	}
	return nil
}

// isLive reports whether a file's owner still holds its lock (one that
// cannot be opened is not live: it is gone).
func isLive(file string) bool {
	held, opened := probe(file)
	return opened && held
}

// Held reports whether a run holds the file's lock (a live run's record or
// announcement); one that cannot be opened is taken for held.
func Held(file string) bool {
	held, opened := probe(file)
	return held || !opened
}

// probe tries the file's lock and lets it go: held when another open file
// holds it. The file is opened without following a symlink or waiting on
// a FIFO.
func probe(file string) (held, opened bool) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false, false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true, true
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false, true
}

func cleanAbs(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

// stateDirsFile lists, in the user's home state directory, the other state
// directories the user's runs keep ($XDG_STATE_HOME set for some), one
// hex-encoded path a line, then a space and the random token RecordStateDir
// left in the directory (stateIDFile): the directory listed, not only its
// name (a device and inode would not do: a directory removed and made
// again often gets the inode it had). Every sandbox hides them all, the home
// one included: another run's saved session output, quarantine and
// journals are no sandbox's to read, whatever its own policy hides. A run
// of the home state directory knows the others only from here.
const stateDirsFile = "statedirs"

// stateIDFile, in a listed state directory, holds the token its entry in
// the home state directory's list names.
const stateIDFile = "stateid"

// RecordStateDir adds dir to the list in home (the home state directory,
// which the caller has made and checked) as the directory that is there
// now (a new token in it), dropping the entries that are no directory any
// more. The others keep their tokens.
func RecordStateDir(home, dir string) error {
	if !cleanAbs(dir) {
		return fmt.Errorf("live: state directory %q is not a clean absolute path", dir)
	}
	if Listed(home, dir) {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(home, stateDirsFile+".lock"), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("live: %w", err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("live: %w", err)
	}
	if Listed(home, dir) {
		return nil // by another run meanwhile
	}
	var r [16]byte
	if _, err := rand.Read(r[:]); err != nil {
		return fmt.Errorf("live: %w", err)
	}
	id := hex.EncodeToString(r[:])
	tmp := filepath.Join(dir, stateIDFile+".tmp")
	if err := os.WriteFile(tmp, []byte(id), 0o600); err != nil {
		return fmt.Errorf("live: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateIDFile)); err != nil {
		return fmt.Errorf("live: %w", err)
	}
	var b strings.Builder
	for _, e := range append(readStateDirs(home), stateDirEntry{path: dir, id: id}) {
		if e.path == dir && e.id != id {
			continue // listed as another directory: this one replaces it
		}
		if fi, err := os.Lstat(e.path); err == nil && fi.IsDir() {
			b.WriteString(hex.EncodeToString([]byte(e.path)))
			if e.id != "" {
				b.WriteString(" " + e.id)
			}
			b.WriteString("\n")
		}
	}
	tmp = filepath.Join(home, stateDirsFile+".tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("live: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(home, stateDirsFile)); err != nil {
		return fmt.Errorf("live: %w", err)
	}
	return nil
}

// Listed reports whether dir is in the list in home as the directory that
// is there now (its token): one removed and made again since, by a
// sandbox that did not hide it because it was missing when the sandbox
// was planned, is not.
func Listed(home, dir string) bool {
	id, ok := dirID(dir)
	for _, e := range readStateDirs(home) {
		if e.path == dir {
			return ok && e.id == id
		}
	}
	return false
}

// StateDirs reads the list RecordStateDir keeps in home: clean absolute
// paths, each once.
func StateDirs(home string) []string {
	var out []string
	for _, e := range readStateDirs(home) {
		out = append(out, e.path)
	}
	return out
}

type stateDirEntry struct{ path, id string }

func readStateDirs(home string) []stateDirEntry {
	data, ok := readSmall(filepath.Join(home, stateDirsFile), maxStateDirs)
	if !ok {
		return nil
	}
	var out []stateDirEntry
	for _, l := range strings.Split(string(data), "\n") {
		h, id, _ := strings.Cut(l, " ")
		p, err := hex.DecodeString(h)
		if err != nil || len(p) == 0 || !cleanAbs(string(p)) || slices.ContainsFunc(out, func(e stateDirEntry) bool { return e.path == string(p) }) {
			continue
		}
		out = append(out, stateDirEntry{path: string(p), id: id})
	}
	return out
}

// dirID is the token RecordStateDir left in the directory p: a regular
// file, read without following a symlink or waiting on a FIFO.
func dirID(p string) (string, bool) {
	f, err := os.OpenFile(filepath.Join(p, stateIDFile), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	b := make([]byte, 64)
	n, _ := f.Read(b)
	if n != 32 {
		return "", false
	}
	return string(b[:n]), true
}

// maxStateDirs bounds the list of state directories read (a few thousand
// entries).
const maxStateDirs = 1 << 20

// readSmall reads the regular file p, of at most max bytes, without
// following a symlink or waiting on a FIFO: a FIFO put in its place hung
// every run of the user at its start, SIGTERM or not, and moatd's requests
// for that user with them (attack pass 107).
func readSmall(p string, max int64) ([]byte, bool) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	return b, err == nil
}
