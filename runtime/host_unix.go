//go:build unix

package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/runtime/live"
)

func writableDir(d string) bool { return unix.Access(d, unix.W_OK) == nil }

// checkStateDir refuses a state directory that is not this user's alone:
// a symlink, another user's directory, or one others can write. moat
// trusts what is in it (the journal whose dead runs it audits, the
// quarantine it moves files into, the compiled seccomp programs it loads),
// and /var/tmp/moat-UID (/tmp/moat-UID before), the state directory of a
// user without a usable home (a service account), is anyone's to make
// first: one
// another user made had the victim's runs audit trees that user chose,
// move the victim's files into that user's quarantine, and load that
// user's seccomp program, which allowed every call (found by an attack
// pass; TestStateDirOfAnotherUser).
func checkStateDir(d string) error {
	if err := checkStateDirItself(d); err != nil {
		return err
	}
	return checkAncestors(d)
}

// checkStateDirItself is checkStateDir without the directories that hold
// d (checkAncestors).
func checkStateDirItself(d string) error {
	var st unix.Stat_t
	if err := unix.Lstat(d, &st); err != nil {
		return fmt.Errorf("state directory %s: %w", d, err)
	}
	why := ""
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		why = "is a symlink"
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		why = "is not a directory"
	case int(st.Uid) != os.Geteuid():
		why = fmt.Sprintf("belongs to uid %d, not to this user (uid %d)", st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		why = fmt.Sprintf("is writable by others (mode %04o)", st.Mode&0o7777)
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("state directory %s %s: moat keeps its journal, quarantine and compiled filters there and trusts them; set XDG_STATE_HOME to a directory of this user's", d, why)
}

// checkAncestors refuses a directory another user could replace: one of
// the directories that hold it (as written, and as its symlinks resolve)
// belongs to another user than root or this one, or others can write it
// (a sticky directory, /tmp, only where the entry on the way is this
// user's or root's). With root's HOME another user's (sudo keeping HOME),
// that user renamed root's state directory away mid-run and put one of
// its own in its place, and root's audit wrote its record through that
// user's symlink into a root-only file (found by an attack pass:
// TestStateDirParentOfAnotherUser).
func checkAncestors(d string) error {
	d = filepath.Clean(d)
	// The path as written first; as its symlinks resolve only where one of
	// its entries is not a plain directory (a symlink, or missing), which
	// the lstats of the first walk show: most paths need no second walk.
	plain, err := ancestorsSafe(d, d)
	if err != nil || plain {
		return err
	}
	if r, rerr := filepath.EvalSymlinks(d); rerr == nil && r != d {
		_, err = ancestorsSafe(r, d)
	}
	return err
}

// ancestorsSafe is checkAncestors for one spelling p of d; plain reports
// that p and every directory above it were directories (no symlink on the
// way). Each directory is looked at once: the entry on the way in a
// directory others can write (childOurs) is the one looked at just before.
func ancestorsSafe(p, d string) (plain bool, err error) {
	me := os.Geteuid()
	overflow := unmappedOwner()
	// Inside a user namespace that does not map root (toolbox, flatpak,
	// unshare -U), root's files show as the overflow uid, and are taken
	// for root's (another user's show so too: in there, moat cannot tell
	// them apart). Another user's directories show as it too, so only the
	// directories a system has (/, /home, /tmp, ..., and those above the
	// user's home) are taken for root's (another user's directory there
	// let that user swap a state directory it held: found by an attack
	// pass, TestStateDirInUserNamespace).
	trusted := func(uid uint32, at string) bool {
		return int(uid) == me || uid == 0 || int(uid) == overflow && systemDir(at)
	}
	var cst unix.Stat_t
	cerr := unix.Lstat(p, &cst)
	plain = cerr == nil && cst.Mode&unix.S_IFMT == unix.S_IFDIR
	for child, dir := p, filepath.Dir(p); ; child, dir = dir, filepath.Dir(dir) {
		var st unix.Stat_t
		serr := unix.Lstat(dir, &st)
		isDir := serr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
		plain = plain && isDir
		if isDir {
			childOurs := cerr != nil || trusted(cst.Uid, child)
			// A group-writable directory of the user's own private group
			// (a home under user private groups) is the user's; one of a
			// group others are in (users) is not.
			othersWrite := st.Mode&0o002 != 0 || st.Mode&0o020 != 0 && !privateGroup(int(st.Gid))
			why := ""
			switch {
			case !trusted(st.Uid, dir):
				why = fmt.Sprintf("directory %s belongs to uid %d", dir, st.Uid)
			case othersWrite && st.Mode&unix.S_ISVTX == 0:
				why = fmt.Sprintf("directory %s is writable by others (mode %04o)", dir, st.Mode&0o7777)
			case othersWrite && !childOurs:
				why = fmt.Sprintf("%s belongs to uid %d (in %s, which anyone can write in)", child, cst.Uid, dir)
			}
			if why != "" {
				return false, fmt.Errorf("%s, on the way to %s: another user could put a directory of its own in its place; set XDG_STATE_HOME (or XDG_RUNTIME_DIR, for moat serve's socket) to a directory of this user's", why, d)
			}
		}
		if dir == "/" || dir == "." {
			return plain, nil
		}
		cst, cerr = st, serr
	}
}

// systemDir reports a directory every system has, or one above the user's
// home (as the user database names it).
func systemDir(d string) bool {
	switch d {
	case "/", "/home", "/tmp", "/var", "/var/tmp", "/run", "/run/user", "/usr", "/opt", "/srv", "/mnt", "/media", "/root", "/Users", "/private", "/private/tmp", "/private/var":
		return true
	}
	if u, err := user.LookupId(strconv.Itoa(os.Geteuid())); err == nil && u.HomeDir != "" {
		h := filepath.Clean(u.HomeDir)
		return d != h && (d == "/" || strings.HasPrefix(h, d+"/"))
	}
	return false
}

// heldSafely reports a directory no other user can replace (checkAncestors).
func heldSafely(d string) bool { return checkAncestors(d) == nil }

// unmappedOwner is the overflow uid when this process runs in a user
// namespace that does not map every uid (root's files show as owned by
// it), -1 otherwise. moat never changes its own user namespace (stage 2 is
// another process): read once.
var unmappedOwner = sync.OnceValue(readUnmappedOwner)

func readUnmappedOwner() int {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil || strings.Join(strings.Fields(string(b)), " ") == "0 0 4294967295" {
		return -1
	}
	u := 65534
	if b, err := os.ReadFile("/proc/sys/kernel/overflowuid"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			u = n
		}
	}
	return u
}

