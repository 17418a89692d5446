package validators

import (
	"fmt"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Bash evaluates some strings as arithmetic even when they are quoted
// literals: an array subscript in a variable name ("a[$(id)]") is
// expanded and evaluated by test -v, read, printf -v, unset, declare and
// the other builtins that take variable names, and the values assigned to
// RANDOM, OPTIND, HISTCMD (and to any variable with the integer attribute)
// are arithmetic. Arithmetic expands $(...) in subscripts, and evaluates
// the value of every variable it names, so "a[x]" runs whatever x holds.
// These are code, however static the word looks.

// nameBuiltins are the builtins whose arguments (or some of them) are
// variable names, which bash resolves with their subscripts.
var nameBuiltins = map[string]bool{
	"read": true, "mapfile": true, "readarray": true, "unset": true, "wait": true,
	"getopts": true, "declare": true, "typeset": true, "local": true, "export": true,
	"readonly": true, "nameref": true, "printf": true, "test": true, "[": true,
	"let": true, "select": true, "for": true, "compgen": true, "complete": true,
	// zsh's print -v NAME assigns as printf -v does, and evaluates NAME's
	// subscript: in a zsh session, print -v 'a[$(rm -f victim.txt)]' hi
	// ran rm (attack pass 99).
	"print": true,
}

var nameBuiltinKeys = newKeyFilter(nameBuiltins)

// isNameBuiltinBase is nameBuiltins[baseName(s)].
func isNameBuiltinBase(s string) bool {
	return nameBuiltinKeys.mayHaveBase(s) && nameBuiltins[baseName(s)]
}

// arithVars are the shell variables whose assigned value bash evaluates
// as arithmetic (checked against bash 5.2: RANDOM, SRANDOM, OPTIND and
// HISTCMD run a subscript's command substitution; the others are listed
// because other versions may).
var arithVars = map[string]bool{
	"RANDOM": true, "SRANDOM": true, "OPTIND": true, "HISTCMD": true, "SECONDS": true,
	"LINENO": true, "EPOCHSECONDS": true, "EPOCHREALTIME": true, "BASHPID": true,
	"COMP_CWORD": true, "COMP_POINT": true, "COMP_TYPE": true, "COMP_KEY": true,
}

// safeSubscript reports whether bash evaluates the subscript s without
// running anything: digits (and blanks), or @ and *.
func safeSubscript(s string) bool {
	s = strings.TrimSpace(s)
	if s == "@" || s == "*" {
		return true
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}

// riskySubscript finds "NAME[SUB]" in a word (at its start or after a
// bundled option letter, as in "-va[x]") whose subscript is not plainly
// numeric, and returns it.
func riskySubscript(v string) (string, bool) {
	for i := 0; i < len(v); i++ {
		if v[i] != '[' || i == 0 {
			continue
		}
		j := i
		for j > 0 && isNameByte(v[j-1]) {
			j--
		}
		if j == i || (v[j] >= '0' && v[j] <= '9') {
			continue // no name before '['
		}
		end := strings.LastIndexByte(v, ']')
		if end < i {
			// bash reads an unclosed subscript as a bad name; it still
			// may evaluate part of it in some versions: refuse.
			return v[j:], true
		}
		if !safeSubscript(v[i+1 : end]) {
			return v[j : end+1], true
		}
	}
	return "", false
}

func isNameByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// integerFlag reports a declaration option bundle that gives the integer
// attribute (-i), under which every assigned value is arithmetic.
func integerFlag(v string) bool {
	return len(v) > 1 && (v[0] == '-' || v[0] == '+') && !strings.HasPrefix(v, "--") && strings.ContainsRune(v[1:], 'i')
}

// evaluatedIn returns why bash evaluates some word of one command (the
// words from a program start on) as code, or "".
func evaluatedIn(args []Word) string {
	if len(args) == 0 {
		return ""
	}
	name := baseName(args[0].Value)
	if !nameBuiltins[name] {
		return ""
	}
	rest := args[1:]
	switch name {
	case "let":
		return "let evaluates its arguments as arithmetic (array subscripts can run commands)"
	case "test", "[":
		// test -v NAME and test -R NAME resolve NAME with its subscript.
		for i, a := range rest {
			if (a.Value == "-v" || a.Value == "-R") && i+1 < len(rest) {
				for _, v := range []string{rest[i+1].Value, rest[i+1].Raw} {
					if s, bad := riskySubscript(v); bad {
						return fmt.Sprintf("%s %s evaluates the array subscript of %q as arithmetic, which can run commands", name, a.Value, s)
					}
				}
			}
		}
		return ""
	case "printf":
		// printf -v NAME (also bundled: -vNAME); the format and its
		// arguments are data (%d uses a plain number parser).
		for i, a := range rest {
			v := a.Value
			if v == "--" || !strings.HasPrefix(v, "-") {
				break
			}
			target := ""
			switch {
			case v == "-v" && i+1 < len(rest):
				target = rest[i+1].Value
			case strings.HasPrefix(v, "-v"):
				target = v[2:]
			}
			if s, bad := riskySubscript(target); bad {
				return fmt.Sprintf("printf -v evaluates the array subscript of %q as arithmetic, which can run commands", s)
			}
		}
		return ""
	case "print":
		// zsh's print -v NAME, also in a bundle (-nv NAME, -rvNAME); the
		// other words are printed.
		for i, a := range rest {
			v := a.Value
			if v == "--" || v == "-" || !strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "+") {
				break
			}
			k := strings.IndexByte(v, 'v')
			if k < 0 {
				continue
			}
			targets := []string{v[k+1:]}
			if i+1 < len(rest) {
				targets = append(targets, rest[i+1].Value)
			}
			for _, target := range targets {
				if s, bad := riskySubscript(target); bad {
					return fmt.Sprintf("print -v evaluates the array subscript of %q as arithmetic, which can run commands", s)
				}
			}
		}
		return ""
	case "declare", "typeset", "local", "export", "readonly", "nameref":
		for _, a := range rest {
			if integerFlag(a.Value) {
				return name + " -i makes every assigned value arithmetic, which can run commands"
			}
		}
	}
	for _, a := range rest {
		if s, bad := riskySubscript(a.Value); bad {
			return fmt.Sprintf("%s evaluates the array subscript of %q as arithmetic, which can run commands", name, s)
		}
		if !a.Static {
			if s, bad := riskySubscript(a.Raw); bad {
				return fmt.Sprintf("%s evaluates the array subscript of %q as arithmetic, which can run commands", name, s)
			}
		}
	}
	return ""
}

// codeInValue reports an assigned value that looks like an array
// reference with code in its subscript: harmless as a string, but run by
// bash as soon as the variable is evaluated as arithmetic (an integer
// variable, a subscript naming it, a nameref).
func codeInValue(v string) bool {
	i := strings.IndexByte(v, '[')
	return i >= 0 && strings.ContainsAny(v[i:], "$`")
}

// EVALUATED STRINGS (moat's own; bash evaluates quoted literals as
// arithmetic): array subscripts in the variable names given to builtins
// (test -v 'a[$(id)]', read 'a[$(id)]', printf -v, unset, declare, ...),
// let, declaration builtins with the integer attribute, assignments to
// RANDOM, OPTIND, HISTCMD and the other arithmetic variables, and values
// that store a subscript with code for a later evaluation.
func validateEvaluatedStrings(ctx *Context) policy.Decision {
	for i := range ctx.p.result.Commands {
		args := ctx.p.result.Commands[i].Args
		named := false
		for _, a := range args {
			if isNameBuiltinBase(a.Value) {
				named = true
				break
			}
		}
		if !named {
			continue
		}
		var buf [8]int
		for _, s := range appendProgramStarts(buf[:0], args) {
			if s >= len(args) {
				break
			}
			if why := evaluatedIn(args[s:]); why != "" {
				return ask(why)
			}
		}
	}
	var why string
	if ctx.assignments(func(name string, v Word) bool {
		why = EvaluatedAssignment(name, v)
		return why != ""
	}) {
		return ask(why)
	}
	return pass()
}

// EvaluatedCode reports why bash would evaluate some word of a command
// (given as its argument values, wrappers included) as arithmetic that
// can run commands, or "". The permission layer uses it so that such a
// command is never read-only.
func EvaluatedCode(argv []string) string {
	named := false
	for _, a := range argv {
		if isNameBuiltinBase(a) {
			named = true
			break
		}
	}
	if !named {
		return "" // the common case, without allocating
	}
	args := make([]Word, len(argv))
	for i, a := range argv {
		args[i] = Word{Raw: a, Value: a, Static: true}
	}
	var buf [8]int
	for _, s := range appendProgramStarts(buf[:0], args) {
		if s >= len(args) {
			break
		}
		if why := evaluatedIn(args[s:]); why != "" {
			return why
		}
	}
	return ""
}

// EvaluatedAssignment reports why bash would evaluate the value assigned
// to name as arithmetic that can run commands (now or when the variable is
// evaluated later), or "". A zero Word stands for a value not known (read
// NAME).
func EvaluatedAssignment(name string, v Word) string {
	if arithVars[name] && (!v.Static || (v.Value != "" && !(safeSubscript(v.Value) && v.Value != "@" && v.Value != "*"))) {
		return fmt.Sprintf("bash evaluates a value assigned to %s as arithmetic, which can run commands", name)
	}
	if codeInValue(v.Value) {
		return fmt.Sprintf("the value assigned to %s holds an array subscript with code, which bash runs when the variable is evaluated as arithmetic", name)
	}
	return ""
}

// DangerousAssignment reports whether assigning name (to v, a zero Word
// for a value not known) changes what programs run or how the shell reads
// code (BASH_ENV, PS4, PATH, GIT_SSH_COMMAND, PAGER, LD_PRELOAD, ...). The
// permission layer uses it to tell when a line may run what it does not
// show.
func DangerousAssignment(name string, v Word) bool { return dangerousAssign(name, v) }

// ExecOption reports an option that makes a program run a command of the
// caller's choosing (rg --pre, tar --checkpoint-action, ssh -o
// ProxyCommand, zip -TT, rsync -e, make --eval, ...), given the command's
// argument values, or "". The permission layer uses it to tell when a line
// may run what it does not show.
func ExecOption(argv []string) string {
	args := make([]Word, len(argv))
	for i, a := range argv {
		args[i] = Word{Raw: a, Value: a, Static: true}
	}
	return execOption(args)
}
