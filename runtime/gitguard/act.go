//go:build linux || darwin

package gitguard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The audit's changes (a file moved out, a config rewritten, a mode
// changed) are made through descriptors, never by path: the audit may run
// while another sandbox that can write the same tree still runs (another
// command of the session, another run in the same directory), and a path
// checked and then used again let that sandbox swap a directory on the
// way for a symlink between the two, so that the audit, unconfined on the
// host, wrote, moved or chmodded what it led to: a config outside the
// writable trees replaced, the mode of the user's home directory set to
// the command's choice, as root any of root's files (found by an attack
// pass; TestAuditRaceCannotReachOutside). Each change opens the directory
// it works in from the outermost writable root that holds it, one
// component at a time and never following a symlink (the roots' own
// paths, outside every writable tree, are the sandbox's to read only),
// and then works on names in that directory alone.

// testHookBefore and testHookChecked, set by tests, run before a
// directory is checked and between its check and its use: where a racing
// command swaps it back and forth.
var testHookBefore, testHookChecked func(dir string)

// testHookAct, set by tests, runs before the directory of a file the
// audit changes is opened (parentOf), not before a mode change.
var testHookAct func(dir string)

// errOutside: the path does not lie in a writable tree as it is now.
var errOutside = errors.New("not inside the writable trees (as it is now)")

// outerRoot is the outermost root holding p, "" if none.
func (a *auditor) outerRoot(p string) string {
	best := ""
	for _, r := range a.o.Roots {
		if within(p, r) && (best == "" || len(r) < len(best)) {
			best = r
		}
	}
	return best
}

// openDir opens the directory dir (a path without symlinks, as
// filepath.EvalSymlinks gives) from its outermost root, following no
// symlink below the root: a component that became one since fails.
func (a *auditor) openDir(dir string) (int, error) {
	r := a.outerRoot(dir)
	if r == "" {
		return -1, errOutside
	}
	fd, err := unix.Open(r, unix.O_DIRECTORY|dirOpenFlags|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	rel := strings.Trim(strings.TrimPrefix(dir, r), "/")
	if r == "/" {
		rel = strings.Trim(dir, "/")
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" {
			continue
		}
		if c == "." || c == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: not a clean path", dir)
		}
		nfd, err := unix.Openat(fd, c, unix.O_DIRECTORY|unix.O_NOFOLLOW|dirOpenFlags|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("%s: %w (a component changed during the audit?)", dir, err)
		}
		fd = nfd
	}
	return fd, nil
}

// errDirChanged: the directory at a path is not the one the audit
// resolved there when it judged a file in it.
var errDirChanged = errors.New("not the directory moat judged the file in (it was moved or replaced during the audit)")

// parentOf opens the directory that holds p, for a change, and returns p's
// name in it. p is a path the audit resolved when it judged the file
// (changedActionable: its directories' symlinks resolved, inside a root),
// so its directory is opened as that very path, from the outermost root,
// following no symlink at all, and must be the directory resolved then
// (the same inode). Resolving it again here let anyone who can write the
// tree (a user who shares a writable tree with the run, or another
// sandbox) swap a directory of the path for a symlink after the file was
// read, to another directory inside the roots, and the audit wrote what it
// kept of the file there, as the audit's user: a concurrent root run with
// --write / wrote a file another user chose into a root-only directory
// (TestAuditRaceStaysInTheJudgedDirectory; TestDaemonAttackAuditRaceWritesAsRoot
// failed once this way).
func (a *auditor) parentOf(p string) (int, string, error) {
	dir := filepath.Dir(p)
	if testHookBefore != nil {
		testHookBefore(dir)
	}
	if testHookAct != nil {
		testHookAct(dir)
	}
	if !a.inRoots(dir) {
		return -1, "", errOutside
	}
	if testHookChecked != nil {
		testHookChecked(dir) // a racing command's moment (tests)
	}
	fd, err := a.openDir(dir)
	if err != nil {
		return -1, "", err
	}
	if want, ok := a.dirs[dir]; ok {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || uint64(st.Dev) != want.dev || uint64(st.Ino) != want.ino {
			unix.Close(fd)
			return -1, "", fmt.Errorf("%s: %w", dir, errDirChanged)
		}
	}
	return fd, filepath.Base(p), nil
}

