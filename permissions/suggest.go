package permissions

import (
	"slices"
	"strings"

	"github.com/moat-sandbox/moat/internal/lazyre"
)

// subcommandRe is what a second word must look like to be a subcommand
// worth a prefix rule ("commit", "run", "pr-create").
var subcommandRe = lazyre.New(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// noPrefix are commands a prefix rule must never cover: a rule for them
// would allow any command at all (shells, wrappers, interpreters, sudo),
// or any job of a program that runs it elsewhere: "at now -f job.sh"
// suggested Bash(at now:*), every job atd would ever run for "at now",
// while "at -f job.sh now" got its exact rule; tmux new-session, and the
// runners that start a command in another context (systemd-run, run0,
// pkexec, runuser, setpriv, unshare, nsenter, bwrap, firejail, dotenv).
var noPrefix = lazy[map[string]bool]{make: func() map[string]bool {
	return map[string]bool{
		"at": true, "batch": true, "tmux": true, "screen": true, "systemd-run": true, "run0": true,
		"pkexec": true, "runuser": true, "setpriv": true, "unshare": true, "nsenter": true, "bwrap": true,
		"firejail": true, "dotenv": true, "sg": true,
		"sudo": true, "doas": true, "su": true, "env": true, "xargs": true, "exec": true, "eval": true,
		"command": true, "builtin": true, "nohup": true, "time": true, "timeout": true, "nice": true,
		"ionice": true, "stdbuf": true, "setsid": true, "watch": true, "find": true, "parallel": true,
		"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "fish": true, "busybox": true,
		"python": true, "python3": true, "node": true, "perl": true, "ruby": true, "php": true, "deno": true,
		"bun": true, "osascript": true, "ssh": true, "script": true, "flock": true, "chroot": true,
		"source": true, ".": true, "awk": true, "gawk": true, "sed": true,
		"softlimit": true, "setuidgid": true, "envuidgid": true, "setlock": true, "pgrphack": true,
		"fghack": true, "s6-softlimit": true, "s6-setuidgid": true, "s6-envuidgid": true,
		"s6-applyuidgid": true, "s6-setlock": true, "s6-envdir": true, "s6-setsid": true,
		"runcon": true,
	}
}}

// elsewhereSubs are subcommands that run any command in a container, a
// pod or a machine (docker exec, kubectl exec, vagrant ssh).
var elsewhereSubs = lazy[map[string][]string]{make: func() map[string][]string {
	run := []string{"exec", "run", "create"}
	return map[string][]string{
		"docker": run, "podman": run, "nerdctl": run, "kubectl": {"exec", "run", "debug"},
		"oc": {"exec", "rsh", "run", "debug"}, "vagrant": {"ssh"}, "flatpak": {"run", "enter", "build"},
	}
}}

// runsAnyCommand reports whether argv's first two words run whatever
// command follows them: a runner's subcommand (uv run, npm exec, bundle
// exec, lxc exec, ip netns exec) or one that runs it elsewhere (docker
// exec, kubectl exec). Their prefix rule would allow every command, in the
// sandbox or out of it: uv run pytest suggested Bash(uv run:*), which
// allows uv run curl ... | sh, and docker exec web ls Bash(docker exec:*),
// every command in every container (attack pass 81); the line's exact
// rule is suggested instead.
func runsAnyCommand(argv []string) bool {
	if argv[0] == "ip" {
		return slices.ContainsFunc(argv[1:], func(w string) bool { return slices.Contains(ipExec, w) }) || ipBatch(argv)
	}
	if subs, ok := runnerSubs.get()[argv[0]]; ok && slices.Contains(subs, argv[1]) {
		return true
	}
	return slices.Contains(elsewhereSubs.get()[argv[0]], argv[1])
}

// CommandPrefix returns the stable prefix of a simple command, for a
// prefix rule: "git commit -m x" -> "git commit". Safe assignments and
// wrappers are skipped first ("NODE_ENV=prod npm run build" -> "npm run").
// It returns "" when the command has no such prefix (one word, an unsafe
// assignment, a second word that is not a subcommand, a shell or wrapper).
func CommandPrefix(argv []string, assigns map[string]string) string {
	as := make([]assign, 0, len(assigns))
	for k, v := range assigns {
		as = append(as, assign{name: k, value: v, static: true})
	}
	rest, clean := stripStrict(as, argv)
	if !clean {
		return ""
	}
	return prefixOf(rest)
}

func prefixOf(argv []string) string {
	if len(argv) < 2 || noPrefix.get()[argv[0]] || strings.ContainsAny(argv[0], "=") || runsAnyCommand(argv) {
		return ""
	}
	if !subcommandRe.MatchString(argv[1]) {
		return ""
	}
	for _, w := range argv[:2] {
		for i := 0; i < len(w); i++ {
			if !safeUnquoted(w[i]) {
				return ""
			}
		}
	}
	return argv[0] + " " + argv[1]
}

// suggest returns a rule to offer for the first part no rule or table
// allowed: a prefix rule when the command has a stable prefix, else an
// exact rule. It is "" when the command cannot be matched by a rule (a
// part that is not static) and when the command got a destructive-command
// warning: a rule would allow it again without the warning.
func (s *step) suggest() string {
	if len(s.res.Warnings) > 0 {
		return ""
	}
	for i := range s.parts {
		p, a := &s.parts[i], &s.an[i]
		if !p.static {
			return ""
		}
		if s.allowRule(p) != nil || (a.readOnly && a.unchecked == "") {
			continue
		}
		argv := p.strictArgv()
		if len(argv) == 0 {
			continue
		}
		if pre := prefixOf(argv); pre != "" {
			return "Bash(" + pre + ":*)"
		}
		return "Bash(" + escapeRuleContent(joinArgv(argv)) + ")"
	}
	return ""
}

// escapeRuleContent makes a canonical command safe as exact rule content:
// a star outside quotes would be a wildcard, and a trailing ":*" a prefix.
func escapeRuleContent(s string) string {
	var b strings.Builder
	inQuote := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inQuote = !inQuote
		case c == '*' && !inQuote:
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}
