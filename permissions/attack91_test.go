package permissions

import "testing"

// TestOwnShellReadsUnseenStdinAsks: a program that starts a shell of its
// own (su, script, unshare, chroot, ssh HOST, ...) reads its commands from
// the standard input the line gives; when the line does not show that
// text (a pipe from any program but echo or printf of plain words, echo
// -e, a descriptor duplicated onto fd 0, sh -c whose stdin is piped), the
// shell's script is unseen and the line asks, as cat f | sh does: under
// Bash(su:*) with Bash(rm:*) denied, cat <<< 'rm -f victim.txt' | su, su
// 3<<< 'rm -f victim.txt' 0<&3, echo -e '\x72m -f victim.txt' | su and
// echo 'rm -f victim.txt' | sh -c su were allowed and removed the file,
// as cat <<< ... | unshare, | script -q /dev/null and | timeout 5 su did
// (attack pass 91, as root on the host).
func TestOwnShellReadsUnseenStdinAsks(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(su:*)", "cat <<< 'rm -f x' | su", askV},
		{"Bash(su:*)", "tr a a <<< 'rm -f x' | su", askV},
		{"Bash(su:*)", "cat v.sh | su", askV},
		{"Bash(su:*)", "su 3<<< 'rm -f x' 0<&3", askV},
		{"Bash(su:*)", "su - <&3 3<<< 'rm -f x'", askV},
		{"Bash(su:*)", "echo -e '\\x72m -f x' | su", askV},
		{"Bash(su:*)", "printf '%s\\n' 'rm -f x' | su", askV},
		{"Bash(su:*)", "cat <<< 'rm -f x' |& su root", askV},
		{"Bash(su:*)", "cat <<< 'rm -f x' | timeout 5 su", askV},
		{"Bash(su:*)", "su < /dev/fd/3 3<<< 'rm -f x'", askV},
		{"Bash(runuser:*)", "cat <<< 'rm -f x' | runuser root", askV},
		{"Bash(sh:*)", "echo 'rm -f x' | sh -c su", askV},
		{"Bash(bash:*)", "bash -c 'su' <<< 'rm -f x'", askV},
		{"Bash(script:*)", "cat <<< 'rm -f x' | script -q /dev/null", askV},
		{"Bash(unshare:*)", "cat <<< 'rm -f x' | unshare", askV},
		{"Bash(chroot:*)", "cat <<< 'rm -f /x' | chroot /", askV},
		{"Bash(ssh:*)", "ssh h 3<<< 'rm -f x' 0<&3", askV},
		{"Bash(sudo:*)", "cat <<< 'rm -f x' | sudo -s", askV},
		{"Bash(machinectl:*)", "cat <<< 'rm -f x' | machinectl shell .host", askV},
		{"Bash(nsenter:*)", "cat <<< 'rm -f x' | nsenter -t 1 -m", askV},
		// still decided as before: the caller's standard input, a command
		// named, or text the line shows
		{"Bash(su:*)", "su root", allow},
		{"Bash(su:*)", "su root | cat", allow},
		{"Bash(runuser:*)", "cat <<< ls | runuser -u root make", allow},
		{"Bash(timeout:*)", "cat v.sh | timeout 5 make", allow},
		{"Bash(script:*)", "script -q out.log", allow},
		{"Bash(su:*)", "printf 'rm -f x' | su", deny},
		{"Bash(su:*)", "su 0<<< 'rm -f x'", deny},
		{"Bash(su:*)", "su <<- EOF\n\trm -f x\n\tEOF", deny},
	})
}

// TestCrontabJobsSeenByDenyRules: crontab - (or no file) installs the
// jobs of its standard input, which crond runs on the host: under
// Bash(busybox:*) with Bash(rm:*) denied, busybox crontab -c DIR - <<<
// '* * * * * rm -f victim.txt' was allowed and busybox crond removed the
// file within the minute (attack pass 91, as root on the host). A table
// on the line is read as at's job is; one the line gives but does not
// show, or one that sets SHELL or gives a job standard input (%), asks.
func TestCrontabJobsSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(busybox:*)", "busybox crontab -c /var/tmp/cron - <<< '* * * * * rm -f x'", deny},
		{"Bash(crontab:*)", "crontab - <<< '* * * * * rm -f x'", deny},
		{"Bash(crontab:*)", "crontab <<< '@reboot rm -f x'", deny},
		{"Bash(crontab:*)", "echo '*/5 1 * * 1-5 rm -f x' | crontab -u root -", deny},
		{"Bash(crontab:*)", "crontab - <<< 'PAGER=x\n0\t0 * * *  rm -f x'", deny},
		{"Bash(crontab:*)", "cat jobs | crontab -", askV},
		{"Bash(crontab:*)", "crontab - <<< 'SHELL=/bin/rm\n* * * * * -f x'", askV},
		{"Bash(crontab:*)", "crontab - <<< '* * * * * sh%rm -f x'", askV},
		// still allowed: a table on disk (as sh FILE), listing, a job
		// that runs nothing denied
		{"Bash(crontab:*)", "crontab jobs", allow},
		{"Bash(crontab:*)", "crontab -l", allow},
		{"Bash(crontab:*)", "crontab - <<< '* * * * * ls'", allow},
	})
}

