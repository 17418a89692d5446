package permissions

import "testing"

// Regression tests for attack pass 62 on the decision pipeline. Each row
// failed (was allowed) before the fix named by the test.

// TestAwkArgvNamesOtherFiles: an awk program that stores into ARGV
// reads the files it names after BEGIN, which are not among the operands
// the path checks see ("awk 'BEGIN{ARGV[1]=\"../secret\";ARGC=2}
// {print}'" printed a file outside the working directory, decided allow
// as read-only). gawk's SYMTAB reaches ARGV and ENVIRON by a computed
// name.
func TestAwkArgvNamesOtherFiles(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{nil, "", `awk 'BEGIN{ARGV[1]="../secret";ARGC=2} {print}'`, askV},
		{nil, "", `awk 'BEGIN{ARGV[ARGC++]="/etc/shadow"} {print}' f.txt`, askV},
		{nil, "", `mawk 'BEGIN{split("/etc/shadow", ARGV); ARGC=2} {print}'`, askV},
		{nil, "", `awk 'function f(a){a[1]="/etc/shadow"} BEGIN{f(ARGV);ARGC=2} {print}'`, askV},
		{nil, "", `gawk 'BEGIN{SYMTAB["AR" "GV"][1]="/etc/shadow";ARGC=2} {print}'`, askV},
		{nil, "", `gawk 'BEGIN{print SYMTAB["ENV" "IRON"]["HOME"]}'`, askV},
		{nil, "plan", `awk 'BEGIN{ARGV[1]="../secret";ARGC=2} {print}'`, deny},
		// still read-only
		{nil, "", `awk '{print $1}' f.txt`, allow},
		{nil, "", `awk '{print ARGVX, NR}' f.txt`, allow},
	})
}

// TestAwkArgvUnderAllowRule: under Bash(awk:*) the path checks still
// hold for what awk reads (awk '{print}' /etc/shadow asks), so a program
// that names its files through ARGV asks too.
func TestAwkArgvUnderAllowRule(t *testing.T) {
	a := []string{"Bash(awk:*)"}
	runRows(t, testCwd, Options{}, []arow{
		{a, "", `awk 'BEGIN{ARGV[1]="/etc/shadow";ARGC=2} {print}'`, askV},
		{a, "", `gawk 'BEGIN{SYMTAB["AR" "GV"][1]="/etc/shadow";ARGC=2} {print}'`, askV},
		{a, "", `awk '{print}' /etc/shadow`, askV},
		{a, "", `awk '{print $1}' f.txt`, allow},
	})
}

// TestUnknownFlagKeepsPathChecks: under an allow rule, a command with a
// flag its read-only table does not know (a valid one: grep's obsolete
// -u, diff -D, git diff --output-indicator-new, wc --files0-from, mawk's
// --posix) had no reads recorded, so the path checks that ask for the
// same command without the flag ("grep x ../secret") did not hold.
func TestUnknownFlagKeepsPathChecks(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{[]string{"Bash(grep:*)"}, "", `grep -u "" ../secret`, askV},
		{[]string{"Bash(grep:*)"}, "", `grep -u -f../secret x f.txt`, askV},
		{[]string{"Bash(grep:*)"}, "", `grep -uf/etc/shadow x f.txt`, askV},
		{[]string{"Bash(diff:*)"}, "", `diff -D X f.txt /etc/shadow`, askV},
		{[]string{"Bash(git diff:*)"}, "", `git diff --no-index --output-indicator-new=+ f.txt /etc/shadow`, askV},
		{[]string{"Bash(wc:*)"}, "", `wc --files0-from=/etc/list`, askV},
		{[]string{"Bash(awk:*)"}, "", `awk --posix '{print}' /etc/shadow`, askV},
		// still allowed: the same flags on the working directory's files
		{[]string{"Bash(grep:*)"}, "", `grep -u "" f.txt`, allow},
		{[]string{"Bash(grep:*)"}, "", `grep -u -e '^a.b' f.txt`, allow},
		{[]string{"Bash(diff:*)"}, "", `diff -D X a.c b.c`, allow},
		{[]string{"Bash(git diff:*)"}, "", `git diff --output-indicator-new=+ HEAD~1 -- src/`, allow},
		{[]string{"Bash(awk:*)"}, "", `awk --posix '{print}' f.txt`, allow},
	})
}
