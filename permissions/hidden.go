package permissions

import (
	"fmt"
	"path"
	"strings"

	"github.com/moat-sandbox/moat/validators"
	"mvdan.cc/sh/v3/syntax"
)

// This file finds what bash runs that the command line does not show:
// code built at run time and evaluated (a prompt expansion, arithmetic on
// a variable whose value holds "a[$(cmd)]", an indirect expansion, a
// builtin given a variable name with such a subscript), a script a shell
// or source reads from a process substitution or from its standard input,
// and the builtins that make a name run another program (hash -p,
// BASH_CMDS). Each makes the extraction incomplete, so that a line with
// one of them is never allowed while deny or ask rules exist (under
// autoAllowBashIfSandboxed and bypassPermissions as well, where the
// validators, which object to all of these, are not consulted).

// numericArithm reports an arithmetic operand that is a number or a
// parameter that always holds one ($#, $?, $$, $!), not a variable whose
// value bash would evaluate in turn.
func numericArithm(w *syntax.Word) bool {
	if len(w.Parts) != 1 {
		return false
	}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		v := p.Value
		return v != "" && v[0] >= '0' && v[0] <= '9' && !strings.ContainsAny(v, "[$`")
	case *syntax.ParamExp:
		if !p.Short || p.Param == nil || p.Index != nil {
			return false
		}
		switch p.Param.Value {
		case "#", "?", "$", "!":
			return true
		}
	}
	return false
}

// arithmRuns reports arithmetic that names a variable (or expands one, or
// a command's output): bash evaluates the value too, and a value such as
// "a[$(rm x)]" runs its subscript.
func arithmRuns(e syntax.ArithmExpr) bool {
	if e == nil {
		return false
	}
	runs := false
	syntax.Walk(e, func(n syntax.Node) bool {
		if runs {
			return false
		}
		if w, ok := n.(*syntax.Word); ok {
			if !numericArithm(w) {
				runs = true
			}
			return false
		}
		return true
	})
	return runs
}

// subscriptRuns reports a subscript that is not a plain number, @ or *.
func subscriptRuns(e syntax.ArithmExpr) bool {
	if e == nil {
		return false
	}
	if w, ok := e.(*syntax.Word); ok && len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok && (l.Value == "@" || l.Value == "*") {
			return false
		}
	}
	return arithmRuns(e)
}

