//go:build linux

package journal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
)

// Kind of placeholder.
type Kind byte

const (
	Dir  Kind = 'd'
	File Kind = 'f'
	// Node is an unbound socket inode: it holds no data block (removing
	// a directory frees one, which a filesystem mounted with discard
	// trims synchronously: ~0.1-0.4 ms a name), git lists neither it nor
	// anything under it, and opening it fails, so one left behind by a
	// killed run is inert until the next sweep. Its mode is 0: access(2)
	// fails with EACCES, which git takes as "no such config" (a home's
	// reserved .gitconfig), where ENXIO from open is fatal to it.
	Node Kind = 's'
)

// Placeholder is one mount point on the host.
type Placeholder struct {
	Path    string
	Kind    Kind
	Content string // files only: what moat wrote into it
	dev     uint64
	ino     uint64
}

// Journal is one run's view of the journal directory.
type Journal struct {
	dir    string
	id     string
	rec    *os.File // this run's record, flock'ed exclusively (created lazily)
	global *os.File // the global lock, while held
	ps     []Placeholder
	others []record   // live runs' records, read when the global lock was taken
	mu     sync.Mutex // guards global (Unlock may come from another goroutine)
	// as, if set, runs the file-system work on placeholders (create,
	// remove) with the credentials of the user the sandbox is for (moatd):
	// root never creates or removes a file in a client's tree as root.
	as func(func() error) error
	// top is the directory of every journal (moatd keeps one per client
	// uid under it, "uid-N", and root's own in it): the records of them
	// all count, so that a placeholder one user's run mounts over is never
	// removed by another user's run (see adopt).
	top string
	// holds are the directories this run mounts over a name in, each
	// open until Close (Hold, Pin).
	holds map[string]*hold
}

// topOf is the directory of every journal for the journal in dir: its
// parent for a journal of one uid ("uid-N"), else dir itself.
func topOf(dir string) string {
	if strings.HasPrefix(filepath.Base(dir), "uid-") {
		return filepath.Dir(dir)
	}
	return dir
}

// dirs lists the journal directories whose records count.
func (j *Journal) dirs() []string {
	if j.top == "" {
		return []string{j.dir}
	}
	out := []string{j.top}
	es, _ := os.ReadDir(j.top)
	for _, e := range es {
		if e.IsDir() && strings.HasPrefix(e.Name(), "uid-") {
			out = append(out, filepath.Join(j.top, e.Name()))
		}
	}
	if !slices.Contains(out, j.dir) {
		out = append(out, j.dir)
	}
	return out
}

// SetAs makes Create and Close touch placeholders through as (which runs
// its function with the sandbox user's credentials).
func (j *Journal) SetAs(as func(func() error) error) { j.as = as }

// do runs fn through as, if set.
func (j *Journal) do(fn func() error) error {
	if j.as == nil {
		return fn()
	}
	return j.as(fn)
}

// Begin prepares this run's use of the journal in dir (created mode 0700 if
// needed), takes the global lock and reads the other runs' records. This
// run's own record is created only when it records something.
func Begin(dir string) (*Journal, error) { return BeginContext(context.Background(), dir) }

// BeginContext is Begin, giving up the wait for the global lock when ctx
// is done.
func BeginContext(ctx context.Context, dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := checkOwned(dir); err != nil {
		return nil, err
	}
	var b [8]byte
	if err := sys.Random(b[:]); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{dir: dir, id: hex.EncodeToString(b[:]), top: topOf(dir)}
	if err := j.lock(ctx); err != nil {
		return nil, err
	}
	return j, nil
}

// ensureRecord creates this run's record file and locks it.
func (j *Journal) ensureRecord() error {
	if j.rec != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(j.dir, j.id+".run"), os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("journal: lock own record: %w", err)
	}
	j.rec = f
	return nil
}

// checkOwned refuses a journal directory someone else could write to.
func checkOwned(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("journal: %s is not a directory", dir)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return fmt.Errorf("journal: %s must be owned by uid %d and not writable by others", dir, os.Geteuid())
	}
	return nil
}

// ID names this run's record.
func (j *Journal) ID() string { return j.id }

// LockFile is this run's record (nil when nothing was recorded): a sandbox
// init that must outlive the supervisor keeps it open, so the run counts as
// live until it is done.
func (j *Journal) LockFile() *os.File { return j.rec }

// Lock takes the global lock (blocking). Create and Release need it.
func (j *Journal) Lock() error { return j.lock(context.Background()) }

