package permissions

import (
	"slices"
	"strings"
)

// Programs that run a command found otherwise than after their options or
// a subcommand (attack pass 71): a shell string after a subcommand (npm
// explore PKG -- CMD, pueue add CMD, sops exec-env FILE CMD), a flag that
// turns the command's words into a shell string (entr -s, env-cmd
// --use-shell), a marker before the program (gdb --args), a program
// named with a version (corepack pnpm@9 exec), a program after an
// architecture (setarch ARCH [options] CMD), and the tools whose own
// options name a program or whose arguments are spliced into the
// commands of their configuration (just -c/--shell, tox and nox after
// "--"). Under Bash(npm:*) with Bash(rm:*) denied, npm explore foo -- rm
// -f victim.txt was allowed and removed the file. Each adds readings:
// what the program looked through before is still looked at after.

// shellSubs are the subcommands whose operands, after the positionals,
// are joined into one shell command; npm takes any unambiguous
// abbreviation of explore (expl is also explain's).
var shellSubs = lazy[map[string]int]{make: func() map[string]int {
	return map[string]int{
		"npm explore": 1, "npm explor": 1, "npm explo": 1,
		"pueue add": 0, "sops exec-env": 1, "sops exec-file": 1, "scl enable": 1,
	}
}}

// setarchOpts are setarch's options, which follow the architecture.
var setarchOpts = lazy[wrapperSpec]{make: func() wrapperSpec {
	return wrapperSpec{plainFlags: set("-R", "--addr-no-randomize", "-F", "--fdpic-funcptrs", "-Z", "--mmap-page-zero",
		"-L", "--addr-compat-layout", "-X", "--read-implies-exec", "-B", "--32bit", "-I", "--short-inode",
		"-S", "--whole-seconds", "-T", "--sticky-timeouts", "-3", "--3gb", "--4gb", "--uname-2.6", "-v", "--verbose")}
}}

