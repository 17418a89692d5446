package gitguard

import (
	"io/fs"
	"path/filepath"
)

// What vcsControlDir found of a version control system's directory.
type vcsEntry int

const (
	vcsNone    vcsEntry = iota // missing, not a directory, or a symlink the run made (taken out)
	vcsDir                     // a directory
	vcsOldLink                 // a symlink the run did not make: the tool follows it
)

// vcsControlDir judges dir/name, the directory a version control system
// keeps its state in (.hg, _darcs, .svn): the tool follows a symlink
// there, so one made during the run chose the repository, and is taken out
// with why.
func (a *auditor) vcsControlDir(dir, name, why string) (string, vcsEntry) {
	h := filepath.Join(dir, name)
	a.reachPath(h)
	fi, err := lstat(h)
	if err != nil {
		return h, vcsNone
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		id := idOf(fi)
		if a.changedAt(h, id) {
			a.judgedAs(h, id)
			if real, ok := a.changedActionable(h); ok {
				a.quarantine(real, why)
				return h, vcsNone
			}
		}
		return h, vcsOldLink
	}
	if !fi.IsDir() {
		return h, vcsNone
	}
	return h, vcsDir
}

// changedInRun reports whether the file at p changed during the run:
// through a symlink, the file it leads to too (written, or renamed there);
// a file that was read-only during the run only when its change time says
// so (it changed through a hard link). ok is false where p is missing.
func (a *auditor) changedInRun(p string) (id fileID, changed, ok bool) {
	a.reachPath(p)
	id, err := lstatID(p)
	if err != nil {
		return id, false, false
	}
	changed = a.changedAt(p, id)
	tid := id
	if fi, err := stat(p); err == nil {
		tid = idOf(fi)
		changed = changed || a.changed(tid)
	}
	if changed && a.protectedFile(p) {
		changed = id.ctime > a.start || tid.ctime > a.start
	}
	return id, changed, true
}