// lock takes the global lock, waiting until ctx is done. The wait polls
// (a try, then sleeps of 0.2 ms doubling to 20 ms): a goroutine that
// sleeps can give up, where one blocked in flock(2) holds its OS thread
// until the holder lets go, however long that is.
func (j *Journal) lock(ctx context.Context) error {
	f, err := os.OpenFile(filepath.Join(j.dir, "journal.lock"), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := pollFlock(ctx, f); err != nil {
		f.Close()
		return fmt.Errorf("journal: the global lock of %s: %w", j.dir, err)
	}
	j.mu.Lock()
	j.global = f
	j.mu.Unlock()
	j.others = nil
	for _, r := range j.records() {
		if r.id != j.id && r.live {
			j.others = append(j.others, r)
		}
	}
	return nil
}

// pollFlock takes f's exclusive flock, trying again after sleeps of 0.2 ms
// doubling to 20 ms, until ctx is done.
func pollFlock(ctx context.Context, f *os.File) error { return pollFlockHow(ctx, f, unix.LOCK_EX) }

// pollFlockHow is pollFlock for a flock of kind how (LOCK_EX, LOCK_SH).
func pollFlockHow(ctx context.Context, f *os.File, how int) error {
	wait := 200 * time.Microsecond
	for {
		err := sys.Retry(func() error { return unix.Flock(int(f.Fd()), how|unix.LOCK_NB) })
		if err != unix.EWOULDBLOCK {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}

// Hold opens dir, where this run mounts over a name, for the run's life,
// and takes its shared flock until the journal's global lock is released
// (Unlock): while this run looks at names there and pins the ones it
// mounts over (Pin), no run removes a placeholder in dir (remove takes the
// directory's flock exclusively). The records keep a live run's
// placeholders only from the runs of its own journal. A run of another
// journal (another state directory: $XDG_STATE_HOME set for one of two
// runs, or moatd's run and the user's own) took this run's placeholders
// for the user's files, as this run took its, and the first to end
// removed a placeholder the other had mounted over: the kernel detaches
// the mounts over a name unlinked in another mount namespace, and the
// command then made the protected name (a .vscode/tasks.json in the
// project, left on the host). A directory that does not exist or is
// reached through a symlink holds nothing a removal would take (remove
// opens the way as Hold does).
func (j *Journal) Hold(ctx context.Context, dir string) error {
	j.mu.Lock()
	h, ok := j.holds[dir]
	j.mu.Unlock()
	if ok {
		if h.shared {
			return nil
		}
	} else {
		var fd int
		var err error
		if aerr := j.do(func() error { fd, err = openDir(dir, unix.O_RDONLY); return nil }); aerr != nil {
			return fmt.Errorf("journal: %w", aerr)
		}
		if err == unix.ELOOP || err == unix.ENOENT || err == unix.ENOTDIR {
			return nil // (not remembered: a placeholder made later may be the directory)
		}
		if err != nil {
			return fmt.Errorf("moat mounts over a name in %s, which it must hold open while the sandbox runs (no other run may remove a placeholder there meanwhile), but cannot open it: %w", dir, err)
		}
		h = &hold{f: os.NewFile(uintptr(fd), dir)}
	}
	// A removal holds the directory exclusively for a few system calls,
	// and another journal's run shares it while it plans; anything longer
	// is another process's flock (a command of another sandbox may take
	// one on a directory it can open), and the run fails rather than go on
	// without its hold.
	hctx, cancel := context.WithTimeout(ctx, adoptWait)
	err := pollFlockHow(hctx, h.f, unix.LOCK_SH)
	cancel()
	if err != nil {
		if !ok {
			h.f.Close()
		}
		if ctx.Err() == nil {
			return fmt.Errorf("moat mounts over a name in %s and must hold it (a shared flock) while it plans, but another process has held it locked exclusively for %v: end that process, or run again", dir, adoptWait)
		}
		return fmt.Errorf("journal: hold %s: %w", dir, err)
	}
	j.mu.Lock()
	h.shared = true
	j.setHold(dir, h)
	j.mu.Unlock()
	return nil
}

// hold is a directory Hold opened: its descriptor (the pins' locks are
// its), and whether it holds the directory's shared flock now.
type hold struct {
	f      *os.File
	shared bool
}

func (j *Journal) setHold(dir string, h *hold) {
	if j.holds == nil {
		j.holds = map[string]*hold{}
	}
	j.holds[dir] = h
}

// pinMask keeps a lock's offset (an inode number) a positive off_t.
const pinMask = 1<<62 - 1

// Pin marks path, which this run mounts over, as in use until Close: a
// read lock (an open file description's, F_OFD_SETLK) on its directory's
// descriptor, at the byte its inode number names. remove leaves a
// placeholder whose byte another descriptor locks, whatever journal that
// run records in; a run that only holds the directory for other names
// does not keep it. The caller holds path's directory (Hold) and looked
// at path since.
func (j *Journal) Pin(path string) error {
	j.mu.Lock()
	h := j.holds[filepath.Dir(path)]
	j.mu.Unlock()
	if h == nil {
		return nil // a directory Hold could not open as it is: nothing a removal would take
	}
	var st unix.Stat_t
	var lerr error
	if err := j.do(func() error { lerr = unix.Lstat(path, &st); return nil }); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if lerr != nil {
		return nil // gone: nothing to mount over (the plan fails there)
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: int64(st.Ino & pinMask), Len: 1}
	if err := sys.Retry(func() error { return unix.FcntlFlock(h.f.Fd(), unix.F_OFD_SETLK, &lk) }); err != nil {
		return fmt.Errorf("moat mounts over %s and must mark it in use (a read lock on its directory), but cannot: %w", path, err)
	}
	return nil
}

// pinned reports whether another open file description than fd's holds a
// read lock at path's inode byte of its directory (Pin).
func pinned(fd int, ino uint64) bool {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: int64(ino & pinMask), Len: 1}
	if err := sys.Retry(func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk) }); err != nil {
		return true // not known to be free
	}
	return lk.Type != unix.F_UNLCK
}

