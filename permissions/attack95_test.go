package permissions

import "testing"

// TestEmptyProducerIntoOwnShell: the builtins true, false and ":" print
// nothing, so a program that starts a shell of its own reading their pipe
// (true | su, : | ssh HOST, true | sudo -i) has no commands to run: since
// attack pass 91 these asked ("a shell reads its script from standard
// input, which the line does not show") under their own rule with
// Bash(rm:*) denied, where they were allowed before (attack pass 95, a
// false ask). /bin/true --help prints its help: only the builtins'
// names count, and every producer whose text is not known still asks.
func TestEmptyProducerIntoOwnShell(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(su:*)", "true | su", allow},
		{"Bash(su:*)", ": | su root", allow},
		{"Bash(su:*)", "false | su", allow},
		{"Bash(ssh:*)", "true | ssh host", allow},
		{"Bash(ssh:*)", ": | ssh -T host", allow},
		{"Bash(sudo:*)", "true | sudo -i", allow},
		{"Bash(sudo:*)", "true ignored words | sudo -s", allow},
		{"Bash(newgrp:*)", "true | newgrp docker", allow},
		{"Bash(chroot:*)", "true | chroot /", allow},
		// still asking: text the line does not show, or an external true
		{"Bash(su:*)", "/bin/true --help | su", askV},
		{"Bash(su:*)", "cat <<< 'rm -f x' | su", askV},
		{"Bash(su:*)", "yes 'rm -f x' | su", askV},
		{"Bash(ssh:*)", "cat v.sh | ssh host", askV},
		{"Bash(su:*)", "true | cat <<< 'rm -f x' | su", askV},
		// and denied: the shell's text is on the line
		{"Bash(su:*)", "true | su <<< 'rm -f x'", deny},
	})
}

// TestRedefinedProducerAsks: the text a pipe from echo, printf, true,
// false or ":" gives a shell is read as what the builtin prints; a line
// that makes the name something else (a function, an alias, enable) runs
// other text. In bypassPermissions mode (no validators, deny rules still
// checked) with Bash(rm:*) denied, echo() { command printf 'rm -f
// victim.txt\n'; }; echo hi | sh was allowed (read as sh <<< hi) and
// removed the file, as shopt -s expand_aliases, alias echo='printf "rm -f
// victim.txt\n"' and echo hi | sh on three lines did (attack pass 95, as
// root on the host).
func TestRedefinedProducerAsks(t *testing.T) {
	d := []string{"deny: Bash(rm:*)"}
	const b = "bypassPermissions"
	runRows(t, testCwd, Options{}, []arow{
		{d, b, "echo() { command printf 'rm -f x\\n'; }; echo hi | sh", askV},
		{d, b, "function echo { builtin printf 'rm -f x\\n'; }; echo hi | su", askV},
		{d, b, "printf() { builtin echo 'rm -f x'; }; printf 'ls\\n' | bash", askV},
		{d, b, "true() { builtin echo 'rm -f x'; }; true | su", askV},
		{d, b, ":() { builtin echo 'rm -f x'; }; : | su", askV},
		{d, b, "for i in 1 2; do echo hi | sh; echo() { command printf 'rm -f x\\n'; }; done", askV},
		{d, b, "eval 'echo() { command printf \"rm -f x\\n\"; }'; echo hi | sh", askV},
		{d, b, "shopt -s expand_aliases\nalias echo='printf \"rm -f x\\n\"'\necho hi | sh", askV},
		{d, b, "enable -n echo; echo hi | sh", askV},
		// still allowed: a redefinition of another name, or none
		{d, b, "true() { :; }; echo hi | su", allow},
		{d, b, "echo() { :; }; cat v.sh", allow},
		{d, b, "alias ll='ls -l'; echo hi | sh", allow},
		{d, b, "echo hi | sh", allow},
		{d, b, "true | su", allow},
	})
}

