package permissions

import (
	"slices"
	"testing"
)

// Regression tests for attack pass 78 on the decision pipeline. Each row
// failed (was allowed) before the fix named by the test.

// TestEnvSplitStringAsEnvReadsIt: env's --split-string is taken in any
// abbreviation getopt_long takes, and its string is split by env's own
// rules, not a shell's: under Bash(env:*) with Bash(rm:*) denied,
// env --split 'rm -f victim.txt' was allowed and removed the file in moat
// session (--split and --spl, with the string as the next word, were
// neither read as -S nor made the line ask). env -S'rm\_-f\_victim.txt'
// (\_ separates words to env) asked, and is now denied. A ${NAME} in the
// string, which env expands, makes the command unseen.
func TestEnvSplitStringAsEnvReadsIt(t *testing.T) {
	d := "deny: Bash(rm:*)"
	var rows []arow
	for _, c := range []string{
		"env --s='rm -f victim.txt'",
		"env --split='rm x'",
		"env --spl 'rm x'",
		"env --split-str='rm x'",
		`env -S'rm\_-f\_victim.txt'`,
		`env -S 'rm\_x'`,
		`env -iS'rm\_x'`,
		`env --s='rm\_x'`,
		`env -S '"rm" x'`,
		`env -S 'rm x \c ls'`,
	} {
		rows = append(rows, arow{[]string{d, "Bash(env:*)"}, "", c, deny})
	}
	for _, c := range []string{
		`env -S '${X} x'`,
		`X=rm env -S'${X}\_x'`,
		`env -S '"${X}" x'`,
		`env -S 'r\tm x'`,
	} {
		rows = append(rows, arow{[]string{d, "Bash(env:*)"}, "", c, askV})
	}
	// The words of env -S's string are not what a rule allows: the line
	// asks (validators.ExecOption) unless a deny rule matches them
	for _, c := range []string{
		"env --s='ls -l'",
		"env --split 'ls -l'",
		`env -S'ls\_-l'`,
		`env -S 'ls # rm x'`,
		`env -S 'ls \c rm x'`,
	} {
		rows = append(rows, arow{[]string{d, "Bash(env:*)"}, "", c, askV})
	}
	runRows(t, testCwd, Options{}, rows)
}

// TestEnvSplit: the words of env -S's string, as GNU env makes them.
func TestEnvSplit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{`rm -f x`, []string{"rm", "-f", "x"}, true},
		{`rm\_-f\_x`, []string{"rm", "-f", "x"}, true},
		{`"a\_b" 'c\_d'`, []string{"a b", `c\_d`}, true},
		{`'it\'s' "q\"q"`, []string{"it's", `q"q`}, true},
		{`a #b c`, []string{"a"}, true},
		{`a#b`, []string{"a#b"}, true},
		{`a \c b`, []string{"a"}, true},
		{`\#a`, []string{"#a"}, true},
		{`${X} y`, nil, false},
		{`a\tb`, nil, false},
		{`"open`, nil, false},
	} {
		got, ok := envSplit(c.in)
		if ok != c.ok || ok && !slices.Equal(got, c.want) {
			t.Errorf("envSplit(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestSetarchArchitectureNames: util-linux installs setarch as x86_64,
// i386 (and the other architectures' names), which take setarch's options
// and then the command: under Bash(x86_64:*) with Bash(rm:*) denied,
// x86_64 rm -f victim.txt was allowed and removed the file in moat
// session.
func TestSetarchArchitectureNames(t *testing.T) {
	d := "deny: Bash(rm:*)"
	rows := []arow{
		{[]string{d, "Bash(x86_64:*)"}, "", "x86_64 rm -f victim.txt", deny},
		{[]string{d, "Bash(x86_64:*)"}, "", "x86_64 -R rm x", deny},
		{[]string{d, "Bash(i386:*)"}, "", "i386 --addr-no-randomize rm x", deny},
		{[]string{d, "Bash(aarch64:*)"}, "", "aarch64 rm x", deny},
		{[]string{d, "Bash(x86_64:*)"}, "", "x86_64 -R ls", allow},
	}
	runRows(t, testCwd, Options{}, rows)
}

// TestSuShellSeenByDenyRules: su's and runuser's -s/--shell name the
// program they run, with the words after the user as its arguments:
// under Bash(su:*) with Bash(rm:*) denied, su -s /bin/rm root victim.txt
// was allowed, and removed the file when run as the host runs an allowed
// command (outside moat: su cannot change groups inside the sandbox).
func TestSuShellSeenByDenyRules(t *testing.T) {
	d := "deny: Bash(rm:*)"
	var rows []arow
	for _, c := range [][2]string{
		{"Bash(su:*)", "su -s /bin/rm root victim.txt"},
		{"Bash(su:*)", "su --shell=/bin/rm root victim.txt"},
		{"Bash(su:*)", "su --sh /bin/rm root x"},
		{"Bash(su:*)", "su -ls /bin/rm root x"},
		{"Bash(su:*)", "su -s/bin/rm root x"},
		{"Bash(su:*)", "su - -s /bin/rm root x"},
		{"Bash(runuser:*)", "runuser -s /bin/rm root victim2.txt"},
		{"Bash(runuser:*)", "runuser -u root -s /bin/rm x"},
		// scl enable takes several collections before "--" (not proven
		// end to end: scl is not on the test host)
		{"Bash(scl:*)", "scl enable a b -- rm x"},
	} {
		rows = append(rows, arow{[]string{d, c[0]}, "", c[1], deny})
	}
	rows = append(rows,
		arow{[]string{d, "Bash(su:*)"}, "", "su -s /bin/bash root", askV}, // a shell reading its standard input
		arow{[]string{d, "Bash(su:*)"}, "", "su - root", allow},
	)
	runRows(t, testCwd, Options{}, rows)
}