// hiddenInNode returns why a node of the syntax tree runs code that the
// line does not show, or "".
func hiddenInNode(n syntax.Node) string {
	const arith = "arithmetic on a variable's value runs what the value holds (a[$(cmd)])"
	switch n := n.(type) {
	case *syntax.ExtGlob:
		// The agent's shell may be zsh (the seeds' Bash tool, and moat's
		// sessions, use the user's shell when it is zsh), and zsh reads
		// *(e:'cmd':) and *(+func) as a glob qualifier that runs cmd for
		// each file: in bypassPermissions mode with Bash(rm:*) denied,
		// ls *(e:'rm -f victim.txt':) was read as ls and a pattern, and
		// removed the file in a zsh session (attack pass 99). bash, with
		// extglob off as the session has it, cannot run such a line.
		return "zsh reads the pattern " + quoteWord(n.Op.String()+n.Pattern.Value+")") + " as a glob qualifier, which may run a command"
	case *syntax.Word:
		if why := zshLiteralDollar(n.Parts); why != "" {
			return why
		}
	case *syntax.DblQuoted:
		if why := zshLiteralDollar(n.Parts); why != "" {
			return why
		}
	case *syntax.ParamExp:
		if n.Exp != nil && litParen(n.Exp.Word) || n.Repl != nil && (litParen(n.Repl.Orig) || litParen(n.Repl.With)) {
			// zsh globs the word of ${X:-*(e:'cmd':)} and runs its
			// qualifier's code, where bash reads text: in
			// bypassPermissions mode with Bash(rm:*) denied, ls
			// ${X:-*(e:"rm -f victim.txt":)} removed the file in a zsh
			// session (attack pass 99).
			return "zsh may read the '(' in the word of " + quoteWord("${"+n.Param.Value+"...}") + " as a glob qualifier, which may run a command"
		}
		switch {
		case n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word != nil && n.Exp.Word.Lit() == "P":
			return "a prompt expansion ${x@P} runs what the variable holds"
		case n.Excl && n.Names == 0 && !(n.Index != nil && !subscriptRuns(n.Index)):
			return "an indirect expansion ${!x} evaluates what the variable holds"
		case subscriptRuns(n.Index):
			return "an array subscript on a variable runs what the value holds"
		case n.Slice != nil && (arithmRuns(n.Slice.Offset) || arithmRuns(n.Slice.Length)):
			return "a substring offset on a variable runs what the value holds"
		case n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) &&
			n.Param != nil && validators.DangerousAssignment(n.Param.Value, validators.Word{}):
			return "${" + n.Param.Value + ":=...} sets a variable that changes what programs run"
		}
	case *syntax.ArithmExp:
		if arithmRuns(n.X) {
			return arith
		}
	case *syntax.ArithmCmd:
		if arithmRuns(n.X) {
			return arith
		}
	case *syntax.LetClause:
		for _, e := range n.Exprs {
			if arithmRuns(e) {
				return arith
			}
		}
	case *syntax.CStyleLoop:
		if arithmRuns(n.Init) || arithmRuns(n.Cond) || arithmRuns(n.Post) {
			return arith
		}
	case *syntax.BinaryTest:
		switch n.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, t := range []syntax.TestExpr{n.X, n.Y} {
				if w, ok := t.(*syntax.Word); !ok || !numericArithm(w) {
					return arith
				}
			}
		}
	case *syntax.UnaryTest:
		if n.Op == syntax.TsVarSet || n.Op == syntax.TsRefVar {
			if w, ok := n.X.(*syntax.Word); !ok || !plainName(w.Lit()) {
				return "test -v resolves a variable name with its subscript, which can run commands"
			}
		}
	case *syntax.Assign:
		switch {
		case n.Name != nil && (n.Name.Value == "BASH_CMDS" || n.Name.Value == "BASH_ALIASES"):
			return "an assignment to " + n.Name.Value + " makes a command name run another program"
		case subscriptRuns(n.Index):
			return "an array subscript on a variable runs what the value holds"
		case n.Array != nil:
			for _, el := range n.Array.Elems {
				if subscriptRuns(el.Index) {
					return "an array subscript on a variable runs what the value holds"
				}
			}
		}
		if n.Name != nil && n.Value != nil && !n.Naked {
			v := validators.Word{Raw: wordSource(n.Value)}
			if l := n.Value.Lit(); l != "" || len(n.Value.Parts) == 0 {
				v.Value, v.Static = l, true
			}
			if why := validators.EvaluatedAssignment(n.Name.Value, v); why != "" {
				return why
			}
			if !v.Static && validators.DangerousAssignment(n.Name.Value, validators.Word{}) {
				return "a value known only when it runs is assigned to " + n.Name.Value + ", which changes what programs run"
			}
		}
	case *syntax.DeclClause:
		argv := []string{n.Variant.Value}
		for _, a := range n.Args {
			switch {
			case a.Naked && a.Value != nil:
				src := wordSource(a.Value)
				if strings.ContainsAny(src, "$`") {
					return n.Variant.Value + " is given a variable name known only when it runs"
				}
				argv = append(argv, src)
			case a.Name != nil:
				argv = append(argv, a.Name.Value)
			}
		}
		if why := validators.EvaluatedCode(argv); why != "" {
			return why
		}
		if n.Variant.Value == "nameref" {
			return "a nameref makes an assignment to one variable set another"
		}
		for _, a := range argv[1:] {
			if len(a) > 1 && a[0] == '-' && strings.ContainsRune(a, 'n') && n.Variant.Value != "export" {
				return "a nameref makes an assignment to one variable set another"
			}
		}
	}
	return ""
}

// plainName reports a variable name without a subscript.
func plainName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] == '_' || 'a' <= s[i] && s[i] <= 'z' || 'A' <= s[i] && s[i] <= 'Z' || '0' <= s[i] && s[i] <= '9') {
			return false
		}
	}
	return true
}

// varNameArgs returns the words of a builtin's arguments that bash reads
// as variable names (resolving their subscripts), and whether the builtin
// assigns them a value the line does not show (read, printf -v, ...).
func varNameArgs(name string, args []string) (names []string, assigns bool) {
	// flagNames collects the values of the flags in nameFlags (-a NAME,
	// -v NAME, bundled or attached) and returns the operands; valueFlags
	// take a value too.
	flagNames := func(valueFlags, nameFlags string) []string {
		for i := 0; i < len(args); i++ {
			w := args[i]
			if w == "--" {
				return args[i+1:]
			}
			if len(w) < 2 || w[0] != '-' {
				return args[i:]
			}
			for j := 1; j < len(w); j++ {
				if !strings.ContainsRune(valueFlags, rune(w[j])) {
					continue
				}
				v := w[j+1:]
				if v == "" && i+1 < len(args) {
					i++
					v = args[i]
				}
				if strings.ContainsRune(nameFlags, rune(w[j])) {
					names = append(names, v)
				}
				break
			}
		}
		return nil
	}
	switch name {
	case "read":
		return append(names, flagNames("adinNptu", "a")...), true
	case "mapfile", "readarray":
		return append(names, flagNames("dnOsuCc", "")...), true
	case "printf":
		flagNames("v", "v")
		return names, true
	case "print":
		// zsh's print -v NAME; -C, -f, -u, -x and -X take a value too
		flagNames("CfuvxX", "v")
		return names, true
	case "wait":
		flagNames("p", "p")
		return names, true
	case "getopts":
		if len(args) >= 2 {
			names = append(names, args[1])
		}
		return names, true
	case "unset":
		return flagNames("", ""), false
	case "test", "[":
		for i, w := range args {
			if (w == "-v" || w == "-R") && i+1 < len(args) {
				names = append(names, args[i+1])
			}
		}
	case "declare", "typeset", "local", "export", "readonly", "nameref":
		for _, w := range args {
			if !strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "+") {
				n, _, _ := strings.Cut(w, "=")
				names = append(names, n)
			}
		}
	}
	return names, false
}

