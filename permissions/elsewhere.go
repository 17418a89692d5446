package permissions

import (
	"strings"
)

// Programs that run a command somewhere other than in their own process
// tree as a wrapper does: a terminal multiplexer's server (tmux, screen),
// atd (at, batch), another machine (ssh) or a container (docker exec,
// kubectl exec), or a namespace sandbox with options of two and three
// values (bwrap). Under Bash(tmux:*) with Bash(rm:*) denied, tmux
// new-session -d 'rm -f victim.txt' was allowed and removed the file, and
// so were screen -dm, at now <<< '...', ssh HOST CMD, docker exec,
// kubectl exec and bwrap --bind / / (attack pass 67). The rules are the
// user's word on what the agent runs, wherever it runs: each command is
// looked through where its words can be read, and makes the line unseen
// (ask) where they cannot.

// elsewhere looks at the command such a program runs and reports whether
// name was one of them.
func (x *extraction) elsewhere(argv []string, depth int, stdin string, haveStdin bool, budget *int) bool {
	switch argv[0] {
	case "tmux":
		x.tmux(argv, depth)
	case "screen":
		x.screen(argv, depth, budget)
	case "at", "batch":
		x.atJob(argv, depth, stdin, haveStdin)
	case "crontab":
		x.crontab(argv, depth, stdin, haveStdin)
	case "ssh":
		if x.ssh(argv, depth) {
			// no command: the remote login shell reads the line's
			// standard input (ssh HOST <<< 'rm -f x': attack pass 88)
			x.ownShell(depth, stdin, haveStdin, budget)
		}
	case "docker", "podman", "nerdctl":
		x.container(argv, depth, budget)
	case "kubectl", "oc":
		x.kubectl(argv, depth, budget)
	case "bwrap":
		x.bwrap(argv, depth, stdin, haveStdin, budget)
	default:
		return false
	}
	return true
}

// tmuxShellCmds are tmux's commands whose operands are a shell command
// (joined, as tmux does with more than one), with the letters of their
// options that take a value. run-shell -C takes a tmux command instead.
var tmuxShellCmds = lazy[map[string]string]{make: func() map[string]string {
	newSession := "cefFnstxy"
	newWindow := "ceFnt"
	split := "ceFlpt"
	respawn := "cet"
	popup := "bcdehsStTwxy"
	run := "dtc"
	pipe := "t"
	return map[string]string{
		"new-session": newSession, "new": newSession,
		"new-window": newWindow, "neww": newWindow,
		"split-window": split, "splitw": split,
		"respawn-pane": respawn, "respawnp": respawn, "respawn-window": respawn, "respawnw": respawn,
		"display-popup": popup, "popup": popup,
		"run-shell": run, "run": run,
		"pipe-pane": pipe, "pipep": pipe,
	}
}}

// tmuxQuiet are tmux's commands that run nothing of the line's: they
// list, attach, select, rename or end. Any other (send-keys, which types
// into a shell, if-shell, source-file, set-option default-command,
// bind-key, a command prefix tmux would complete) makes the line unseen.
var tmuxQuiet = lazy[map[string]bool]{make: func() map[string]bool {
	return set("attach-session", "attach", "detach-client", "detach", "has-session", "has",
		"kill-server", "kill-session", "kill-window", "killw", "kill-pane", "killp",
		"list-sessions", "ls", "list-windows", "lsw", "list-panes", "lsp", "list-clients", "lsc",
		"list-buffers", "lsb", "list-commands", "lscm", "list-keys", "lsk", "capture-pane", "capturep",
		"show-buffer", "showb", "select-window", "selectw", "select-pane", "selectp",
		"rename-session", "rename", "rename-window", "renamew", "resize-pane", "resizep",
		"resize-window", "resizew", "start-server", "start", "wait-for", "wait", "switch-client", "switchc",
		"show-options", "show", "show-window-options", "showw", "show-environment", "showenv",
		"show-messages", "showmsgs", "display-message", "display", "last-window", "last",
		"next-window", "next", "previous-window", "prev", "select-layout", "selectl", "kill-session")
}}

