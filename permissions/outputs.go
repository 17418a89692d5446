package permissions

import "strings"

// Output files named by options and operands (sort -o FILE, git log
// --output=FILE, find -fprint FILE, uniq IN OUT, xxd IN OUT, tree -o
// FILE) are writes whether or not the command is otherwise read-only, so
// that the path constraints check them under allow rules too, as they do
// tee's operands and sed's w files. They are found by a scan of their own
// that reads every word that may be such an option as one: a value that
// only looks like an output option makes one more path checked, never one
// less.

// outSpec says where a command names the files it writes.
type outSpec struct {
	outShort string   // short options whose value is written ("o")
	valShort string   // other short options that take a value (they end a bundle)
	outLong  []string // long options whose value is written (abbreviations too)
	valLong  []string // other long options that take a value (for the operands)
	// minAbbrev: the shortest abbreviation of an outLong option taken as
	// that option ("--o" for sort's getopt_long).
	minAbbrev int
	// valuesFollow: each value option of a bundle takes the next word in
	// turn (tree).
	valuesFollow bool
	// outOperand: operands from this one on (1-based) are written (uniq
	// IN OUT); 0: none.
	outOperand int
}

var outSpecs = lazy[map[string]outSpec]{make: func() map[string]outSpec {
	return map[string]outSpec{
		"sort": {outShort: "o", valShort: "kStT", outLong: []string{"--output"}, minAbbrev: 3},
		"tree": {outShort: "o", valShort: "LPIHT", valuesFollow: true},
		"uniq": {valShort: "fsw", valLong: []string{"--skip-fields", "--skip-chars", "--check-chars"}, outOperand: 2},
		// less -o/-O FILE and --log-file/--LOG-FILE copy piped input to
		// FILE (found by an attack pass: cat x | less -o .git/config).
		"less": {outShort: "oO", valShort: "bhjkpPtTxyzD#", outLong: []string{"--log-file", "--LOG-FILE"}, minAbbrev: len("--log-")},
	}
}}

// outputPaths returns the files a command writes through its options or
// operands, as far as outSpecs, git, find and xxd say, and why they cannot
// all be named ("" when they can).
func outputPaths(name string, args []string) (out []string, unsure string) {
	if f, ok := toolOutputs.get()[name]; ok {
		return f(args)
	}
	switch name {
	case "git":
		return gitOutputs(args)
	case "find":
		for i := 0; i+1 < len(args); i++ {
			switch args[i] {
			case "-fprint", "-fprint0", "-fprintf", "-fls":
				out = append(out, args[i+1])
			}
		}
		return out, ""
	case "awk", "gawk", "mawk", "nawk":
		return awkOutputs(args)
	case "xxd":
		pos, ok := xxdOperands(args)
		if !ok {
			return nil, "xxd: an option is not known, so its output file cannot be named"
		}
		if len(pos) >= 2 {
			for _, i := range pos[1:] {
				if args[i] != "-" {
					out = append(out, args[i])
				}
			}
		}
		return out, ""
	}
	spec, ok := outSpecs.get()[name]
	if !ok {
		return nil, ""
	}
	return scanOutputs(args, spec), ""
}

// scanOutputs finds the files written by the options and operands of
// spec in args.
func scanOutputs(args []string, spec outSpec) []string {
	var out []string
	operands := 0
	operand := func(w string) {
		operands++
		if spec.outOperand > 0 && operands >= spec.outOperand && w != "-" {
			out = append(out, w)
		}
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "--":
			for _, o := range args[i+1:] {
				operand(o)
			}
			return out
		case len(w) < 2 || w[0] != '-':
			operand(w)
		case strings.HasPrefix(w, "--"):
			name, val, hasVal := strings.Cut(w, "=")
			if isAbbrev(name, spec.outLong, spec.minAbbrev) {
				switch {
				case hasVal:
					out = append(out, val)
				case i+1 < len(args):
					out = append(out, args[i+1])
				}
				// The next word is still read: it may be an option.
				continue
			}
			if !hasVal && isAbbrev(name, spec.valLong, 3) && i+1 < len(args) {
				i++ // its value is not an operand
			}
		default:
			next := i + 1 // the word the next value option of the bundle takes
			for j := 1; j < len(w); j++ {
				c := w[j]
				switch {
				case strings.IndexByte(spec.outShort, c) >= 0:
					switch {
					case !spec.valuesFollow && j+1 < len(w):
						out = append(out, w[j+1:])
					case next < len(args):
						out = append(out, args[next])
					}
					if !spec.valuesFollow {
						j = len(w)
					}
					next++
				case strings.IndexByte(spec.valShort, c) >= 0:
					if spec.valuesFollow {
						next++
						continue
					}
					if j+1 == len(w) && spec.outOperand > 0 && i+1 < len(args) {
						i++ // its value is not an operand
					}
					j = len(w) // the rest of the word is its value
				}
			}
		}
	}
	return out
}

