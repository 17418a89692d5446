package validators

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/moat-sandbox/moat/internal/shellword"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// 1 INCOMPLETE_COMMANDS: a fragment rather than a command (it starts with
// a tab, a flag or an operator, or ends with a line continuation), which
// suggests the command was cut or spliced.
func validateIncomplete(ctx *Context) policy.Decision {
	s := ctx.Command
	if strings.HasPrefix(s, "\t") {
		return ask("command starts with a tab: it looks like an incomplete fragment")
	}
	t := strings.TrimLeft(s, " \t\n")
	if strings.HasPrefix(t, "-") {
		return ask("command starts with a flag: it looks like an incomplete fragment")
	}
	for _, op := range []string{"&&", "||", "|", ";", "&", ">", "<", ")"} {
		if strings.HasPrefix(t, op) {
			return ask(fmt.Sprintf("command starts with the operator %q: it looks like an incomplete fragment", op))
		}
	}
	if strings.HasSuffix(strings.TrimRight(s, " \t\n"), `\`) {
		return ask("command ends with a line continuation: it looks like an incomplete fragment")
	}
	return pass()
}

// jqCommands returns the argument lists of the jq invocations.
func (ctx *Context) jqCommands() [][]Word {
	var out [][]Word
	for _, c := range ctx.commands() {
		args := c.exec // execArgs(c.sc.Args)
		if len(args) > 0 && baseName(args[0].Value) == "jq" {
			out = append(out, args)
		}
	}
	return out
}

// jqFilter returns the filter argument of a jq command line, and false
// when the filter comes from a file (-f, --from-file) or is missing.
func jqFilter(args []Word) (Word, bool) {
	for i := 1; i < len(args); i++ {
		v := args[i].Value
		switch {
		case v == "--":
			if i+1 < len(args) {
				return args[i+1], true
			}
			return Word{}, false
		case v == "--arg" || v == "--argjson" || v == "--slurpfile" || v == "--rawfile" || v == "--argfile":
			i += 2
		case v == "--indent" || v == "-L" || v == "--library-path":
			i++
		case v == "-f" || v == "--from-file" || strings.HasPrefix(v, "--from-file="):
			return Word{}, false
		case strings.HasPrefix(v, "--"):
		case strings.HasPrefix(v, "-") && len(v) > 1:
			if strings.ContainsRune(v, 'f') {
				return Word{}, false
			}
		default:
			return args[i], true
		}
	}
	return Word{}, false
}

// jqDangerous are jq builtins that reach outside the JSON input: the
// environment (env, $ENV), the search path and modules (import, include,
// get_search_list, modulemeta), file names (input_filename), the process
// (halt_error writes raw to stderr, debug/stderr too), and "system", which
// some jq implementations and forks provide. Pure functions such as path
// and getpath are not listed: they only read the input.
var jqDangerous = map[string]bool{
	"env": true, "$ENV": true, "system": true, "builtins": true, "input_filename": true,
	"debug": true, "stderr": true, "import": true, "include": true, "modulemeta": true,
	"get_search_list": true, "$__loc__": true, "$__prog_args": true, "halt_error": true,
	"input_line_number": true,
}

// JqProgramRisk returns the first builtin or variable of a jq program that
// reaches outside the JSON input (env, $ENV, input_filename, ...), or "".
func JqProgramRisk(prog string) string { return jqScan(prog) }

// jqScan finds the first dangerous identifier in a jq program, outside
// string literals (but inside string interpolations \(...) and inside
// comments), and not as a field name (.env).
func jqScan(prog string) string {
	type frame struct{ depth int } // paren depth at which an interpolation started
	var interp []frame
	depth := 0
	inString, inComment := false, false
	for i := 0; i < len(prog); i++ {
		c := prog[i]
		if inString {
			switch c {
			case '\\':
				if i+1 < len(prog) && prog[i+1] == '(' {
					interp = append(interp, frame{depth})
					depth++
					inString = false
					i++
				} else {
					i++
				}
			case '"':
				inString = false
			}
			continue
		}
		if inComment {
			// A comment runs to the end of the line (jq 1.7.1 continues
			// it after a backslash: reading the next line as code only
			// errs towards asking). Its quotes and parentheses are not
			// code, but its names are still looked at.
			switch c {
			case '\n':
				inComment = false
				continue
			case '"', '(', ')':
				continue
			}
		}
		switch {
		case c == '"':
			inString = true
		case c == '#':
			inComment = true
		case c == '$':
			// "$ ENV" and "$ # comment\nENV" are $ENV: jq reads '$' and
			// the name as two tokens.
			j := i + 1
			for j < len(prog) {
				switch {
				case prog[j] == ' ' || prog[j] == '\t' || prog[j] == '\r' || prog[j] == '\n' && !inComment:
					j++
					continue
				case prog[j] == '#' && !inComment:
					for j < len(prog) && prog[j] != '\n' {
						j++
					}
					continue
				}
				break
			}
			k := j
			for k < len(prog) && (prog[k] == '_' || isLetter(prog[k]) || (prog[k] >= '0' && prog[k] <= '9')) {
				k++
			}
			if id := "$" + prog[j:k]; jqDangerous[id] {
				return id
			}
			i = k - 1
		case c == '(':
			depth++
		case c == ')':
			depth--
			if n := len(interp); n > 0 && depth == interp[n-1].depth {
				interp = interp[:n-1]
				inString = true
			}
		case c == '_' || isLetter(c):
			j := i + 1
			for j < len(prog) && (prog[j] == '_' || isLetter(prog[j]) || (prog[j] >= '0' && prog[j] <= '9')) {
				j++
			}
			id := prog[i:j]
			field := i > 0 && (prog[i-1] == '.' || (prog[i-1] == '?' && i > 1 && prog[i-2] == '.'))
			if !field && jqDangerous[id] {
				return id
			}
			i = j - 1
		}
	}
	return ""
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// 2 JQ_SYSTEM_FUNCTION: jq builtins that read the environment or files,
// or run code, in the filter.
func validateJqFunctions(ctx *Context) policy.Decision {
	for _, args := range ctx.jqCommands() {
		f, ok := jqFilter(args)
		if !ok {
			continue // jq_file_arguments asks about -f
		}
		if !f.Static {
			return ask("jq filter is not a literal: it cannot be checked")
		}
		if id := jqScan(f.Value); id != "" {
			return ask(fmt.Sprintf("jq filter uses %s, which reaches outside the JSON input", id))
		}
	}
	return pass()
}

// 3 JQ_FILE_ARGUMENTS: jq options that read a program or data from
// files, or change how positional arguments are read.
func validateJqFiles(ctx *Context) policy.Decision {
	for _, args := range ctx.jqCommands() {
		for _, a := range args[1:] {
			v := a.Value
			if !a.Static && strings.HasPrefix(strings.TrimLeft(a.Raw, `"'`), "-") {
				return ask("jq option is not a literal: it cannot be checked")
			}
			if v == "--" {
				break
			}
			name, _, _ := strings.Cut(v, "=")
			switch name {
			case "-f", "--from-file", "--rawfile", "--slurpfile", "--argfile", "-L", "--library-path", "--args", "--jsonargs":
				return ask(fmt.Sprintf("jq option %s reads files or changes how arguments are used", name))
			}
			if len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.ContainsAny(v, "fL") {
				return ask(fmt.Sprintf("jq option %s reads a program or modules from files", v))
			}
		}
	}
	return pass()
}

// 4 OBFUSCATED_FLAGS: flags (and command names) whose spelling differs
// from what the program receives: quoted or escaped dashes, empty quotes
// spliced into a word, ANSI-C and locale quoting, and command names that
// are quoted, escaped or not literal at all ("${X:-rm}" -rf /).
func validateObfuscatedFlags(ctx *Context) policy.Decision {
	if len(ctx.p.facts.ansiQuotes) > 0 {
		return ask("ANSI-C ($'...') or locale ($\"...\") quoting can hide the characters of a word")
	}
	for _, c := range ctx.commands() {
		for i, w := range c.ast.args {
			if w == nil {
				continue
			}
			if d := obfuscatedWord(w, c.sc.Args[i], i == 0); d.Verdict != policy.Passthrough {
				return d
			}
		}
	}
	return pass()
}