// TestNewgrpAndSgShellReadStdinSeenByDenyRules: newgrp (which takes no
// command) and sg GROUP with no command start a shell that reads the
// line's standard input: under Bash(newgrp:*) / Bash(sg:*) with
// Bash(rm:*) denied, newgrp root <<< 'rm -f victim.txt' and sg root <<<
// 'rm -f victim.txt' were allowed and removed the file (attack pass 91,
// as root on the host). toolbox and distrobox enter, lxc and incus shell
// and vagrant ssh with no command start a login shell in a container or
// machine as ssh HOST does (not run here: not installed).
func TestNewgrpAndSgShellReadStdinSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(newgrp:*)", "newgrp <<< 'rm -f x'", deny},
		{"Bash(newgrp:*)", "newgrp - root <<< 'rm -f x'", deny},
		{"Bash(newgrp:*)", "cat <<< 'rm -f x' | newgrp root", askV},
		{"Bash(sg:*)", "sg root <<< 'rm -f x'", deny},
		{"Bash(sg:*)", "echo 'rm -f x' | sg root", deny},
		{"Bash(toolbox:*)", "toolbox enter <<< 'rm -f x'", deny},
		{"Bash(distrobox:*)", "distrobox enter box <<< 'rm -f x'", deny},
		{"Bash(lxc:*)", "lxc shell c1 <<< 'rm -f x'", deny},
		{"Bash(incus:*)", "incus shell c1 <<< 'rm -f x'", deny},
		{"Bash(vagrant:*)", "vagrant ssh <<< 'rm -f x'", deny},
		// still allowed: the caller's standard input, or a command named
		{"Bash(newgrp:*)", "newgrp root", allow},
		{"Bash(sg:*)", "sg root", allow},
		{"Bash(distrobox:*)", "cat v.sh | distrobox enter box -- make", allow},
		{"Bash(vagrant:*)", "cat v.sh | vagrant ssh -c make", allow},
	})
}

// TestExAndVimBuildNamesAsk: ex is vim in Ex mode, which runs the Ex
// commands of its standard input, -c and +CMD: under Bash(ex:*) with
// Bash(rm:*) denied, ex -s <<< '!rm -f victim.txt' and ex -c '!rm -f
// victim.txt' -c q were allowed and removed the file, as editor -es <<<
// ... did under Bash(editor:*) where editor is vim (attack pass 91, on
// the host). They ask as vim -es does (pass 88); Debian's vim.basic,
// vim.tiny and the rest are read as vim.
func TestExAndVimBuildNamesAsk(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(ex:*)", "ex -s <<< '!rm -f x'", askV},
		{"Bash(ex:*)", "ex -c '!rm -f x' -c q", askV},
		{"Bash(ex:*)", "ex +'!rm -f x' +q f", askV},
		{"Bash(ex:*)", "echo '!rm -f x' | ex", askV},
		{"Bash(editor:*)", "editor -es <<< '!rm -f x'", askV},
		{"Bash(vim.basic:*)", "vim.basic -c '!rm -f x' -c q", askV},
		{"Bash(vim.tiny:*)", "vim.tiny -es <<< '!rm -f x'", askV},
		// still allowed: vim reading a file from its input, rvim (which
		// runs no shell command)
		{"Bash(vim:*)", "vim - <<< x", allow},
		{"Bash(vim.basic:*)", "vim.basic f.txt", allow},
	})
}

// TestOwnShellStdinFromDupOrExecAsks: 0>&N dup2s N onto fd 0 as 0<&N
// does, and exec 0<... gives every later command of the line that
// standard input: under Bash(su:*) (and Bash(exec:*)) with Bash(rm:*)
// denied, su 3<<< 'rm -f victim.txt' 0>&3 and exec 0<<< 'rm -f
// victim.txt'; su were allowed and removed the file (attack pass 91, as
// root on the host), as bash 3<<< ... <<< ls 0>&3 did in
// bypassPermissions mode, read as bash <<< ls.
func TestOwnShellStdinFromDupOrExecAsks(t *testing.T) {
	rows := []arow{
		{[]string{"deny: Bash(rm:*)", "Bash(su:*)"}, "", "su 3<<< 'rm -f x' 0>&3", askV},
		{[]string{"deny: Bash(rm:*)", "Bash(su:*)"}, "", "su 0>&3 3<<< 'rm -f x'", askV},
		{[]string{"deny: Bash(rm:*)", "Bash(su:*)"}, "", "su 3<<< 'rm -f x' <<< ls 0>&3", askV},
		{[]string{"deny: Bash(rm:*)", "Bash(su:*)", "Bash(exec:*)"}, "", "exec 0<<< 'rm -f x'; su", askV},
		{[]string{"deny: Bash(rm:*)", "Bash(su:*)", "Bash(exec:*)"}, "", "exec 3<<< 'rm -f x' 0>&3; su", askV},
		{[]string{"deny: Bash(rm:*)", "Bash(su:*)", "Bash(exec:*)"}, "", "exec 0</dev/fd/3; su", askV},
		// a shell's here-string replaced by 0>&N: in bypassPermissions
		// mode (no validators) bash 3<<< 'rm -f victim.txt' <<< ls 0>&3
		// was allowed with Bash(rm:*) denied and ran rm
		{[]string{"deny: Bash(rm:*)"}, "bypassPermissions", "bash 3<<< 'rm -f x' <<< ls 0>&3", askV},
		// and under an allow rule: source /dev/stdin 3<<< 'rm -f
		// victim.txt' <<< ls 0>&3 was allowed under Bash(source:*) and
		// ran rm; at's job alike (at not run here)
		{[]string{"deny: Bash(rm:*)", "Bash(source:*)"}, "", "source /dev/stdin 3<<< 'rm -f x' <<< ls 0>&3", askV},
		{[]string{"deny: Bash(rm:*)", "Bash(at:*)"}, "", "at now 3<<< 'rm -f x' <<< ls 0>&3", askV},
		// still allowed: output redirections, text the line shows
		{[]string{"deny: Bash(rm:*)", "Bash(su:*)"}, "", "su 2>&1", allow},
		{[]string{"deny: Bash(rm:*)", "Bash(su:*)"}, "", "su <<< ls", allow},
		{[]string{"deny: Bash(rm:*)", "Bash(su:*)", "Bash(exec:*)"}, "", "exec 2>&1; su", allow},
	}
	runRows(t, testCwd, Options{}, rows)
}