// isAbbrev reports whether name is one of longs or an abbreviation of one
// at least min characters long.
func isAbbrev(name string, longs []string, min int) bool {
	for _, l := range longs {
		if name == l || len(name) >= min && strings.HasPrefix(l, name) {
			return true
		}
	}
	return false
}

// gitOutputs finds the files a git command writes through --output (the
// diff and log family, format-patch, range-diff) and through format-patch
// and archive's -o, whatever the subcommand.
func gitOutputs(args []string) ([]string, string) {
	out, unsure := gitOutputsHere(args)
	if unsure != "" {
		return nil, unsure
	}
	// git -C DIR writes a relative output path in DIR (git -C .git log
	// --output=config wrote .git/config: found by an attack pass).
	base := ""
	for i := 0; i+1 < len(args); i++ {
		w := args[i]
		if !strings.HasPrefix(w, "-") {
			break // the subcommand
		}
		switch w {
		case "-C":
			base = joinDir(base, args[i+1])
			i++
		case "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix", "--list-cmds", "--attr-source":
			i++ // a global option with a value
		}
	}
	if base == "" {
		return out, ""
	}
	for i, o := range out {
		if !strings.HasPrefix(o, "/") {
			out[i] = joinDir(base, o)
		}
	}
	return out, ""
}

// joinDir is dir/p, p when it is absolute.
func joinDir(dir, p string) string {
	if dir == "" || strings.HasPrefix(p, "/") {
		return p
	}
	return strings.TrimSuffix(dir, "/") + "/" + p
}

func gitOutputsHere(args []string) ([]string, string) {
	sub := ""
	subArgs := args
	if s := gitStripGlobals(append([]string{"git"}, args...)); s != nil && len(s) > 1 {
		sub, subArgs = s[1], s[2:]
	} else if len(args) > 0 {
		sub, subArgs = args[0], args[1:]
	}
	out, unsure := gitSubOutputs(sub, subArgs)
	if unsure != "" {
		return nil, unsure
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w == "--" {
			break
		}
		name, val, hasVal := strings.Cut(w, "=")
		if strings.HasPrefix(name, "--output-indicator-") {
			continue
		}
		value := func() {
			switch {
			case hasVal:
				out = append(out, val)
			case i+1 < len(args):
				out = append(out, args[i+1])
			}
		}
		switch {
		case isAbbrev(name, []string{"--output", "--output-directory"}, len("--o")):
			value()
		case (sub == "format-patch" || sub == "archive") && len(w) > 1 && w[0] == '-' && w[1] != '-':
			if j := strings.IndexByte(w, 'o'); j > 0 {
				if j+1 < len(w) {
					out = append(out, w[j+1:])
				} else if i+1 < len(args) {
					out = append(out, args[i+1])
				}
			}
		}
	}
	return out, ""
}

