package permissions

import (
	"path"
	"strings"
)

// Display kinds of a command (Result.Kind).
const (
	KindSearch  = "search"
	KindRead    = "read"
	KindList    = "list"
	KindSilent  = "silent"
	KindNone    = "none"
	kindNeutral = "neutral" // echo, true, cd: no effect on the kind
)

// posKind says what a command's positional arguments are.
type posKind uint8

const (
	posPaths   posKind = iota // files the command reads
	posNone                   // not files (echo, tr, basename)
	posPattern                // a pattern or program, then files (grep, awk, jq)
)

// cmdSpec is one row of the read-only table.
type cmdSpec struct {
	kind  string
	flags flagTable
	opts  flagOpts
	pos   posKind
	// maxPos bounds the positionals (uniq IN OUT writes OUT); 0: no bound,
	// -1: none at all.
	maxPos int
	// implied: with no file operand the command reads "." (ls, find, rg -r).
	implied bool
	// patternFlags: when one of these is given, the first positional is a
	// file, not the pattern (grep -e PAT FILE).
	patternFlags []string
	// anyArgs: the arguments are data, never flags (true, echo).
	anyArgs bool
	// check runs after the flags were parsed, for what a table cannot say.
	check func(a *analysis, args []string, pa *parsedArgs)
}

// analysis is what one simple command does, as far as the tables know.
type analysis struct {
	name     string // the command name (base name of argv[0])
	kind     string
	readOnly bool
	why      string // why it is not read-only (with whyTail: see reason)
	whyTail  string // joined to why when read, so that it is built only then
	edit     bool   // a file-creating or -editing command (acceptEdits)
	reads    []string
	writes   []string
	// ask: a constraint that asks whatever the rules say (a sed script that
	// runs commands, a path that cannot be checked).
	ask string
	// cd: the command changes the working directory.
	cd       bool
	cdTarget string // "" when unknown (cd, cd -, cd ~)
	sed      *SedEdit
	git      bool // a git command (refused after a cd)
	// danger: why a word of the part names a path that always asks
	// (dangerousPath), set by analyzeParts; the part is not read-only.
	danger string
	// roButRedirect: read-only except for output redirections (echo x >
	// file), which the path constraints check; acceptEdits allows it.
	roButRedirect bool
	// walksLinks: the command follows symbolic links while it walks a
	// tree it reads (grep -R, rg -L, find -L, diff -r): the flag, for the
	// reason. A link in the tree may lead outside the directories, and
	// with Options.FollowSymlinks that asks.
	walksLinks string
	// unchecked: read-only, but what it reads cannot be checked (xargs
	// appends paths from its input), so the tables do not allow it; an
	// allow rule may.
	unchecked string
	// remade: the destinations of mv and cp (cp only when it copies
	// symbolic links as links: -a, -r, -R, -d, -P), whose contents after
	// the part (a moved or copied tree, its links included) the later
	// parts' paths cannot be checked against before the line runs, unless
	// every source (remadeFrom) is a regular file.
	remade, remadeFrom []string
}

func (a *analysis) notReadOnly(why string) {
	if a.readOnly {
		a.readOnly = false
		a.why = why
	}
}

// notReadOnly2 is notReadOnly(head + tail), with the string built only
// when reason reads it.
func (a *analysis) notReadOnly2(head, tail string) {
	if a.readOnly {
		a.readOnly = false
		a.why, a.whyTail = head, tail
	}
}

// setWhy replaces the reason.
func (a *analysis) setWhy(why string) { a.why, a.whyTail = why, "" }

// reason is why the command is not read-only.
func (a *analysis) reason() string { return a.why + a.whyTail }

func (a *analysis) mustAsk(why string) {
	if a.ask == "" {
		a.ask = why
	}
}

// analyze classifies one command (argv already stripped of safe
// assignments and wrappers).
func analyze(argv []string) analysis {
	var a analysis
	analyzeInto(&a, argv)
	return a
}

