package permissions

import (
	"errors"
	"strings"
)

// SedEdit is "sed -i 's/old/new/flags' FILE" read as a file edit, so a host
// can show it as a diff.
type SedEdit struct {
	File        string `json:"file"`
	Pattern     string `json:"pattern"`
	Replacement string `json:"replacement"`
	Flags       string `json:"flags"`
	// Extended: the pattern is an extended regular expression (-E, -r).
	Extended bool `json:"extended"`
}

// sedScript is what a sed script does, as far as permissions care.
type sedScript struct {
	exec   bool     // e command or s///e: runs a shell command
	writes []string // w, W and s///w files
	reads  []string // r and R files
	subs   []sedSub // the s commands
	other  bool     // commands other than s (for SedEdit)
	addr   bool     // an address was used (for SedEdit)
}

type sedSub struct {
	pattern, replacement, flags string
}

var errSed = errors.New("sed script not understood")

// parseSedScript reads a GNU sed script. Anything it does not understand
// is an error, and an error means the command cannot be analysed.
func parseSedScript(s string, sc *sedScript) error {
	i := 0
	n := len(s)
	skipBlank := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	// toEOL reads to the end of the line (file names and labels).
	toEOL := func() string {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			j = n - i
		}
		v := s[i : i+j]
		i += j
		return v
	}
	readRegex := func(delim byte) (string, error) {
		var b strings.Builder
		for i < n {
			c := s[i]
			if c == '\\' && i+1 < n {
				if s[i+1] == delim && delim != '\\' {
					b.WriteByte(delim)
				} else {
					b.WriteByte('\\')
					b.WriteByte(s[i+1])
				}
				i += 2
				continue
			}
			if c == '\n' {
				return "", errSed
			}
			if c == delim {
				i++
				return b.String(), nil
			}
			b.WriteByte(c)
			i++
		}
		return "", errSed
	}
	readAddr := func() (bool, error) {
		if i >= n {
			return false, nil
		}
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			for i < n && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
			return true, nil
		case c == '$':
			i++
			return true, nil
		case c == '/' || c == '\\':
			delim := byte('/')
			if c == '\\' {
				if i+1 >= n {
					return false, errSed
				}
				delim = s[i+1]
				i++
			}
			i++
			if _, err := readRegex(delim); err != nil {
				return false, err
			}
			for i < n && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
			return true, nil
		}
		return false, nil
	}
	for guard := 0; i < n; guard++ {
		if guard > len(s)+8 {
			return errSed
		}
		for i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == ';') {
			i++
		}
		if i >= n {
			break
		}
		has, err := readAddr()
		if err != nil {
			return err
		}
		if has {
			sc.addr = true
			skipBlank()
			if i < n && s[i] == ',' {
				i++
				skipBlank()
				if i < n && (s[i] == '+' || s[i] == '~') {
					i++
					for i < n && s[i] >= '0' && s[i] <= '9' {
						i++
					}
				} else if ok, err := readAddr(); err != nil || !ok {
					return errSed
				}
			}
		}
		skipBlank()
		for i < n && s[i] == '!' {
			i++
			skipBlank()
		}
		if i >= n {
			return errSed
		}
		c := s[i]
		i++
		switch c {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
			sc.other = true
		case '#':
			toEOL()
		case ':':
			skipBlank()
			if strings.TrimSpace(toEOLorSemi(s, &i)) == "" {
				return errSed
			}
			sc.other = true
		case 'b', 't', 'T':
			skipBlank()
			toEOLorSemi(s, &i)
			sc.other = true
		case 'q', 'Q', 'l', 'L':
			skipBlank()
			for i < n && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			sc.other = true
		case 'a', 'i', 'c':
			// text to the end of the line; "a\" continues on the next
			for i < n && s[i] != '\n' {
				if s[i] == '\\' && i+1 < n {
					i++
				}
				i++
			}
			sc.other = true
		case 'r', 'R':
			skipBlank()
			f := toEOL()
			if f == "" {
				return errSed
			}
			sc.reads = append(sc.reads, f)
			sc.other = true
		case 'w', 'W':
			skipBlank()
			f := toEOL()
			if f == "" {
				return errSed
			}
			sc.writes = append(sc.writes, f)
			sc.other = true
		case 'e':
			sc.exec = true
			toEOL()
		case 'v':
			toEOLorSemi(s, &i)
		case 's':
			if i >= n || s[i] == '\n' || s[i] == '\\' {
				return errSed
			}
			delim := s[i]
			i++
			pat, err := readRegex(delim)
			if err != nil {
				return err
			}
			rep, err := readRegex(delim)
			if err != nil {
				return err
			}
			fstart := i
			for i < n {
				f := s[i]
				if f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || (f >= '0' && f <= '9') {
					i++
					continue
				}
				if f == 'e' {
					sc.exec = true
					i++
					continue
				}
				if f == 'w' {
					flags := s[fstart:i]
					i++
					skipBlank()
					w := toEOL()
					if w == "" {
						return errSed
					}
					sc.writes = append(sc.writes, w)
					sc.subs = append(sc.subs, sedSub{pat, rep, flags + "w"})
					goto next
				}
				break
			}
			sc.subs = append(sc.subs, sedSub{pat, rep, s[fstart:i]})
		case 'y':
			if i >= n {
				return errSed
			}
			delim := s[i]
			i++
			if _, err := readRegex(delim); err != nil {
				return err
			}
			if _, err := readRegex(delim); err != nil {
				return err
			}
			sc.other = true
		default:
			return errSed
		}
		if c == '{' {
			continue
		}
	next:
		skipBlank()
		if i < n && s[i] == '}' {
			continue
		}
		if i < n && s[i] != ';' && s[i] != '\n' && s[i] != '#' {
			return errSed
		}
	}
	return nil
}