// hiddenInArgv returns why a command (its argument values; expansions
// keep their source text) runs code that the line does not show, or
// "". Names are checked after path.Base, as the caller has done.
func (x *extraction) hiddenInArgv(argv []string, depth int) string {
	name := argv[0]
	if why := validators.EvaluatedCode(argv); why != "" {
		return why
	}
	if opt := validators.ExecOption(argv); opt != "" {
		return fmt.Sprintf("the option %q makes %s run a command the line does not show", shorten(opt, 60), name)
	}
	names, assigns := varNameArgs(name, argv[1:])
	for _, v := range names {
		if strings.ContainsAny(v, "$`") {
			return name + " is given a variable name known only when it runs"
		}
		base, _, _ := strings.Cut(v, "[")
		if base == "BASH_CMDS" || base == "BASH_ALIASES" {
			return name + " sets " + base + ", which makes a command name run another program"
		}
		if assigns && validators.DangerousAssignment(base, validators.Word{}) {
			return name + " sets " + base + " to a value the line does not show, which changes what programs run"
		}
	}
	switch name {
	case "rsync":
		// -e/--rsh runs a remote shell, --rsync-path a remote program
		for _, w := range argv[1:] {
			opt, _, _ := strings.Cut(w, "=")
			if opt == "-e" || opt == "--rsh" || opt == "--rsync-path" || len(w) > 2 && w[0] == '-' && w[1] != '-' && w[len(w)-1] == 'e' {
				return "rsync " + opt + " runs a command the line does not show"
			}
		}
	case "make", "gmake":
		// --eval adds rules whose recipes run; a makefile from a process
		// substitution is a script the line does not show
		for i, w := range argv[1:] {
			opt, v, eq := strings.Cut(w, "=")
			if !eq && i+2 < len(argv) {
				v = argv[i+2]
			}
			if opt == "--eval" || (opt == "-f" || opt == "--file" || opt == "--makefile") && strings.HasPrefix(v, "<(") || strings.HasPrefix(w, "-f<(") {
				return "make " + opt + " runs what the line does not show"
			}
		}
		if why := x.makeLine(argv, depth); why != "" {
			return why
		}
	case "sed":
		if sedRuns(argv[1:]) {
			return "the sed script runs shell commands (e)"
		}
	case "declare", "typeset", "local", "readonly", "nameref":
		for _, w := range argv[1:] {
			if name == "nameref" || len(w) > 1 && (w[0] == '-' || w[0] == '+') && w[1] != '-' && strings.ContainsRune(w, 'n') {
				return "a nameref makes an assignment to one variable set another"
			}
		}
	case "hash":
		for _, w := range argv[1:] {
			if w == "--" || !strings.HasPrefix(w, "-") {
				break
			}
			if strings.ContainsRune(w, 'p') {
				return "hash -p makes a command name run another program"
			}
		}
		// zsh's hash NAME=PATH does what bash's hash -p PATH NAME does:
		// hash ls=/bin/rm; ls -f victim.txt ran rm in a zsh session in
		// bypassPermissions mode with Bash(rm:*) denied (attack pass
		// 99). hash -d NAME=DIR names a directory (~NAME): not a
		// command.
		named := false
		for _, w := range argv[1:] {
			if strings.HasPrefix(w, "-") && w != "-" && w != "--" {
				named = named || strings.ContainsRune(w, 'd')
				continue
			}
			if strings.Contains(w, "=") && !named {
				return "hash NAME=PATH (zsh) makes a command name run another program"
			}
		}
	case "enable":
		for _, w := range argv[1:] {
			if w == "--" || !strings.HasPrefix(w, "-") {
				break
			}
			if strings.ContainsAny(w, "f") {
				return "enable -f loads a builtin from a shared object"
			}
		}
	case "compgen", "complete":
		// -C COMMAND runs it; -W WORDS are expanded (command substitution
		// included); -F FUNCTION calls a function.
		for i := 1; i < len(argv); i++ {
			w := argv[i]
			if w == "--" || len(w) < 2 || w[0] != '-' {
				continue
			}
			for j := 1; j < len(w); j++ {
				c := w[j]
				if strings.IndexByte("oAGWFCXPS", c) < 0 {
					continue
				}
				v := w[j+1:]
				if v == "" && i+1 < len(argv) {
					i++
					v = argv[i]
				}
				switch {
				case c == 'C':
					x.nestedSource(v, depth+1)
				case c == 'F':
					return name + " -F calls a shell function"
				case strings.ContainsAny(v, "$`"):
					return name + " -" + string(c) + " expands its value, which can run commands"
				}
				break
			}
		}
	case "mapfile", "readarray":
		// -C CALLBACK runs CALLBACK with arguments appended.
		for i := 1; i < len(argv); i++ {
			w := argv[i]
			if w == "--" || len(w) < 2 || w[0] != '-' {
				break
			}
			if k := strings.IndexByte(w, 'C'); k > 0 {
				v := w[k+1:]
				if v == "" && i+1 < len(argv) {
					i++
					v = argv[i]
				}
				x.nestedSource(v, depth+1)
			} else if len(w) == 2 && strings.ContainsRune("dnOsuc", rune(w[1])) {
				i++
			}
		}
	}
	return ""
}