// analyzeInto is analyze writing into *a, which must be zero, so that the
// analysis can live in the caller's slice.
func analyzeInto(a *analysis, argv []string) {
	a.readOnly = true
	if len(argv) == 0 {
		a.kind = kindNeutral
		return
	}
	name := argv[0]
	a.name = path.Base(name)
	info, known := commandTable.get()[a.name]
	a.kind = KindNone
	if known {
		a.kind = info.kind // displayKind(a.name)
	}
	args := argv[1:]
	// Files written through options or operands (sort -o, git log
	// --output, uniq IN OUT) are writes whatever else the command is, so
	// that the path constraints check them under allow rules too.
	outs, unsure := outputPaths(a.name, args)
	for _, w := range outs {
		a.writes = append(a.writes, w)
		a.notReadOnly2(a.name, " writes "+w)
	}
	if unsure != "" {
		a.notReadOnly(unsure)
		a.mustAsk(unsure)
	}
	if strings.Contains(name, "/") {
		// /bin/cat is cat only if it really is; a path may name anything.
		a.notReadOnly("the command is named by a path")
		return
	}
	switch name {
	case "git":
		analyzeGit(a, args)
		return
	case "sed":
		analyzeSed(a, args)
		return
	case "find":
		analyzeFind(a, args)
		return
	case "cd", "pushd":
		analyzeCd(a, args)
		return
	case "docker", "podman":
		analyzeContainer(a, name, args)
		return
	case "xargs":
		analyzeXargs(a, args)
		return
	case "xxd":
		analyzeXxd(a, args)
		return
	}
	if a.name != name { // "" (path.Base gives "."): look name itself up
		info = commandTable.get()[name]
	}
	if info.edit != nil { // editSpecs.get()[name]
		analyzeEdit(a, *info.edit, args)
		return
	}
	spec := info.ro // readOnlySpecs.get()[name]
	if spec == nil {
		a.notReadOnly2(name, " is not a known read-only command")
		return
	}
	if spec.anyArgs {
		return
	}
	pa, bad, ok := parseFlags(args, spec.flags, spec.opts)
	if !ok {
		a.notReadOnly(name + ": flag " + quoteWord(bad) + " is not known to be read-only")
		a.reads = append(a.reads, guessReads(args)...)
		return
	}
	for _, f := range pa.flags {
		switch f.kind {
		case argPath:
			a.reads = append(a.reads, f.value)
		case argWrite:
			a.writes = append(a.writes, f.value)
			a.notReadOnly(name + " " + f.name + " writes a file")
		}
	}
	pos := pa.pos
	if (spec.maxPos < 0 && len(pos) > 0) || (spec.maxPos > 0 && len(pos) > spec.maxPos) {
		a.notReadOnly(name + ": too many operands (the last one may be written)")
		return
	}
	switch spec.pos {
	case posPaths:
		for _, i := range pos {
			a.reads = append(a.reads, args[i])
		}
	case posPattern:
		start := 1
		if pa.has(spec.patternFlags...) {
			start = 0
		}
		for k, i := range pos {
			if k >= start {
				a.reads = append(a.reads, args[i])
			}
		}
		if len(pos) <= start && spec.implied {
			a.reads = append(a.reads, ".")
		}
	}
	if spec.pos == posPaths && len(pos) == 0 && spec.implied {
		a.reads = append(a.reads, ".")
	}
	a.walksLinks = linkWalk(name, &pa)
	if spec.check != nil {
		pa := pa // only this copy goes to the heap (a check is a func value)
		spec.check(a, args, &pa)
	}
}

// commandInfo is what the tables say about a command name: its display
// kind (displayKind), its file-editing spec (editSpecs) and its read-only
// spec (readOnlySpecs), for one map lookup instead of three.
type commandInfo struct {
	kind string
	edit *editSpec
	ro   *cmdSpec
}

var commandTable = lazy[map[string]commandInfo]{make: func() map[string]commandInfo {
	m := map[string]commandInfo{}
	for n := range kindOf.get() {
		m[n] = commandInfo{}
	}
	for n := range readOnlySpecs.get() {
		m[n] = commandInfo{}
	}
	for n := range editSpecs.get() {
		m[n] = commandInfo{}
	}
	for n := range m {
		info := commandInfo{kind: displayKind(n)}
		if s, ok := editSpecs.get()[n]; ok {
			info.edit = &s
		}
		if s, ok := readOnlySpecs.get()[n]; ok {
			info.ro = s
		}
		m[n] = info
	}
	return m
}}

// displayKind is the kind shown for a command name, whatever its flags.
func displayKind(name string) string {
	if k, ok := kindOf.get()[name]; ok {
		return k
	}
	if s, ok := readOnlySpecs.get()[name]; ok {
		return s.kind
	}
	return KindNone
}

