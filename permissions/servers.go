package permissions

import "strings"

// Programs whose options name a command they run (attack pass 88): nc
// -e PROG ARGS and -c CMD (busybox's and the traditional netcat run PROG
// for a connection; ncat's -e/--exec splits its value into words and
// -c/--sh-exec gives it to sh -c), socat's EXEC: and SYSTEM: addresses,
// systemd-run's and run0's Exec* properties (ExecStartPre=, ExecStopPost=
// run a command line besides the unit's), and dbus-run-session's
// --dbus-daemon PROGRAM. Under Bash(busybox:*) with Bash(rm:*) denied,
// busybox nc -l -p PORT -e rm -f victim.txt was allowed and removed the
// file on the first connection.

// optionCommands adds their readings.
func (x *extraction) optionCommands(argv []string, depth int, stdin string, haveStdin bool, budget *int) {
	switch argv[0] {
	case "nc", "ncat", "netcat", "nc.traditional":
		for i := 1; i < len(argv); i++ {
			w := argv[i]
			if w == "--" {
				break
			}
			opt, v, eq := strings.Cut(w, "=")
			switch {
			case strings.HasPrefix(w, "--lua-exec"):
				x.fail("ncat --lua-exec runs a Lua script, which the line does not show as commands")
			case (opt == "--exec" || opt == "--sh-exec") && (eq || i+1 < len(argv)):
				if !eq {
					v = argv[i+1]
				}
				x.nestedSource(v, depth+1)
			case len(w) > 1 && w[0] == '-' && w[1] != '-':
				// a bundle of short options up to -e or -c, whose value is
				// the rest of the word or the next word (-lp1234 -erm);
				// -e also takes the words after it as PROG's arguments
				k := strings.IndexAny(w, "ec")
				if k < 0 {
					continue
				}
				rest := argv[i+1:]
				if w[k+1:] != "" {
					rest = append([]string{w[k+1:]}, rest...)
				}
				if len(rest) == 0 {
					continue
				}
				x.nestedSource(rest[0], depth+1)
				if w[k] == 'e' {
					x.look(rest, depth, "", false, budget)
				}
			}
		}
	case "socat":
		// ADDRESS is TYPE:PARAMS,OPTIONS, two of them joined by !! for
		// one direction each; the type is read in any case
		for _, w := range argv[1:] {
			for _, addr := range strings.Split(w, "!!") {
				typ, cmd, ok := strings.Cut(addr, ":")
				switch strings.ToUpper(typ) {
				case "EXEC", "SYSTEM", "SHELL":
					if ok {
						cmd, _, _ = strings.Cut(cmd, ",")
						x.nestedSource(cmd, depth+1)
					}
				}
			}
		}
	case "systemd-run", "run0":
		for i := 1; i < len(argv); i++ {
			w := argv[i]
			v := ""
			switch {
			case w == "-p" || w == "--property":
				if i+1 < len(argv) {
					v = argv[i+1]
				}
			case strings.HasPrefix(w, "--property="):
				v = w[len("--property="):]
			case strings.HasPrefix(w, "-p"):
				v = w[2:]
			default:
				continue
			}
			if strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), "exec") {
				x.fail(argv[0] + " -p " + v + " sets a command line the unit runs, which moat does not read")
			}
		}
	case "dbus-run-session":
		for i := 1; i < len(argv); i++ {
			w := argv[i]
			if w == "--" {
				break
			}
			if v, ok := strings.CutPrefix(w, "--dbus-daemon="); ok {
				x.look([]string{v}, depth, "", false, budget)
			} else if w == "--dbus-daemon" && i+1 < len(argv) {
				x.look([]string{argv[i+1]}, depth, "", false, budget)
			}
		}
	}
}