// TestLesskeySeenByDenyRules: a lesskey source's #env section sets
// LESSOPEN, a command less runs on each file it opens, on a terminal or
// not: under Bash(less:*) with Bash(rm:*) denied, less
// --lesskey-src=/dev/stdin FILE <<< '#env\nLESSOPEN=|rm -f victim.txt
// %s' was allowed and removed the file, as --lesskey-s= (an abbreviation
// less takes) did, and in bypassPermissions mode LESSKEYIN=/dev/stdin
// and LESS=--lesskey-src=/dev/stdin before less did (attack pass 95, as
// root on the host). less $'+!rm -f victim.txt\n' FILE ran rm on a
// terminal. Paging with other options stays allowed.
func TestLesskeySeenByDenyRules(t *testing.T) {
	const key = "'#env\nLESSOPEN=|rm -f x %s'"
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(less:*)", "less --lesskey-src=/dev/stdin v.sh <<< " + key, askV},
		{"Bash(less:*)", "less --lesskey-s=/dev/stdin v.sh <<< " + key, askV},
		{"Bash(less:*)", "less --lesskey-src /dev/stdin v.sh <<< " + key, askV},
		{"Bash(less:*)", "less --lesskey-file=keys v.sh", askV},
		{"Bash(less:*)", "less -Nk keys v.sh", askV},
		{"Bash(less:*)", "less '+!rm -f x\n' v.sh", askV},
		{"Bash(less:*)", "less '+|rm -f x\n' v.sh", askV},
		{"Bash(less:*)", "less v.sh", allow},
		{"Bash(less:*)", "less -R +G v.sh", allow},
		{"Bash(less:*)", "less -N -S +/func v.sh", allow},
	})
	d := []string{"deny: Bash(rm:*)"}
	const b = "bypassPermissions"
	runRows(t, testCwd, Options{}, []arow{
		{d, b, "LESSKEYIN=/dev/stdin less v.sh <<< " + key, askV},
		{d, b, "LESS=--lesskey-src=/dev/stdin less v.sh <<< " + key, askV},
		{d, b, "export LESSKEYIN=/dev/stdin; less v.sh <<< " + key, askV},
		{d, b, "env LESSKEY_CONTENT=" + key + " less v.sh", askV},
		{d, b, "LESS=-R less v.sh", allow},
		{d, b, "less v.sh", allow},
	})
}

// TestExpandedEchoIntoOwnShellAsks: echo's words are expanded by the
// shell before echo prints them, so a glob, a parameter or ~ among them
// is text the line does not show: in a directory holding a file named
// "x; rm -f victim.txt", echo ls * | su was allowed (and called
// read-only) under Bash(echo:*) and Bash(su:*) with Bash(rm:*) denied,
// read as su <<< 'ls *', and su's shell ran rm; X='x; qm -f victim.txt';
// echo ls ${X/q/r} | su did in bypassPermissions mode (attack pass 95,
// as root on the host).
func TestExpandedEchoIntoOwnShellAsks(t *testing.T) {
	r := []string{"Bash(echo:*)", "Bash(su:*)", "Bash(printf:*)", "deny: Bash(rm:*)"}
	d := []string{"deny: Bash(rm:*)"}
	const b = "bypassPermissions"
	runRows(t, testCwd, Options{}, []arow{
		{r, "", "echo ls * | su", askV},
		{r, "", "echo ls v.s? | su", askV},
		{r, "", "echo ls [v]* | su", askV},
		{d, b, "echo ls * | su", askV},
		{d, b, "X='x; qm -f victim.txt'; echo ls ${X/q/r} | su", askV},
		{d, b, "echo ls \"$X\" | su", askV},
		{d, b, "echo ls ~ | su", askV},
		{d, b, "echo ls $1 | sh", askV},
		// still read: words the line shows
		{r, "", "echo ls v.sh | su", allow},
		{r, "", "echo 'rm -f x' | su", deny},
		{r, "", "echo ls {v.sh,\\;,rm,-f,x} | su", deny},
		{r, "", "printf 'ls *\\n' | su", allow},
		{[]string{"Bash(echo:*)", "Bash(crontab:*)", "deny: Bash(rm:*)"}, "", "echo '*/5 * * * * rm -f x' | crontab -", deny},
		{[]string{"Bash(echo:*)", "Bash(crontab:*)", "deny: Bash(rm:*)"}, "", "echo \"*/5 * * * * ls\" | crontab -", allow},
		{d, b, "echo ls | su", allow},
	})
}