var kindOf = lazy[map[string]string]{make: func() map[string]string {
	return map[string]string{
		"find": KindSearch, "grep": KindSearch, "egrep": KindSearch, "fgrep": KindSearch,
		"rg": KindSearch, "ag": KindSearch, "ack": KindSearch, "fd": KindSearch, "fdfind": KindSearch,
		"locate": KindSearch, "which": KindSearch, "whereis": KindSearch,
		"cat": KindRead, "head": KindRead, "tail": KindRead, "less": KindRead, "more": KindRead,
		"jq": KindRead, "awk": KindRead, "gawk": KindRead, "mawk": KindRead, "nawk": KindRead,
		"wc": KindRead, "stat": KindRead, "file": KindRead, "sed": KindRead,
		"ls": KindList, "tree": KindList, "du": KindList,
		"mv": KindSilent, "cp": KindSilent, "rm": KindSilent, "mkdir": KindSilent,
		"rmdir": KindSilent, "touch": KindSilent, "ln": KindSilent, "chmod": KindSilent,
		"chown": KindSilent, "chgrp": KindSilent,
		"cd": kindNeutral, "pushd": kindNeutral, "popd": kindNeutral, "git": KindNone,
	}
}}

// analyzeCd handles cd and pushd: no effect but on the working directory.
func analyzeCd(a *analysis, args []string) {
	a.kind, a.cd = kindNeutral, true
	var pos []string
	for i, w := range args {
		if w == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if w == "-L" || w == "-P" || w == "-e" || w == "-@" {
			continue
		}
		if strings.HasPrefix(w, "-") && w != "-" {
			a.notReadOnly("cd: unknown flag " + quoteWord(w))
			return
		}
		pos = append(pos, w)
	}
	switch {
	case len(pos) > 1:
		a.notReadOnly("cd: too many arguments")
	case len(pos) == 1 && pos[0] != "-":
		a.cdTarget = pos[0]
		a.reads = append(a.reads, pos[0])
	}
}

// analyzeFind handles find's expression language: tests and actions are
// read one by one; -exec, -execdir, -ok, -okdir, -delete, -fprint,
// -fprint0, -fprintf and -fls are not read-only, and so is anything unknown.
func analyzeFind(a *analysis, args []string) {
	i := 0
	// global options before the starting points
	for i < len(args) {
		w := args[i]
		if w == "-H" || w == "-L" || w == "-P" || (strings.HasPrefix(w, "-O") && isDigits(w[2:])) {
			if w == "-L" {
				a.walksLinks = "find -L"
			}
			i++
			continue
		}
		if w == "-D" {
			i += 2
			continue
		}
		break
	}
	paths := 0
	for i < len(args) {
		w := args[i]
		if strings.HasPrefix(w, "-") || w == "(" || w == ")" || w == "!" || w == "," {
			break
		}
		a.reads = append(a.reads, w)
		paths++
		i++
	}
	if paths == 0 {
		a.reads = append(a.reads, ".")
	}
	for ; i < len(args); i++ {
		w := args[i]
		n, ok := findPrimaries.get()[w]
		if !ok {
			if findWrites.get()[w] {
				a.notReadOnly("find " + w + " runs a command or writes")
			} else {
				a.notReadOnly("find: " + quoteWord(w) + " is not known to be read-only")
			}
			return
		}
		if i+n >= len(args) {
			a.notReadOnly("find " + w + ": missing argument")
			return
		}
		switch w {
		case "-newer", "-anewer", "-cnewer", "-samefile":
			a.reads = append(a.reads, args[i+1])
		case "-follow":
			a.walksLinks = "find -follow"
		}
		if strings.HasPrefix(w, "-newer") && len(w) == 8 {
			a.reads = append(a.reads, args[i+1])
		}
		i += n
	}
}

// findPrimaries are find's read-only tests, options and actions, with the
// number of arguments each takes.
var findPrimaries = lazy[map[string]int]{make: func() map[string]int {
	m := map[string]int{}
	for _, w := range strings.Fields("( ) ! , -not -a -and -o -or -true -false -empty -executable -readable -writable " +
		"-nouser -nogroup -prune -print -print0 -ls -quit -depth -d -mount -xdev -follow -noleaf -daystart " +
		"-ignore_readdir_race -noignore_readdir_race -help --help -version --version -nowarn -warn") {
		m[w] = 0
	}
	for _, w := range strings.Fields("-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype " +
		"-type -xtype -size -mtime -mmin -atime -amin -ctime -cmin -Bmin -Btime -perm -user -group -uid -gid -links " +
		"-inum -samefile -maxdepth -mindepth -newer -anewer -cnewer -used -lname -ilname -fstype -printf -context") {
		m[w] = 1
	}
	for _, x := range "aBcmt" {
		for _, y := range "aBcmt" {
			m["-newer"+string(x)+string(y)] = 1
		}
	}
	return m
}}