// TestPodmanUnshareSeenByDenyRules: podman unshare and buildah unshare
// run their command (or, with none, $SHELL reading the line's standard
// input) in the user's user namespace on the host's files: as a user,
// podman unshare rm -f victim.txt, buildah unshare rm -f victim.txt and
// podman unshare <<< 'rm -f victim.txt' were allowed under their own rule
// with Bash(rm:*) denied and removed the file (attack pass 91, on the
// host). buildah run and podman machine ssh run theirs in a container or
// a machine, and schroot, proot and lxc-attach with no command start a
// shell there (not run here: not installed or no container).
func TestPodmanUnshareSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(podman:*)", "podman unshare rm -f x", deny},
		{"Bash(podman:*)", "podman unshare --rootless-netns -- rm -f x", deny},
		{"Bash(buildah:*)", "buildah unshare rm -f x", deny},
		{"Bash(podman:*)", "podman unshare <<< 'rm -f x'", deny},
		{"Bash(buildah:*)", "cat <<< 'rm -f x' | buildah unshare", askV},
		{"Bash(buildah:*)", "buildah run -v /a:/b ctr -- rm -f x", deny},
		{"Bash(podman:*)", "podman machine ssh m1 rm -f x", deny},
		{"Bash(podman:*)", "podman machine ssh <<< 'rm -f x'", deny},
		{"Bash(schroot:*)", "schroot -c sid <<< 'rm -f x'", deny},
		{"Bash(proot:*)", "proot -0 <<< 'rm -f x'", deny},
		{"Bash(lxc-attach:*)", "lxc-attach -n c <<< 'rm -f x'", deny},
		{"Bash(distrobox-enter:*)", "distrobox-enter box <<< 'rm -f x'", deny},
		// still allowed: a command that is not denied, the caller's input
		{"Bash(podman:*)", "podman unshare cat /etc/subuid", allow},
		{"Bash(podman:*)", "podman unshare", allow},
		{"Bash(buildah:*)", "buildah run ctr ls", allow},
	})
}

// TestCompoundStdinSeenByOwnShell: a block, subshell, loop, conditional,
// function body or coprocess whose standard input the line gives passes
// it to the commands inside: in bypassPermissions mode (no validators,
// deny rules still checked) with Bash(rm:*) denied, { su; } <<< 'rm -f
// victim.txt', f() { su; }; f <<< ..., echo ... | ( su ) and coproc su
// were allowed and removed the file (attack pass 91, as root on the host).
func TestCompoundStdinSeenByOwnShell(t *testing.T) {
	d := []string{"deny: Bash(rm:*)"}
	const b = "bypassPermissions"
	runRows(t, testCwd, Options{}, []arow{
		{d, b, "{ su; } <<< 'rm -f x'", askV},
		{d, b, "( su ) <<< 'rm -f x'", askV},
		{d, b, "f() { su; }; f <<< 'rm -f x'", askV},
		{d, b, "if true; then su; fi <<< 'rm -f x'", askV},
		{d, b, "while su; do break; done <<< 'rm -f x'", askV},
		{d, b, "echo 'rm -f x' | ( su )", askV},
		{d, b, "echo 'rm -f x' | { true; su; }", askV},
		{d, b, "time { su; } <<< 'rm -f x'", askV},
		{d, b, "coproc su", askV},
		// still allowed: what reads no shell commands, or the caller's input
		{d, b, "{ ls; } <<< x", allow},
		{d, b, "echo x | { cat; }", allow},
		{d, b, "while read l; do echo \"$l\"; done < v.sh", allow},
		{d, b, "{ su; }", allow},
	})
}
