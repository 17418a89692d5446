package permissions

import (
	"strings"

	"github.com/moat-sandbox/moat/internal/lazyre"
)

// safeEnvVars are the variables whose leading assignments are stripped
// before allow rules and the read-only tables are consulted: locale,
// terminal and build-mode switches that cannot make a program load or run
// other code. Everything else is kept, so "PATH=/tmp/x git status" never
// matches "Bash(git status)". Never here: PATH, LD_*, DYLD_*, PYTHONPATH,
// PYTHONSTARTUP, PERL5LIB, PERL5OPT, RUBYOPT, NODE_OPTIONS, NODE_PATH,
// BASH_ENV, ENV, CDPATH, IFS, PS4, PROMPT_COMMAND, SHELLOPTS, GIT_*, PAGER,
// EDITOR, VISUAL, LESSOPEN, GOFLAGS, RUSTFLAGS, JAVA_TOOL_OPTIONS, HOME.
var safeEnvVars = lazy[map[string]bool]{make: func() map[string]bool {
	return map[string]bool{
		// locale
		"LANG": true, "LANGUAGE": true, "LC_ALL": true, "LC_CTYPE": true,
		"LC_COLLATE": true, "LC_MESSAGES": true, "LC_NUMERIC": true,
		"LC_TIME": true, "LC_MONETARY": true, "TZ": true,
		// terminal and colour
		"TERM": true, "COLORTERM": true, "NO_COLOR": true, "FORCE_COLOR": true,
		"CLICOLOR": true, "CLICOLOR_FORCE": true, "COLUMNS": true, "LINES": true,
		// build and run modes
		"NODE_ENV": true, "RAILS_ENV": true, "RACK_ENV": true, "MIX_ENV": true,
		"APP_ENV": true, "CI": true, "DEBUG": true, "VERBOSE": true,
		"RUST_BACKTRACE": true, "RUST_LOG": true, "RUST_LOG_STYLE": true,
		"GOOS": true, "GOARCH": true, "CGO_ENABLED": true, "GOEXPERIMENT": true,
		"PYTHONUNBUFFERED": true, "PYTHONDONTWRITEBYTECODE": true,
		"PYTHONIOENCODING": true, "NODE_NO_WARNINGS": true,
	}
}}

// SafeEnvVar reports whether a leading assignment of name is stripped
// before allow rules and the read-only tables are consulted (see
// safeEnvVars for the list).
func SafeEnvVar(name string) bool { return safeEnvVars.get()[name] }

// safeAssign reports whether a leading assignment may be stripped.
func safeAssign(a assign) bool {
	return a.static && safeEnvVars.get()[a.name] && !namesDataFile(a.name, a.value)
}

// namesDataFile reports a locale or time-zone value that is a path: the C
// library loads the file it names, as it does those under LOCPATH,
// NLSPATH or TZDIR, which are never stripped. gettext builds
// /usr/share/locale/LANGUAGE/LC_MESSAGES/DOMAIN.mo from LANGUAGE's names
// with no check, so LANGUAGE=../../../../var/tmp/x ls loaded a message
// catalogue the agent wrote into every format string ls printed, and
// setlocale takes an absolute LC_ALL or LANG (a locale's compiled files)
// (attack pass 71). Locale names have no '/'; a zone name has one
// (Europe/Paris), so only a zone that starts with '/' or has ".." counts.
func namesDataFile(name, value string) bool {
	if name == "TZ" {
		v := strings.TrimPrefix(value, ":")
		return strings.HasPrefix(v, "/") || strings.Contains(v, "..")
	}
	return (name == "LANG" || name == "LANGUAGE" || strings.HasPrefix(name, "LC_")) && strings.Contains(value, "/")
}