// stdinScript reports a script operand that is the shell's own standard
// input (what a here-string or a pipe gives it).
func stdinScript(op string) bool {
	switch op {
	case "-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "/proc/thread-self/fd/0":
		return true
	}
	return false
}

// unseenScript reports a script operand whose contents come from
// somewhere the line cannot show: a process substitution, another
// descriptor, a terminal.
func unseenScript(op string) bool {
	return strings.HasPrefix(op, "<(") || strings.HasPrefix(op, ">(") ||
		strings.HasPrefix(op, "/dev/fd/") || strings.HasPrefix(op, "/proc/") ||
		strings.HasPrefix(op, "/dev/tty") || strings.HasPrefix(op, "/dev/pts/")
}

// sourceScript is the script operand of source or ".", or "".
func sourceScript(argv []string) string {
	if len(argv) < 2 {
		return ""
	}
	i := 1
	if argv[i] == "--" {
		i++
	}
	if i >= len(argv) {
		return ""
	}
	return argv[i]
}

// isSource reports the builtins source and ".".
func isSource(name string) bool { return path.Base(name) == "source" || name == "." }

// sedRuns reports a sed command line whose script runs shell commands (the
// e command, s///e), or whose script cannot be read (-f, not understood).
func sedRuns(args []string) bool {
	pa, _, ok := parseSedArgs(args)
	if !ok {
		return true // a flag the tables do not know: the script is not read
	}
	scripts, _, fromFile := sedScripts(pa, args)
	if fromFile {
		return true
	}
	var sc sedScript
	for _, s := range scripts {
		if err := parseSedScript(s, &sc); err != nil {
			return true
		}
	}
	return sc.exec && !pa.has("--sandbox")
}

// zshLiteralDollar returns why the literal text of a word (its parts'
// runs of Lit, which the parser may split at a '$': "$", "~X") is
// expanded by zsh although bash leaves it alone, or "": $~X turns X's
// value into a pattern (which *(e:'cmd':) makes run cmd), $=X splits it
// and $^X distributes it. X='*(e:rm -f victim.txt:)'; ls $~X removed the
// file in a zsh session in bypassPermissions mode with Bash(rm:*) denied
// (attack pass 99).
func zshLiteralDollar(parts []syntax.WordPart) string {
	var run strings.Builder
	check := func() string {
		v := run.String()
		run.Reset()
		for i := 0; i+1 < len(v); i++ {
			switch {
			case v[i] == '\\':
				i++
			case v[i] == '$' && strings.IndexByte("~=^", v[i+1]) >= 0:
				return "zsh expands " + quoteWord(v[i:]) + " (the $" + v[i+1:i+2] + " form) where bash reads it as text"
			}
		}
		return ""
	}
	for _, p := range parts {
		if l, ok := p.(*syntax.Lit); ok {
			run.WriteString(l.Value)
			continue
		}
		if why := check(); why != "" {
			return why
		}
	}
	return check()
}

// litParen reports a word with a literal '(' in its own text (not in a
// nested expansion or quotes, which the walk sees on their own).
func litParen(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "(") {
			return true
		}
	}
	return false
}