var findWrites = lazy[map[string]bool]{make: func() map[string]bool {
	return map[string]bool{
		"-exec": true, "-execdir": true, "-ok": true, "-okdir": true, "-delete": true,
		"-fprint": true, "-fprint0": true, "-fprintf": true, "-fls": true,
	}
}}

// editSpec is one row of the acceptEdits table: commands that only create,
// copy, move or edit files.
type editSpec struct {
	flags flagTable
	// lastIsTarget: the last operand is written, the others read (cp).
	// Otherwise every operand is written (mkdir, touch, mv, tee).
	lastIsTarget bool
	// targetFlags: with one of these (cp -t DIR), every operand is read.
	targetFlags []string
}

var editSpecs = lazy[map[string]editSpec]{make: func() map[string]editSpec {
	return map[string]editSpec{
		"mkdir": {flags: flags("-p -v --parents --verbose")},
		"touch": {flags: flags("-a -c -h -m -d= -t= -r@ --no-create --no-dereference --date= --reference@ --time=")},
		"cp": {flags: flags("-a -b -d -f -H -i -L -n -P -p -R -r -T -u -v -x -t> -S= --archive --backup? --force --interactive " +
			"--dereference --no-clobber --no-dereference --preserve? --no-preserve= --parents --recursive --remove-destination " +
			"--strip-trailing-slashes --suffix= --target-directory> --no-target-directory --update? --verbose --one-file-system " +
			"--sparse= --reflink? --attributes-only"), lastIsTarget: true, targetFlags: []string{"-t", "--target-directory"}},
		"mv": {flags: flags("-b -f -i -n -T -u -v -t> -S= --backup? --force --interactive --no-clobber --no-target-directory " +
			"--update? --verbose --target-directory> --strip-trailing-slashes --suffix= --no-copy"), targetFlags: []string{"-t", "--target-directory"}},
		"tee": {flags: flags("-a -i -p --append --ignore-interrupts --output-error?")},
	}
}}

// analyzeEdit handles the file-editing commands: never read-only, allowed
// in acceptEdits when every path stays inside the allowed directories.
func analyzeEdit(a *analysis, spec editSpec, args []string) {
	a.notReadOnly2(a.name, " changes files")
	pa, bad, ok := parseFlags(args, spec.flags, flagOpts{})
	if !ok {
		a.setWhy(a.name + ": flag " + quoteWord(bad) + " is not a known file-editing flag")
		return
	}
	for _, f := range pa.flags {
		switch f.kind {
		case argPath:
			a.reads = append(a.reads, f.value)
		case argWrite:
			a.writes = append(a.writes, f.value)
		}
	}
	if len(pa.pos) == 0 && a.name != "tee" {
		return
	}
	target := spec.lastIsTarget && !pa.has(spec.targetFlags...)
	for k, i := range pa.pos {
		if !spec.lastIsTarget || (target && k == len(pa.pos)-1) {
			a.writes = append(a.writes, args[i])
		} else {
			a.reads = append(a.reads, args[i])
		}
	}
	if a.name == "cp" && target && len(pa.pos) < 2 {
		return
	}
	if a.name == "cp" || a.name == "mv" {
		// What lands in the destination is named after the sources:
		// "cp -r x/.git ." writes ./.git. Check dest/base(source) too, and
		// refuse what cannot be named: globs, and "x/." (the contents of x).
		var dests, srcs []string
		if t, ok := pa.value(spec.targetFlags...); ok {
			dests = append(dests, t)
			for _, i := range pa.pos {
				srcs = append(srcs, args[i])
			}
		} else if len(pa.pos) > 0 {
			dests = append(dests, args[pa.pos[len(pa.pos)-1]])
			for _, i := range pa.pos[:len(pa.pos)-1] {
				srcs = append(srcs, args[i])
			}
		}
		if a.name == "mv" || pa.has("-a", "-r", "-R", "-d", "-P", "--archive", "--recursive", "--no-dereference") {
			a.remade, a.remadeFrom = append(a.remade, dests...), append(a.remadeFrom, srcs...)
		}
		parents := a.name == "cp" && pa.has("--parents")
		for _, src := range srcs {
			base := path.Base(src)
			if strings.ContainsAny(src, "*?[") || base == "." || base == ".." || base == "/" {
				a.setWhy(a.name + " " + src + ": what it copies cannot be named")
				return
			}
			for _, d := range dests {
				a.writes = append(a.writes, path.Join(d, base))
				if parents {
					// cp --parents a/b d writes d/a/b, and with "..",
					// "d/../../x", as written (symbolic links first).
					a.writes = append(a.writes, d+"/"+src)
				}
			}
		}
	}
	a.edit = true
}