// resolvedParentOf opens the directory that holds p as it is now (its
// directories' symlinks resolved, the result inside a root), for a mode
// change that makes a path searchable (chmodDir: the paths it gets are
// the ones the audit reads, not only resolved ones).
func (a *auditor) resolvedParentOf(p string) (int, string, error) {
	if testHookBefore != nil {
		testHookBefore(filepath.Dir(p))
	}
	dir, err := evalSymlinks(filepath.Dir(p))
	if err != nil {
		return -1, "", err
	}
	if !a.inRoots(dir) {
		return -1, "", errOutside
	}
	if testHookChecked != nil {
		testHookChecked(dir) // a racing command's moment (tests)
	}
	fd, err := a.openDir(dir)
	return fd, filepath.Base(p), err
}

// openSelf opens the directory p itself (not following p if it is a
// symlink) for a mode change: a root is opened by its path, anything else
// through parentOf.
func (a *auditor) openSelf(p string) (int, error) {
	for _, r := range a.o.Roots {
		if p == r {
			return unix.Open(r, unix.O_DIRECTORY|dirOpenFlags|unix.O_CLOEXEC, 0)
		}
	}
	pfd, base, err := a.resolvedParentOf(p)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	return unix.Openat(pfd, base, unix.O_DIRECTORY|unix.O_NOFOLLOW|dirOpenFlags|unix.O_CLOEXEC, 0)
}

// chmodDir adds bits to the mode of the directory p of the user's, keeping
// it open to put the mode back (putModesBack): nothing is done for a
// directory that has them, or that the user does not own.
func (a *auditor) chmodDir(p string, bits fs.FileMode) {
	// Most directories have the bits: one lstat tells, where opening p
	// through its resolved parent costs the square of its depth (its
	// parent's symlinks resolved, then one component at a time), and the
	// rootless walk asks this of every directory: a chain 1,900 deep made
	// the audit take 110 s, the cube of the depth (attack pass 58;
	// TestAuditDeepChainRootless). Another sandbox that takes the bits off
	// between this look and the walk's read makes the audit incomplete,
	// as taking them off after the change did.
	var lst unix.Stat_t
	if unix.Lstat(p, &lst) == nil && lst.Mode&unix.S_IFMT == unix.S_IFDIR && int(lst.Uid) == auditorUID() &&
		fs.FileMode(lst.Mode)&bits == bits {
		return
	}
	fd, err := a.openSelf(p)
	if err != nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != auditorUID() ||
		fs.FileMode(st.Mode)&bits == bits {
		unix.Close(fd)
		return
	}
	mode := fs.FileMode(st.Mode) & fs.ModePerm
	if chmodFd(fd, mode|bits) != nil {
		unix.Close(fd)
		return
	}
	a.restore = append(a.restore, modeChange{path: p, mode: mode, fd: fd})
}

// errCannotUnblock: the system has nothing an owner sets that unblockAt
// could take off.
var errCannotUnblock = errors.New("nothing to take off")

// unblocked runs op, a change of the name base of the directory pfd. If
// the change is refused (EPERM, EACCES) where a file's owner can refuse it
// to the owner too (macOS: the flags UF_IMMUTABLE and UF_APPEND, a deny
// entry of an ACL; unblockAt), what blocks it is taken off base and pfd
// and op runs once more. Linux has nothing to take off (chattr +i needs
// CAP_LINUX_IMMUTABLE, which no sandbox has): op runs once.
func unblocked(pfd int, base string, op func() error) error {
	err := op()
	if err == nil || !(errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)) {
		return err
	}
	uerr := unblockAt(pfd, base)
	if errors.Is(uerr, errCannotUnblock) {
		return err
	}
	if err = op(); err != nil && uerr != nil {
		return fmt.Errorf("%w (taking its flags and ACL off: %v)", err, uerr)
	}
	return err
}

