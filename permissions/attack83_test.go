package permissions

import "testing"

// TestIPAbbreviationsAndBatchSeenByDenyRules: ip takes any prefix of a
// subcommand's name (ip netns e NS CMD, ip vrf ex VRF CMD run CMD), and
// ip -batch FILE runs the ip commands of FILE, or of standard input for
// "-" (netns exec among them): under Bash(ip:*) with Bash(rm:*) denied,
// each ran rm (attack pass 83, tried as root on the host). flatpak build
// DIRECTORY CMD runs CMD in a build directory's sandbox, as flatpak enter
// does in an application's (not run here: no flatpak).
func TestIPAbbreviationsAndBatchSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(ip:*)", "ip netns e ns rm -f x", deny},
		{"Bash(ip:*)", "ip netns ex ns rm -f x", deny},
		{"Bash(ip:*)", "ip net exe ns rm -f x", deny},
		{"Bash(ip:*)", "ip vrf e blue rm -f x", deny},
		{"Bash(ip:*)", "ip -all netns e rm -f x", deny},
		{"Bash(ip netns:*)", "ip netns e ns rm -f x", deny},
		{"Bash(ip:*)", "ip -b - <<< 'netns exec ns rm -f x'", askV},
		{"Bash(ip:*)", "ip -force -batch - <<< 'netns exec ns rm -f x'", askV},
		{"Bash(ip:*)", "ip --ba job.txt", askV},
		{"Bash(ip:*)", "ip -n ns -b job.txt", askV},
		{"Bash(flatpak:*)", "flatpak build dir rm -f x", deny},
		{"Bash(flatpak:*)", "flatpak build --share=network dir rm -f x", deny},
		// still allowed: the commands they run are not denied, and ip's
		// -brief is not -batch
		{"Bash(ip:*)", "ip netns e ns ls", allow},
		{"Bash(ip:*)", "ip -br addr", allow},
		{"Bash(ip:*)", "ip link set dev eth0 up", allow},
		{"Bash(flatpak:*)", "flatpak build dir make", allow},
	})
}

// TestEnvSignalOptionsAndStartStopDaemonSeenByDenyRules: GNU env's
// --block-signal, --ignore-signal and --default-signal take a signal only
// after '=', and were read as taking the next word, the command's name:
// under Bash(env:*) with Bash(rm:*) denied, env --block-signal rm -f
// victim.txt was allowed by moat check and removed the file. start-stop-
// daemon --start runs the program of --startas or --exec with the words
// after "--": under Bash(start-stop-daemon:*), start-stop-daemon -S -x
// /bin/rm -- -f victim.txt did too (attack pass 83).
func TestEnvSignalOptionsAndStartStopDaemonSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(env:*)", "env --block-signal rm -f x", deny},
		{"Bash(env:*)", "env --ignore-signal rm -f x", deny},
		{"Bash(env:*)", "env --default-signal rm -f x", deny},
		{"Bash(env:*)", "env --block-signal=INT rm -f x", deny},
		{"Bash(env:*)", "env --block rm -f x", deny},
		{"Bash(start-stop-daemon:*)", "start-stop-daemon -S -x /bin/rm -- -f x", deny},
		{"Bash(start-stop-daemon:*)", "start-stop-daemon -Sx/bin/rm -- -f x", deny},
		{"Bash(start-stop-daemon:*)", "start-stop-daemon --start --exec=/bin/rm -- -f x", deny},
		{"Bash(start-stop-daemon:*)", "start-stop-daemon --start --startas /bin/rm --exec /bin/true -- -f x", deny},
		{"Bash(start-stop-daemon:*)", "start-stop-daemon --start --starta /bin/rm -- -f x", deny},
		{"Bash(start-stop-daemon:*)", "start-stop-daemon -S -d / -b -x /usr/bin/rm -- -f x", deny},
		// still allowed: the commands they run are not denied
		{"Bash(env:*)", "env --block-signal make", allow},
		{"Bash(start-stop-daemon:*)", "start-stop-daemon -S -x /usr/bin/make -- all", allow},
		{"Bash(start-stop-daemon:*)", "start-stop-daemon -K -x /usr/sbin/nginx", allow},
	})
}
