package permissions

import "testing"

// Regression tests for attack pass 71 on the decision pipeline. Each row
// failed (was allowed) before the fix named by the test.

// TestLocalePathNotStripped: a locale or time-zone variable whose value
// is a path makes the C library load the file it names: under
// Bash(ls:*), and with no rule at all as a read-only command,
// LANG=C.UTF-8 LANGUAGE=../../../../var/tmp/x ls nonexist was allowed and
// printed ls's messages from a catalogue the agent wrote
// (x/LC_MESSAGES/coreutils.mo) in moat run. Such an assignment is kept, as
// LOCPATH's is, so the line asks.
func TestLocalePathNotStripped(t *testing.T) {
	var rows []arow
	for _, c := range []string{
		"LANG=C.UTF-8 LANGUAGE=../../../../var/tmp/x ls nonexist",
		"LANGUAGE=fr:../../x git status",
		"LC_ALL=/var/tmp/x ls",
		"LC_MESSAGES=/var/tmp/x ls",
		"LANG=/var/tmp/x cat f",
		"TZ=/var/tmp/z ls -l",
		"TZ=:/var/tmp/z ls -l",
		"TZ=../../../var/tmp/z ls -l",
	} {
		rows = append(rows, arow{[]string{"Bash(ls:*)", "Bash(git:*)", "Bash(cat:*)"}, "", c, askV}, arow{nil, "", c, askV})
	}
	for _, c := range []string{
		"LANG=C.UTF-8 LANGUAGE=fr:de ls",
		"LC_ALL=en_US.UTF-8 ls",
		"TZ=Europe/Paris ls -l",
		"TZ=UTC0 ls -l",
	} {
		rows = append(rows, arow{nil, "", c, allow})
	}
	runRows(t, testCwd, Options{}, rows)
}