// xargsFlags are xargs options that change only how its input is split
// and how many commands run (not -I, -a, -E or -p).
var xargsFlags = flags("-0 --null -r --no-run-if-empty -t --verbose -x --exit -n= --max-args= -L= --max-lines= " +
	"-P= --max-procs= -s= --max-chars= -d= --delimiter=")

// analyzeXargs: xargs running a command none of whose flags, known or not,
// can write or run anything (globOK: the words xargs appends may be
// options) is read-only, as in the seed; the paths it appends come from its
// input, so it is never allowed by the tables.
func analyzeXargs(a *analysis, args []string) {
	// xargs reads its options up to the first operand: the command.
	i := 0
	for i < len(args) {
		w := args[i]
		if w == "--" {
			i++
			break
		}
		if !strings.HasPrefix(w, "-") || w == "-" {
			break
		}
		name, _, attached := strings.Cut(w, "=")
		k, ok := xargsFlags.table()[name]
		if !attached && !ok && len(w) > 2 && w[1] != '-' {
			// -n5, -d'\n': a short flag with its value attached
			k, ok = xargsFlags.table()[w[:2]]
			attached = ok && k == argValue
		}
		if !ok || (attached && k != argValue) {
			a.notReadOnly("xargs: flag " + quoteWord(w) + " is not known to be read-only")
			return
		}
		if k == argValue && !attached {
			i++
		}
		i++
	}
	rest := []string{"echo"}
	if i < len(args) {
		rest = args[i:]
	}
	if !globOK.get()[rest[0]] {
		a.notReadOnly("xargs runs " + rest[0] + ", whose options may write or run programs")
		return
	}
	inner := analyze(rest)
	if !inner.readOnly {
		a.notReadOnly2(inner.why, inner.whyTail)
		return
	}
	a.kind = inner.kind
	a.reads = inner.reads
	a.unchecked = "xargs reads paths from its input, which no path check sees"
}

// guessReads is what a command whose flags the table does not all know
// may read: which words are then options, their values or operands cannot
// be told apart, so every word that could be a path is taken as one (a
// superset: a pattern too). An allow rule (Bash(grep:*)) still allows
// such a command, and the path checks must hold for it as for the same
// command without the flag: grep -u "" ../secret (-u is obsolete, not
// refused) and diff -D X f ../secret read outside the working directory
// under allow rules, where grep "" ../secret asked (attack pass 62).
func guessReads(args []string) []string {
	var reads []string
	for _, w := range args {
		switch {
		case w == "-" || w == "--":
		case strings.HasPrefix(w, "--"):
			// --files0-from=PATH; a value in the next word is a word of
			// its own, taken below.
			if _, v, ok := strings.Cut(w, "="); ok && v != "" {
				reads = append(reads, v)
			}
		case strings.HasPrefix(w, "-"):
			// A short option's value may be attached, after any number
			// of letters (-D../x, -uD/etc/x): each tail that starts a
			// path leaving the directory is taken.
			if !strings.ContainsAny(w, "/~") {
				continue
			}
			for k := 2; k < len(w); k++ {
				if c := w[k]; c == '/' || c == '~' || c == '.' && w[k-1] != '.' && w[k-1] != '/' {
					reads = append(reads, w[k:])
				}
			}
		default:
			reads = append(reads, w)
		}
	}
	return reads
}

// linkWalk names the flag with which a read-only command follows symbolic
// links while it walks a tree ("grep -R"), or is "". The path checks see
// the operands only: grep -R x . read through a link in the working
// directory to a directory outside it, where grep x link/f asks (attack
// pass 62). GNU diff -r follows links unless --no-dereference.
func linkWalk(name string, pa *parsedArgs) string {
	switch name {
	case "grep", "egrep", "fgrep":
		if pa.has("-R", "--dereference-recursive") {
			return name + " -R"
		}
	case "rg", "fd", "fdfind":
		if pa.has("-L", "--follow") {
			return name + " -L"
		}
	case "du":
		if pa.has("-L", "--dereference") {
			return "du -L"
		}
	case "tree":
		if pa.has("-l") {
			return "tree -l"
		}
	case "ls":
		if pa.has("-L", "--dereference") && pa.has("-R", "--recursive") {
			return "ls -RL"
		}
	case "diff":
		if pa.has("-r", "--recursive") && !pa.has("--no-dereference") {
			return "diff -r"
		}
	}
	return ""
}