// TestNspawnShellReadsStdinSeenByDenyRules: systemd-nspawn -D DIR with no
// command runs a shell in DIR (the host's files below it), which with
// --pipe reads the line's standard input: under Bash(systemd-nspawn:*)
// with Bash(rm:*) denied, systemd-nspawn -D DIR --pipe <<< 'rm -f
// /victim.txt' was allowed and removed DIR/victim.txt (attack pass 95, as
// root on the host).
func TestNspawnShellReadsStdinSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(systemd-nspawn:*)", "systemd-nspawn -D /var/tmp/ns --pipe <<< 'rm -f /x'", deny},
		{"Bash(systemd-nspawn:*)", "systemd-nspawn -q --register=no -D /var/tmp/ns -P <<< 'rm -f /x'", deny},
		{"Bash(systemd-nspawn:*)", "cat v.sh | systemd-nspawn -D /var/tmp/ns --console=pipe", askV},
		{"Bash(systemd-nspawn:*)", "systemd-nspawn --register no --directory /var/tmp/ns --pipe <<< 'rm -f /x'", deny},
		{"Bash(systemd-nspawn:*)", "systemd-nspawn -qPD/var/tmp/ns <<< 'rm -f /x'", deny},
		{"Bash(systemd-nspawn:*)", "systemd-nspawn -D /var/tmp/ns --pipe rm -f x", deny},
		{"Bash(systemd-nspawn:*)", "systemd-nspawn -D /var/tmp/ns", allow},
		{"Bash(systemd-nspawn:*)", "cat v.sh | systemd-nspawn -D /var/tmp/ns --pipe ls", allow},
	})
}

// TestEchoOptionLettersRead: bash's echo takes any word of the letters n,
// e and E after '-' as its options, so echo -Ee rm -f victim.txt prints
// "rm -f victim.txt": read as the text "-Ee rm -f victim.txt", echo -Ee
// rm -f victim.txt | su was allowed under Bash(echo:*) and Bash(su:*)
// with Bash(rm:*) denied and su's shell removed the file (attack pass
// 95, as root on the host).
func TestEchoOptionLettersRead(t *testing.T) {
	r := []string{"Bash(echo:*)", "Bash(su:*)", "deny: Bash(rm:*)"}
	d := []string{"deny: Bash(rm:*)"}
	const b = "bypassPermissions"
	runRows(t, testCwd, Options{}, []arow{
		{r, "", "echo -Ee rm -f x | su", deny},
		{r, "", "echo -nn rm -f x | su", deny},
		{r, "", "echo -En rm -f x | su", deny},
		{r, "", "echo -n -eE rm -f x | su", deny},
		{d, b, "echo -EE rm -f x | sh", deny},
		// still read as before
		{r, "", "echo -n rm -f x | su", deny},
		{r, "", "echo -nx ls | su", allow},
		{r, "", "echo - ls | su", allow},
	})
}

// TestExpandingHeredocIntoShellAsks: a here-document whose delimiter is
// not quoted expands $X, $(...) and $((...)) before the shell reading it
// parses the text, so an expansion there can add commands: in
// bypassPermissions mode with Bash(rm:*) denied, X='x; qm -f
// victim.txt'; su <<EOF / ls ${X/q/r} / EOF and sh <<EOF / ls $(printf
// 'x; rm -f victim.txt') / EOF were read as ls and ran rm (attack pass
// 95, as root on the host).
func TestExpandingHeredocIntoShellAsks(t *testing.T) {
	d := []string{"deny: Bash(rm:*)"}
	const b = "bypassPermissions"
	runRows(t, testCwd, Options{}, []arow{
		{d, b, "X='x; qm -f victim.txt'; su <<EOF\nls ${X/q/r}\nEOF", askV},
		{d, b, "sh <<EOF\nls $(printf 'x; rm -f x')\nEOF", askV},
		{d, b, "su <<EOF\nls $1\nEOF", askV},
		{d, b, "bash <<EOF\nls $((1))\nEOF", askV},
		// still read: a quoted delimiter, a body without expansions
		{d, b, "su <<'EOF'\nls ${X%q}\nEOF", allow},
		{d, b, "bash <<'EOF'\nls ${X/q/r}\nEOF", allow},
		{d, b, "su <<EOF\nls *.go\nEOF", allow},
		{d, b, "su <<EOF\nrm -f x\nEOF", deny},
		{d, b, "cat <<EOF\n$X\nEOF", allow},
	})
}
