package gitguard

import "testing"

// The template svn writes at its first run sets nothing and is kept; any
// item is not (attack pass 94).
func TestIniHarmless(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"### a comment\n[helpers]\n# diff-cmd = diff\n\n[tunnels]\n; x\n", true},
		{"[helpers]\ndiff-cmd = /x\n", false},
		{"[helpers]\n  diff-cmd = /x\n", false},
		{"[helpers]\rdiff-cmd = /x\r", false},
		{"[tunnels]\nssh = $SVN_SSH /x\n", false},
	} {
		if got := iniHarmless([]byte(c.in)); got != c.want {
			t.Errorf("iniHarmless(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// A journal or write-ahead log names its database; Fossil's are known by
// name.
func TestSqliteSideOf(t *testing.T) {
	for _, c := range []struct {
		name, db string
		fossil   bool
	}{
		{"r.fossil-journal", "r.fossil", true},
		{".fslckout-journal", ".fslckout", true},
		{"_FOSSIL_-wal", "_FOSSIL_", true},
		{".fossil-journal", ".fossil", true},
		{"fossil.db-journal", "fossil.db", true},
		{"wc.db-journal", "wc.db", false},
		{"-journal", "", false},
		{"notes.txt", "", false},
	} {
		db := sqliteSideOf(c.name)
		if db != c.db || db != "" && fossilDBName(db) != c.fossil {
			t.Errorf("sqliteSideOf(%q) = %q (fossil %v), want %q (%v)", c.name, db, fossilDBName(db), c.db, c.fossil)
		}
	}
}