// release lets go of the directories Hold took, and of the pins.
func (j *Journal) release() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, h := range j.holds {
		h.f.Close()
	}
	j.holds = nil
	// A child this process forks has a copy of every descriptor until its
	// exec closes them (close-on-exec), and the pins' locks are its copy's
	// too meanwhile: a fork of another goroutine just before the closes
	// kept them a moment longer, and this run's Close found its own
	// placeholders pinned and left them (TestFailedLaunchLeavesNothing,
	// CI41). Go forks under ForkLock until the child's exec: taking it
	// waits for any such child.
	syscall.ForkLock.Lock()
	syscall.ForkLock.Unlock()
}

// openDir opens the directory dir with flags without following a symlink
// on the way (where openat2 is missing, rootless: any way).
func openDir(dir string, flags int) (int, error) {
	flags |= unix.O_DIRECTORY | unix.O_CLOEXEC
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err == unix.ENOSYS && os.Geteuid() != 0 {
		fd, err = unix.Open(dir, flags, 0)
	}
	return fd, err
}

// errHeld: a placeholder stays, because a live run may mount over it.
var errHeld = errors.New("journal: a live run holds the placeholder or its directory")

// errDirHeld: errHeld for the whole directory (its flock), the same for
// every placeholder in it this time.
var errDirHeld = fmt.Errorf("%w (the directory)", errHeld)

// Unlock releases the global lock (idempotent, safe from any goroutine).
func (j *Journal) Unlock() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.global != nil {
		j.global.Close()
		j.global = nil
	}
	// The directories' shared flocks go with it: what this run mounts
	// over is pinned by now, and the runs of this journal, which remove
	// only under the global lock, must not find the directories held.
	for _, h := range j.holds {
		if h.shared {
			unix.Flock(int(h.f.Fd()), unix.LOCK_UN)
			h.shared = false
		}
	}
}

func (j *Journal) locked() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.global != nil
}

func (j *Journal) append(line string) error {
	if err := j.ensureRecord(); err != nil {
		return err
	}
	_, err := j.rec.WriteString(line + "\n") // O_APPEND: at the end
	return err
}