// privateGroup reports a group that is this user's alone: named as the
// user, with no other member listed (user private groups).
func privateGroup(gid int) bool {
	if gid != os.Getegid() {
		return false
	}
	u, err := user.LookupId(strconv.Itoa(os.Geteuid()))
	if err != nil {
		return false
	}
	g, err := user.LookupGroupId(strconv.Itoa(gid))
	if err != nil || g.Name != u.Username {
		return false
	}
	b, err := os.ReadFile("/etc/group")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) == 4 && f[2] == strconv.Itoa(gid) {
			for _, m := range strings.Split(f[3], ",") {
				if m != "" && m != u.Username {
					return false
				}
			}
		}
	}
	return true
}

// prepareStateDir makes the state directory (mode 0700) if it is not
// there, and checks it (checkStateDir) once it is: made first by another
// user, MkdirAll would have taken it as it was. What holds it is checked
// first: MkdirAll would make root's directories in another user's home.
// A directory that was there is not walked again: its ancestors, as
// written and as its symlinks resolve, were checked first, and only this
// user or root can change them. One made here is (the way to it as
// resolved could not be checked before it existed).
func prepareStateDir(d string) error {
	if err := checkAncestors(d); err != nil {
		return err
	}
	if checkStateDirItself(d) == nil {
		return nil
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	return checkStateDir(d)
}

// PrivateDir makes the directory d (mode 0700) if it is not there and
// checks that it is this user's alone, as the state directory is: for
// moat serve's default socket.
func PrivateDir(d string) error { return prepareStateDir(d) }

// SettingsCheck returns a check for settings.Options.Check: a default
// settings file that a live sandbox (or one killed before its audit: see
// AuditDeadRuns) could have written since it started is refused, because a sandboxed command must never widen a later run (when
// that run ends, its audit takes such a file out).
func SettingsCheck(stateDir string) func(file string) error {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	return func(file string) error {
		ws := registeredWriters(stateDir) // the dead ones too, until their audit
		if len(ws) == 0 {
			return nil
		}
		real := file
		if r, err := filepath.EvalSymlinks(file); err == nil {
			real = r
		}
		changed := func(w live.Writer) bool {
			for _, p := range []string{file, filepath.Dir(file), real} {
				var st syscall.Stat_t
				if syscall.Lstat(p, &st) == nil && ctime(&st) >= w.Since.UnixNano() {
					return true
				}
			}
			return false
		}
		for _, w := range ws {
			if (w.Writes(file) || w.Writes(real)) && changed(w) && w.Dead {
				return fmt.Errorf("changed since a moat run that could write it (%s, started %s) was killed before its git audit: moat does not load settings a sandbox could have written; the next moat run or session audits that run's trees first", w.ID, w.Since.Format("15:04:05"))
			}
			if (w.Writes(file) || w.Writes(real)) && changed(w) {
				return fmt.Errorf("changed while a sandboxed command that can write it is running (moat run %s, started %s): moat does not load settings a sandbox could have written; when that run ends its audit takes the file out if it did", w.ID, w.Since.Format("15:04:05"))
			}
		}
		return nil
	}
}

// ownedByMe reports a file of this user's (by its owner).
func ownedByMe(p string) bool {
	var st unix.Stat_t
	return unix.Stat(p, &st) == nil && int(st.Uid) == os.Geteuid()
}

// missing reports a path that is not there (one that cannot be looked at
// is not missing).
func missing(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, fs.ErrNotExist)
}