func toEOLorSemi(s string, i *int) string {
	j := *i
	for j < len(s) && s[j] != '\n' && s[j] != ';' {
		j++
	}
	v := s[*i:j]
	*i = j
	return v
}

var sedFlags = flags("-n --quiet --silent -e= --expression= -f@ --file@ -E -r --regexp-extended -s --separate -z " +
	"--null-data -u --unbuffered -l= --line-length= --posix --sandbox --debug -b --binary --follow-symlinks " +
	"-i? --in-place?")

// analyzeSed reads a sed command: its scripts, its files, -i.
func analyzeSed(a *analysis, args []string) {
	pa, bad, ok := parseSedArgs(args)
	if !ok {
		a.notReadOnly("sed: flag " + quoteWord(bad) + " is not known")
		a.mustAsk("sed: flag " + quoteWord(bad) + " is not known")
		return
	}
	scripts, files, fromFile := sedScripts(pa, args)
	switch {
	case fromFile:
		a.notReadOnly("sed -f runs a script from a file")
		a.mustAsk("sed -f: the script is in a file and cannot be checked")
		return
	case len(scripts) == 0:
		a.notReadOnly("sed without a script")
		return
	}
	var sc sedScript
	for _, s := range scripts {
		if err := parseSedScript(s, &sc); err != nil {
			a.notReadOnly("sed script not understood")
			a.mustAsk("sed script could not be analysed")
			return
		}
	}
	inPlace := pa.has("-i", "--in-place")
	if sc.exec {
		a.notReadOnly("sed script runs commands (e)")
		if !pa.has("--sandbox") {
			a.mustAsk("sed script runs shell commands (e command or s///e)")
		}
	}
	a.reads = append(a.reads, sc.reads...)
	if len(sc.writes) > 0 {
		a.notReadOnly("sed script writes files (w)")
		a.writes = append(a.writes, sc.writes...)
	}
	for _, i := range files {
		if inPlace {
			a.writes = append(a.writes, args[i])
			a.writes = append(a.writes, sedBackups(pa, args[i])...)
		} else {
			a.reads = append(a.reads, args[i])
		}
	}
	if inPlace {
		a.kind = KindNone // an edit, not a read
		a.notReadOnly("sed -i edits files in place")
		a.edit = !sc.exec && len(files) > 0
		// A SedEdit is shown as a plain find-and-replace: not with -n (the
		// file keeps only what is printed), -z (NUL-separated records) or
		// the p flag (matched lines doubled).
		plainEdit := !pa.has("-n", "--quiet", "--silent", "-z", "--null-data") &&
			!strings.ContainsAny(sc.subs0Flags(), "pPwWe")
		if a.edit && plainEdit && len(files) == 1 && len(sc.subs) == 1 && !sc.other && !sc.addr && len(sc.reads) == 0 &&
			len(sc.writes) == 0 && len(scripts) == 1 {
			if v, _ := pa.value("-i", "--in-place"); v == "" {
				s := sc.subs[0]
				a.sed = &SedEdit{File: args[files[0]], Pattern: s.pattern, Replacement: s.replacement,
					Flags: s.flags, Extended: pa.has("-E", "-r", "--regexp-extended")}
			}
		}
	}
}

// parseSedArgs reads sed's flags. -i takes an optional suffix attached to
// it (-i.bak), never the next word, and may be bundled (-ni, -Ei).
// sedScripts returns a sed command line's scripts (-e, or the first
// operand), the operands that are files, and whether a script comes from
// a file (-f).
func sedScripts(pa parsedArgs, args []string) (scripts []string, files []int, fromFile bool) {
	for _, f := range pa.flags {
		switch f.name {
		case "-e", "--expression":
			scripts = append(scripts, f.value)
		case "-f", "--file":
			return nil, nil, true
		}
	}
	files = pa.pos
	if len(scripts) == 0 && len(files) > 0 {
		scripts, files = append(scripts, args[files[0]]), files[1:]
	}
	return scripts, files, false
}

func parseSedArgs(args []string) (parsedArgs, string, bool) {
	return parseFlags(args, sedFlags, flagOpts{})
}

// subs0Flags are the flags of the first s command, or "".
func (sc *sedScript) subs0Flags() string {
	if len(sc.subs) == 0 {
		return ""
	}
	return sc.subs[0].flags
}

// sedBackups are the names GNU sed -i SUFFIX renames file to before it
// writes the new contents: SUFFIX with each '*' replaced by the file's
// name as given, a path of its own from the working directory
// (-i'bak/*' moves d/f to bak/d/f, -i'/x/.bashr*' moves c to /x/.bashrc), or
// else the file's name with SUFFIX appended. Each -i is counted, though
// only the last one counts for sed.
func sedBackups(pa parsedArgs, file string) []string {
	var out []string
	for _, f := range pa.flags {
		if (f.name != "-i" && f.name != "--in-place") || f.value == "" {
			continue
		}
		if strings.Contains(f.value, "*") {
			out = append(out, strings.ReplaceAll(f.value, "*", file))
		} else {
			out = append(out, file+f.value)
		}
	}
	return out
}
