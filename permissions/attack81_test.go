package permissions

import (
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// TestDaemontoolsRunnersSeenByDenyRules: daemontools' and s6's programs
// that run the command after their options, and ip's netns and vrf exec,
// hid it from deny rules: under Bash(softlimit:*) with Bash(rm:*) denied,
// softlimit -d 300000000 rm -f victim.txt was allowed and removed the file
// (attack pass 81; every deny row failed before).
func TestDaemontoolsRunnersSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(softlimit:*)", "softlimit -d 300000000 rm -f x", deny},
		{"Bash(softlimit:*)", "softlimit -m300000000 -t 5 rm -f x", deny},
		{"Bash(setuidgid:*)", "setuidgid u rm -f x", deny},
		{"Bash(envuidgid:*)", "envuidgid u rm -f x", deny},
		{"Bash(setlock:*)", "setlock -n lock rm -f x", deny},
		{"Bash(setlock:*)", "setlock lock rm -f x", deny},
		{"Bash(pgrphack:*)", "pgrphack rm -f x", deny},
		{"Bash(fghack:*)", "fghack rm -f x", deny},
		{"Bash(s6-setuidgid:*)", "s6-setuidgid u rm -f x", deny},
		{"Bash(s6-softlimit:*)", "s6-softlimit -d 1000 rm -f x", deny},
		{"Bash(s6-applyuidgid:*)", "s6-applyuidgid -u 1000 -g 1000 rm -f x", deny},
		{"Bash(s6-envdir:*)", "s6-envdir env rm -f x", deny},
		{"Bash(s6-setlock:*)", "s6-setlock lock rm -f x", deny},
		{"Bash(s6-setsid:*)", "s6-setsid rm -f x", deny},
		{"Bash(ip netns:*)", "ip netns exec ns rm -f x", deny},
		{"Bash(ip:*)", "ip -n ns netns exec ns rm -f x", deny},
		{"Bash(ip:*)", "ip -all netns exec rm -f x", deny},
		{"Bash(ip:*)", "ip vrf exec blue rm -f x", deny},
		// still allowed: the commands they run are not denied
		{"Bash(softlimit:*)", "softlimit -d 300000000 make", allow},
		{"Bash(setlock:*)", "setlock -n lock make", allow},
		{"Bash(ip:*)", "ip addr show", allow},
		{"Bash(ip netns:*)", "ip netns exec ns ls", allow},
	})
}

// TestRunconAndFlatpakSeenByDenyRules: runcon's command (after a context,
// or after -t/-u/-r/-l and no context) and flatpak run --command's (with
// the arguments after the application), and flatpak enter's, were not read
// by deny rules: under Bash(runcon:*) or Bash(flatpak run:*) with
// Bash(rm:*) denied, each ran rm (attack pass 81 left them).
func TestRunconAndFlatpakSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(runcon:*)", "runcon unconfined_u:unconfined_r:unconfined_t:s0 rm -f x", deny},
		{"Bash(runcon:*)", "runcon -t unconfined_t rm -f x", deny},
		{"Bash(runcon:*)", "runcon --type=unconfined_t -c rm -f x", deny},
		{"Bash(runcon:*)", "runcon -u u -r r -t t -l s0 rm -f x", deny},
		{"Bash(flatpak run:*)", "flatpak run --command=rm org.example.App -f x", deny},
		{"Bash(flatpak run:*)", "flatpak run --command rm org.example.App -f x", deny},
		{"Bash(flatpak:*)", "flatpak --user run --filesystem=home --command=rm org.example.App -f x", deny},
		{"Bash(flatpak:*)", "flatpak run --branch stable --command=sh org.example.App -c 'rm -f x'", deny},
		{"Bash(flatpak enter:*)", "flatpak enter 1234 rm -f x", deny},
		{"Bash(flatpak:*)", "flatpak enter org.example.App rm -f x", deny},
		// still allowed: the commands they run are not denied
		{"Bash(runcon:*)", "runcon -t t make", allow},
		{"Bash(flatpak run:*)", "flatpak run --command=make org.example.App", allow},
		{"Bash(flatpak run:*)", "flatpak run org.example.App rm", allow}, // the application's own command, with an argument
	})
}

// ruleCase is a command, the verdict it gets, and the one rule beside
// Bash(rm:*) denied that it is judged under.
type ruleCase struct {
	rule, cmd string
	want      policy.Verdict
}

// runBesideDeniedRm judges each case under its rule with Bash(rm:*) denied.
func runBesideDeniedRm(t *testing.T, cases []ruleCase) {
	t.Helper()
	rows := make([]arow, 0, len(cases))
	for _, c := range cases {
		rows = append(rows, arow{[]string{"deny: Bash(rm:*)", c.rule}, "", c.cmd, c.want})
	}
	runRows(t, testCwd, Options{}, rows)
}