func obfuscatedWord(w *syntax.Word, val Word, isName bool) policy.Decision {
	parts := w.Parts
	if len(parts) == 0 {
		return pass()
	}
	// Empty quotes are only needed as a whole word or as an empty value
	// after '='.
	for i, part := range parts {
		if !emptyQuote(part) || len(parts) == 1 {
			continue
		}
		if i == len(parts)-1 {
			// "--opt=''" and "-i''" (sed's portable in-place idiom).
			if l, ok := parts[i-1].(*syntax.Lit); ok && (strings.HasSuffix(l.Value, "=") || (i == 1 && strings.HasPrefix(l.Value, "-"))) {
				continue
			}
		}
		return ask(fmt.Sprintf("empty quotes inside the word %q can disguise it", val.Raw))
	}
	first, lit := parts[0].(*syntax.Lit)
	if !val.Static && isName {
		return ask(fmt.Sprintf("the command name %q is not a literal: what runs cannot be seen", val.Raw))
	}
	if !val.Static {
		if !lit && strings.HasPrefix(quotedText(parts[0]), "-") {
			return ask(fmt.Sprintf("the flag in %q is quoted", val.Raw))
		}
		return pass()
	}
	if isName {
		if val.Raw != val.Value && isPlainName(val.Value) {
			return ask(fmt.Sprintf("the command name %q is quoted or escaped", val.Raw))
		}
		return pass()
	}
	if !strings.HasPrefix(val.Value, "-") {
		return pass()
	}
	if !lit || !strings.HasPrefix(first.Value, "-") {
		return ask(fmt.Sprintf("the dash of the flag %q is quoted or escaped", val.Raw))
	}
	name, _, _ := strings.Cut(first.Value, "=")
	if strings.Contains(name, `\`) {
		return ask(fmt.Sprintf("the flag %q contains escaped characters", val.Raw))
	}
	if strings.TrimLeft(name, "-") == "" && len(parts) > 1 {
		return ask(fmt.Sprintf("the name of the flag %q is quoted", val.Raw))
	}
	return pass()
}

func emptyQuote(part syntax.WordPart) bool {
	switch x := part.(type) {
	case *syntax.SglQuoted:
		return x.Value == ""
	case *syntax.DblQuoted:
		return len(x.Parts) == 0
	}
	return false
}

// quotedText is the literal start of a quoted part ("" for expansions).
func quotedText(part syntax.WordPart) string {
	switch x := part.(type) {
	case *syntax.SglQuoted:
		return x.Value
	case *syntax.DblQuoted:
		if len(x.Parts) > 0 {
			if l, ok := x.Parts[0].(*syntax.Lit); ok {
				return l.Value
			}
		}
	}
	return ""
}

func isPlainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLetter(c) || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' || c == '/' || c == '+') {
			return false
		}
	}
	return true
}

// 5 SHELL_METACHARACTERS: shell code handed as an argument to something
// that runs it through a shell. A local shell (bash -c, eval, su -c, a
// shell reading its stdin, find -exec sh -c, xargs sh -c) always asks: the
// permission rules would match "bash", not the commands inside, which is
// how deny lists were bypassed. For remote or periodic runners (ssh,
// watch) the script is analysed and any metacharacter (;, &&, ||, |, &,
// redirections, newlines) or objection in it asks. Options that make a
// program run a command (rg --pre, git -c alias.x=!..., ssh -o
// ProxyCommand, ...) ask too. Also the seed's own case: find name patterns
// holding ;, | or &.
func validateShellMetacharacters(ctx *Context) policy.Decision {
	for _, c := range ctx.commands() {
		for _, sc := range nestedScripts(c) {
			if d := ctx.nested(sc); d.Verdict != policy.Passthrough {
				return d
			}
		}
		if opt := execOption(c.sc.Args); opt != "" {
			return ask(fmt.Sprintf("the option %s makes the program run another command", opt))
		}
		args := c.exec // execArgs(c.sc.Args)
		if len(args) > 0 && baseName(args[0].Value) == "find" {
			for i := 1; i+1 < len(args); i++ {
				switch args[i].Value {
				case "-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-wholename", "-iwholename", "-lname", "-ilname":
					if strings.ContainsAny(args[i+1].Value, ";|&") {
						return ask(fmt.Sprintf("find pattern %q contains shell metacharacters", args[i+1].Raw))
					}
				}
			}
		}
	}
	return pass()
}

// execOption finds an option that makes a program run a command of the
// caller's choosing (the published bypasses: rg --pre, sort
// --compress-program, man --html, git --upload-pack and -c alias=!..., ssh
// -o ProxyCommand, tar --to-command, env -S). It returns the option, or "".
func execOption(all []Word) string {
	// The program is argv[0], or what the wrappers (timeout, env, sudo,
	// ...) run; only those positions are looked at, so the scan is linear.
	var buf [8]int
	starts := appendProgramStarts(buf[:0], all)
	for k, start := range starts {
		if start >= len(all) {
			continue
		}
		// A wrapper's options end where the program it runs starts.
		end := len(all)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		name := baseName(all[start].Value)
		args := all[start+1 : end]
		if opt := runnerExecOption(name, args); opt != "" {
			return opt
		}
		if name == "git" {
			if opt := gitSubExecOption(args); opt != "" {
				return opt
			}
		}
		if name == "ed" {
			// ed runs the commands of its standard input, and its !CMD
			// (and r !CMD, w !CMD, e !CMD) runs CMD through sh: ed <<<
			// '!rm -f victim.txt' removed the file under Bash(ed:*) with
			// Bash(rm:*) denied (attack pass 92), as ex does; red, the
			// restricted ed, refuses them
			return "ed's commands (!CMD runs a shell command)"
		}
		if name == "ex" {
			// ex is vim (or vi) started in Ex mode: it runs the Ex
			// commands of its standard input, -c and +CMD alike, and ex -s
			// <<< '!rm -f victim.txt' removed the file under Bash(ex:*)
			// with Bash(rm:*) denied (attack pass 91), as vim -es does
			return "Ex mode (ex)"
		}
		for i, a := range args {
			v := a.Value
			opt, val, hasVal := strings.Cut(v, "=")
			next := func() string {
				if hasVal {
					return val
				}
				if i+1 < len(args) {
					return args[i+1].Value
				}
				return ""
			}
			switch name {
			case "rg":
				if opt == "--pre" {
					return v
				}
			// getopt_long takes any unambiguous prefix of a long option:
			// sort --compress-prog=PROG ran PROG as --compress-program
			// does (attack pass 88), and man's --htm, --pag likewise
			case "sort":
				if len(opt) >= 4 && strings.HasPrefix("--compress-program", opt) {
					return v
				}
			case "less":
				// a lesskey source's #env section sets LESSOPEN, a
				// command less runs on each file, terminal or not: less
				// --lesskey-src=/dev/stdin FILE <<< '#env ... LESSOPEN=|rm
				// -f victim.txt %s' removed the file under Bash(less:*)
				// with Bash(rm:*) denied (attack pass 95; any prefix of
				// four letters, as less takes --lesskey-s). -k reads the
				// compiled form, which has the same section. A +CMD with
				// ! or | runs a shell command (on a terminal: less
				// $'+!rm -f victim.txt\n' FILE did)
				if len(opt) >= 6 && strings.HasPrefix(opt, "--") && (strings.HasPrefix("--lesskey-src", opt) || strings.HasPrefix("--lesskey-file", opt) || strings.HasPrefix("--lesskey-content", opt)) ||
					len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.IndexByte(v, 'k') > 0 ||
					v[0] == '+' && strings.ContainsAny(v, "!|") {
					return v
				}
			case "man":
				if opt == "-H" || opt == "-P" || strings.HasPrefix(v, "-H") && len(v) > 2 || strings.HasPrefix(v, "-P") && len(v) > 2 ||
					len(opt) >= 4 && strings.HasPrefix("--html", opt) || len(opt) >= 5 && strings.HasPrefix("--pager", opt) {
					return v
				}
			case "git":
				switch opt {
				case "--upload-pack", "--receive-pack", "--exec", "--config-env":
					return v
				case "-c":
					key, cval, _ := strings.Cut(next(), "=")
					if (gitExecKey(key) && !harmlessProgram(cval)) || strings.HasPrefix(cval, "!") {
						return "git -c " + key
					}
				}
				if strings.HasPrefix(opt, "--upload-pa") || strings.HasPrefix(opt, "--receive-pa") {
					return v // git accepts unambiguous abbreviations
				}
				// down to the shortest a command's other options leave
				// unambiguous: git fetch --upload='rm -f victim.txt; false'
				// ../src and --upl= ran rm under Bash(git:*) with Bash(rm:*)
				// denied (attack pass 88); an ambiguous one is refused by
				// git, so reading every prefix asks for nothing it runs
				if len(opt) >= 4 && (strings.HasPrefix("--upload-pack", opt) || strings.HasPrefix("--receive-pack", opt) || strings.HasPrefix("--exec", opt)) {
					return v
				}
			case "ssh", "scp", "sftp":
				if o, ok := sshOption(v, next); ok {
					if o = strings.ToLower(o); strings.HasPrefix(o, "proxycommand") || strings.HasPrefix(o, "localcommand") || strings.HasPrefix(o, "permitlocalcommand") {
						return v
					}
				}
			case "vi", "vim", "nvim", "view", "vimdiff", "gvim", "gview", "evim", "vimx", "nvi", "elvis",
				// Debian's names of vim's builds, and editor, its
				// alternative (editor -es <<< '!rm -f victim.txt' removed
				// the file where editor is vim: attack pass 91)
				"vim.basic", "vim.tiny", "vim.nox", "vim.gtk", "vim.gtk3", "vim.athena", "editor":
				if opt := vimExecOption(v); opt != "" {
					return opt
				}
			case "tar":
				switch opt {
				case "--to-command", "--use-compress-program", "-I", "--checkpoint-action", "--info-script", "--new-volume-script", "-F":
					return v
				}
			case "zip":
				if opt == "-TT" || opt == "--unzip-command" {
					return v
				}
			case "env":
				// getopt_long takes any prefix of --split-string (--s,
				// --split: env has no other long option in s)
				if opt == "-S" || len(opt) > 2 && strings.HasPrefix("--split-string", opt) || (strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "S")) {
					return v
				}
			}
		}
	}
	return ""
}

// gitSubExecOption finds the options of git subcommands that run a
// shell command given on the line: difftool -x/--extcmd, filter-branch's
// filters and --setup, send-email's --sendmail-cmd, --to-cmd, --cc-cmd,
// --header-cmd and an --smtp-server that is a path (a program), grep's
// -O/--open-files-in-pager with a value, clone's and ls-remote's -u
// (--upload-pack), instaweb's --httpd (-d) and daemon's --access-hook.
// Each ran rm under Bash(git:*) with Bash(rm:*) denied (attack pass 62).
// Abbreviations and bundles are read as widely as the parsers might
// (parse-options, Getopt::Long's single-dash long options): more
// candidates, never fewer.
func gitSubExecOption(args []Word) string {
	sub := -1
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		if !strings.HasPrefix(v, "-") {
			sub = i
			break
		}
		switch v {
		case "-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--list-cmds":
			i++ // the value is the next word
		}
	}
	if sub < 0 {
		return ""
	}
	name, rest := args[sub].Value, args[sub+1:]
	for i, a := range rest {
		v := a.Value
		if v == "--" {
			break
		}
		if len(v) < 2 || v[0] != '-' {
			continue
		}
		long := strings.HasPrefix(v, "--")
		opt, val, hasVal := strings.Cut(v, "=")
		next := val
		if !hasVal && i+1 < len(rest) {
			next = rest[i+1].Value
		}
		// abbrev: opt is full or an abbreviation of it (at least min
		// letters after the dashes).
		abbrev := func(full string, min int) bool {
			o := "--" + strings.TrimLeft(opt, "-")
			return o == full || len(o) >= 2+min && strings.HasPrefix(full, o)
		}
		short := func(letter byte) bool { return !long && strings.IndexByte(v[1:], letter) >= 0 }
		switch name {
		case "difftool":
			if abbrev("--extcmd", 2) || short('x') {
				return v
			}
		case "filter-branch":
			if strings.HasSuffix(opt, "-filter") || opt == "--setup" {
				return v
			}
		case "send-email":
			for _, o := range []string{"--sendmail-cmd", "--to-cmd", "--cc-cmd", "--header-cmd"} {
				if abbrev(o, 4) {
					return v
				}
			}
			if abbrev("--smtp-server", 6) && (strings.HasPrefix(next, "/") || strings.HasPrefix(next, "~")) {
				return v
			}
		case "grep":
			if long && abbrev("--open-files-in-pager", 2) && hasVal || !long && strings.IndexByte(v[1:len(v)-1], 'O') >= 0 {
				return v // -O alone runs the configured pager, -OCMD runs CMD
			}
		case "clone", "ls-remote":
			if short('u') {
				return v
			}
		case "instaweb":
			if abbrev("--httpd", 2) || short('d') {
				return v
			}
		case "daemon":
			if strings.HasPrefix(v, "--access-hook") {
				return v
			}
		}
	}
	return ""
}

// runnerExecOption finds the options of package managers and build tools
// that make them run a program of the caller's choosing, or read a
// configuration that can name one: npm's --script-shell (also via
// --userconfig, --globalconfig), --node-options (--require), --prefix
// (another package's scripts); go's -exec, -toolexec, -vettool, -C and an
// external linker in -ldflags; cargo's --config (target runners, rustc
// wrappers). Options after "--" (and go test's -args) are the program's.
func runnerExecOption(name string, args []Word) string {
	switch name {
	case "npm", "npx", "pnpm", "yarn":
		for _, a := range args {
			v := a.Value
			if v == "--" {
				return ""
			}
			if !strings.HasPrefix(v, "-") {
				continue
			}
			opt, _, _ := strings.Cut(strings.TrimLeft(v, "-"), "=")
			opt = strings.ReplaceAll(strings.ToLower(opt), "_", "-")
			if v == "-C" || strings.HasPrefix(v, "-C") && !strings.HasPrefix(v, "--") {
				return v // npm -C: --prefix
			}
			for _, risky := range []string{"script-shell", "shell", "node-options", "node-gyp", "userconfig",
				"globalconfig", "prefix", "editor", "browser", "git", "cwd", "dir", "rcfile", "use-node-version"} {
				// npm reads abbreviations of its options (nopt).
				if opt == risky || len(opt) >= 6 && strings.HasPrefix(risky, opt) && opt != "global" {
					return v
				}
			}
		}
	case "go":
		for _, a := range args {
			v := a.Value
			if v == "--" || v == "-args" || v == "--args" {
				return ""
			}
			if !strings.HasPrefix(v, "-") {
				continue
			}
			opt, val, _ := strings.Cut(strings.TrimLeft(v, "-"), "=")
			switch opt {
			case "exec", "toolexec", "vettool", "C", "overlay":
				return v
			case "ldflags":
				if strings.Contains(val, "extld") || strings.Contains(a.Value, "extld") {
					return v
				}
			}
		}
		for _, a := range args {
			if strings.Contains(a.Value, "-extld") {
				return a.Value // -ldflags "-extld=..." as the next word
			}
		}
	case "cargo":
		for _, a := range args {
			v := a.Value
			if v == "--" {
				return ""
			}
			if opt, _, _ := strings.Cut(v, "="); opt == "--config" || strings.HasPrefix(v, "-Z") || opt == "--manifest-path" {
				return v
			}
		}
	}
	return ""
}

// gitExecKey reports whether a git configuration key names a program or
// shell command that git runs, makes git read other configuration,
// attributes or hooks, or points its writes elsewhere (as
// runtime/gitguard's riskyKeys and riskySections).
func gitExecKey(key string) bool {
	k := strings.ToLower(key)
	switch k {
	case "core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "core.hookspath",
		"core.askpass", "core.gitproxy", "diff.external", "credential.helper", "gpg.program",
		"sequence.editor", "uploadpack.packobjectshook", "protocol.ext.allow", "init.templatedir",
		"include.path", "ssh.variant", "gpg.ssh.program", "gpg.x509.program", "merge.tool", "diff.tool",
		"core.alternaterefscommand", "core.attributesfile", "core.worktree", "diff.guitool", "merge.guitool",
		"interactive.difffilter", "gc.recentobjectshook", "commit.template", "lfs.standalonetransferagent":
		return true
	}
	sec, rest, _ := strings.Cut(k, ".")
	switch sec {
	case "include", "includeif", "filter", "credential", "gpg", "hook", "pager", "difftool", "mergetool",
		"sendemail", "web", "browser", "man", "instaweb", "guitool", "tar", "trace2":
		return true
	case "protocol": // protocol.allow, protocol.<name>.allow (ext:: runs a program)
		return strings.HasSuffix(rest, "allow")
	case "remote":
		for _, s := range []string{".uploadpack", ".receivepack", ".vcs", ".proxy"} {
			if strings.HasSuffix(rest, s) {
				return true
			}
		}
	case "lfs":
		if strings.HasPrefix(rest, "customtransfer.") || strings.HasPrefix(rest, "extension.") {
			return true
		}
	}
	return strings.HasPrefix(k, "alias.") || strings.HasSuffix(k, ".textconv") ||
		strings.HasSuffix(k, ".command") || strings.HasSuffix(k, ".cmd") ||
		strings.HasSuffix(k, ".helper") || strings.HasSuffix(k, ".driver")
}

// script is shell code found in a command's arguments.
type script struct {
	word Word
	what string // who runs it, for the reason
	// local: a shell on this machine runs it (always an objection).
	local bool
}

// nestedScripts finds the shell code a command hands to a shell.
func nestedScripts(c cmdRef) []script {
	var out []script
	all := c.sc.Args
	args := c.exec // execArgs(all)
	if len(args) == 0 {
		return nil
	}
	name := baseName(args[0].Value)
	switch {
	case shellNames[name]:
		if s, ok, dash := shellScriptArg(args); ok {
			out = append(out, script{s, name + " -c", true})
		} else if dash {
			out = append(out, script{Word{Raw: "-c"}, name + " -c without a literal script", true})
		} else if !hasOperand(args) {
			// The shell reads its commands from stdin.
			if body, ok := stdinBody(c.sc); ok {
				out = append(out, script{body, name + " reading a here-document", true})
			} else {
				out = append(out, script{Word{Raw: "stdin"}, name + " reading commands from its input", true})
			}
		}
	case name == "eval":
		out = append(out, script{joinWords(args[1:]), "eval", true})
	case name == "watch":
		exec := false
		var rest []Word
		for i := 1; i < len(args); i++ {
			v := args[i].Value
			if len(rest) == 0 && strings.HasPrefix(v, "-") {
				if v == "-x" || v == "--exec" {
					exec = true
				}
				if v == "-n" || v == "--interval" || v == "-d" || v == "-q" {
					i++
				}
				continue
			}
			rest = append(rest, args[i])
		}
		if !exec && len(rest) > 0 {
			out = append(out, script{joinWords(rest), "watch", false})
		}
	case name == "ssh":
		if rest := sshCommand(args); len(rest) > 0 {
			out = append(out, script{joinWords(rest), "ssh (remote shell)", false})
		}
	case name == "su" || name == "runuser" || name == "script" || name == "flock":
		for i := 1; i+1 < len(args); i++ {
			if v := args[i].Value; v == "-c" || v == "--command" {
				out = append(out, script{args[i+1], name + " -c", true})
			}
		}
	}
	// A shell anywhere later in the arguments: find -exec sh -c,
	// xargs bash -c, parallel, and so on.
	for i := len(all) - len(args) + 1; i < len(all); i++ {
		if !isShellBase(all[i].Value) {
			continue
		}
		if s, ok, dash := shellScriptArg(all[i:]); ok {
			out = append(out, script{s, baseName(all[i].Value) + " -c", true})
		} else if dash {
			out = append(out, script{Word{Raw: "-c"}, baseName(all[i].Value) + " -c without a literal script", true})
		}
	}
	return out
}

// shellScriptArg finds the -c script of a shell command line (args[0] is
// the shell). dash reports a -c option without a script found.
func shellScriptArg(args []Word) (w Word, ok, dash bool) {
	for i := 1; i < len(args); i++ {
		v := args[i].Value
		if !args[i].Static {
			if dash {
				return args[i], true, true
			}
			return Word{}, false, false
		}
		switch {
		case v == "--" || v == "-":
			if dash && i+1 < len(args) {
				return args[i+1], true, true
			}
			return Word{}, false, dash
		case v == "-o" || v == "+o" || v == "-O" || v == "+O" || v == "--rcfile" || v == "--init-file":
			i++
		case strings.HasPrefix(v, "--"):
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			if strings.ContainsRune(v[1:], 'c') {
				dash = true
			}
		default:
			if dash {
				return args[i], true, true
			}
			return Word{}, false, false
		}
	}
	return Word{}, false, dash
}

// hasOperand reports whether a shell command line names a script file.
func hasOperand(args []Word) bool {
	for i := 1; i < len(args); i++ {
		v := args[i].Value
		if v == "-o" || v == "+o" || v == "-O" || v == "+O" || v == "--rcfile" || v == "--init-file" {
			i++
			continue
		}
		if v == "-s" {
			return false // commands from stdin, the rest are arguments
		}
		if !strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "+") {
			return true
		}
	}
	return false
}

// stdinBody returns the here-document or here-string a command reads.
func stdinBody(sc *SimpleCommand) (Word, bool) {
	var body Word
	found := false
	for _, r := range sc.Redirects {
		if (r.Fd == "" || r.Fd == "0") && isHeredocOp(r.Op) {
			body, found = r.Body, true
		}
	}
	return body, found
}

func joinWords(ws []Word) Word {
	out := Word{Static: true}
	for i, w := range ws {
		if i > 0 {
			out.Raw += " "
			out.Value += " "
		}
		out.Raw += w.Raw
		out.Value += w.Value
		out.Static = out.Static && w.Static
	}
	return out
}

// sshCommand returns the remote command words of an ssh command line.
func sshCommand(args []Word) []Word {
	const valueOpts = "-B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -P -p -Q -R -S -W -w"
	i := 1
	for i < len(args) {
		v := args[i].Value
		if v == "--" {
			i++
			break
		}
		if !strings.HasPrefix(v, "-") || len(v) < 2 {
			break
		}
		if containsField(valueOpts, v) {
			i++
		}
		i++
	}
	if i >= len(args) { // no host
		return nil
	}
	return args[i+1:]
}

// nested analyses a script handed to a shell and objects when it cannot
// be seen, holds more than one command or a redirection, or is itself
// objectionable.
func (ctx *Context) nested(s script) policy.Decision {
	if s.local {
		return ask(fmt.Sprintf("%s runs a nested shell script %q: its commands are not matched against the rules one by one", s.what, s.word.Raw))
	}
	if !s.word.Static {
		return ask(fmt.Sprintf("%s runs a script that is not a literal: %q", s.what, s.word.Raw))
	}
	if ctx.depth >= maxNestedDepth {
		return ask(fmt.Sprintf("%s nests shells too deeply to analyse", s.what))
	}
	res := ctx.recurse(s.word.Value, ctx.depth+1)
	if res.Decision.Verdict == policy.Ask {
		return ask(fmt.Sprintf("%s runs a script that needs a check: %s", s.what, res.Decision.Reason))
	}
	if n := len(res.Parse.Commands); n > 1 {
		return ask(fmt.Sprintf("%s runs a script with shell metacharacters (%d commands): its commands cannot be matched one by one", s.what, n))
	}
	if n := len(res.Parse.Commands); n == 1 && len(res.Parse.Commands[0].Redirects) > 0 {
		return ask(fmt.Sprintf("%s runs a script with a redirection", s.what))
	}
	return pass()
}

// dangerousAssign reports whether assigning name (to value, when static)
// changes what programs run or how the shell reads code.
func dangerousAssign(name string, value Word) bool {
	switch name {
	case "IFS":
		return false // ifs_injection
	case "BASH_ENV", "ENV", "CDPATH", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND",
		"SHELLOPTS", "BASHOPTS", "GLOBIGNORE", "HISTFILE", "INPUTRC", "PATH", "FPATH", "ZDOTDIR",
		"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PERL5OPT", "PERL5LIB", "PERLLIB",
		"RUBYOPT", "RUBYLIB", "NODE_OPTIONS", "NODE_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
		"JDK_JAVA_OPTIONS", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_EXTERNAL_DIFF",
		"GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
		"GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "LESSOPEN", "LESSCLOSE", "GIT_TEMPLATE_DIR",
		"MAKEFLAGS", "NPM_CONFIG_SCRIPT_SHELL", "npm_config_script_shell", "PROMPT", "RPROMPT":
		return true
	case "LESSKEY", "LESSKEYIN", "LESSKEY_CONTENT", "LESSKEY_SYSTEM", "LESSKEYIN_SYSTEM":
		// a lesskey file or text whose #env sets LESSOPEN (attack pass 95)
		return true
	case "LESS":
		// less's options: -k, --lesskey-src and +CMD as on its command line
		return !value.Static || strings.ContainsAny(value.Value, "k+")
	case "PAGER", "GIT_PAGER", "MANPAGER", "EDITOR", "VISUAL", "GIT_EDITOR", "BROWSER", "GIT_SEQUENCE_EDITOR":
		// These name a program to run; a few plain values are harmless.
		return !value.Static || !harmlessProgram(value.Value)
	}
	return strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "DYLD_") ||
		strings.HasPrefix(name, "BASH_") || strings.HasPrefix(name, "GIT_CONFIG_KEY_") ||
		strings.HasPrefix(name, "GIT_CONFIG_VALUE_")
}

// isNameref reports a declaration builtin with -n (a nameref), or nameref.
func isNameref(sc *SimpleCommand) bool {
	if !sc.Decl || len(sc.Args) == 0 {
		return false
	}
	if sc.Args[0].Value == "nameref" {
		return true
	}
	if sc.Args[0].Value == "export" {
		return false // export -n un-exports
	}
	for _, a := range sc.Args[1:] {
		v := a.Value
		if len(v) > 1 && (v[0] == '-' || v[0] == '+') && !strings.HasPrefix(v, "--") && strings.ContainsRune(v, 'n') {
			return true
		}
	}
	return false
}

// harmlessProgram reports a pager or editor setting that runs nothing of
// the caller's choosing.
func harmlessProgram(v string) bool {
	switch v {
	case "", "cat", "less", "more", "true", "head", "tail", "less -R", "less -FRX":
		return true
	}
	return false
}

// dangerousRead are the variables whose mere expansion the seed flags.
func dangerousRead(name string) bool {
	return name == "BASH_ENV" || name == "ENV" || name == "CDPATH"
}

// assignments calls fn for every variable a command line sets: prefix
// assignments, declaration builtins, NAME=value arguments (env, sudo,
// make...) and the names given to read, mapfile, printf -v and getopts.
func (ctx *Context) assignments(fn func(name string, value Word) bool) bool {
	p := ctx.p
	if !p.assignsDone {
		p.assignList = ctx.appendAssignments(p.assignList[:0])
		p.assignsDone = true
	}
	for _, a := range p.assignList {
		if fn(a.name, a.value) {
			return true
		}
	}
	return false
}

// assignment is one variable a command line sets.
type assignment struct {
	name  string
	value Word
}

// appendAssignments appends to out what assignments reports, in order.
func (ctx *Context) appendAssignments(out []assignment) []assignment {
	for _, a := range ctx.p.facts.assigns {
		if a.Name == nil {
			continue
		}
		v := Word{Static: true}
		if a.Value != nil {
			v = ctx.p.word(a.Value)
		}
		out = append(out, assignment{a.Name.Value, v})
	}
	for _, c := range ctx.commands() {
		args := c.sc.Args
		for _, a := range args {
			if strings.HasPrefix(a.Value, "BASH_FUNC_") {
				// An exported function (env 'BASH_FUNC_ls%%=() { ...; }').
				out = append(out, assignment{"BASH_FUNC_", Word{Raw: a.Raw, Value: a.Raw}})
				continue
			}
			if a.Static && isAssignWord(a.Value) {
				name, val, _ := strings.Cut(a.Value, "=")
				out = append(out, assignment{name, Word{Raw: val, Value: val, Static: true}})
			} else if !a.Static {
				if name, _, ok := strings.Cut(a.Raw, "="); ok && isName(name) {
					out = append(out, assignment{name, Word{Raw: a.Raw, Value: a.Raw}})
				}
			}
		}
		if len(args) == 0 {
			continue
		}
		switch baseName(args[0].Value) {
		case "read", "mapfile", "readarray", "getopts", "declare", "typeset", "local", "export", "readonly":
			for _, a := range args[1:] {
				if isName(a.Value) {
					out = append(out, assignment{a.Value, Word{}})
				}
			}
		case "printf":
			for i := 1; i+1 < len(args); i++ {
				if args[i].Value == "-v" {
					out = append(out, assignment{args[i+1].Value, Word{}})
				}
			}
		}
	}
	return out
}

// 6 DANGEROUS_VARIABLES: setting variables that make the shell or other
// programs run code (BASH_ENV, ENV, PATH, LD_PRELOAD, PS4, PROMPT_COMMAND,
// GIT_SSH_COMMAND, ...), and expanding $BASH_ENV, $ENV or $CDPATH.
func validateDangerousVariables(ctx *Context) policy.Decision {
	for _, c := range ctx.commands() {
		if isNameref(c.sc) {
			return ask("a nameref (declare -n) makes an assignment to one variable set another")
		}
	}
	var found string
	if ctx.assignments(func(name string, v Word) bool {
		if dangerousAssign(name, v) {
			found = name
			return true
		}
		return false
	}) {
		return ask(fmt.Sprintf("the command sets %s, which changes what programs run or how code is read", found))
	}
	for _, pe := range ctx.p.facts.params {
		if pe.Param != nil && dangerousRead(pe.Param.Value) {
			return ask(fmt.Sprintf("the command expands $%s", pe.Param.Value))
		}
	}
	return pass()
}

// 7 NEWLINES: an unquoted newline that separates commands (a second
// command on another line is easy to miss in a prompt). Newlines inside
// quotes, here-documents and after &&, || or | are not separators.
func validateNewlines(ctx *Context) policy.Decision {
	if len(ctx.p.facts.newlineSeps) > 0 {
		return ask("an unquoted newline separates commands")
	}
	return pass()
}

// 8 DANGEROUS_PATTERNS (substitution): command substitution ($(...) and
// backquotes), process substitution (<(...), >(...)), arithmetic (which
// evaluates array subscripts, and so can run substitutions stored in
// variables) and parameter expansions that evaluate or assign (${!x},
// ${a[i]}, ${x:o:l}, ${x:=v}, ${x@P}). Unquoted here-document bodies are
// included; the literal $(cat <<'EOF' ... EOF) idiom is not.
func validateSubstitution(ctx *Context) policy.Decision {
	f := &ctx.p.facts
	for _, n := range f.substs {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			if n.Backquotes {
				return ask("backquote command substitution runs a hidden command")
			}
			return ask("command substitution $(...) runs a hidden command")
		case *syntax.ProcSubst:
			return ask("process substitution runs a hidden command")
		}
	}
	if len(f.ariths) > 0 {
		return ask("arithmetic evaluation can run commands through array subscripts")
	}
	for _, pe := range f.params {
		if reason := complexParam(pe); reason != "" {
			return ask(reason)
		}
	}
	return pass()
}

func complexParam(pe *syntax.ParamExp) string {
	switch {
	case pe.Excl || pe.Names != 0:
		return "indirect parameter expansion ${!...}"
	case pe.Index != nil:
		return "array subscript in a parameter expansion is evaluated as arithmetic"
	case pe.Slice != nil:
		return "substring expansion ${x:offset} evaluates arithmetic"
	case pe.Flags != nil || pe.NestedParam != nil || pe.Width || pe.IsSet || len(pe.Modifiers) > 0:
		return "parameter expansion the analysis does not support"
	case pe.Exp != nil:
		switch pe.Exp.Op {
		case syntax.AssignUnset, syntax.AssignUnsetOrNull:
			return "parameter expansion ${x=...} assigns a variable"
		case syntax.OtherParamOps:
			return "parameter transformation ${x@...} (prompt expansion can run commands)"
		}
	}
	return ""
}

// 9-10 DANGEROUS_PATTERNS (redirection to a sensitive or unknown path):
// a redirection whose file is not a literal, is absolute or under ~, goes
// up with "..", names a dot-file or dot-directory (.bashrc, .git/hooks,
// .claude/settings.json, .env) or a /dev/tcp socket. Unlike the plain
// redirections below, no allow rule for the command answers this: a rule
// for "echo" is not a licence to write ~/.bashrc.
func validateSensitiveRedirection(ctx *Context) policy.Decision {
	for _, c := range ctx.commands() {
		for _, r := range c.sc.Redirects {
			if isHeredocOp(r.Op) || ((r.Op == ">&" || r.Op == "<&") && isFdTarget(r.Target)) {
				continue
			}
			t := r.Target
			if isNetDevice(t) {
				return ask(fmt.Sprintf("redirection %s%s %s opens a network connection", r.Fd, r.Op, t.Raw))
			}
			if strings.HasPrefix(t.Raw, "!") || strings.HasPrefix(t.Raw, "|") {
				// zsh reads ">!" and ">|" ... as a clobbering redirection to
				// the next word; bash writes a file named "!".
				return ask(fmt.Sprintf("redirection %s%s %s: zsh reads it as an overwriting redirection to the next word", r.Fd, r.Op, t.Raw))
			}
			if reason := sensitivePath(t); reason != "" {
				return ask(fmt.Sprintf("redirection %s%s %s: %s", r.Fd, r.Op, t.Raw, reason))
			}
		}
	}
	return pass()
}

// sensitivePath explains why a redirection target is not a plain path
// below the working directory, or returns "".
func sensitivePath(t Word) string {
	if strings.HasPrefix(t.Raw, "~") {
		return "the path is in the home directory"
	}
	if !t.Static {
		return "the path is not a literal"
	}
	v := t.Value
	switch v {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin":
		return ""
	}
	switch {
	case v == "":
		return "the path is empty"
	case strings.HasPrefix(v, "/"):
		return "the path is absolute"
	case strings.HasPrefix(v, "~"):
		return "the path is in the home directory"
	}
	for _, part := range strings.Split(v, "/") {
		if part == ".." {
			return "the path leaves the working directory"
		}
		if strings.HasPrefix(part, ".") && part != "." {
			return "the path names a hidden file or directory"
		}
	}
	return ""
}

// 9 DANGEROUS_PATTERNS (input redirection): reading a file through < or
// <>. Here-documents, here-strings, </dev/null and fd duplication are fine.
func validateInputRedirection(ctx *Context) policy.Decision {
	for _, c := range ctx.commands() {
		for _, r := range c.sc.Redirects {
			t := r.Target
			switch r.Op {
			case "<":
				if t.Static && t.Value == "/dev/null" {
					continue
				}
				return ask(fmt.Sprintf("input redirection reads %s", t.Raw))
			case "<>":
				return ask(fmt.Sprintf("redirection <> opens %s for reading and writing", t.Raw))
			case "<&":
				if !isFdTarget(t) {
					return ask(fmt.Sprintf("input redirection reads %s", t.Raw))
				}
			}
		}
	}
	return pass()
}

// 10 DANGEROUS_PATTERNS (output redirection): writing to a file. Writing
// to /dev/null, /dev/stdout, /dev/stderr and fd duplication (2>&1) are
// fine.
func validateOutputRedirection(ctx *Context) policy.Decision {
	for _, c := range ctx.commands() {
		for _, r := range c.sc.Redirects {
			t := r.Target
			switch r.Op {
			case ">", ">>", ">|", "&>", "&>>":
				if t.Static && (t.Value == "/dev/null" || t.Value == "/dev/stdout" || t.Value == "/dev/stderr") {
					continue
				}
				return ask(fmt.Sprintf("output redirection writes to %s", t.Raw))
			case ">&":
				if !isFdTarget(t) {
					return ask(fmt.Sprintf("output redirection writes to %s", t.Raw))
				}
			}
		}
	}
	return pass()
}

func isFdTarget(t Word) bool {
	return t.Static && (t.Value == "-" || allDigits(t.Value) || (strings.HasSuffix(t.Value, "-") && allDigits(t.Value[:len(t.Value)-1])))
}

func isNetDevice(t Word) bool {
	return strings.Contains(t.Value, "/dev/tcp/") || strings.Contains(t.Value, "/dev/udp/")
}

// 11 IFS_INJECTION: setting IFS (in any form) or expanding it. IFS
// changes how every later unquoted expansion splits into words.
func validateIFS(ctx *Context) policy.Decision {
	if ctx.assignments(func(name string, _ Word) bool { return name == "IFS" }) {
		return ask("the command sets IFS, which changes how words are split")
	}
	for _, pe := range ctx.p.facts.params {
		if pe.Param != nil && pe.Param.Value == "IFS" {
			return ask("the command expands $IFS, which can stand in for spaces")
		}
	}
	return pass()
}

// gitCommitFlags are the git commit options the early allow accepts.
var gitCommitFlags = map[string]bool{
	"-a": true, "--all": true, "-s": true, "--signoff": true, "-q": true, "--quiet": true,
	"-v": true, "--verbose": true, "--allow-empty": true, "--allow-empty-message": true,
	"--no-verify": true, "-n": true, "--amend": true, "--no-edit": true, "--no-gpg-sign": true,
	"--dry-run": true, "--status": true, "--no-status": true, "--short": true, "--branch": true,
	"--porcelain": true, "--long": true,
}

// 12 GIT_COMMIT_SUBSTITUTION: the early allow for "git commit -m <literal
// message>". The whole command must be that one git commit, every word
// static (the message may come from "$(cat <<'EOF' ... EOF)"), the flags
// from a short list (no -c, no --template, no -F, no gpg), no pathspecs,
// no redirection, no comment, and the text free of control and invisible
// characters. Unquoted message text is limited to characters no shell
// (bash or zsh) expands.
func validateGitCommit(ctx *Context) policy.Decision {
	f := &ctx.p.facts
	cmds := ctx.commands()
	if len(cmds) != 1 || len(f.comments) > 0 || len(f.substs) > 0 || len(f.ariths) > 0 ||
		len(f.params) > 0 || len(f.ansiQuotes) > 0 || len(f.newlineSeps) > 0 {
		return pass()
	}
	c := cmds[0]
	sc := c.sc
	if sc.Negated || sc.Decl || len(sc.Assigns) > 0 || len(sc.Redirects) > 0 || !sc.Static() {
		return pass()
	}
	if unusualChar(ctx.Command) != "" {
		return pass()
	}
	args := sc.Args
	if len(args) < 3 || args[0].Raw != "git" || args[1].Raw != "commit" {
		return pass()
	}
	msg := false
	for i := 2; i < len(args); i++ {
		a := args[i]
		v := a.Value
		switch {
		case (v == "-m" || v == "--message") && a.Raw == v:
			i++
			if i >= len(args) || !commitMessageOK(c.ast.args[i], args[i]) {
				return pass()
			}
			msg = true
		case gitCommitFlags[v] && a.Raw == v:
		case isCommitCluster(v) && a.Raw == v:
			if strings.HasSuffix(v, "m") {
				i++
				if i >= len(args) || !commitMessageOK(c.ast.args[i], args[i]) {
					return pass()
				}
				msg = true
			}
		default:
			return pass()
		}
	}
	if !msg {
		return pass()
	}
	return allow("git commit with a literal message")
}

func isCommitCluster(v string) bool {
	if len(v) < 3 || v[0] != '-' || v[1] == '-' {
		return false
	}
	for i := 1; i < len(v); i++ {
		if !strings.ContainsRune("asqvn", rune(v[i])) && !(v[i] == 'm' && i == len(v)-1) {
			return false
		}
	}
	return true
}

// commitMessageOK accepts a static message whose unquoted text holds only
// characters that neither bash nor zsh expands, and which does not start
// with a dash or '='.
func commitMessageOK(w *syntax.Word, val Word) bool {
	if w == nil || !val.Static || strings.HasPrefix(val.Value, "-") {
		return false
	}
	ok := true
	litParts(w, func(l *syntax.Lit, first bool) {
		for i := 0; i < len(l.Value); i++ {
			c := l.Value[i]
			if !(isLetter(c) || (c >= '0' && c <= '9') || strings.IndexByte("._,:/@%+-", c) >= 0 || (c == '=' && !(first && i == 0))) {
				ok = false
			}
		}
	})
	return ok
}

// 13 PROC_ENVIRON_ACCESS: /proc/<pid>/environ holds the environment of a
// process (tokens, keys). Any mention of "environ" together with "proc",
// and any /proc path that is not a literal (globs, variables), asks.
func validateProcEnviron(ctx *Context) policy.Decision {
	v := ctx.Views
	if strings.Contains(v.Original, "environ") && strings.Contains(v.Original, "proc") {
		return ask("the command mentions a /proc/*/environ file, which holds a process's secrets")
	}
	for _, c := range ctx.commands() {
		for _, a := range c.sc.Args {
			if !a.Static && (strings.Contains(a.Raw, "/proc/") || strings.Contains(a.Raw, "proc/")) {
				return ask(fmt.Sprintf("the /proc path %q is not a literal", a.Raw))
			}
		}
		for _, r := range c.sc.Redirects {
			if !r.Target.Static && strings.Contains(r.Target.Raw, "proc/") {
				return ask(fmt.Sprintf("the /proc path %q is not a literal", r.Target.Raw))
			}
		}
	}
	return pass()
}

// 14 TOKEN (malformed tokens): unbalanced braces in unquoted text and
// backslash-escaped quotes outside quotes, which make naive tokenizers
// (and readers) pair quotes and braces differently from bash.
func validateMalformedTokens(ctx *Context) policy.Decision {
	for k, w := range ctx.p.facts.words {
		if ctx.p.facts.wordLits[k]&(litBackslash|litBrace) == 0 {
			continue // no escaped quote, no brace
		}
		depth, bad, escQuote := 0, false, false
		litParts(w, func(l *syntax.Lit, _ bool) {
			v := l.Value
			for i := 0; i < len(v); i++ {
				switch v[i] {
				case '\\':
					if i+1 < len(v) && (v[i+1] == '\'' || v[i+1] == '"') {
						escQuote = true
					}
					i++
				case '{':
					depth++
				case '}':
					depth--
					if depth < 0 {
						bad = true
					}
				}
			}
		})
		if escQuote {
			return ask(fmt.Sprintf("the word %q holds a backslash-escaped quote outside quotes", ctx.p.text(w)))
		}
		if bad || depth != 0 {
			return ask(fmt.Sprintf("the word %q has unbalanced braces", ctx.p.text(w)))
		}
	}
	return pass()
}

// 15 BACKSLASH (escaped whitespace): "\ " or "\<tab>" outside quotes
// joins what looks like two words into one; a line continuation inside a
// word joins two lines into one word.
func validateBackslashWhitespace(ctx *Context) policy.Decision {
	for k, w := range ctx.p.facts.words {
		found := false
		if ctx.p.facts.wordLits[k]&litBackslash != 0 {
			litParts(w, func(l *syntax.Lit, _ bool) {
				v := l.Value
				for i := 0; i+1 < len(v); i++ {
					if v[i] == '\\' {
						if v[i+1] == ' ' || v[i+1] == '\t' {
							found = true
						}
						i++
					}
				}
			})
		}
		if found {
			return ask(fmt.Sprintf("the word %q holds backslash-escaped whitespace", ctx.p.text(w)))
		}
		if strings.Contains(ctx.p.text(w), "\\\n") {
			return ask(fmt.Sprintf("a line continuation splits the word %q", ctx.p.text(w)))
		}
	}
	return pass()
}

// anyLits reports whether some word's lit* bits have one of bits.
func anyLits(wordLits []byte, bits byte) bool {
	for _, b := range wordLits {
		if b&bits != 0 {
			return true
		}
	}
	return false
}

// 16 BRACE (brace expansion): {a,b} and {1..9} turn one word into
// several (or into flags) that the prompt does not show.
func validateBraceExpansion(ctx *Context) policy.Decision {
	var buf [256]byte
	for _, w := range ctx.p.facts.words {
		if shellword.BraceExpands(shellword.AppendShape(buf[:0], w)) {
			return ask(fmt.Sprintf("brace expansion in %q produces words that are not shown", ctx.p.text(w)))
		}
	}
	return pass()
}

// 17 CONTROL (control characters): C0 and C1 control characters other
// than tab and newline (NUL and CR are refused by the parse already).
// They can rewrite what a terminal shows.
func validateControlCharacters(ctx *Context) policy.Decision {
	s := ctx.Command
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
			return ask(fmt.Sprintf("the command contains the control character %#02x", c))
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r >= 0x80 && r <= 0x9f {
				return ask(fmt.Sprintf("the command contains the control character U+%04X", r))
			}
			i += n - 1
		}
	}
	return pass()
}

// unusualChar returns a description of the first control, invisible or
// non-ASCII whitespace character of s, or "".
func unusualChar(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f {
			return fmt.Sprintf("%#02x", c)
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if invisibleRune(r) || (r >= 0x80 && r <= 0x9f) {
				return fmt.Sprintf("U+%04X", r)
			}
			i += n - 1
		}
	}
	return ""
}

// invisibleRune covers non-ASCII whitespace, format characters (zero
// width, bidi controls, soft hyphen, BOM) and blank-looking letters.
func invisibleRune(r rune) bool {
	if r < 0x80 {
		return false
	}
	if unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) {
		return true
	}
	switch r {
	case 0x180E, 0x2800, 0x3164, 0x115F, 0x1160, 0xFFA0, 0x034F, 0x17B4, 0x17B5:
		return true
	}
	return false
}

// 18 UNICODE (non-ASCII whitespace): characters that look like a space or
// like nothing (NBSP, zero-width, bidi overrides): what the user reads is
// not what runs.
func validateUnicodeWhitespace(ctx *Context) policy.Decision {
	s := ctx.Command
	for i := 0; i < len(s); i++ {
		if s[i] < utf8.RuneSelf {
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if invisibleRune(r) {
			return ask(fmt.Sprintf("the command contains the invisible or non-ASCII whitespace character U+%04X", r))
		}
		i += n - 1
	}
	return pass()
}

// 19 HASH (mid-word #): a '#' inside a word is literal for bash but
// starts a comment for some tokenizers (and readers).
func validateMidWordHash(ctx *Context) policy.Decision {
	if !anyLits(ctx.p.facts.wordLits, litHash) {
		return pass()
	}
	assignVals := map[*syntax.Word]bool{}
	for _, a := range ctx.p.facts.assigns {
		if a.Value != nil && a.Name != nil {
			assignVals[a.Value] = true
		}
	}
	for _, w := range ctx.p.facts.words {
		found := false
		midWord := assignVals[w]
		for i, part := range w.Parts {
			l, ok := part.(*syntax.Lit)
			if !ok {
				continue
			}
			v := l.Value
			for j := 0; j < len(v); j++ {
				if v[j] == '\\' {
					j++
					continue
				}
				if v[j] == '#' && (midWord || i > 0 || j > 0) {
					found = true
				}
			}
		}
		if found {
			return ask(fmt.Sprintf("the word %q has a '#' inside it", ctx.p.text(w)))
		}
	}
	return pass()
}

// zshDangerous are zsh builtins (and module commands) that load code,
// open files or sockets, or run commands later; plus bash's enable, which
// loads builtins from shared objects.
var zshDangerous = map[string]bool{
	"zmodload": true, "emulate": true, "sysopen": true, "sysread": true, "syswrite": true,
	"sysseek": true, "zpty": true, "ztcp": true, "zsocket": true, "zselect": true, "zsystem": true,
	"sched": true, "fc": true, "autoload": true, "zcompile": true, "zle": true, "zstyle": true,
	"enable": true, "disable": true, "functions": true, "zcurses": true,
}

// 20 ZSH (dangerous builtins, =cmd): zsh builtins that reach files,
// sockets or modules; zsh's "=cmd" expansion (a word starting with '=' is
// replaced by the path of cmd, so "=curl" runs curl under another name);
// precommand modifiers (command, builtin, exec, noglob, repeat N ...) that
// hide the program from rule matching; and a literal '$' that zsh may
// expand where bash does not.
func validateZsh(ctx *Context) policy.Decision {
	for _, c := range ctx.commands() {
		if m := precommandModifier(c.sc.Args); m != "" {
			return ask(fmt.Sprintf("%s runs another command: rules match %q, not the command it runs", m, m))
		}
		args := c.sc.Args
		for len(args) > 0 {
			n := baseName(args[0].Value)
			if n != "builtin" && n != "command" && n != "exec" && n != "noglob" && n != "nocorrect" && n != "-" {
				break
			}
			args = args[1:]
			for len(args) > 0 && strings.HasPrefix(args[0].Value, "-") && args[0].Value != "-" {
				args = args[1:]
			}
		}
		if len(args) == 0 {
			continue
		}
		n := args[0].Value
		if zshDangerous[n] || strings.HasPrefix(n, "zf_") {
			return ask(fmt.Sprintf("%s is a shell builtin that can load code or open files and sockets", n))
		}
	}
	for k, w := range ctx.p.facts.words {
		if l, ok := w.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(l.Value, "=") {
			if raw := ctx.p.text(w); len(raw) > 1 && raw != "==" {
				return ask(fmt.Sprintf("zsh expands the word %q (=cmd) to a program's path", raw))
			}
		}
		if ctx.p.facts.wordLits[k]&litDollar == 0 {
			continue
		}
		dollar := false
		litParts(w, func(l *syntax.Lit, _ bool) {
			v := l.Value
			for i := 0; i < len(v); i++ {
				if v[i] == '\\' {
					i++
				} else if v[i] == '$' {
					dollar = true
				}
			}
		})
		if dollar {
			return ask(fmt.Sprintf("the word %q holds a literal '$' that zsh may expand", ctx.p.text(w)))
		}
	}
	return pass()
}

// precommandModifier returns the modifier (bash's command, builtin and
// exec; zsh's noglob, nocorrect, repeat and "-") when a command runs
// another one through it, or "". "command -v x" only looks x up.
func precommandModifier(args []Word) string {
	if len(args) < 2 {
		return ""
	}
	switch m := args[0].Value; m {
	case "command":
		for _, a := range args[1:] {
			if a.Value == "-v" || a.Value == "-V" {
				return ""
			}
			if !strings.HasPrefix(a.Value, "-") {
				break
			}
		}
		return m
	case "builtin", "exec", "noglob", "nocorrect", "repeat", "-":
		return m
	}
	return ""
}

// 21 BACKSLASH (escaped operators): \; \| \& \< \> outside quotes look
// like operators to a reader (and to naive splitters) but are literal.
// find's "-exec ... \;" terminator is the one accepted use.
func validateBackslashOperators(ctx *Context) policy.Decision {
	if !anyLits(ctx.p.facts.wordLits, litBackslash) {
		return pass()
	}
	ok := map[*syntax.Word]bool{}
	for _, c := range ctx.commands() {
		exec := false
		for i, a := range c.sc.Args {
			switch a.Value {
			case "-exec", "-execdir", "-ok", "-okdir":
				exec = true
			case ";":
				if exec && a.Raw == `\;` && c.ast.args[i] != nil {
					ok[c.ast.args[i]] = true
					exec = false
				}
			}
		}
	}
	for k, w := range ctx.p.facts.words {
		if ok[w] || ctx.p.facts.wordLits[k]&litBackslash == 0 {
			continue
		}
		found := byte(0)
		litParts(w, func(l *syntax.Lit, _ bool) {
			v := l.Value
			for i := 0; i+1 < len(v); i++ {
				if v[i] == '\\' {
					if strings.IndexByte(";|&<>", v[i+1]) >= 0 && found == 0 {
						found = v[i+1]
					}
					i++
				}
			}
		})
		if found != 0 {
			return ask(fmt.Sprintf("the word %q holds an escaped operator \\%c", ctx.p.text(w), found))
		}
	}
	return pass()
}

// 22 COMMENT (comment/quote desync): a comment holding a quote character
// or ending with a backslash. A reader (or a tokenizer) that misses the
// comment pairs the quote with a later one and misreads what follows.
func validateCommentQuoteDesync(ctx *Context) policy.Decision {
	for _, c := range ctx.p.facts.comments {
		if strings.ContainsAny(c.Text, "'\"`") {
			return ask("a comment holds a quote character, which can desynchronise quote tracking")
		}
		if strings.HasSuffix(c.Text, `\`) {
			return ask("a comment ends with a backslash, which some readers take as a line continuation")
		}
	}
	return pass()
}

// 23 QUOTED (quoted newline): a quoted string with a line that starts
// with '#'. Line-based readers take that line for a comment and skip it,
// while it is part of an argument.
func validateQuotedNewline(ctx *Context) policy.Decision {
	for _, q := range ctx.p.facts.quoted {
		for rest := q; ; {
			i := strings.IndexByte(rest, '\n')
			if i < 0 {
				break
			}
			rest = rest[i+1:]
			if strings.HasPrefix(strings.TrimLeft(rest, " \t"), "#") {
				return ask("a quoted string has a line starting with '#', which line-based readers skip as a comment")
			}
		}
	}
	return pass()
}

// sshOption returns the value of ssh's -o in word v: -oKEY=VALUE, -o and
// the next word, and -o after the options of a bundle that take no
// value (ssh -vo ProxyCommand=CMD, -4oProxyCommand=CMD ran CMD under
// Bash(ssh:*) with Bash(rm:*) denied: attack pass 88).
func sshOption(v string, next func() string) (string, bool) {
	if len(v) < 2 || v[0] != '-' || v[1] == '-' {
		return "", false
	}
	for k := 1; k < len(v); k++ {
		c := v[k]
		if c == 'o' {
			if k+1 < len(v) {
				return v[k+1:], true
			}
			return next(), true
		}
		// ssh's, scp's and sftp's options that take no value
		if !strings.ContainsRune("46AaCfGgKkMNnqsTtVvXxYyBdprR3", rune(c)) {
			return "", false
		}
	}
	return "", false
}

// vimExecOption reports the options of vi and its kin that run editor
// commands given on the line or in a file, and so shell commands (:!cmd,
// system()): -c CMD, +CMD (not +N or +/pattern), --cmd CMD, -S FILE, -s
// FILE (typed-in keys), -u FILE (a vimrc), and Ex mode (-e, -E, -es),
// which reads its commands from standard input. Under Bash(vim:*) with
// Bash(rm:*) denied, vim -es -c '!rm -f victim.txt' -c q removed the file
// (attack pass 88), as busybox vi -c did.
func vimExecOption(v string) string {
	switch {
	case v == "-c" || v == "--cmd" || v == "-S" || v == "-s":
		return v
	case strings.HasPrefix(v, "-c") || strings.HasPrefix(v, "--cmd="):
		return v
	case v == "-u" || v == "-U":
		return v
	case strings.HasPrefix(v, "+") && len(v) > 1:
		if rest := v[1:]; strings.Trim(rest, "0123456789") != "" && rest[0] != '/' && rest[0] != '?' {
			return v
		}
	case len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.ContainsAny(v[1:], "eE"):
		return v // Ex mode
	}
	return ""
}