// xxdOperands reads xxd's arguments as xxd does, and returns the indexes
// of its operands: options end at the first operand (every word after it
// is an operand, the second being the file written); an option is known
// by its first two characters (-ps and -pc are -p, "--cols" is "-cols");
// -c, -g, -l, -n, -o and -s take a value attached or, when the word is
// the bare letter or its long name ("-c", "-cols"), the next word; -R
// takes the next word. ok is false for an option xxd does not know.
func xxdOperands(args []string) (pos []int, ok bool) {
	i := 0
	for ; i < len(args); i++ {
		w := args[i]
		pp := w
		if strings.HasPrefix(w, "--") && len(w) > 2 {
			pp = w[1:]
		}
		if pp == "--" {
			i++
			break
		}
		if len(pp) < 2 || pp[0] != '-' {
			break // an operand ("-" is standard input)
		}
		long := ""
		switch pp[1] {
		case 'a', 'b', 'C', 'd', 'e', 'E', 'h', 'i', 'p', 'r', 'u', 'v':
			continue
		case 'c':
			if strings.HasPrefix(pp[2:], "apitalize") {
				continue
			}
			long = "ols"
		case 'g':
			long = "roup"
		case 'l':
			long = "en"
		case 'n':
			long = "ame"
		case 'o':
			long = "ffset"
		case 's':
			long = "eek"
		case 'R':
			i++
			continue
		default:
			return nil, false
		}
		if pp[2:] == "" || strings.HasPrefix(pp[2:], long) {
			i++ // the value is the next word
		}
	}
	for ; i < len(args); i++ {
		pos = append(pos, i)
	}
	return pos, true
}

// analyzeXxd handles xxd: read-only with one operand at most (the file
// read); a second operand is written.
func analyzeXxd(a *analysis, args []string) {
	pos, ok := xxdOperands(args)
	if !ok {
		a.notReadOnly("xxd: an option is not known")
		return
	}
	if len(pos) > 2 || len(pos) == 2 && args[pos[1]] != "-" {
		a.notReadOnly("xxd writes its second operand")
		return
	}
	if len(pos) > 0 {
		a.reads = append(a.reads, args[pos[0]])
	}
}

// awkOutputs finds what an awk command's options and program write: gawk's
// -d, -o and -p with a file attached (--dump-variables, --pretty-print,
// --profile), and the literal files of the program's output redirections
// (print > "file"). What cannot be named asks: a program read from a file
// (-f, -E, --file, --exec), extensions and includes (-l, -i, -W), and a
// program that runs commands (system, pipes, gawk's @name() indirect
// calls), redirects to a file that is not a literal or uses ARGV (the
// files it reads).
func awkOutputs(args []string) (out []string, unsure string) {
	var progs []string
	fromOption := false // -e, --source: no program operand
	i := 0
	value := func(attached string, hasVal bool) string {
		if hasVal {
			return attached
		}
		if i+1 < len(args) {
			i++
			return args[i]
		}
		return ""
	}
	for ; i < len(args); i++ {
		w := args[i]
		if w == "--" {
			i++
			break
		}
		if len(w) < 2 || w[0] != '-' {
			break
		}
		if strings.HasPrefix(w, "--") {
			name, val, hasVal := strings.Cut(w, "=")
			switch {
			case isAbbrev(name, []string{"--file", "--exec"}, 3):
				return out, "awk reads its program from a file, which cannot be checked"
			case isAbbrev(name, []string{"--include", "--load"}, 3):
				return out, "awk " + name + " loads code from a file"
			case isAbbrev(name, []string{"--source"}, 3):
				progs = append(progs, value(val, hasVal))
				fromOption = true
			case isAbbrev(name, []string{"--dump-variables", "--pretty-print", "--profile"}, 3):
				if hasVal && val != "" {
					out = append(out, val)
				}
			case isAbbrev(name, []string{"--field-separator", "--assign"}, 3):
				value(val, hasVal)
			case !hasVal && i+1 < len(args):
				// An option unknown here may take the next word: check
				// that word as a program too.
				progs = append(progs, args[i+1])
			}
			continue
		}
	letters:
		for j := 1; j < len(w); j++ {
			rest, hasRest := w[j+1:], j+1 < len(w)
			switch w[j] {
			case 'f', 'E':
				return out, "awk reads its program from a file, which cannot be checked"
			case 'i', 'l', 'W':
				return out, "awk -" + string(w[j]) + " loads code or changes how the program is read"
			case 'e':
				progs = append(progs, value(rest, hasRest))
				fromOption = true
				break letters
			case 'F', 'v', 'm', 'Z':
				value(rest, hasRest)
				break letters
			case 'd', 'o', 'p':
				if hasRest {
					out = append(out, rest)
				}
				break letters
			case 'D', 'L':
				break letters
			}
		}
	}
	if !fromOption && i < len(args) {
		progs = append(progs, args[i])
	}
	for _, p := range progs {
		w, why := awkProgramOutputs(p)
		out = append(out, w...)
		if why != "" && unsure == "" {
			unsure = why
		}
	}
	return out, unsure
}