// stripStrict removes, in a fixed-point loop, the safe leading assignments
// and the wrappers timeout, time and nice, parsing each wrapper's
// flags strictly: anything unexpected stops the stripping. It returns the
// words left and whether every assignment was stripped. This is the form
// allow rules and the read-only tables see. nohup is not stripped (unlike
// the seed): it writes nohup.out when its output is a terminal, so
// "nohup ls" is neither read-only nor "ls" (docs/DECISIONS.md).
func stripStrict(assigns []assign, argv []string) ([]string, bool) {
	for _, a := range assigns {
		if !safeAssign(a) {
			return argv, false
		}
	}
	for guard := 0; guard < 32 && len(argv) > 0; guard++ {
		var rest []string
		switch argv[0] {
		case "timeout":
			rest = stripTimeout(argv[1:])
		case "time":
			rest = stripSimpleWrapper(argv[1:], map[string]bool{"-p": true})
		case "nice":
			rest = stripNice(argv[1:])
		}
		if len(rest) == 0 {
			return argv, true
		}
		argv = rest
	}
	return argv, true
}

var (
	durationRe = lazyre.New(`^[0-9]+(\.[0-9]+)?[smhd]?$`)
	signalRe   = lazyre.New(`^(SIG)?[A-Z][A-Z0-9+-]*$|^[0-9]{1,2}$`)
	niceRe     = lazyre.New(`^-?[0-9]{1,2}$`)
)

// stripTimeout parses "timeout [OPTION] DURATION COMMAND...". It returns
// COMMAND... or nil when the words are not exactly that.
func stripTimeout(a []string) []string {
	i := 0
	for ; i < len(a); i++ {
		w := a[i]
		switch {
		case w == "--":
			i++
			goto duration
		case w == "--foreground" || w == "--preserve-status" || w == "-v" || w == "--verbose":
		case w == "-k" || w == "-s" || w == "--kill-after" || w == "--signal":
			if i+1 >= len(a) {
				return nil
			}
			i++
			if !timeoutValueOK(w, a[i]) {
				return nil
			}
		case strings.HasPrefix(w, "--kill-after="):
			if !durationRe.MatchString(w[len("--kill-after="):]) {
				return nil
			}
		case strings.HasPrefix(w, "--signal="):
			if !signalRe.MatchString(w[len("--signal="):]) {
				return nil
			}
		case len(w) > 2 && (strings.HasPrefix(w, "-k") || strings.HasPrefix(w, "-s")):
			if !timeoutValueOK(w[:2], w[2:]) {
				return nil
			}
		case strings.HasPrefix(w, "-"):
			return nil // unknown or bundled flag
		default:
			goto duration
		}
	}
duration:
	if i >= len(a) || !durationRe.MatchString(a[i]) {
		return nil
	}
	return a[i+1:]
}

func timeoutValueOK(flag, v string) bool {
	if flag == "-k" || flag == "--kill-after" {
		return durationRe.MatchString(v)
	}
	return signalRe.MatchString(v)
}

// stripNice parses "nice [-n N | -N | --adjustment=N] COMMAND...".
func stripNice(a []string) []string {
	i := 0
	for ; i < len(a); i++ {
		w := a[i]
		switch {
		case w == "--":
			return nonEmpty(a[i+1:])
		case w == "-n" || w == "--adjustment":
			if i+1 >= len(a) || !niceRe.MatchString(a[i+1]) {
				return nil
			}
			i++
		case strings.HasPrefix(w, "--adjustment="):
			if !niceRe.MatchString(w[len("--adjustment="):]) {
				return nil
			}
		case strings.HasPrefix(w, "-n") && len(w) > 2:
			if !niceRe.MatchString(w[2:]) {
				return nil
			}
		case len(w) > 1 && w[0] == '-' && niceRe.MatchString(w):
			// -10: the historical form
		case strings.HasPrefix(w, "-"):
			return nil
		default:
			return a[i:]
		}
	}
	return nil
}

// stripSimpleWrapper parses "WRAPPER [FLAG...] [--] COMMAND..." where every
// flag takes no value and must be in flags.
func stripSimpleWrapper(a []string, flags map[string]bool) []string {
	for i, w := range a {
		switch {
		case w == "--":
			return nonEmpty(a[i+1:])
		case flags[w]:
		case strings.HasPrefix(w, "-"):
			return nil
		default:
			return a[i:]
		}
	}
	return nil
}

func nonEmpty(a []string) []string {
	if len(a) == 0 {
		return nil
	}
	return a
}