// moveOutAt renames the name base of the directory pfd to dest (the
// quarantine), copying and removing it across filesystems.
func moveOutAt(pfd int, base, dest string) error {
	err := unblocked(pfd, base, func() error { return unix.Renameat(pfd, base, unix.AT_FDCWD, dest) })
	if err == nil || !errors.Is(err, unix.EXDEV) {
		return err
	}
	if err := copyAt(pfd, base, dest); err != nil {
		return err
	}
	return removeAt(pfd, base)
}

// removeAt removes the name base of pfd (a file, a symlink, or an empty
// directory).
func removeAt(pfd int, base string) error {
	return unblocked(pfd, base, func() error {
		err := unix.Unlinkat(pfd, base, 0)
		if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
			if err2 := unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR); err2 == nil {
				return nil
			}
		}
		return err
	})
}

// copyAt copies the name base of pfd (not following it) to dest.
func copyAt(pfd int, base, dest string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(pfd, base, buf)
		if err != nil {
			return err
		}
		return os.WriteFile(dest+".symlink", append(buf[:n:n], '\n'), 0o600)
	case unix.S_IFREG:
	default:
		return os.WriteFile(dest+".type", []byte(fs.FileMode(st.Mode).Type().String()+"\n"), 0o600)
	}
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	src := os.NewFile(uintptr(fd), base)
	defer src.Close()
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	err = copyData(out, src, min(st.Size, maxQuarantineCopy))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyData copies the first size bytes of src to out, its holes kept holes
// (SEEK_DATA, SEEK_HOLE; where the filesystem cannot tell, the whole is
// data). A plant in a tree on another filesystem than moat's state is
// copied into the quarantine: a sparse file costs its writer nothing (one
// on a tmpfs, not even memory), and io.Copy wrote each of its zeros: ten
// sparse 64 MiB hooks in a tmpfs tree took 640 MB of the home's disk,
// which the sandbox could not write, at each run (attack pass 58;
// TestQuarantineCopyKeepsHoles).
func copyData(out, src *os.File, size int64) error {
	fd := int(src.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // nothing but a hole up to the end
		}
		hole := size
		if err != nil {
			data = off // no holes known here: the rest is data
		} else if h, herr := unix.Seek(fd, data, unix.SEEK_HOLE); herr == nil {
			hole = min(h, size)
		}
		if data >= size {
			break
		}
		if _, err := io.Copy(io.NewOffsetWriter(out, data), io.NewSectionReader(src, data, hole-data)); err != nil {
			return err
		}
		off = hole
	}
	return out.Truncate(size)
}

// statAt is the name base of pfd as it is now, not followed.
func statAt(pfd int, base string) (fileID, bool) {
	var st unix.Stat_t
	if unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), ctime: st.Ctim.Nano(), mode: fs.FileMode(st.Mode & unix.S_IFMT), size: st.Size}, true
}

// isFile reports whether id (statAt) is the regular file from.
func isFile(id, from fileID) bool {
	return uint32(id.mode) == unix.S_IFREG && id.dev == from.dev && id.ino == from.ino
}

// errChangedWhileRewritten: the file was replaced between the copy of the
// original and the rewrite.
var errChangedWhileRewritten = errors.New("it changed while moat rewrote it")