// Create makes a placeholder at path (which must not exist) and records it.
// If another live run's placeholder is already there (same inode, still
// pristine), it is adopted instead. The caller holds the global lock.
func (j *Journal) Create(path string, kind Kind, content string) error {
	if !j.locked() {
		return errors.New("journal: Create without the global lock")
	}
	if r, p, ok := j.liveOwner(path); ok {
		if err := j.adopt(r, p); err != errGone {
			return err
		}
	}
	if err := j.append(intentLine(kind, content, path)); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	var err error
	var st unix.Stat_t
	aerr := j.do(func() error {
		switch kind {
		case Node:
			err = unix.Mknodat(unix.AT_FDCWD, path, unix.S_IFSOCK, 0)
			if err == unix.EPERM || err == unix.EOPNOTSUPP || err == unix.EINVAL {
				// A filesystem without socket inodes (some FUSE and
				// network ones): a directory, recorded as one.
				kind = Dir
				if err = j.append(intentLine(kind, content, path)); err != nil {
					return err
				}
				err = unix.Mkdirat(unix.AT_FDCWD, path, 0o755)
			}
		case Dir:
			err = unix.Mkdirat(unix.AT_FDCWD, path, 0o755)
		case File:
			var fd int
			fd, err = unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
			if err == nil {
				if content != "" {
					_, err = unix.Write(fd, []byte(content))
				}
				unix.Close(fd)
			}
		}
		if err == nil {
			err = unix.Lstat(path, &st)
		}
		return nil
	})
	if aerr != nil {
		return fmt.Errorf("journal: %w", aerr)
	}
	if err == unix.EEXIST {
		// It appeared since the plan was made: another run's placeholder
		// (a run that just died and whose clean-up has not run yet, or one
		// that started meanwhile) is shared; anything else is refused.
		for _, r := range j.records() {
			for _, p := range r.ps {
				if p.Path == path && p.pristine() {
					if err := j.adopt(r, p); err != errGone {
						return err
					}
				}
			}
		}
	}
	if err == unix.EEXIST && kind == Node {
		// A socket inode of mode 0 made since the plan looked: another
		// run's placeholder, of another journal (a state directory of its
		// own). It is mounted over as it is, as one there before would
		// have been, and claimed (Claim). (Two runs of two journals
		// starting at once failed here, "file exists".)
		if claimed, err := j.Claim(path); claimed || err != nil {
			return err
		}
	}
	if err == unix.EACCES || err == unix.EPERM || err == unix.EROFS {
		return fmt.Errorf("moat must reserve %s (a protected name: it creates an empty placeholder there for the run), but %s is not writable by this user: %w; make that folder writable by you, or leave it out of allowWrite", path, filepath.Dir(path), err)
	}
	if err != nil {
		return fmt.Errorf("create the mount point %s: %w", path, err)
	}
	p := Placeholder{Path: path, Kind: kind, Content: content, dev: st.Dev, ino: st.Ino}
	// Listed before its record is written: a record that cannot be
	// written (the state directory's filesystem full) fails the run, and
	// its Close must still remove what was made. It was in no list, Close
	// removed the record with its intent, and the placeholder stayed in
	// the user's tree for good (attack pass 87). Should this process die
	// first, the intent is on disk and the sweep removes it.
	j.ps = append(j.ps, p)
	if err := j.append(p.line()); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// Claim records path as this run's placeholder too when it is an unbound
// socket inode of mode 0, which only moat makes (a placeholder of another
// journal: a state directory of its own, whose runs this one cannot see),
// so that this run removes it at its close if no run holds its directory
// then. The caller holds path's directory (Hold) from before it looked:
// no run removes it meanwhile. Without a claim such a placeholder stayed
// until a run of its own journal swept, never if that journal was not
// used again.
func (j *Journal) Claim(path string) (bool, error) {
	var st unix.Stat_t
	var lerr error
	if err := j.do(func() error { lerr = unix.Lstat(path, &st); return nil }); err != nil {
		return false, fmt.Errorf("journal: %w", err)
	}
	if lerr != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Mode&0o7777 != 0 {
		return false, nil
	}
	for _, p := range j.ps {
		if p.Path == path && p.dev == st.Dev && p.ino == st.Ino {
			return true, nil
		}
	}
	p := Placeholder{Path: path, Kind: Node, dev: st.Dev, ino: st.Ino}
	if err := j.append(p.line()); err != nil {
		return false, fmt.Errorf("journal: %w", err)
	}
	j.ps = append(j.ps, p)
	return true, nil
}

// intentLine records that a placeholder of kind is about to be made at path.
func intentLine(kind Kind, content, path string) string {
	return "I " + strconv.FormatInt(time.Now().Unix(), 10) + " " + string(kind) + " " + hexOrDash(content) + " " + hex.EncodeToString([]byte(path))
}

func (p Placeholder) line() string {
	c := "-"
	if p.Content != "" {
		c = hex.EncodeToString([]byte(p.Content))
	}
	// The path is hex: a name may hold a newline or anything else, and
	// must never be able to forge a record of its own.
	return fmt.Sprintf("P %d %d %s %c %s", p.dev, p.ino, c, p.Kind, hex.EncodeToString([]byte(p.Path)))
}

// KindOf says what this run's placeholder at path is.
func (j *Journal) KindOf(path string) (Kind, bool) {
	for i := len(j.ps) - 1; i >= 0; i-- {
		if j.ps[i].Path == path {
			return j.ps[i].Kind, true
		}
	}
	return 0, false
}

// Holds reports whether path is one of this run's placeholders (made or
// adopted), still the inode that was recorded.
func (j *Journal) Holds(path string) bool {
	for _, p := range j.ps {
		if p.Path != path {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err == nil && st.Dev == p.dev && st.Ino == p.ino {
			return true
		}
	}
	return false
}

// Placeholders lists what this run created or adopted.
func (j *Journal) Placeholders() []Placeholder { return j.ps }

// Adopt records path as used by this run too when it is another live
// run's placeholder, so that run's clean-up leaves it in place while this
// run's sandbox has it as a mount point. The caller holds the global lock.
func (j *Journal) Adopt(path string) (bool, error) {
	if !j.locked() {
		return false, errors.New("journal: Adopt without the global lock")
	}
	r, p, ok := j.liveOwner(path)
	if !ok {
		return false, nil
	}
	switch err := j.adopt(r, p); err {
	case nil:
		return true, nil
	case errGone:
		return false, nil
	default:
		return false, err
	}
}

// errGone: the placeholder to adopt was removed meanwhile.
var errGone = errors.New("journal: the placeholder is gone")

// adoptWait bounds the wait for another journal's lock to adopt one of its
// placeholders (moatd: another user's run, which may hold its journal's
// lock while its sandbox starts, for as long as that user likes).
const adoptWait = 5 * time.Second

// adopt records p, a placeholder of record r, as this run's too. In this
// journal the caller's lock keeps r's clean-up away; a placeholder of
// another journal is adopted under that journal's lock (its runs remove
// placeholders only under it, after reading every journal's records), and
// is checked again there: errGone when it was removed meanwhile.
func (j *Journal) adopt(r record, p Placeholder) error {
	if r.dir != "" && r.dir != j.dir {
		f, err := os.OpenFile(filepath.Join(r.dir, "journal.lock"), os.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("journal: adopt %s: %w", p.Path, err)
		}
		defer f.Close()
		ctx, cancel := context.WithTimeout(context.Background(), adoptWait)
		defer cancel()
		if err := pollFlock(ctx, f); err != nil {
			return fmt.Errorf("moat would mount over %s, a placeholder of another user's run, which holds its journal (%w): try again when it has started", p.Path, err)
		}
		if !p.pristine() {
			return errGone
		}
	}
	if err := j.append(p.line()); err != nil {
		return err
	}
	j.ps = append(j.ps, p)
	return nil
}

// liveOwner finds path among the placeholders of other live runs.
func (j *Journal) liveOwner(path string) (record, Placeholder, bool) {
	for _, r := range j.others {
		for _, p := range r.ps {
			if p.Path == path && p.pristine() {
				return r, p, true
			}
		}
	}
	return record{}, Placeholder{}, false
}

// Close removes this run's placeholders that no other live run uses, then
// its record. It takes the global lock itself if needed and always leaves
// it released: a launch that failed before its sandbox reported its mounts
// closes with the lock still held.
func (j *Journal) Close() error { return j.close(0) }

// close is Close, trying again for up to wait (with the global lock let
// go in between) while a placeholder is kept because its directory or
// name is held.
func (j *Journal) close(wait time.Duration) error {
	defer j.Unlock()
	// The sandbox is gone: its directories no longer need holding, and
	// this run's own hold would keep its removals below out too.
	j.release()
	if j.rec == nil {
		return nil
	}
	if !j.locked() {
		if err := j.Lock(); err != nil {
			return err
		}
	}
	var errs []error
	var rm removal
	deadline, pause := time.Now().Add(wait), 5*time.Millisecond
	for {
		errs, rm = nil, removal{do: j.do}
		inUse := j.inUseByOthers()
		// Deepest first: a placeholder can sit inside another one's parent.
		for i := len(j.ps) - 1; i >= 0; i-- {
			p := j.ps[i]
			if inUse[key(p)] {
				continue
			}
			if err := rm.remove(p); err != nil {
				errs = append(errs, err)
			}
		}
		if !rm.kept || len(errs) > 0 || time.Now().Add(pause).After(deadline) {
			break
		}
		j.Unlock()
		time.Sleep(pause)
		pause = min(2*pause, 200*time.Millisecond)
		if err := j.Lock(); err != nil {
			return err
		}
	}
	name := j.rec.Name()
	j.rec.Close()
	j.rec = nil
	if rm.kept && len(errs) == 0 {
		// Another run (of any journal) holds a directory of one: the
		// record stays, a dead run's, for a later run's sweep.
		return nil
	}
	if len(errs) > 0 {
		// A placeholder that could not be removed stays recorded: the
		// next run's sweep tries again (the record was removed all the
		// same, and the placeholder stayed for good).
		return errors.Join(errs...)
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func key(p Placeholder) string { return fmt.Sprintf("%d:%d:%s", p.dev, p.ino, p.Path) }

func (j *Journal) inUseByOthers() map[string]bool {
	m := map[string]bool{}
	for _, r := range j.records() {
		if r.id == j.id || !r.live {
			continue
		}
		for _, p := range r.ps {
			m[key(p)] = true
		}
	}
	return m
}

// pristine reports whether the placeholder is still what moat made.
func (p Placeholder) pristine() bool {
	var st unix.Stat_t
	if err := unix.Lstat(p.Path, &st); err != nil || st.Dev != p.dev || st.Ino != p.ino {
		return false
	}
	switch p.Kind {
	case Dir:
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return false
		}
		// Whatever was renamed over the path since the Lstat is refused,
		// not opened (a FIFO would block, a device open has effects).
		fd, err := sys.RetryValue(func() (int, error) {
			return unix.Open(p.Path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return false
		}
		f := os.NewFile(uintptr(fd), p.Path)
		defer f.Close()
		names, _ := f.Readdirnames(1)
		return len(names) == 0
	case Node:
		return st.Mode&unix.S_IFMT == unix.S_IFSOCK
	case File:
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(len(p.Content)) {
			return false
		}
		b, err := sys.ReadRegular(p.Path, int64(len(p.Content)), true)
		return err == nil && string(b) == p.Content
	}
	return false
}

func (p Placeholder) remove() error {
	// The parent is opened without following any symlink, and the name is
	// checked and removed there: a directory of the path swapped for a
	// symlink since the placeholder was made cannot make moat (root, for
	// moatd and its sweeps) remove a file elsewhere.
	dfd, err := unix.Openat2(unix.AT_FDCWD, filepath.Dir(p.Path), &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err == unix.ENOSYS && os.Geteuid() != 0 {
		dfd, err = unix.Open(filepath.Dir(p.Path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err == unix.ELOOP || err == unix.ENOENT || err == unix.ENOTDIR {
		return nil // the way to it changed: not ours any more
	}
	if err != nil {
		return fmt.Errorf("remove the mount point %s: %w", p.Path, err)
	}
	defer unix.Close(dfd)
	// A parent the command left without search or write permission for its
	// owner (chmod 000 .) kept every placeholder in it, silently, and
	// forever (found by an attack pass): as that owner, moat gives it u+rwx
	// for the removal and puts its mode back.
	defer openUp(dfd)()
	// No run may be looking at the directory's names (Hold's shared
	// flock), and none may have pinned this one (Pin): such a run may have
	// it mounted over in its sandbox, whatever journal it records in. The
	// exclusive flock is held until the name is gone.
	lfd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return errDirHeld // not known to be free: left for a later sweep
	}
	defer unix.Close(lfd)
	if err := sys.Retry(func() error { return unix.Flock(lfd, unix.LOCK_EX|unix.LOCK_NB) }); err != nil {
		return errDirHeld
	}
	// A directory is checked below (its inode, then rmdir, which refuses
	// one that is not empty); a file's content must still be moat's.
	if p.Kind != Dir && !p.pristine() {
		return nil // gone, replaced or used: not ours to remove any more
	}
	base := filepath.Base(p.Path)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Dev != p.dev || st.Ino != p.ino {
		return nil
	}
	if pinned(lfd, st.Ino) {
		return errHeld // a live run mounts over it (Pin), of this journal or another
	}
	if p.Kind == Dir && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	flags := 0
	if p.Kind == Dir {
		flags = unix.AT_REMOVEDIR
	}
	if err := unix.Unlinkat(dfd, base, flags); err != nil && err != unix.ENOENT && err != unix.ENOTEMPTY {
		return fmt.Errorf("remove the mount point %s: %w", p.Path, err)
	}
	return nil
}

// openUp gives the directory dfd (O_PATH) u+rwx when this process owns it
// and is not root (root needs none), and returns what puts its mode back.
func openUp(dfd int) func() {
	var st unix.Stat_t
	if os.Geteuid() == 0 || unix.Fstat(dfd, &st) != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o700 == 0o700 {
		return func() {}
	}
	// An O_PATH descriptor takes no fchmod; its /proc/self/fd link leads to
	// the same directory, whatever its path is now.
	link := "/proc/self/fd/" + strconv.Itoa(dfd)
	mode := st.Mode & 0o7777
	if unix.Fchmodat(unix.AT_FDCWD, link, mode|0o700, 0) != nil {
		return func() {}
	}
	return func() { unix.Fchmodat(unix.AT_FDCWD, link, mode, 0) }
}

type record struct {
	id   string
	live bool
	file string
	dir  string // the journal directory it is in
	ps   []Placeholder
	// intents are paths whose creation may not have been recorded.
	intents []intent
}

type intent struct {
	path    string
	kind    Kind
	at      int64
	content string
}

func validKind(s string) bool { return s == string(Dir) || s == string(File) || s == string(Node) }

func dashOrHex(s string) (string, error) {
	if s == "-" {
		return "", nil
	}
	b, err := hex.DecodeString(s)
	return string(b), err
}

// cleanAbs accepts only what moat records: absolute, clean paths.
func cleanAbs(p string) bool { return filepath.IsAbs(p) && filepath.Clean(p) == p }

func hexOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return hex.EncodeToString([]byte(s))
}

// records reads every run record, of every journal that counts.
func (j *Journal) records() []record {
	var out []record
	for _, dir := range j.dirs() {
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			id, ok := strings.CutSuffix(e.Name(), ".run")
			if !ok {
				continue
			}
			r := record{id: id, file: filepath.Join(dir, e.Name()), dir: dir}
			if id == j.id && dir == j.dir {
				r.live = true
			} else {
				r.live = isLive(r.file)
			}
			r.ps, r.intents = parseRecord(r.file)
			out = append(out, r)
		}
	}
	return out
}

// isLive reports whether a record's owner still holds its lock.
func isLive(file string) bool {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

func parseRecord(file string) ([]Placeholder, []intent) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil
	}
	// A last line without its newline is a write cut short (a full disk):
	// its path, cut at any byte, may name another path (the directory
	// above the placeholder), so it is no record.
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	var ps []Placeholder
	var is []intent
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		// Every field is a number, a one-letter kind or hex: a record is
		// exactly its fields, and a line that is anything else is skipped.
		f := strings.Split(sc.Text(), " ")
		switch {
		case len(f) == 6 && f[0] == "P" && validKind(f[4]):
			dev, e1 := strconv.ParseUint(f[1], 10, 64)
			ino, e2 := strconv.ParseUint(f[2], 10, 64)
			content, e3 := dashOrHex(f[3])
			path, e4 := hex.DecodeString(f[5])
			if e1 != nil || e2 != nil || e3 != nil || e4 != nil || !cleanAbs(string(path)) {
				continue
			}
			ps = append(ps, Placeholder{Path: string(path), Kind: Kind(f[4][0]), Content: content, dev: dev, ino: ino})
		case len(f) == 5 && f[0] == "I" && validKind(f[2]):
			at, e1 := strconv.ParseInt(f[1], 10, 64)
			content, e2 := dashOrHex(f[3])
			path, e3 := hex.DecodeString(f[4])
			if e1 != nil || e2 != nil || e3 != nil || !cleanAbs(string(path)) {
				continue
			}
			is = append(is, intent{path: string(path), kind: Kind(f[2][0]), at: at, content: content})
		}
	}
	return ps, is
}

// CommondirContent is what a placeholder .git/commondir holds: "." keeps git
// working while the placeholder exists (an empty file makes git fail).
const CommondirContent = ".\n"

// Sweep removes what dead runs left behind: their placeholders that no live
// run uses, then their records. The caller holds the global lock.
func (j *Journal) Sweep() error {
	recs := j.records()
	inUse := map[string]bool{}
	for _, r := range recs {
		if r.live {
			for _, p := range r.ps {
				inUse[key(p)] = true
			}
		}
	}
	var errs []error
	rm := removal{do: func(fn func() error) error { return fn() }}
	for _, r := range recs {
		if r.live || r.dir != j.dir {
			continue // live, or another journal's (its own runs sweep it, under its lock)
		}
		recorded := map[string]bool{}
		rm.kept = false
		for i := len(r.ps) - 1; i >= 0; i-- {
			p := r.ps[i]
			recorded[p.Path] = true
			if inUse[key(p)] {
				continue
			}
			if err := rm.remove(p); err != nil {
				errs = append(errs, err)
			}
		}
		// A creation that was never recorded (the run died between the
		// two): remove an empty directory or file made after the intent.
		for _, in := range r.intents {
			if recorded[in.path] {
				continue
			}
			if p, ok := unrecorded(in); ok {
				rm.remove(p) // (its other errors are not the user's to see)
			}
		}
		if rm.kept {
			continue // a live run holds a directory of one: a later sweep's
		}
		if err := os.Remove(r.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unrecorded is what an intent's run may have made and not recorded: the
// file at its path if it was born after the intent.
func unrecorded(in intent) (Placeholder, bool) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, in.path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME|unix.STATX_TYPE|unix.STATX_SIZE, &st); err != nil {
		return Placeholder{}, false
	}
	born := st.Btime.Sec
	if st.Mask&unix.STATX_BTIME == 0 {
		born = st.Ctime.Sec
	}
	if born < in.at-1 {
		return Placeholder{}, false // older than the intent: not made by that run
	}
	return Placeholder{Path: in.path, Kind: in.kind, Content: in.content, dev: uint64(unix.Mkdev(st.Dev_major, st.Dev_minor)), ino: st.Ino}, true
}

// removal removes placeholders (Close, Sweep), trying each directory it
// finds held (its flock: errDirHeld) once, and says whether any was kept
// for a later sweep because a live run holds it or its directory.
type removal struct {
	do   func(func() error) error
	held map[string]bool
	kept bool
}

// remove removes p through do; a kept placeholder is no error.
func (rm *removal) remove(p Placeholder) error {
	dir := filepath.Dir(p.Path)
	if rm.held[dir] {
		rm.kept = true
		return nil
	}
	err := rm.do(p.remove)
	if !errors.Is(err, errHeld) {
		return err
	}
	rm.kept = true
	if errors.Is(err, errDirHeld) {
		if rm.held == nil {
			rm.held = map[string]bool{}
		}
		rm.held[dir] = true
	}
	return nil
}

// Recover is what a sandbox's init runs (through the supervisor's binary)
// after the supervisor died: it removes the run's placeholders like Close
// would. lock is the record file init kept open.
func Recover(dir, id string) error {
	j := &Journal{dir: dir, id: id, top: topOf(dir)}
	rec, err := os.OpenFile(filepath.Join(dir, id+".run"), os.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	j.rec = rec
	j.ps, _ = parseRecord(rec.Name())
	return j.close(recoverWait)
}

// recoverWait bounds how long Recover tries again to remove a placeholder
// it finds held. The dead supervisor's own holds and pins may outlive the
// hang-up of its line to init, which starts the clean-up: the kernel
// releases a dying process's descriptors one by one, and the clean-up
// found the run's directory still held and left every placeholder there
// for a later run's sweep (CI, under load). A live run's hold is waited
// out as long, and then left for a later sweep too.
const recoverWait = 5 * time.Second

// SweepDir removes what dead runs left in the journal directory dir. It is
// cheap when there is nothing to do (one directory read) and takes the
// global lock only when some record exists.
func SweepDir(dir string) error {
	es, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	any := false
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".run") {
			any = true
			break
		}
	}
	if !any {
		return nil
	}
	if err := checkOwned(dir); err != nil {
		return err
	}
	j := &Journal{dir: dir, top: topOf(dir)}
	if err := j.Lock(); err != nil {
		return err
	}
	defer j.Unlock()
	return j.Sweep()
}

// SweepAll is SweepDir on dir and on each journal under it of one client
// uid ("uid-N", moatd's): a daemon that starts again after it was killed
// removes what its runs left, for users who may not run again.
func SweepAll(dir string) error {
	err := SweepDir(dir)
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if e.IsDir() && strings.HasPrefix(e.Name(), "uid-") {
			err = errors.Join(err, SweepDir(filepath.Join(dir, e.Name())))
		}
	}
	return err
}