func (x *extraction) tmux(argv []string, depth int) {
	for _, w := range argv[1:] {
		// a format's #(...) runs a shell command (display -p, list -F)
		if strings.Contains(w, "#(") {
			x.fail("tmux runs the shell command of a format (#(...))")
			return
		}
	}
	// global options: -c runs a shell command, -C reads commands; -f, -L, -S, -T take a value
	i, _, ok := options(argv, 1, "cfLST", func(c byte, v string) bool {
		switch c {
		case 'C':
			// control mode runs the tmux commands of its input: yes
			// 'run-shell "rm -f victim.txt"' | tmux -C new was allowed
			// under Bash(tmux:*) and removed the file (attack pass 70)
			x.fail("tmux -C (control mode) runs the tmux commands it reads from its input, which the line does not show")
			return false
		case 'c':
			x.nestedSource(v, depth+1)
		}
		return true
	})
	if !ok {
		return
	}
	// the commands, separated by ";" words (or a word ending in ";")
	var cmd []string
	flush := func() {
		if len(cmd) > 0 {
			x.tmuxCommand(cmd, depth)
		}
		cmd = nil
	}
	for ; i < len(argv); i++ {
		w := argv[i]
		if strings.HasSuffix(w, ";") {
			if w = strings.TrimSuffix(strings.TrimSuffix(w, ";"), `\`); w != "" {
				cmd = append(cmd, w)
			}
			flush()
			continue
		}
		cmd = append(cmd, w)
	}
	flush()
}

// tmuxCommand looks at one tmux command (its name first).
func (x *extraction) tmuxCommand(cmd []string, depth int) {
	name := cmd[0]
	if tmuxQuiet.get()[name] {
		return
	}
	values, ok := tmuxShellCmds.get()[name]
	if !ok {
		x.fail("tmux " + name + " runs or types what the line does not show")
		return
	}
	i, _, ok := options(cmd, 1, values, func(c byte, _ string) bool {
		if (name == "run-shell" || name == "run") && c == 'C' {
			x.fail("tmux run-shell -C runs tmux commands the line does not show")
			return false
		}
		return true
	})
	if ok && i < len(cmd) {
		x.nestedSource(strings.Join(cmd[i:], " "), depth+1)
	}
}

// screen [options] [cmd [args]]: the command starts at the first operand,
// but -r, -x, -d, -D and -S take a session name as the next word when it
// is not an option, so every operand is taken for the command's start in
// turn (more candidates, never fewer). -X and -Q send screen commands
// (stuff types into a window's shell, exec runs a program) and make the
// line unseen; -s names the program run as the shell.
func (x *extraction) screen(argv []string, depth int, budget *int) {
	starts := 0
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		if strings.HasPrefix(w, "-") && w != "-" && w != "--" {
			if strings.HasPrefix(w, "-X") || strings.HasPrefix(w, "-Q") || !strings.HasPrefix(w, "--") && strings.ContainsAny(w[1:], "XQ") {
				x.fail("screen " + w + " sends commands to a session the line does not show")
				return
			}
			if w == "-s" && i+1 < len(argv) {
				x.look(argv[i+1:i+2], depth, "", false, budget)
			} else if strings.HasPrefix(w, "-s") && len(w) > 2 && !strings.HasPrefix(w, "--") {
				x.look([]string{w[2:]}, depth, "", false, budget)
			}
			continue
		}
		if w == "--" {
			continue
		}
		if starts++; starts > 16 {
			x.fail("screen has too many operands to read its command")
			return
		}
		x.look(argv[i:], depth, "", false, budget)
	}
}

// atJob: at and batch read the job, a shell script, from standard input
// or from -f FILE (a file on disk, as sh FILE); -l, -r, -d, -c and -V
// list, remove, print or show the version.
func (x *extraction) atJob(argv []string, depth int, stdin string, haveStdin bool) {
	// The last -f is the job (at keeps the last one getopt gives it): the
	// first was taken, and the reading stopped there, so at -f job.sh -f
	// /dev/stdin now <<< 'rm -f victim.txt' was allowed under Bash(at:*)
	// with Bash(rm:*) denied, and atd removed the file (attack pass 81).
	file, listing := "", false
	see := func(c byte, v string) bool {
		switch {
		case strings.IndexByte("lrdcV", c) >= 0:
			listing = true
			return false
		case c == 'f':
			file = v
		}
		return true
	}
	// at reads its options with getopt, which takes them after the time's
	// words too ("at now -f job.sh" runs job.sh as "at -f job.sh now"
	// does): every word up to "--" that looks like an option is one.
	for i := 1; i < len(argv); i++ {
		next, dashdash, ok := options(argv, i, "qtf", see)
		if !ok {
			return
		}
		if dashdash {
			break
		}
		i = next
	}
	if listing {
		return // no job is run: at lists, removes or prints jobs
	}
	if file != "" && !stdinScript(file) {
		x.script(file, depth, stdin, haveStdin, false)
		return
	}
	switch {
	case haveStdin && stdin != "":
		x.nestedSource(stdin, depth+1)
	case haveStdin:
		// a job file on disk (at now < job.sh), as sh < job.sh
	default:
		x.fail(argv[0] + " reads its job from standard input, which the line does not show")
	}
}

// ssh [options] HOST [options] [COMMAND...]: the remote shell runs the
// words after the host joined by spaces; options stop at the first
// operand, and once more after the host unless "--" ended them. -o
// RemoteCommand=CMD runs CMD there too.
func (x *extraction) ssh(argv []string, depth int) (loginShell bool) {
	const values = "BbcDEeFIiJLlmOoPpQRSWw"
	i, host, remote := 1, false, false
	for pass := 0; pass < 2 && i < len(argv); pass++ {
		var terminated bool
		i, terminated, _ = options(argv, i, values, func(c byte, v string) bool {
			if c == 'o' {
				key, val, _ := strings.Cut(strings.TrimLeft(v, " \t"), "=")
				if sp := strings.IndexAny(key, " \t"); sp >= 0 {
					key, val = key[:sp], key[sp+1:]+val
				}
				if strings.EqualFold(strings.TrimSpace(key), "RemoteCommand") {
					x.nestedSource(strings.TrimLeft(val, " \t="), depth+1)
					remote = true
				}
			}
			return true
		})
		if !host {
			if i >= len(argv) {
				return false
			}
			host = true
			i++
			if terminated {
				break
			}
		}
	}
	if i < len(argv) {
		x.nestedSource(strings.Join(argv[i:], " "), depth+1)
		return false
	}
	return host && !remote
}

// containerRun is how docker's and podman's exec, run and create are
// read: their boolean options, and those that take a value.
var containerRun = lazy[wrapperSpec]{make: func() wrapperSpec {
	return wrapperSpec{
		positionals: 1, // the container or the image
		plainFlags: set("-d", "--detach", "-i", "--interactive", "-t", "--tty", "-it", "-ti", "-dit", "-itd", "-di", "-dt",
			"--rm", "--privileged", "--init", "-P", "--publish-all", "--read-only", "-q", "--quiet", "--no-healthcheck",
			"--oom-kill-disable", "--sig-proxy", "--tty=true", "--interactive=true", "--replace", "--no-hosts"),
		valueFlags: set("-a", "--attach", "--add-host", "-c", "--cpu-shares", "--cidfile", "--cpus", "--cpuset-cpus",
			"--device", "--dns", "-e", "--env", "--env-file", "--expose", "-h", "--hostname", "--ip", "-l", "--label",
			"--label-file", "--link", "--log-driver", "--log-opt", "-m", "--memory", "--mount", "--name", "--network",
			"--net", "--platform", "-p", "--publish", "--pull", "--restart", "--runtime", "--security-opt", "--shm-size",
			"--stop-signal", "--stop-timeout", "--tmpfs", "-u", "--user", "--ulimit", "-v", "--volume", "--volumes-from",
			"-w", "--workdir", "--gpus", "--group-add", "--pid", "--ipc", "--uts", "--userns", "--cgroupns", "--cap-add",
			"--cap-drop", "--detach-keys", "--network-alias", "--pod", "--arch", "--os", "--memory-swap",
			"--entrypoint", "--health-cmd", "--index", "--preserve-fds"),
	}
}}

// container: docker|podman [global options] [container|compose] exec|run|
// create [options] CONTAINER|IMAGE|SERVICE [COMMAND...] runs COMMAND in
// the container; --entrypoint is the program it runs with COMMAND as its
// arguments, --health-cmd a shell command.
func (x *extraction) container(argv []string, depth int, budget *int) {
	k := -1
	for i := 1; i < len(argv); i++ {
		switch argv[i] {
		case "exec", "run", "create":
			k = i
		}
		if k >= 0 {
			break
		}
	}
	if k < 0 {
		return
	}
	sub := argv[k:]
	spec := containerRun.get()
	for i := 1; i < len(sub); i++ {
		w := sub[i]
		opt, v, eq := strings.Cut(w, "=")
		if !eq && i+1 < len(sub) {
			v = sub[i+1]
		}
		switch opt {
		case "--entrypoint":
			for _, rest := range x.rests(sub, spec) {
				x.look(append(strings.Fields(v), rest[1:]...), depth, "", false, budget)
			}
			x.look(strings.Fields(v), depth, "", false, budget)
		case "--health-cmd":
			x.nestedSource(v, depth+1)
		}
	}
	for _, rest := range x.rests(sub, spec) {
		x.look(rest, depth, "", false, budget)
	}
}

// kubectl exec|run|debug|attach ... -- COMMAND runs COMMAND in the pod;
// the old form without "--" (kubectl exec POD COMMAND) too.
func (x *extraction) kubectl(argv []string, depth int, budget *int) {
	k := -1
	for i := 1; i < len(argv); i++ {
		switch argv[i] {
		case "exec", "run", "debug", "attach", "create":
			k = i
		}
		if k >= 0 {
			break
		}
	}
	if k < 0 {
		return
	}
	for i := k; i < len(argv); i++ {
		if argv[i] == "--" {
			x.look(argv[i+1:], depth, "", false, budget)
			return
		}
	}
	if argv[k] == "exec" {
		spec := wrapperSpec{
			positionals: 1,
			plainFlags:  set("-i", "--stdin", "-t", "--tty", "-it", "-ti", "-q", "--quiet"),
			valueFlags: set("-c", "--container", "-n", "--namespace", "-f", "--filename", "--pod-running-timeout",
				"--context", "--kubeconfig", "-s", "--server", "--as", "--user", "--cluster"),
		}
		for _, rest := range x.rests(argv[k:], spec) {
			x.look(rest, depth, "", false, budget)
		}
	}
}

// bwrapArity is the number of values each of bwrap's options takes.
var bwrapArity = lazy[map[string]int]{make: func() map[string]int {
	m := map[string]int{}
	for _, o := range strings.Fields("--unshare-all --share-net --unshare-user --unshare-user-try --unshare-ipc " +
		"--unshare-pid --unshare-net --unshare-uts --unshare-cgroup --unshare-cgroup-try --clearenv " +
		"--die-with-parent --as-pid-1 --new-session --disable-userns --assert-userns-disabled --level-prefix") {
		m[o] = 0
	}
	for _, o := range strings.Fields("--argv0 --userns --userns2 --pidns --uid --gid --hostname --chdir --unsetenv " +
		"--lock-file --sync-fd --remount-ro --exec-label --file-label --proc --dev --tmpfs --mqueue --dir --seccomp " +
		"--add-seccomp-fd --block-fd --userns-block-fd --info-fd --json-status-fd --cap-add --cap-drop --perms " +
		"--size --overlay-src --tmp-overlay --ro-overlay") {
		m[o] = 1
	}
	for _, o := range strings.Fields("--setenv --bind --bind-try --dev-bind --dev-bind-try --ro-bind --ro-bind-try " +
		"--bind-fd --ro-bind-fd --file --bind-data --ro-bind-data --symlink --chmod") {
		m[o] = 2
	}
	m["--overlay"] = 3
	return m
}}

// bwrap [options] [--] COMMAND [ARGS]: an option bwrap does not list here
// (its number of values unknown) or --args (more options from a
// descriptor) makes the line unseen.
func (x *extraction) bwrap(argv []string, depth int, stdin string, haveStdin bool, budget *int) {
	i := 1
	for i < len(argv) {
		w := argv[i]
		if w == "--" {
			i++
			break
		}
		if !strings.HasPrefix(w, "--") {
			break
		}
		n, ok := bwrapArity.get()[w]
		if !ok {
			x.fail("bwrap " + w + ": the command it runs cannot be read")
			return
		}
		i += 1 + n
	}
	if i < len(argv) {
		x.look(argv[i:], depth, stdin, haveStdin, budget)
	}
}

// makeLine returns why a make command runs what the line does not show:
// -E (make 4.4's short --eval), a makefile read from standard input (-f
// -), or a variable given on the line whose value make expands
// ($(shell ...)) or runs (x != CMD). A variable's plain value is looked at
// as a command, as PAGER=rm is: make SHELL=rm or CC=rm runs it for the
// recipes. Under Bash(make:*) with Bash(rm:*) denied, make
// 'x:=$(shell rm -f victim.txt)' was allowed and removed the file
// (attack pass 67).
func (x *extraction) makeLine(argv []string, depth int) string {
	valued := "CfIjloWO" // short options whose value may be the next word
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		switch {
		case w == "--":
			continue
		case strings.HasPrefix(w, "--"):
			opt, v, eq := strings.Cut(w, "=")
			if !eq && i+1 < len(argv) && (opt == "--file" || opt == "--makefile") {
				i++
				v = argv[i]
			}
			if (opt == "--file" || opt == "--makefile") && stdinScript(v) {
				return "make reads a makefile from standard input, which runs its recipes"
			}
			continue
		case len(w) > 1 && w[0] == '-':
			why := ""
			i, _ = shortOptions(argv, i, valued, func(c byte, v string) bool {
				switch {
				case c == 'E':
					why = "make -E runs what the line does not show"
				case c == 'f' && stdinScript(v):
					why = "make reads a makefile from standard input, which runs its recipes"
				}
				return why == ""
			})
			if why != "" {
				return why
			}
			continue
		}
		name, v, ok := strings.Cut(w, "=")
		if !ok || name == "" {
			continue // a target
		}
		if strings.HasSuffix(name, "!") || strings.ContainsAny(v, "$") {
			return "make expands a variable given on the line, which can run a command ($(shell ...), !=)"
		}
		x.nestedSource(v, depth+1)
	}
	return ""
}

// shortOptions reads the bundled short options of argv[i] (-abc, -fVALUE,
// -f VALUE) as getopt does: see gets each letter, and the first letter in
// valued gets its value, the rest of the word or, when nothing follows
// it, the next word (the letters after it are that value). It returns the
// index of the last word read and false when see stopped the reading.
func shortOptions(argv []string, i int, valued string, see func(c byte, v string) bool) (int, bool) {
	w := argv[i]
	for k := 1; k < len(w); k++ {
		c := w[k]
		if strings.IndexByte(valued, c) < 0 {
			if !see(c, "") {
				return i, false
			}
			continue
		}
		v := w[k+1:]
		if v == "" && i+1 < len(argv) {
			i++
			v = argv[i]
		}
		return i, see(c, v)
	}
	return i, true
}

// options reads the option words of argv from i, each through
// shortOptions, up to the first word that is not an option or past "--".
// It returns the index of the first word after them, whether "--" ended
// them, and false when see stopped the reading.
func options(argv []string, i int, valued string, see func(c byte, v string) bool) (next int, dashdash, ok bool) {
	for ; i < len(argv); i++ {
		w := argv[i]
		if w == "--" {
			return i + 1, true, true
		}
		if len(w) < 2 || w[0] != '-' {
			return i, false, true
		}
		if i, ok = shortOptions(argv, i, valued, see); !ok {
			return i, false, false
		}
	}
	return i, false, true
}