// replaceAt writes data in place of the name base of pfd (a new file
// renamed over it), which must be the regular file from: its permission
// bits and, for root's audit, its owner are kept.
func replaceAt(pfd int, base string, data []byte, from fileID) error {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	mode := uint32(st.Mode) & 0o777
	tmp := base + ".moat-" + randHex()
	var fd int
	err := unblocked(pfd, base, func() (err error) {
		fd, err = unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		return err
	})
	if err != nil {
		return err
	}
	if auditorUID() == 0 && int(st.Uid) != 0 {
		// Root's audit rewrites a file of another user's (a tree that
		// user shares with the run): it stays that user's. Refused only
		// where root's credentials are not this thread's (moatd's audit
		// runs as the client, whose file it is).
		_ = unix.Fchown(fd, int(st.Uid), int(st.Gid))
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if now, ok := statAt(pfd, base); !ok || !isFile(now, from) {
			err = errChangedWhileRewritten
		}
	}
	if err == nil {
		err = unblocked(pfd, base, func() error { return unix.Renameat(pfd, tmp, pfd, base) })
	}
	if err != nil {
		unix.Unlinkat(pfd, tmp, 0)
	}
	return err
}

// rewriteAt puts data in place of the file at p, the original copied to
// the quarantine (dest; qerr when there is no quarantine), through one
// descriptor of p's directory (parentOf): the file there must be from,
// the file the audit read data from, when it is checked, when it is
// copied and when it is replaced. Each step reopening p's directory by
// path let a swap between them make the audit write, in another
// directory, what it kept of a file it read elsewhere.
func (a *auditor) rewriteAt(p string, from fileID, data []byte) (dest string, qerr error, out rewriteOutcome, err error) {
	pfd, base, err := a.parentOf(p)
	if err != nil {
		return "", nil, notTheRead, err
	}
	defer unix.Close(pfd)
	if now, ok := statAt(pfd, base); !ok || !isFile(now, from) {
		if ok && uint32(now.mode) == unix.S_IFREG && !a.changedAt(p, now) {
			// Only a regular file can be "the older file there": a symlink
			// at the name is what led the read (its own age says nothing of
			// what it leads to).
			return "", nil, olderThere, nil
		}
		return "", nil, notTheRead, nil
	}
	dest, err = a.dest(p)
	var qe *noQuarantineError
	switch {
	case errors.As(err, &qe):
		dest, qerr = "", err
	case err != nil:
		return "", nil, rewroteIt, err
	default:
		if err := copyAt(pfd, base, dest); err != nil {
			return dest, nil, rewroteIt, err
		}
	}
	return dest, qerr, rewroteIt, replaceAt(pfd, base, data, from)
}

// errNotJudged: the name is not the file the audit judged there.
var errNotJudged = errors.New("not the file moat judged there (a directory on its path changed during the audit)")

// atParent runs fn with the descriptor of p's directory (parentOf) and
// p's name in it, which must be the file the audit judged (expectAt), if
// it said which.
func (a *auditor) atParent(p string, fn func(pfd int, base string) error) error {
	pfd, base, err := a.parentOf(p)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if want, ok := a.expect[p]; ok {
		if now, ok := statAt(pfd, base); !ok || now.dev != want.dev || now.ino != want.ino {
			return errNotJudged
		}
	}
	return fn(pfd, base)
}

// moveOut takes p (a file or symlink) out of the tree.
func (a *auditor) moveOut(p string) (string, error) {
	dest, err := a.dest(p)
	if err != nil {
		return "", err
	}
	if err := a.atParent(p, func(pfd int, base string) error { return moveOutAt(pfd, base, dest) }); err != nil {
		return "", err
	}
	return dest, nil
}

// remove removes p.
func (a *auditor) remove(p string) error { return a.atParent(p, removeAt) }

// putModesBack restores what reach changed, deepest first (a directory
// the audit moved out is no longer there).
func (a *auditor) putModesBack() {
	for i := len(a.restore) - 1; i >= 0; i-- {
		c := a.restore[i]
		chmodFd(c.fd, c.mode)
		unix.Close(c.fd)
	}
	a.restore = nil
}
