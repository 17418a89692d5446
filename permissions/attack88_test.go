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

// TestMoreWrappersAndCommandOptionsSeenByDenyRules: watch --differences
// takes its value only after '=' (watch --differences rm -f victim.txt
// ran rm under Bash(watch:*)), busybox nc -l -p PORT -e rm -f victim.txt
// ran rm on a connection under Bash(busybox:*) (attack pass 88, on the
// host); schroot, fakechroot, daemonize, lckdo, cpulimit, tcpsvd and
// udpsvd run the command after their options, sem (GNU parallel) runs a
// command it builds, socat runs its EXEC: and SYSTEM: addresses,
// systemd-run's Exec* properties are command lines and dbus-run-session
// runs its --dbus-daemon (not run here: not installed, or no systemd).
func TestMoreWrappersAndCommandOptionsSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(watch:*)", "watch --differences rm -f x", deny},
		{"Bash(watch:*)", "watch --differences=permanent rm -f x", deny},
		{"Bash(busybox:*)", "busybox nc -l -p 12345 -e rm -f x", deny},
		{"Bash(nc:*)", "nc -lp12345 -erm", deny},
		{"Bash(nc:*)", "nc -l -p 1 -c 'rm -f x'", deny},
		{"Bash(ncat:*)", "ncat -l 1 --sh-exec 'rm -f x'", deny},
		{"Bash(ncat:*)", "ncat -l 1 --exec='/bin/rm -f x'", deny},
		{"Bash(busybox:*)", "busybox tcpsvd 0 8080 rm -f x", deny},
		{"Bash(tcpsvd:*)", "tcpsvd -vE -c 5 0 8080 rm -f x", deny},
		{"Bash(socat:*)", "socat - EXEC:'rm -f x'", deny},
		{"Bash(socat:*)", "socat TCP-LISTEN:1,fork system:'rm -f x',pty", deny},
		{"Bash(schroot:*)", "schroot -c sid -- rm -f x", deny},
		{"Bash(schroot:*)", "schroot -csid rm -f x", deny},
		{"Bash(schroot:*)", "schroot --chroot=sid -u root -- rm -f x", deny},
		{"Bash(fakechroot:*)", "fakechroot -e debootstrap rm -f x", deny},
		{"Bash(daemonize:*)", "daemonize -a -c / /bin/rm -f x", deny},
		{"Bash(lckdo:*)", "lckdo -W 5 /var/tmp/l rm -f x", deny},
		{"Bash(cpulimit:*)", "cpulimit -l 50 -- rm -f x", deny},
		{"Bash(cpulimit:*)", "cpulimit --limit=50 -f rm -f x", deny},
		{"Bash(dbus-run-session:*)", "dbus-run-session --dbus-daemon=/bin/rm -- true", deny},
		{"Bash(sem:*)", "sem -j2 rm -f x", askV},
		{"Bash(systemd-run:*)", "systemd-run -p 'ExecStartPre=/bin/rm -f x' /bin/true", askV},
		{"Bash(systemd-run:*)", "systemd-run --property='ExecStopPost=/bin/rm -f x' /bin/true", askV},
		// still allowed: no command behind, or not a denied one
		{"Bash(watch:*)", "watch --differences ls", allow},
		{"Bash(nc:*)", "nc -zv example.com 80", allow},
		{"Bash(socat:*)", "socat - TCP:example.com:80", allow},
		{"Bash(systemd-run:*)", "systemd-run -p MemoryMax=1G make", allow},
		{"Bash(cpulimit:*)", "cpulimit -l 50 make", allow},
		{"Bash(lckdo:*)", "lckdo /var/tmp/l make", allow},
	})
}

// TestSSHBundledOptionAndVimCommandsAsk: ssh's -o after options that take
// no value (ssh -vo ProxyCommand=CMD HOST) and vim's options that run
// editor commands (vim -es -c '!rm -f victim.txt' -c q, +CMD, --cmd, -S,
// Ex mode reading standard input) ran rm under Bash(ssh:*) and
// Bash(vim:*) with Bash(rm:*) denied (attack pass 88, on the host, busybox
// vi -c too): they ask, as ssh -o ProxyCommand does.
func TestSSHBundledOptionAndVimCommandsAsk(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(ssh:*)", "ssh -vo ProxyCommand='rm -f x' h", askV},
		{"Bash(ssh:*)", "ssh -4oProxyCommand='rm -f x' h", askV},
		{"Bash(scp:*)", "scp -ro LocalCommand='rm -f x' h:a b", askV},
		{"Bash(vim:*)", "vim -es -c '!rm -f x' -c q", askV},
		{"Bash(vim:*)", "vim -es '+!rm -f x' +q", askV},
		{"Bash(vim:*)", "vim --cmd '!rm -f x'", askV},
		{"Bash(vim:*)", "vim -S x.vim", askV},
		{"Bash(vim:*)", "vim -es <<< '!rm -f x'", askV},
		{"Bash(vi:*)", "vi -c '!rm -f x'", askV},
		{"Bash(busybox:*)", "busybox vi -c '!rm -f x'", askV},
		{"Bash(nice:*)", "nice vim -c '!rm -f x'", askV},
		// still allowed
		{"Bash(ssh:*)", "ssh -v h uptime", allow},
		{"Bash(ssh:*)", "ssh -o ConnectTimeout=5 h uptime", allow},
		{"Bash(vim:*)", "vim +12 f.txt", allow},
		{"Bash(vim:*)", "vim +/foo -R f.txt", allow},
	})
}