// awkProgramOutputs reads an awk program's output redirections: every '>'
// after the first print or printf must be "> \"file\"" or ">> \"file\""
// ending the statement, and the file is returned; any other '>' there
// (a comparison, a computed file name) gives a reason to ask. A '|' that
// pipes (after a print, before getline, or |&), system() and gawk's
// @name indirect calls give a reason too. The scan does not tell strings
// and regular expressions from code, so it only errs towards asking.
func awkProgramOutputs(prog string) (out []string, why string) {
	if containsIdent(prog, "system") {
		return nil, "awk program runs commands (system)"
	}
	if awkIndirectCall(prog) {
		return nil, "awk program calls a function by name (@name), which may be system"
	}
	// The files awk reads are ARGV's elements when its main rules start:
	// a program that stores into ARGV (or reaches it through gawk's
	// SYMTAB) reads files the path checks cannot name, under an allow
	// rule too.
	if containsIdent(prog, "ARGV") || containsIdent(prog, "SYMTAB") {
		return nil, "awk program uses ARGV, which can name files to read that cannot be checked"
	}
	first := len(prog)
	for _, kw := range []string{"print", "printf"} {
		if k := identIndex(prog, kw); k >= 0 && k < first {
			first = k
		}
	}
	for k := 0; k < len(prog); k++ {
		switch prog[k] {
		case '|':
			if k+1 < len(prog) && prog[k+1] == '|' {
				k++
				continue
			}
			rest := strings.TrimLeft(prog[k+1:], " \t")
			if k > first || strings.HasPrefix(rest, "&") || strings.HasPrefix(rest, "getline") {
				return nil, "awk program pipes to or from a command"
			}
		case '>':
			if k < first {
				continue // a comparison: no print before it
			}
			j := k + 1
			if j < len(prog) && prog[j] == '>' {
				j++
			}
			for j < len(prog) && (prog[j] == ' ' || prog[j] == '\t') {
				j++
			}
			if j >= len(prog) || prog[j] != '"' {
				return nil, "awk program redirects output to a file that cannot be named"
			}
			end := strings.IndexAny(prog[j+1:], "\"\\")
			if end < 0 || prog[j+1+end] != '"' {
				return nil, "awk program redirects output to a file that cannot be named"
			}
			name := prog[j+1 : j+1+end]
			after := strings.TrimLeft(prog[j+2+end:], " \t")
			if after != "" && after[0] != ';' && after[0] != '}' && after[0] != '\n' {
				return nil, "awk program redirects output to a file that cannot be named"
			}
			out = append(out, name)
			k = j + 1 + end
		}
	}
	return out, ""
}

// awkIndirectCall reports a gawk directive or indirect call: '@' followed,
// after blanks or line continuations, by a letter or '_' (@f(), @load).
// Inside a string it does not count, but strings are only told apart in
// a program without '/', where no regular expression can hold a '"'.
func awkIndirectCall(prog string) bool {
	skipStrings := !strings.Contains(prog, "/")
	inString := false
	for k := 0; k < len(prog); k++ {
		c := prog[k]
		if inString {
			switch c {
			case '\\':
				k++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = skipStrings
		case '@':
			j := k + 1
			for j < len(prog) && (prog[j] == ' ' || prog[j] == '\t' || prog[j] == '\\' || prog[j] == '\n' || prog[j] == '\r') {
				j++
			}
			if j < len(prog) && (prog[j] == '_' || 'a' <= prog[j] && prog[j] <= 'z' || 'A' <= prog[j] && prog[j] <= 'Z') {
				return true
			}
		}
	}
	return false
}