// moreCommands adds the readings of the programs above; it never stops
// the others.
func (x *extraction) moreCommands(argv []string, depth int, stdin string, haveStdin bool, budget *int) {
	name := argv[0]
	for i := 1; i < len(argv); i++ {
		n, ok := shellSubs.get()[name+" "+argv[i]]
		if !ok {
			continue
		}
		for _, rest := range x.rests(argv[i:], wrapperSpec{positionals: n}) {
			if len(rest) > 0 && rest[0] == "--" {
				rest = rest[1:]
			}
			x.nestedSource(strings.Join(rest, " "), depth+1)
		}
	}
	x.stdinShell(argv, depth, stdin, haveStdin, budget)
	x.optionCommands(argv, depth, stdin, haveStdin, budget)
	switch name {
	case "entr":
		// entr -s CMD runs CMD with $SHELL -c; its options take no value
		for _, w := range argv[1:] {
			if len(w) < 2 || w[0] != '-' {
				if slices.ContainsFunc(argv[1:], func(o string) bool {
					return len(o) > 1 && o[0] == '-' && o[1] != '-' && strings.ContainsRune(o, 's')
				}) {
					x.nestedSource(w, depth+1)
				}
				break
			}
		}
	case "env-cmd":
		if slices.Contains(argv, "--use-shell") {
			for _, rest := range x.rests(argv, wrappers.get()["env-cmd"]) {
				x.nestedSource(strings.Join(rest, " "), depth+1)
			}
		}
	case "gdb", "lldb", "cgdb":
		// gdb --args PROG ARGS, lldb -- PROG ARGS
		for i, w := range argv {
			if w == "--args" || name == "lldb" && w == "--" {
				x.look(argv[i+1:], depth, "", false, budget)
				break
			}
		}
	case "corepack":
		// corepack pnpm@9.1.0 exec CMD: the package manager with its version
		for i := 1; i < len(argv); i++ {
			if at := strings.IndexByte(argv[i], '@'); at > 0 && !strings.HasPrefix(argv[i], "-") {
				x.look(append([]string{argv[i][:at]}, argv[i+1:]...), depth, stdin, haveStdin, budget)
				break
			}
		}
	case "setarch":
		if len(argv) > 2 {
			for _, rest := range x.rests(append([]string{name}, argv[2:]...), setarchOpts.get()) {
				x.look(rest, depth, stdin, haveStdin, budget)
			}
		}
	case "scl":
		// scl enable COLLECTION... -- CMD ARGS: any number of collections
		for i, w := range argv {
			if w == "--" {
				x.look(argv[i+1:], depth, stdin, haveStdin, budget)
				break
			}
		}
	case "su", "runuser":
		// -s/--shell PROG runs PROG as the user's shell, the words after
		// the user its arguments: under Bash(su:*) with Bash(rm:*)
		// denied, su -s /bin/rm root victim.txt was allowed and removed
		// the file run as the host would (attack pass 78)
		shells := suShells(argv)
		if len(shells) == 0 && (haveStdin || x.lineStdin) && suNoCommand(argv) {
			// no -s and no -c: the user's login shell, reading the
			// line's standard input (attack pass 88; see ownShell)
			shells = []string{"sh"}
		}
		spec := wrappers.get()[name]
		if name == "runuser" && !givenOpts(argv, runuserOpts, "u", []string{"--user"}) {
			// runuser USER, as su: the first operand is the user
			spec.positionals = 1
		}
		for _, sh := range shells {
			rests := x.rests(argv, spec)
			// getopt_long's reading too: su's options after the user are
			// su's, not the shell's arguments (su root -g root <<< 'rm -f
			// victim.txt' gives the shell no argument: it reads the line's
			// standard input; read as sh -g root, a script named root,
			// it was allowed under Bash(su:*) with Bash(rm:*) denied and
			// removed the file, attack pass 92).
			opts := suOpts
			if name == "runuser" {
				opts = runuserOpts
			}
			if ops := permutedOperands(argv, opts); len(ops) >= spec.positionals {
				rests = append(rests, ops[spec.positionals:])
			}
			if len(rests) == 0 {
				rests = [][]string{nil}
			}
			for _, rest := range rests {
				x.look(append([]string{sh}, rest...), depth, stdin, haveStdin, budget)
			}
		}
	case "just":
		x.just(argv, depth, budget)
	case "tox", "nox":
		// tox -x/--override KEY=VALUE sets any key of the configuration,
		// its commands too; the words after "--" are the {posargs} a
		// configuration splices into its commands, often as the whole
		// command (commands = {posargs:pytest})
		for i, w := range argv {
			if name == "tox" && (w == "-x" || strings.HasPrefix(w, "--override") || strings.HasPrefix(w, "-x")) {
				x.fail("tox --override sets the commands it runs, which the line does not show")
				return
			}
			if w == "--" {
				x.look(argv[i+1:], depth, "", false, budget)
				return
			}
		}
	}
}

// just: -c/--command CMD ARGS runs CMD (with --shell-command, the words
// as one shell command); --shell names the program that runs every
// recipe line; NAME=VALUE and --set NAME VALUE are spliced into the
// recipes, as make's variables given on the line are.
func (x *extraction) just(argv []string, depth int, budget *int) {
	shellCmd := slices.Contains(argv, "--shell-command")
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		opt, v, eq := strings.Cut(w, "=")
		switch {
		case w == "--":
			return
		case opt == "-c" || opt == "--command":
			rest := argv[i+1:]
			if eq {
				rest = append([]string{v}, rest...)
			}
			if shellCmd {
				x.nestedSource(strings.Join(rest, " "), depth+1)
			}
			x.look(rest, depth, "", false, budget)
			return
		case strings.HasPrefix(w, "-c") && len(w) > 2 && w[1] != '-':
			x.look(append([]string{w[2:]}, argv[i+1:]...), depth, "", false, budget)
			return
		case opt == "--shell" && eq:
			x.nestedSource(v, depth+1)
		case opt == "--shell" && i+1 < len(argv):
			i++
			x.nestedSource(argv[i], depth+1)
		case opt == "--set" && i+2 < len(argv):
			x.nestedSource(argv[i+2], depth+1)
			i += 2
		case !strings.HasPrefix(w, "-") && eq && isAssignmentWord(w):
			x.nestedSource(v, depth+1)
		}
	}
}

