package gitguard

import (
	"bytes"
	"path/filepath"
	"strings"
)

// svnFiles are the SQLite files of a Subversion working copy's .svn that
// name its repository: wc.db, and the journal and write-ahead log the
// user's next svn rolls into it.
var svnFiles = []string{"wc.db", "wc.db-journal", "wc.db-wal"}

// maxSvnDB bounds the working copy database the audit reads; a larger one
// made during the run is taken out unread.
const maxSvnDB = 64 << 20

// svnWorkingCopy judges the Subversion working copy whose .svn lies in
// dir. The plan keeps svnFiles read-only where they exist, but one the run
// made was free to name a file:// repository the command made (svn
// relocate, svnadmin setuuid to the working copy's UUID), whose
// start-commit hook the user's next svn commit ran, as root and as the
// user (attack pass 93, TestSvnStateTakenOut). svn runs no program a
// working copy names otherwise: a repository reached over http(s) or svn://
// runs its hooks on the server, and svn+NAME:// runs only the tunnels of
// the user's own configuration. So a file the run made or changed is taken
// out when a file: URL may be in it (any case, in UTF-8 or UTF-16, NUL
// bytes aside), or when it cannot be read: a checkout of an http(s)
// repository made in the sandbox is kept. A .svn symlink made during the
// run is taken out.
func (a *auditor) svnWorkingCopy(dir string) {
	h, e := a.vcsControlDir(dir, ".svn", "a .svn symlink made during the run: svn takes the working copy database it leads to, which names the repository whose hooks a file:// commit runs")
	if e != vcsDir {
		return
	}
	for _, n := range svnFiles {
		p := filepath.Join(h, n)
		id, changed, ok := a.changedInRun(p)
		if !ok {
			continue
		}
		if !changed {
			continue
		}
		if b, _, err := readSmall(p, maxSvnDB); err == nil && !mayNameFileURL(b) {
			continue
		}
		a.judgedAs(p, id)
		if real, ok := a.changedActionable(p); ok {
			a.quarantine(real, "a Subversion working copy database written during the run that may name a file:// repository: the user's next svn commit would run that repository's hooks")
		}
	}
}

// mayNameFileURL reports whether b may hold a file: URL as SQLite stores
// text: "file:" in any case, with NUL bytes dropped (UTF-16 in either
// order holds an ASCII letter beside a NUL).
func mayNameFileURL(b []byte) bool {
	n := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		n = append(n, c)
	}
	return bytes.Contains(n, []byte("file:"))
}

// svnRepository judges a Subversion repository in dir (format, db, hooks
// and locks, as svnadmin create makes it): a commit over file:// runs its
// hooks in the user's svn, with conf/hooks-env's environment. The plan
// keeps hooks/ and conf/ read-only where they exist; a hook or hooks-env
// made or changed during the run (a repository made, or put in place of
// one) is taken out. svnadmin create writes only *.tmpl there.
func (a *auditor) svnRepository(dir string) {
	if fi, err := lstat(filepath.Join(dir, "format")); err != nil || !fi.Mode().IsRegular() {
		return
	}
	var files []string
	if es, err := readDir(filepath.Join(dir, "hooks")); err == nil {
		for _, e := range es {
			if !strings.HasSuffix(e.Name(), ".tmpl") {
				files = append(files, filepath.Join(dir, "hooks", e.Name()))
			}
		}
	}
	files = append(files, filepath.Join(dir, "conf", "hooks-env"))
	for _, p := range files {
		a.reachPath(p)
		id, err := lstatID(p)
		if err != nil {
			continue
		}
		changed := a.changedAt(p, id)
		if fi, err := stat(p); err == nil {
			changed = changed || a.changed(idOf(fi))
		}
		if changed && a.protectedFile(p) {
			changed = id.ctime > a.start
		}
		if !changed {
			continue
		}
		a.judgedAs(p, id)
		if real, ok := a.changedActionable(p); ok {
			a.quarantine(real, "a Subversion repository's hook written during the run: the user's next svn commit over file:// runs it")
		}
	}
}
