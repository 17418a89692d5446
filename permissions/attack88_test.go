package permissions

import "testing"

// TestOwnShellReadsStdinSeenByDenyRules: su, runuser USER, script, sudo
// -s/-i, doas -s, systemd-run --shell, run0 and machinectl shell with no
// command start a shell of their own, which reads its commands from
// standard input: under Bash(su:*) with Bash(rm:*) denied, su <<< 'rm -f
// victim.txt' was allowed and removed the file, as echo ... | su, runuser
// root <<< ... and script -q /dev/null <<< ... did (attack pass 88, as
// root on the host; sudo, doas, systemd-run's shell and machinectl not
// run here).
func TestOwnShellReadsStdinSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(su:*)", "su <<< 'rm -f x'", deny},
		{"Bash(su:*)", "echo 'rm -f x' | su", deny},
		{"Bash(su:*)", "su - <<< 'rm -f x'", deny},
		{"Bash(su:*)", "su -m root <<< 'rm -f x'", deny},
		{"Bash(su:*)", "su -w -c root <<< 'rm -f x'", deny},
		{"Bash(su:*)", "su --whitelist-environment -c <<< 'rm -f x'", deny},
		{"Bash(runuser:*)", "runuser root <<< 'rm -f x'", deny},
		{"Bash(runuser:*)", "runuser -l root <<< 'rm -f x'", deny},
		{"Bash(runuser:*)", "runuser -s /bin/sh root <<< 'rm -f x'", deny},
		{"Bash(script:*)", "script -q /dev/null <<< 'rm -f x'", deny},
		{"Bash(script:*)", "echo 'rm -f x' | script -q", deny},
		{"Bash(script:*)", "script -E never /dev/null <<< 'rm -f x'", deny},
		{"Bash(sudo:*)", "sudo -s <<< 'rm -f x'", deny},
		{"Bash(sudo:*)", "sudo -u root -i <<< 'rm -f x'", deny},
		{"Bash(doas:*)", "doas -s <<< 'rm -f x'", deny},
		{"Bash(systemd-run:*)", "systemd-run -S <<< 'rm -f x'", deny},
		{"Bash(systemd-run:*)", "systemd-run --shell <<< 'rm -f x'", deny},
		{"Bash(run0:*)", "run0 <<< 'rm -f x'", deny},
		{"Bash(machinectl:*)", "machinectl shell root@.host <<< 'rm -f x'", deny},
		// still allowed: no standard input on the line, or a command
		// named (which the shell does not read its input for)
		{"Bash(su:*)", "su root", allow},
		{"Bash(script:*)", "script -q out.log", allow},
		{"Bash(runuser:*)", "runuser -u root ls <<< x", allow},
		{"Bash(sudo:*)", "sudo -s make", allow},
		{"Bash(systemd-run:*)", "systemd-run make <<< x", allow},
		{"Bash(machinectl:*)", "machinectl shell .host /bin/ls <<< x", allow},
	})
}
