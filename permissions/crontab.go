package permissions

import (
	"strings"
)

// crontab FILE installs the jobs FILE holds, and crontab - (or crontab
// with no file) those of its standard input, for crond to run later on
// the host, outside any sandbox: under Bash(busybox:*) with Bash(rm:*)
// denied, busybox crontab -c DIR - <<< '* * * * * rm -f victim.txt' was
// allowed, and crond removed the file within the minute (attack pass 91).
// As for at's job, a table on the line is read (each job's command, after
// its five time fields or its @word), a table on disk is a file as sh
// FILE's, and one the line gives but does not show is unseen.
func (x *extraction) crontab(argv []string, depth int, stdin string, haveStdin bool) {
	var operands []string
	listing := false
	see := func(c byte, _ string) bool {
		if strings.IndexByte("lre", c) >= 0 {
			listing = true // list, remove or edit: nothing of the line's installed
		}
		return true
	}
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		switch {
		case w == "--":
			operands = append(operands, argv[i+1:]...)
			i = len(argv)
		case len(w) < 2 || w[0] != '-':
			operands = append(operands, w)
		default:
			// -u USER (busybox's -c DIR, cronie's -n HOST and -T FILE
			// take one too); getopt takes options after operands
			i, _ = shortOptions(argv, i, "ucnT", see)
		}
	}
	if listing {
		return
	}
	for _, f := range operands {
		if !stdinScript(f) {
			x.script(f, depth, stdin, haveStdin, false)
			return
		}
	}
	switch {
	case haveStdin && stdin != "":
		x.cronTable(stdin, depth)
	case haveStdin:
		// a table on disk (crontab - < jobs), as sh < jobs
	default:
		x.fail("crontab reads its jobs from standard input, which the line does not show")
	}
}

// cronTable reads a crontab's jobs: each line's command after its time
// fields, and its variable settings (SHELL, which crond runs the commands
// with, makes the table unseen; a % gives the command standard input,
// which is not read here).
func (x *extraction) cronTable(table string, depth int) {
	for line := range strings.Lines(table) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if name, v, ok := strings.Cut(line, "="); ok && isIdent(strings.TrimSpace(name)) {
			name = strings.TrimSpace(name)
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			if name == "SHELL" || name == "BASH_ENV" || name == "ENV" {
				x.fail("the crontab sets " + name + ", which changes what crond runs its jobs with")
				continue
			}
			x.assignedCode(name, v, depth)
			continue
		}
		fields := 5
		if line[0] == '@' {
			fields = 1
		}
		cmd := line
		for range fields {
			cmd = strings.TrimLeft(cmd, " \t")
			k := strings.IndexAny(cmd, " \t")
			if k < 0 {
				cmd = ""
				break
			}
			cmd = cmd[k:]
		}
		if strings.Contains(cmd, "%") {
			x.fail("a crontab job's % gives its command standard input, which is not read")
		}
		if cmd = strings.TrimSpace(cmd); cmd != "" {
			x.nestedSource(cmd, depth+1)
		}
	}
}

// isIdent reports a shell variable's name.
func isIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
