package gitguard

import (
	"path/filepath"
	"strings"
)

// sqliteSideSuffixes end the names of the files SQLite keeps beside a
// database: a rollback journal, which the next process that opens the
// database takes for the record of an interrupted transaction ("hot") and
// copies into it, page by page, and a write-ahead log, whose frames it
// reads as part of the database.
var sqliteSideSuffixes = []string{"-journal", "-wal"}

// sqliteSideOf returns the database name a journal or write-ahead log of
// that name belongs to ("" if name is neither).
func sqliteSideOf(name string) string {
	for _, s := range sqliteSideSuffixes {
		if db, ok := strings.CutSuffix(name, s); ok && db != "" {
			return db
		}
	}
	return ""
}

// fossilDBName reports the names of Fossil's databases: a checkout's
// .fslckout or _FOSSIL_, a repository (by custom, NAME.fossil), ~/.fossil
// and ~/.config/fossil.db (the user's configuration, whose editor,
// diff-command and ssh-command fossil runs).
func fossilDBName(name string) bool {
	l := strings.ToLower(name)
	return l == ".fslckout" || l == "_fossil_" || l == "fossil.db" || strings.HasSuffix(l, ".fossil")
}

// sqliteSideFile reports a name the walk flags for sideFiles: a journal or
// write-ahead log of any database (the database's protection is known only
// to the audit).
func sqliteSideFile(name string) bool { return sqliteSideOf(name) != "" }

// sideFile takes out, at p, a journal or write-ahead log made or changed
// during the run beside a database the command could not write, or beside
// one of Fossil's: the user's next fossil (or any program opening the
// database) rolls a hot journal into the database. A journal the command
// built from a copy of a repository it gave a before-commit hook, beside
// the read-only r.fossil, put the hook in r.fossil at the user's next
// fossil commit, which ran it, as root and as the user (attack pass 94,
// TestFossilStateTakenOut's journal row); a checkout's .fslckout is
// rewritten the same way (the repository it names). A database the
// command could write gains nothing from its journal, and is kept.
func (a *auditor) sideFile(p string) {
	db := sqliteSideOf(filepath.Base(p))
	if db == "" {
		return
	}
	dbPath := filepath.Join(filepath.Dir(p), db)
	if !fossilDBName(db) && !a.protectedFile(dbPath) {
		return
	}
	id, changed, ok := a.changedInRun(p)
	if !ok || !changed {
		return
	}
	a.judgedAs(p, id)
	if real, ok := a.changedActionable(p); ok {
		a.quarantine(real, "an SQLite journal or write-ahead log written during the run beside "+db+", a database the command could not write or Fossil's: the next program that opens it (the user's fossil, svn) copies the journal into the database (a Fossil hook, the repository a checkout names)")
	}
}