// pnpmShellMode reports pnpm's -c or --shell-mode anywhere on the line
// (pnpm reads its options before the command's name too).
func pnpmShellMode(argv []string) bool {
	for _, w := range argv[1:] {
		if strings.HasPrefix(w, "--shell-mode") && w != "--shell-mode=false" || len(w) > 1 && w[0] == '-' && w[1] != '-' && strings.ContainsRune(w, 'c') {
			return true
		}
	}
	return false
}

// longAbbrev reports whether w is long, or a prefix of it that getopt_long
// takes for it ("--comm" for "--command"; su --comm 'rm x' ran rm): read
// as widely as the program might, more readings, never fewer.
func longAbbrev(w, long string) bool {
	return len(w) > 2 && strings.HasPrefix(w, "--") && strings.HasPrefix(long, w)
}

// suShells returns the programs su's or runuser's -s/--shell name (-s X,
// -sX, bundled after plain flags as -ls X, --shell=X, and getopt_long's
// abbreviations from --sh), every one given. getopt_long permutes: an
// option after the user (or after any other operand) is still su's, up to
// "--": su root -s /bin/rm -- -f victim.txt runs rm -f victim.txt, and was
// allowed under Bash(su:*) with Bash(rm:*) denied (attack pass 92).
func suShells(argv []string) []string {
	var out []string
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		if w == "--" {
			break
		}
		if len(w) < 2 || w[0] != '-' {
			continue // an operand ("-" too): options may follow
		}
		if strings.HasPrefix(w, "--") {
			opt, v, eq := strings.Cut(w, "=")
			if len(opt) >= 4 && longAbbrev(opt, "--shell") {
				if eq {
					out = append(out, v)
				} else if i+1 < len(argv) {
					i++
					out = append(out, argv[i])
				}
			} else if !eq && (longAbbrev(opt, "--command") || longAbbrev(opt, "--session-command") || longAbbrev(opt, "--group") ||
				longAbbrev(opt, "--supp-group") || longAbbrev(opt, "--user") || longAbbrev(opt, "--whitelist-environment")) && len(opt) >= 4 {
				i++ // its value
			}
			continue
		}
		// a bundle of short options: plain ones, then at most one that
		// takes the rest of the word or the next word as its value
		for k := 1; k < len(w); k++ {
			c := w[k]
			if strings.IndexByte("csgGwu", c) < 0 {
				continue
			}
			v := w[k+1:]
			if v == "" && i+1 < len(argv) {
				i++
				v = argv[i]
			}
			if c == 's' {
				out = append(out, v)
			}
			break
		}
	}
	return out
}

// permutedOperands returns argv's operands as getopt_long finds them when
// it permutes (no POSIXLY_CORRECT): every word that is neither an option
// nor an option's value, wherever it stands, then every word after "--".
// "-" is su's own (a login shell), not an operand.
func permutedOperands(argv []string, spec optSpec) []string {
	var out []string
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		switch {
		case w == "--":
			return append(out, argv[i+1:]...)
		case w == "-":
		case len(w) < 2 || w[0] != '-':
			out = append(out, w)
		case strings.HasPrefix(w, "--"):
			opt, _, eq := strings.Cut(w, "=")
			if !eq && len(opt) >= 3 && slices.ContainsFunc(spec.longValue, func(l string) bool { return strings.HasPrefix(l, opt) }) {
				i++
			}
		default:
			i, _ = shortOptions(argv, i, spec.shortValue, func(byte, string) bool { return true })
		}
	}
	return out
}
