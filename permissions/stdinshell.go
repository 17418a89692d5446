package permissions

import (
	"slices"
	"strings"
)

// Programs that start a shell of their own when the line names no command
// for them: su [USER], runuser USER, script [FILE], sudo -s/-i, doas -s,
// systemd-run --shell, machinectl shell [HOST], chroot DIR, unshare,
// nsenter, fakeroot, fakechroot, firejail, pkexec, systemd-nspawn, ssh HOST (a remote
// login shell), newgrp, sg GROUP, toolbox and distrobox enter, lxc and
// incus shell, lxc-attach, vagrant ssh, podman and buildah unshare,
// schroot, proot. That shell reads its
// commands from standard input, which a here-string or a pipe on the line
// gives: under Bash(su:*) with Bash(rm:*) denied, su <<< 'rm -f
// victim.txt' and echo 'rm -f victim.txt' | su were allowed and removed
// the file, as script -q /dev/null <<< 'rm -f victim.txt' did under
// Bash(script:*) (attack pass 88, as root on the host). The shell is read
// as sh with the same standard input, so what the line gives it is
// looked at.

// optSpec is a getopt_long option table: the short letters that take a
// value, and the long options that do (the rest take none).
type optSpec struct {
	shortValue string
	longValue  []string
}

// givenOpts scans argv as getopt_long would (options anywhere before
// "--", a short bundle's value letter taking the rest of the word or the
// next word, a long option as any prefix of its name) and reports which
// of the wanted options, short letters or long names, are given. Reading
// a value where getopt would too matters: su -w -c <<< CMD gives -w the
// value "-c", and su then reads CMD from its standard input.
func givenOpts(argv []string, spec optSpec, short string, long []string) bool {
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		if w == "--" {
			return false
		}
		if len(w) < 2 || w[0] != '-' {
			continue
		}
		if strings.HasPrefix(w, "--") {
			opt, _, eq := strings.Cut(w, "=")
			if len(opt) < 3 {
				continue
			}
			if slices.ContainsFunc(long, func(l string) bool { return strings.HasPrefix(l, opt) }) {
				return true
			}
			if !eq && slices.ContainsFunc(spec.longValue, func(l string) bool { return strings.HasPrefix(l, opt) }) {
				i++
			}
			continue
		}
		found := false
		i, _ = shortOptions(argv, i, spec.shortValue, func(c byte, _ string) bool {
			found = strings.IndexByte(short, c) >= 0
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

var (
	suOpts      = optSpec{"cgGsw", []string{"--command", "--session-command", "--group", "--supp-group", "--shell", "--whitelist-environment"}}
	runuserOpts = optSpec{"cgGswu", []string{"--command", "--session-command", "--group", "--supp-group", "--shell", "--whitelist-environment", "--user"}}
	scriptOpts  = optSpec{"cEIOBTmo", []string{"--command", "--echo", "--log-in", "--log-out", "--log-io", "--log-timing", "--logging-format", "--output-limit"}}
	sudoOpts    = optSpec{"ugCDhprtTUc", []string{"--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role", "--type", "--command-timeout", "--other-user", "--login-class", "--chroot"}}
)

// ownShell looks at the shell a program starts with no command of the
// line's, as sh reading the line's standard input. Without one on the
// line (no here-string, pipe or redirection) the shell reads what moat
// run's caller gives, which is not the line's to choose: script -q
// out.log, su root are decided as before. A standard input the line
// gives but whose text it does not show (cat f | su, tr a b <<< ... |
// su, echo -e '\x72m ...' | su, su 3<<< ... 0<&3) is a script unseen,
// as for sh: under Bash(su:*) with Bash(rm:*) denied, cat <<< 'rm -f
// victim.txt' | su was allowed and removed the file (attack pass 91).
func (x *extraction) ownShell(depth int, stdin string, haveStdin bool, budget *int) {
	if !haveStdin && !x.lineStdin {
		return
	}
	x.look([]string{"sh"}, depth, stdin, haveStdin, budget)
}

// stdinShell adds the readings of the programs above.
func (x *extraction) stdinShell(argv []string, depth int, stdin string, haveStdin bool, budget *int) {
	name := argv[0]
	switch name {
	case "script":
		// script -c CMD runs CMD; without it, $SHELL
		if !givenOpts(argv, scriptOpts, "c", []string{"--command"}) {
			x.ownShell(depth, stdin, haveStdin, budget)
		}
	case "sudo", "doas":
		// sudo -s / -i and doas -s with no command run the user's shell
		// (sudo -s CMD runs CMD with it: read elsewhere)
		spec := sudoOpts
		long := []string{"--shell", "--login"}
		if name == "doas" {
			spec, long = optSpec{"uCa", nil}, nil
		}
		if !givenOpts(argv, spec, "si", long) && (name == "doas" || !givenOpts(argv, spec, "i", long)) {
			return
		}
		for _, rest := range x.rests(argv, wrappers.get()[name]) {
			if len(rest) > 0 {
				return
			}
		}
		x.ownShell(depth, stdin, haveStdin, budget)
	case "systemd-run", "run0":
		// systemd-run --shell (-S) runs the user's shell in a unit; run0
		// with no command runs one too
		shell := name == "run0" || givenOpts(argv, optSpec{"upEMHG", []string{"--unit", "--property", "--description", "--slice", "--setenv", "--machine", "--host"}}, "S", []string{"--shell"})
		if !shell {
			return
		}
		for _, rest := range x.rests(argv, wrappers.get()[name]) {
			if len(rest) > 0 {
				return
			}
		}
		x.ownShell(depth, stdin, haveStdin, budget)
	case "chroot", "unshare", "fakeroot", "fakechroot", "firejail", "pkexec", "schroot", "proot":
		// with no command these run $SHELL (chroot DIR: $SHELL -i; pkexec:
		// root's shell): chroot / <<< 'rm -f victim.txt', unshare <<<
		// ... and fakeroot <<< ... removed the file on the host. Any
		// reading with no command counts (an unknown option may take
		// the next word)
		rests := x.rests(argv, wrappers.get()[name])
		if len(rests) == 0 || slices.ContainsFunc(rests, func(r []string) bool { return len(r) == 0 }) {
			x.ownShell(depth, stdin, haveStdin, budget)
		}
	case "systemd-nspawn":
		// with no command it runs a shell in the directory or image,
		// which with --pipe (--console=pipe, or on a terminal) reads
		// the line's standard input: under Bash(systemd-nspawn:*) with
		// Bash(rm:*) denied, systemd-nspawn -D DIR --pipe <<< 'rm -f
		// /victim.txt' was allowed and removed DIR/victim.txt on the
		// host (attack pass 95)
		readings := 64
		if nspawnNoCommand(argv, 1, &readings) {
			x.ownShell(depth, stdin, haveStdin, budget)
		}
	case "nsenter":
		// nsenter's namespace options take a file only after '=' or
		// attached; -t, -S, -G (and their long names) take a value
		if !nsenterCommand(argv) {
			x.ownShell(depth, stdin, haveStdin, budget)
		}
	case "newgrp":
		// newgrp [-] [GROUP] takes no command: it always starts a shell,
		// and newgrp root <<< 'rm -f victim.txt' removed the file on the
		// host (attack pass 91; sg GROUP with no command too, read in
		// look)
		x.ownShell(depth, stdin, haveStdin, budget)
	case "podman", "buildah":
		x.podmanHost(argv, depth, stdin, haveStdin, budget)
	case "distrobox-enter", "lxc-attach":
		// distrobox enter's own name, and lxc-attach, with no command
		// after "--": the user's shell in the container
		if !slices.Contains(argv, "--") && !slices.ContainsFunc(argv, func(w string) bool { return w == "-e" || strings.HasPrefix(w, "--exec") }) {
			x.ownShell(depth, stdin, haveStdin, budget)
		}
	case "toolbox", "distrobox", "lxc", "incus", "vagrant":
		// toolbox enter, distrobox enter, lxc shell, incus shell and
		// vagrant ssh with no command start a login shell in the
		// container or machine, as ssh HOST does (not run here: none is
		// installed). Any of the words may be the subcommand: more
		// readings, never fewer.
		sub := map[string]string{"toolbox": "enter", "distrobox": "enter", "lxc": "shell", "incus": "shell", "vagrant": "ssh"}[name]
		command := slices.ContainsFunc(argv[1:], func(w string) bool {
			return w == "--" || w == "-c" || w == "-e" || strings.HasPrefix(w, "--command") || strings.HasPrefix(w, "--exec")
		})
		if slices.Contains(argv[1:], sub) && !command {
			x.ownShell(depth, stdin, haveStdin, budget)
		}
	case "machinectl":
		// machinectl shell [[USER@]HOST] with no command: a login shell
		if i := slices.Index(argv, "shell"); i > 0 {
			n := 0
			for _, w := range argv[i+1:] {
				if !strings.HasPrefix(w, "-") {
					n++
				}
			}
			if n <= 1 {
				x.ownShell(depth, stdin, haveStdin, budget)
			}
		}
	}
}

// suNoCommand reports whether su or runuser starts the user's shell with
// no command of the line's (no -c; runuser -u USER runs only a command).
func suNoCommand(argv []string) bool {
	if argv[0] == "runuser" {
		return !givenOpts(argv, runuserOpts, "cu", []string{"--command", "--session-command", "--user"})
	}
	return !givenOpts(argv, suOpts, "c", []string{"--command", "--session-command"})
}

// nsenterCommand reports whether nsenter's words name a command: a word
// that is not an option nor an option's value, or any word after "--".
func nsenterCommand(argv []string) bool {
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		switch {
		case w == "--":
			return i+1 < len(argv)
		case len(w) < 2 || w[0] != '-':
			return true
		case w == "-t" || w == "-S" || w == "-G" || w == "--target" || w == "--setuid" || w == "--setgid" || w == "--env-file":
			i++
		}
	}
	return false
}

// podmanHost reads what podman and buildah run outside a container's
// image: podman unshare and buildah unshare run CMD (or, with none,
// $SHELL reading the line's standard input) in the user's user namespace
// on the host's files; as a user, podman unshare rm -f victim.txt,
// buildah unshare rm -f victim.txt and podman unshare <<< 'rm -f
// victim.txt' were allowed under their own rule with Bash(rm:*) denied
// and removed the file (attack pass 91). buildah run CONTAINER CMD and
// podman machine ssh [NAME] [CMD] run CMD in a container or the
// machine, as docker exec does (not run here): their options are not
// all known, so each word that is not an option is read as the
// container or machine in turn, more readings, never fewer.
func (x *extraction) podmanHost(argv []string, depth int, stdin string, haveStdin bool, budget *int) {
	operand := func(w string) bool { return !strings.HasPrefix(w, "-") }
	if i := slices.Index(argv, "unshare"); i > 0 {
		rest := argv[i+1:]
		for len(rest) > 0 && !operand(rest[0]) && rest[0] != "--" {
			rest = rest[1:]
		}
		if len(rest) > 0 && rest[0] == "--" {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			x.ownShell(depth, stdin, haveStdin, budget)
		} else {
			x.look(rest, depth, stdin, haveStdin, budget)
		}
		return
	}
	from, ssh := -1, false
	if i := slices.Index(argv, "run"); argv[0] == "buildah" && i > 0 {
		from = i + 1
	}
	if i := slices.Index(argv, "machine"); argv[0] == "podman" && i > 0 && i+1 < len(argv) && argv[i+1] == "ssh" {
		from, ssh = i+2, true
	}
	if from < 0 {
		return
	}
	named := false
	for j := from; j < len(argv); j++ {
		if !operand(argv[j]) {
			continue
		}
		named = true
		if ssh {
			x.look(argv[j:], depth, stdin, haveStdin, budget)
		}
		rest := argv[j+1:]
		if len(rest) > 0 && rest[0] == "--" {
			rest = rest[1:]
		}
		if len(rest) > 0 {
			x.look(rest, depth, stdin, haveStdin, budget)
		}
	}
	if ssh && !named {
		x.ownShell(depth, stdin, haveStdin, budget)
	}
}

// nspawnPlain are systemd-nspawn's long options that take no value (a
// value of an optional one is only ever after '='); any other long option
// without '=' is read both ways, as taking the next word and not.
var nspawnPlain = lazy[map[string]bool]{make: func() map[string]bool {
	return set("--ephemeral", "--read-only", "--volatile", "--boot", "--keep-unit", "--private-network",
		"--network-veth", "--private-users", "--private-users-chown", "--as-pid2", "--pipe", "--quiet",
		"--help", "--version")
}}

// nspawnNoCommand reports whether some reading of systemd-nspawn's words
// from argv[i] on names no command (the container's shell then runs).
// Its short options that take a value are -D, -i, -M, -u, -E, -p, -S, -Z
// and -L; a reading left out for the budget counts as none (more asks).
func nspawnNoCommand(argv []string, i int, budget *int) bool {
	if *budget--; *budget < 0 {
		return true
	}
	for ; i < len(argv); i++ {
		w := argv[i]
		switch {
		case w == "--":
			return i+1 >= len(argv)
		case len(w) < 2 || w[0] != '-':
			return false
		case strings.HasPrefix(w, "--"):
			if strings.Contains(w, "=") || nspawnPlain.get()[w] {
				continue
			}
			if nspawnNoCommand(argv, i+2, budget) {
				return true
			}
		default:
			if k := strings.IndexAny(w[1:], "DiMuEpSZL"); k >= 0 && k+2 == len(w) {
				i++ // the value is the next word (attached otherwise)
			}
		}
	}
	return true
}
