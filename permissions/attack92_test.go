package permissions

import "testing"

// TestSuOptionsAfterUserSeenByDenyRules: su and runuser read their
// options with getopt_long, which permutes: an option after the user is
// still theirs. Under Bash(su:*) (Bash(runuser:*)) with Bash(rm:*)
// denied, su root -s /bin/rm -- -f victim.txt, runuser root -s /bin/rm --
// -f victim.txt, su root -s /usr/bin/env -- rm -f victim.txt and su root
// -g root <<< 'rm -f victim.txt' were allowed and removed the file, as
// root on the host (attack pass 92).
func TestSuOptionsAfterUserSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(su:*)", "su root -s /bin/rm -- -f x", deny},
		{"Bash(su:*)", "su root --shell /bin/rm -- -f x", deny},
		{"Bash(su:*)", "su root --sh=/bin/rm -- -f x", deny},
		{"Bash(su:*)", "su root -ms/bin/rm -- -f x", deny},
		{"Bash(runuser:*)", "runuser root -s /bin/rm -- -f x", deny},
		{"Bash(su:*)", "su root -s /usr/bin/env -- rm -f x", deny},
		{"Bash(su:*)", "su root -g root <<< 'rm -f x'", deny},
		{"Bash(su:*)", "su - root --group root <<< 'rm -f x'", deny},
		{"Bash(su:*)", "cat <<< 'rm -f x' | su root -g root", askV},
		// still decided as before
		{"Bash(su:*)", "su root -g root", allow},
		{"Bash(su:*)", "su root -l", allow},
		{"Bash(su:*)", "su root -m", allow},
	})
}

// TestCttyhackSeenByDenyRules: busybox's cttyhack PROG ARGS runs PROG:
// under Bash(busybox:*) with Bash(rm:*) denied, busybox cttyhack rm -f
// victim.txt was allowed and removed the file, as root on the host
// (attack pass 92).
func TestCttyhackSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(busybox:*)", "busybox cttyhack rm -f x", deny},
		{"Bash(cttyhack:*)", "cttyhack rm -f x", deny},
		{"Bash(busybox:*)", "busybox cttyhack sh -c 'rm -f x'", deny},
		{"Bash(busybox:*)", "busybox cttyhack ls", allow},
	})
}

// TestEdCommandsAsk: ed runs the commands of its standard input, and
// !CMD runs CMD through sh: ed <<< '!rm -f victim.txt' was allowed under
// Bash(ed:*) with Bash(rm:*) denied and removed the file, as root on the
// host (attack pass 92). It asks, as ex does; red refuses shell commands.
func TestEdCommandsAsk(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(ed:*)", "ed <<< '!rm -f x'", askV},
		{"Bash(ed:*)", "ed -s f.txt <<< 'w !rm -f x'", askV},
		{"Bash(ed:*)", "printf '!rm -f x\\n' | ed", askV},
		{"Bash(ed:*)", "/usr/bin/ed f.txt", askV},
		{"Bash(red:*)", "red f.txt <<< 'p'", allow},
	})
}