// TestGlobCommandNameBehindWrapperAsks: the command a wrapper runs named
// by a glob pattern runs what the shell expands it to: under Bash(nice:*)
// with Bash(rm:*) denied, nice /usr/bin/r? -f victim.txt (/usr/bin/r?
// is /usr/bin/rm on the host) and touch rm; nice r? -f victim.txt were
// allowed and removed the file (attack pass 88). The line's own command
// name asked for this already.
func TestGlobCommandNameBehindWrapperAsks(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(nice:*)", "nice /usr/bin/r? -f x", askV},
		{"Bash(nice:*)", "nice r? -f x", askV},
		{"Bash(timeout:*)", "timeout 5 r* -f x", askV},
		{"Bash(env:*)", "env /bin/r[m] -f x", askV},
		{"Bash(find:*)", "find . -exec /bin/r? -f {} +", askV},
		// still allowed: [ is a command, a pattern as an operand is not
		{"Bash(timeout:*)", "timeout 5 [ -f x ]", allow},
		{"Bash(nice:*)", "nice ls *.go", allow},
	})
}

// TestDefaultShellReadsStdinSeenByDenyRules: chroot DIR, unshare,
// nsenter, fakeroot, fakechroot, firejail and pkexec with no command run
// $SHELL, and ssh HOST with none a remote login shell, each reading the
// line's standard input: under Bash(chroot:*) with Bash(rm:*) denied,
// chroot / <<< 'rm -f victim.txt' was allowed and removed the file, as
// unshare -r <<< ..., fakeroot <<< ... and busybox chroot / <<< ... did
// (attack pass 88, as root on the host; the others not run here).
func TestDefaultShellReadsStdinSeenByDenyRules(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(chroot:*)", "chroot / <<< 'rm -f x'", deny},
		{"Bash(chroot:*)", "chroot --userspec=0:0 / <<< 'rm -f x'", deny},
		{"Bash(busybox:*)", "busybox chroot / <<< 'rm -f x'", deny},
		{"Bash(unshare:*)", "unshare <<< 'rm -f x'", deny},
		{"Bash(unshare:*)", "unshare -r <<< 'rm -f x'", deny},
		{"Bash(nsenter:*)", "nsenter -t 1 -m <<< 'rm -f x'", deny},
		{"Bash(nsenter:*)", "nsenter -a -t 1 <<< 'rm -f x'", deny},
		{"Bash(fakeroot:*)", "echo 'rm -f x' | fakeroot", deny},
		{"Bash(fakechroot:*)", "fakechroot <<< 'rm -f x'", deny},
		{"Bash(firejail:*)", "firejail <<< 'rm -f x'", deny},
		{"Bash(pkexec:*)", "pkexec <<< 'rm -f x'", deny},
		{"Bash(ssh:*)", "ssh localhost <<< 'rm -f x'", deny},
		{"Bash(ssh:*)", "ssh -T -p 22 localhost <<< 'rm -f x'", deny},
		// still allowed: a command named, or no standard input on the line
		{"Bash(chroot:*)", "chroot /", allow},
		{"Bash(unshare:*)", "unshare -r ls <<< x", allow},
		{"Bash(nsenter:*)", "nsenter -t 1 -m ls <<< x", allow},
		{"Bash(ssh:*)", "ssh h ls <<< x", allow},
		{"Bash(ssh:*)", "ssh -N -L 1:h:2 h", allow},
	})
}

// TestGitUploadPackAbbreviationsAsk: git takes any unambiguous prefix of
// a long option: git fetch --upload='rm -f victim.txt; false' ../src ran
// rm under Bash(git:*) with Bash(rm:*) denied (attack pass 88, on the
// host), as --upl= did.
func TestGitUploadPackAbbreviationsAsk(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(git:*)", "git fetch --upload='rm -f x; false' ../src", askV},
		{"Bash(git:*)", "git fetch --upl 'rm -f x; false' ../src", askV},
		{"Bash(git:*)", "git pull --upl='rm -f x' ../src", askV},
		{"Bash(git:*)", "git push --rec='rm -f x' ../src", askV},
		{"Bash(git:*)", "git archive --exe='rm -f x' --remote=../src HEAD", askV},
		// still allowed
		{"Bash(git:*)", "git fetch --update-shallow origin", allow},
		{"Bash(git:*)", "git fetch --prune origin", allow},
	})
}

// TestSortAndManAbbreviationsAsk: sort's --compress-program and man's
// --html and --pager in their getopt_long abbreviations, and man -PPAGER
// attached, run a program as the full spellings do, which ask (attack
// pass 88: sort -S 1 --compress-prog=./z.sh ran z.sh on the host; man
// does not page or format HTML here, so man's were not run).
func TestSortAndManAbbreviationsAsk(t *testing.T) {
	runBesideDeniedRm(t, []ruleCase{
		{"Bash(sort:*)", "sort -S 1 --compress-prog=./z.sh f", askV},
		{"Bash(sort:*)", "sort --co=./z.sh f", askV},
		{"Bash(man:*)", "man --htm='rm -f x' ls", askV},
		{"Bash(man:*)", "man --pag='rm -f x' ls", askV},
		{"Bash(man:*)", "man -Prm ls", askV},
		// still allowed
		{"Bash(sort:*)", "sort --check f", allow},
		{"Bash(man:*)", "man --path ls", allow},
		{"Bash(man:*)", "man 3 printf", allow},
	})
}
