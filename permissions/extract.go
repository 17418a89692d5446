package permissions

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/moat-sandbox/moat/internal/shellword"
	"github.com/moat-sandbox/moat/validators"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// This file finds every command a command line can run, for deny and ask
// rules and for the destructive-command warnings: the simple commands
// themselves, the commands inside substitutions, functions, loops and
// conditionals, the command strings handed to sh -c, eval, watch, su -c,
// trap and alias, the commands behind wrappers (env, command, sudo, xargs,
// timeout, nice, nohup, stdbuf, ionice, setsid, ...), the commands of
// find -exec, and git with its global options removed. Each is reduced to
// argument vectors ("candidates"); a deny rule that matches any candidate
// denies the whole command line.
//
// When some command cannot be seen (its name is not a literal, a shell reads
// a script from a pipe, a limit is reached), the extraction is incomplete:
// the command line then cannot be allowed while deny or ask rules exist.

// Limits that keep hostile input linear.
const (
	maxCandidates   = 4096    // argument vectors per command line
	maxPerCommand   = 64      // candidates per simple command
	maxNesting      = 4       // sh -c inside sh -c inside ...
	maxNestedBytes  = 1 << 20 // bytes re-parsed for nested command strings
	maxBraceResults = 64      // words one brace expansion may produce
)

type extraction struct {
	ev         shellword.Evaluator // the shared word evaluator, for the source being walked
	cands      [][]string
	seen       map[string]bool          // candidates already in cands
	incomplete string                   // why some command could not be seen ("" if none)
	piped      map[*syntax.Stmt]pipedIn // the pipes into statements, with what echo ... | prints
	nested     int                      // bytes parsed for nested strings
	findNames  int                      // > 0 while looking at find -exec's words, where {} is a name found
	// lineStdin: the command being looked at (or one it runs, inside
	// sh -c, a wrapper, find -exec) reads a standard input the line
	// gives (a pipe, a redirection on fd 0, a descriptor), known or not;
	// false when it is the caller's, which the line does not choose.
	lineStdin bool
	// execStdin: an exec on the line redirected the shell's own standard
	// input (exec 0<<< 'rm -f victim.txt'; su ran rm: attack pass 91),
	// which every later command reads
	execStdin bool
	// producers: the builtins (echo, printf, true, ...) whose output a
	// pipe into a shell was read as known text; redefined: those the line
	// gives another meaning (a function, an alias, enable). See
	// producerTrusted.
	producers, redefined producerSet
	candsBuf             [4][]string // cands' first backing array
	// aliasWhy: an alias the line defines (what it makes later lines
	// run); newline: some text walked has more than one line, so a
	// later line may use it (see checkAliases)
	aliasWhy string
	newline  bool
}

func (x *extraction) fail(why string) {
	if x.incomplete == "" {
		x.incomplete = why
	}
}

// extractParts works from already flattened parts whose words are plain.
func (x *extraction) extractParts(parts []part) {
	for i := range parts {
		p := &parts[i]
		// What a shell would read as its script from stdin: known text
		// (have, stdin), a file on disk (have, ""), or unknown (!have:
		// the host's, a pipe, another descriptor).
		stdin, have, fromLine := "", false, false
		if i > 0 && (parts[i-1].op == "|" || parts[i-1].op == "|&") {
			if parts[i-1].literal {
				stdin, have = echoOutput(parts[i-1].argv)
			}
			if have {
				x.producerTrusted(parts[i-1].argv[0])
			}
			fromLine = true
		}
		for _, a := range p.assigns {
			x.assignedCode(a.name, a.value, 0)
		}
		for _, r := range p.redirs {
			if r.fd != "0" && (r.fd != "" || !strings.HasPrefix(r.op, "<")) {
				continue
			}
			fromLine = true
			switch {
			case r.isHeredoc():
				stdin, have = heredocText(r), true
			case r.op == "<" || r.op == "<>":
				// a script file: not on the command line, unless it names
				// another descriptor
				stdin, have = "", !stdinScript(r.target) && !unseenScript(r.target)
			default:
				stdin, have = "", false // <&N, 0>&N
			}
		}
		if fromLine && len(p.argv) == 1 && p.argv[0] == "exec" {
			x.execStdin = true
		}
		x.command(p.argv, 0, stdin, have, fromLine)
	}
}

// extractSource parses src and walks the whole syntax tree.
func (x *extraction) extractSource(src string, depth int) {
	if depth > maxNesting {
		x.fail("command strings nested too deeply")
		return
	}
	if strings.IndexByte(src, '\n') >= 0 {
		x.newline = true
	}
	if why := precheck(src); why != "" {
		x.fail(why)
		return
	}
	// Statements are walked as they are parsed, so the syntax tree of a
	// long script is never held whole (and what precedes a syntax error,
	// which bash runs line by line, is still seen).
	// (The loop never breaks: mvdan.cc/sh's Parser.Stmts panics when its
	// sequence yields after an error and the callback stopped.)
	saved := x.ev
	x.ev = shellword.Evaluator{Subst: validators.HeredocSubst(src)}
	defer func() { x.ev = saved }()
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	var perr error
	for st, err := range p.StmtsSeq(strings.NewReader(src)) {
		switch {
		case err != nil:
			if perr == nil {
				perr = err
			}
		case perr == nil:
			x.walk(st, depth)
		}
	}
	if perr != nil {
		x.fail("the command does not parse: " + perr.Error())
	}
	if !utf8.ValidString(src) {
		x.fail("the command is not valid UTF-8 (bash and the parser may read it differently)")
	}
}

func (x *extraction) walk(root syntax.Node, depth int) {
	syntax.Walk(root, func(n syntax.Node) bool {
		if len(x.cands) >= maxCandidates {
			x.fail("too many commands to check")
			return false
		}
		if why := hiddenInNode(n); why != "" {
			x.fail(why)
		}
		switch n := n.(type) {
		case *syntax.Stmt:
			call, ok := n.Cmd.(*syntax.CallExpr)
			if !ok && !x.lineStdin && x.compoundStdin(n) {
				// a block, subshell, loop, conditional, function body or
				// coprocess whose standard input the line gives: the
				// commands inside read it (in bypassPermissions mode,
				// where the validators do not ask for these, { su; } <<<
				// 'rm -f victim.txt' was allowed with Bash(rm:*) denied
				// and ran rm: attack pass 91)
				x.lineStdin = true
				x.walk(n, depth)
				x.lineStdin = false
				return false
			}
			if !ok || len(call.Args) == 0 {
				return true
			}
			argv, ok := x.words(call.Args)
			if !ok {
				return true // x.fail already called
			}
			// What a shell would read as its script from stdin: what echo
			// prints into it (pipeIntoShell), a here-document or
			// here-string on fd 0, a file (have, ""), or unknown (!have:
			// the host's stdin, a pipe, a process substitution, another
			// descriptor, a block's or exec's redirection).
			in, fromLine := x.piped[n]
			stdin, have := in.text, in.known
			for _, r := range n.Redirs {
				input := r.Op == syntax.WordHdoc || r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc ||
					r.Op == syntax.RdrIn || r.Op == syntax.RdrInOut || r.Op == syntax.DplIn
				if r.N != nil && r.N.Value != "0" || r.N == nil && !input {
					continue
				}
				fromLine = true
				switch {
				case r.Hdoc != nil:
					// a here-document whose delimiter is not quoted
					// expands $X, $(...) and $((...)) before the shell
					// reads it: in bypassPermissions mode with
					// Bash(rm:*) denied, X='x; qm -f victim.txt'; su
					// <<EOF / ls ${X/q/r} / EOF and sh <<EOF / ls
					// $(printf 'x; rm -f victim.txt') / EOF were read as
					// ls and ran rm (attack pass 95)
					stdin, have = x.hdocText(r), !hdocExpands(r)
				case r.Op == syntax.WordHdoc && r.Word != nil:
					stdin, have = x.wordValue(r.Word)
				case r.Op == syntax.RdrIn || r.Op == syntax.RdrInOut:
					t, static := "", r.Word != nil && !procSubst(r.Word)
					if static {
						t, static = x.wordValue(r.Word)
					}
					stdin, have = "", static && !stdinScript(t) && !unseenScript(t)
				default:
					// <&N, and 0>&N, which dup2s N onto fd 0 all the
					// same: su 3<<< 'rm -f victim.txt' 0>&3 ran rm
					// (attack pass 91)
					stdin, have = "", false
				}
			}
			if fromLine && len(argv) == 1 && argv[0] == "exec" {
				x.execStdin = true
			}
			x.command(argv, depth, stdin, have, fromLine)
		case *syntax.FuncDecl:
			if n.Name != nil {
				x.producerRedefined(producerBit(n.Name.Value))
			}
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				x.pipeIntoShell(n, depth)
			}
		case *syntax.Assign:
			// GIT_SSH_COMMAND='git push' git fetch, PAGER=..., export X=...
			if n.Value != nil && n.Name != nil {
				if v, ok := x.wordValue(n.Value); ok || decodable(n.Value) {
					x.assignedCode(n.Name.Value, v, depth)
				}
			}
		}
		return true
	})
}

// assignedCode looks at a value assigned to a variable (or to a git
// configuration key, name "git -c"): programs read many variables as
// commands to run (GIT_SSH_COMMAND, PAGER, EDITOR, PROMPT_COMMAND, ...),
// so a value that looks like a command line is read as one, for deny and
// ask rules; so is a single word assigned to such a variable or key
// (GIT_EXTERNAL_DIFF=rm, git -c diff.external=rm, alias.x=!rm).
func (x *extraction) assignedCode(name, v string, depth int) {
	switch {
	case strings.HasPrefix(name, "BASH_FUNC_"):
		x.fail("the environment defines a shell function (" + name + ") that a later bash runs")
		return
	case name == "GIT_CONFIG_PARAMETERS" || name == "GIT_CONFIG_COUNT" || strings.HasPrefix(name, "GIT_CONFIG_KEY_"):
		x.fail(name + " gives git configuration (an alias may run anything)")
		return
	}
	if lesskeyAssignment(name, v) {
		// a lesskey source's #env sets LESSOPEN, which less runs on each
		// file: in bypassPermissions mode with Bash(rm:*) denied,
		// LESSKEYIN=/dev/stdin less FILE <<< '#env ... LESSOPEN=|rm -f
		// victim.txt %s' was allowed and removed the file (attack pass 95)
		x.fail(name + " gives less a lesskey file, whose #env may set a command for it to run (LESSOPEN)")
		return
	}
	v = strings.TrimPrefix(v, "!")
	switch {
	case strings.ContainsAny(v, " \t;|&`$()<>"):
		x.nestedSource(v, depth+1)
	case v != "" && !strings.HasPrefix(v, "-") && (name == "git -c" || validators.DangerousAssignment(name, validators.Word{})):
		budget := maxPerCommand
		x.look([]string{v}, depth+1, "", true, &budget)
	}
}

// lesskeyAssignment reports a variable that names a lesskey file or text
// for less, or LESS with options that may (-k, --lesskey-src, a +CMD).
func lesskeyAssignment(name, v string) bool {
	switch name {
	case "LESSKEY", "LESSKEYIN", "LESSKEY_CONTENT", "LESSKEY_SYSTEM", "LESSKEYIN_SYSTEM":
		return true
	case "LESS":
		return strings.ContainsAny(v, "k+")
	}
	return false
}

// gitConfig looks at a git configuration value set on the line (git -c,
// git config): an alias is another git command ("push") or, after "!", a
// shell command; other keys may name a program (diff.external=rm).
func (x *extraction) gitConfig(key, v string, depth int, budget *int) {
	if k := strings.ToLower(key); strings.HasPrefix(k, "alias.") && !strings.HasPrefix(v, "!") {
		if f := strings.Fields(v); len(f) > 0 {
			x.look(append([]string{"git"}, f...), depth+1, "", false, budget)
		}
		return
	}
	x.assignedCode("git -c", v, depth)
}

// gitConfigSet returns the key and value a git config command line sets
// (git config [opts] KEY VALUE, git config set [opts] KEY VALUE), if any.
func gitConfigSet(args []string) (key, value string, ok bool) {
	var ops []string
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
		case w == "-f" || w == "--file" || w == "--blob" || w == "--type" || w == "--default" || w == "--comment" || w == "--value" || w == "--file=":
			i++
		case strings.HasPrefix(w, "-"):
		default:
			ops = append(ops, w)
		}
	}
	if len(ops) > 0 && (ops[0] == "set" || ops[0] == "add") {
		ops = ops[1:]
	}
	if len(ops) < 2 {
		return "", "", false
	}
	return ops[0], ops[1], true
}

// procSubst reports a word that is a process substitution, <(...) or >(...).
func procSubst(w *syntax.Word) bool {
	if len(w.Parts) != 1 {
		return false
	}
	_, ok := w.Parts[0].(*syntax.ProcSubst)
	return ok
}

// compoundStdin reports a compound statement whose commands read a
// standard input the line gives: a pipe into it, a redirection of its fd
// 0, a function's body (whatever each call gives it) or a coprocess (the
// shell's pipe).
func (x *extraction) compoundStdin(n *syntax.Stmt) bool {
	switch n.Cmd.(type) {
	case *syntax.FuncDecl, *syntax.CoprocClause:
		return true
	}
	if _, ok := x.piped[n]; ok {
		return true
	}
	for _, r := range n.Redirs {
		input := r.Op == syntax.WordHdoc || r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc ||
			r.Op == syntax.RdrIn || r.Op == syntax.RdrInOut || r.Op == syntax.DplIn
		if r.N != nil && r.N.Value == "0" || r.N == nil && input {
			return true
		}
	}
	return false
}

// pipedIn is what a pipe feeds a statement: known text (echo, printf) or
// not.
type pipedIn struct {
	text  string
	known bool
}

// pipeIntoShell handles "producer | sh": when the producer is echo or
// printf with known output, that is the script the right side's shell (or
// source) reads; the right side's own statement is judged with it. Any
// other producer leaves the right side's stdin unknown, but the line's
// all the same (cat f | su: see ownShell).
func (x *extraction) pipeIntoShell(b *syntax.BinaryCmd, depth int) {
	if x.piped == nil {
		x.piped = map[*syntax.Stmt]pipedIn{}
	}
	if _, ok := b.Y.Cmd.(*syntax.CallExpr); !ok {
		x.piped[b.Y] = pipedIn{} // a block, a subshell: their statements' stdin is unknown
		return
	}
	left := b.X
	for {
		if lb, ok := left.Cmd.(*syntax.BinaryCmd); ok && (lb.Op == syntax.Pipe || lb.Op == syntax.PipeAll) {
			left = lb.Y
			continue
		}
		break
	}
	in := pipedIn{}
	if call, ok := left.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 && len(left.Redirs) == 0 {
		if largv, ok := x.words(call.Args); ok && producerBit(largv[0]) != 0 && x.literalWords(call.Args) {
			in.text, in.known = echoOutput(largv)
			if in.known {
				x.producerTrusted(largv[0])
			}
		}
	}
	x.piped[b.Y] = in
}

// literalWords reports words that are what they say: no glob, tilde or
// parameter the shell expands before the program sees them (brace
// expansion is read). echo's output is known text only then: in a
// directory holding a file named "x; rm -f victim.txt", echo ls * | su
// was allowed under Bash(echo:*) and Bash(su:*) with Bash(rm:*) denied,
// read as su <<< 'ls *', and su's shell ran rm, as X='x; qm -f
// victim.txt'; echo ls ${X/q/r} | su did in bypassPermissions mode
// (attack pass 95).
func (x *extraction) literalWords(ws []*syntax.Word) bool {
	for _, w := range ws {
		if _, static := x.expandWord(w); !static {
			return false
		}
	}
	return true
}

// words evaluates call arguments for matching: quotes removed, $'...'
// decoded, brace expansions expanded; other expansions keep their source
// text. A command name that is not a literal makes the extraction
// incomplete (ok false).
func (x *extraction) words(ws []*syntax.Word) ([]string, bool) {
	argv := make([]string, 0, len(ws))
	for i, w := range ws {
		vals, static := x.expandWord(w)
		if i == 0 && !static && len(vals) == 1 && decodable(w) {
			// $'git' push: the name is known for matching, if not static.
			static = true
		}
		if i == 0 && (!static || len(vals) == 0) {
			x.fail("the command name " + quoteWord(wordSource(w)) + " is not a literal")
			return nil, false
		}
		argv = append(argv, vals...)
	}
	return argv, true
}

// expandWord returns the word's possible values: more than one with brace
// expansion. static is false when some part of it is only known at run time.
func (x *extraction) expandWord(w *syntax.Word) ([]string, bool) {
	hasBrace := false
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "{") {
			hasBrace = true
		}
	}
	if !hasBrace {
		v, st := x.wordValue(w)
		return []string{v}, st
	}
	cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
	if !syntax.SplitBraces(cp) {
		v, st := x.wordValue(w)
		return []string{v}, st
	}
	var out []string
	static := true
	for ew, err := range expand.BracesSeq(nil, cp) {
		if err != nil || len(out) >= maxBraceResults {
			x.fail("brace expansion too large")
			break
		}
		v, st := x.wordValue(ew)
		static = static && st
		out = append(out, v)
	}
	return out, static
}

// wordValue is a word's value (static) or, when some part is only known
// at run time, its rendering with the expansions' source text (see
// shellword.Approx). Both come from the evaluator the validators use.
func (x *extraction) wordValue(w *syntax.Word) (string, bool) {
	v, err := x.ev.Value(w)
	if err == nil {
		return v, true
	}
	return shellword.Approx(w), false
}

// decodable reports a word that is not static only because of $'...' or
// $"..." quoting, which matching reads decoded.
func decodable(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[~{$") {
				return false
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

func nodeSource(n syntax.Node) string { return shellword.Source(n) }

func wordSource(w *syntax.Word) string { return nodeSource(w) }

// hdocExpands reports a here-document with an expansion in its body
// (parameter, command or arithmetic: the ones a here-document makes),
// whose text is known only when it runs.
func hdocExpands(r *syntax.Redirect) bool {
	if r.Hdoc == nil {
		return false
	}
	for _, p := range r.Hdoc.Parts {
		if _, ok := p.(*syntax.Lit); !ok {
			return true
		}
	}
	return false
}

func (x *extraction) hdocText(r *syntax.Redirect) string {
	if r.Hdoc == nil {
		return ""
	}
	return shellword.Approx(r.Hdoc)
}

// heredocText is what a here-document or here-string feeds to stdin.
func heredocText(r redir) string { return r.heredoc }

// echoOutput returns what echo or printf with these arguments prints, when
// that is known: nothing for the builtins true, false and ":" (true | su,
// : | ssh host asked for a script unseen since attack pass 91, though
// they print nothing; /bin/true --help prints its help, so only the
// builtin's name counts).
func echoOutput(argv []string) (string, bool) {
	if len(argv) == 0 {
		return "", false
	}
	switch argv[0] {
	case "true", "false", ":":
		return "", true
	}
	// Only what is printed as written: echo of words without a backslash
	// (echo -e, and dash's echo without it, decode \x6d and \155), printf
	// of one format with no % and no backslash but \n.
	switch path.Base(argv[0]) {
	case "echo":
		args := argv[1:]
		// bash's echo takes any word of n, e and E letters after '-' as
		// its options (-Ee, -nn, -En): read as text, echo -Ee rm -f
		// victim.txt | su was allowed under Bash(echo:*) and Bash(su:*)
		// with Bash(rm:*) denied, and su's shell ran rm (attack pass 95)
		for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && strings.Trim(args[0][1:], "neE") == "" {
			args = args[1:]
		}
		for _, a := range args {
			if strings.Contains(a, `\`) {
				return "", false
			}
		}
		return strings.Join(args, " "), true
	case "printf":
		if len(argv) != 2 || strings.Contains(argv[1], "%") || strings.Contains(strings.ReplaceAll(argv[1], `\n`, ""), `\`) {
			return "", false
		}
		return strings.ReplaceAll(argv[1], `\n`, "\n"), true
	}
	return "", false
}

// producerSet is a set of the builtins whose output echoOutput knows.
type producerSet uint8

const allProducers producerSet = 1<<5 - 1

// producerBit is name's bit in a producerSet (0 for any other name).
func producerBit(name string) producerSet {
	switch path.Base(name) {
	case "echo":
		return 1
	case "printf":
		return 2
	case "true":
		return 4
	case "false":
		return 8
	case ":":
		return 16
	}
	return 0
}

// producerTrusted records that a pipe's text was read from what the
// builtin name prints, and producerRedefined that the line gives such a
// name another meaning. Together the text read is not what runs: in
// bypassPermissions mode with Bash(rm:*) denied, echo() { command printf
// 'rm -f victim.txt\n'; }; echo hi | sh was allowed (read as sh <<< hi)
// and removed the file (attack pass 95). Either may come first (a loop
// may define the function after the pipe), so each checks the other.
func (x *extraction) producerTrusted(name string) {
	x.producers |= producerBit(name)
	x.checkProducers()
}

func (x *extraction) producerRedefined(b producerSet) {
	x.redefined |= b
	x.checkProducers()
}

func (x *extraction) checkProducers() {
	if x.producers&x.redefined != 0 {
		x.fail("the line redefines echo, printf, true, false or : (a function, an alias or enable), so what it pipes into a program is not what the line shows")
	}
}

// maxBracketDepth bounds bracket nesting before parsing: the parser's cost
// grows faster than linearly with it.
const maxBracketDepth = 256

// precheck refuses, before parsing, what would be slow to parse or read
// differently by the parser and by bash.
func precheck(src string) string {
	if len(src) > MaxParsedBytes {
		return fmt.Sprintf("command longer than %d bytes", MaxParsedBytes)
	}
	depth := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case 0:
			return "command contains a NUL byte"
		case '(', '{', '[':
			depth++
			if depth > maxBracketDepth {
				return "brackets nest too deeply"
			}
		case ')', '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return ""
}

// globName reports whether a command name holds a glob pattern the shell
// expands (* or ?, or a [ with a ] after it: the command [ is none).
func globName(name string) bool {
	if strings.ContainsAny(name, "*?") {
		return true
	}
	i := strings.IndexByte(name, '[')
	return i >= 0 && strings.IndexByte(name[i+1:], ']') > 0
}

// nestedSource parses a command string found inside another command,
// which a shell other than bash may run: /bin/sh (dash on Debian and
// Ubuntu, ash on Alpine and busybox) runs what sh -c, su's and ssh's login
// shells, watch, git's ! aliases, crontab, xargs sh and most programs'
// command variables are given. Such a shell reads some of bash's syntax
// otherwise: dash reads ls &>/dev/null rm -f victim.txt as ls & and
// >/dev/null rm -f victim.txt, so in bypassPermissions mode with
// Bash(rm:*) denied, sh -c 'ls &>/dev/null rm -f victim.txt' was allowed
// (read as ls with three arguments) and removed the file, as echo
// '...' | su was under Bash(echo:*) and Bash(su:*) (attack pass 97). The
// text is read the POSIX way too (posixReading); bashSource is for the
// strings bash itself runs.
func (x *extraction) nestedSource(src string, depth int) {
	x.nestedIn(src, depth, false)
}

// bashSource parses a command string that bash itself runs (eval, trap,
// alias, bash -c, source): read as bash reads it only.
func (x *extraction) bashSource(src string, depth int) {
	x.nestedIn(src, depth, true)
}

func (x *extraction) nestedIn(src string, depth int, bash bool) {
	if x.findNames > 0 && strings.Contains(src, "{}") {
		// find -exec sh -c 'echo {}': each name find finds (the working
		// tree's, untrusted) becomes part of the script; a file named
		// $(rm x) or ;rm x ran rm (found by attack pass 49)
		x.fail("find puts the names it finds ({}) into a command string")
		return
	}
	x.nested += len(src)
	if x.nested > maxNestedBytes {
		x.fail("nested command strings too large")
		return
	}
	x.extractSource(src, depth)
	if !bash {
		x.posixReading(src, depth)
	}
}

// posixReading reads a nested command string as a POSIX shell does: a
// string that does not parse so (&>, &>>, |&, <<<, <(...), arrays,
// function NAME, ${X/a/b}) is read differently, or not at all, by dash
// and ash, so the line asks; one that does is walked again as that
// shell's commands (((rm -f / victim.txt)) is arithmetic to bash and two
// subshells running rm to dash).
func (x *extraction) posixReading(src string, depth int) {
	if depth > maxNesting || precheck(src) != "" {
		return // extractSource has failed already
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(src), "")
	if err != nil {
		x.fail("a command string that sh (dash, ash) may run does not read the same there as in bash: " + err.Error())
		return
	}
	saved := x.ev
	x.ev = shellword.Evaluator{Subst: validators.HeredocSubst(src)}
	defer func() { x.ev = saved }()
	for _, st := range f.Stmts {
		x.walk(st, depth)
	}
}

// command records the candidates of one command and looks through it.
// stdin is the script a shell would read from its standard input, when
// known (haveStdin).
// fromLine: its standard input is the line's (a pipe, a redirection on
// fd 0), known or not; a command inside another (sh -c 'su') reads the
// outer one's.
func (x *extraction) command(argv []string, depth int, stdin string, haveStdin, fromLine bool) {
	budget := maxPerCommand
	saved := x.lineStdin
	x.lineStdin = saved || fromLine || x.execStdin
	x.look(argv, depth, stdin, haveStdin, &budget)
	x.lineStdin = saved
}

func (x *extraction) add(argv []string) {
	if len(x.cands) < 8 { // small lines: a scan is cheaper than a map
		for _, c := range x.cands {
			if equalWords(c, argv) {
				return
			}
		}
		if x.cands == nil {
			x.cands = x.candsBuf[:0]
		}
		x.cands = append(x.cands, argv)
		return
	}
	if x.seen == nil {
		x.seen = make(map[string]bool, 2*len(x.cands))
		for _, c := range x.cands {
			x.seen[strings.Join(c, "\x00")] = true
		}
	}
	k := strings.Join(argv, "\x00")
	if x.seen[k] {
		return
	}
	x.seen[k] = true
	x.cands = append(x.cands, argv)
}

func (x *extraction) look(argv []string, depth int, stdin string, haveStdin bool, budget *int) {
	if len(argv) == 0 {
		return
	}
	if *budget <= 0 {
		x.fail("too many ways to read one command")
		return
	}
	*budget--
	x.add(argv)
	name := argv[0]
	if x.findNames > 0 && strings.Contains(name, "{}") {
		x.fail("find runs the names it finds ({}) as the command")
	}
	if globName(name) {
		// a wrapper's command named by a pattern (nice r? -f x beside a
		// file named rm, nice /usr/bin/r? -f x) runs what the shell
		// expands it to, which the rules do not see: under Bash(nice:*)
		// with Bash(rm:*) denied, touch rm; nice r? -f victim.txt was
		// allowed and removed the file (attack pass 88). A command
		// name of the line's own asks for this already.
		x.fail("the command name " + quoteWord(name) + " is a glob pattern: what it expands to runs")
	}
	if len(name) > 1 && name[0] == '=' {
		// zsh (the agent's shell where it is the user's) runs =cmd as
		// the program cmd found in PATH: =rm -f victim.txt ran rm in a
		// zsh session in bypassPermissions mode with Bash(rm:*) denied
		// (attack pass 99). bash runs a program named "=rm"; both
		// readings are judged.
		x.look(append([]string{name[1:]}, argv[1:]...), depth, stdin, haveStdin, budget)
	}
	if why := zshOptions(argv); why != "" {
		x.fail(why)
	}
	if strings.Contains(name, "/") {
		name = path.Base(name)
		if name == "" || name == "." || name == "/" {
			return
		}
		nv := append([]string{name}, argv[1:]...)
		x.add(nv)
		argv = nv
	}
	if why := x.hiddenInArgv(argv, depth); why != "" {
		x.fail(why)
	}
	if shellNames.get()[name] {
		x.shell(argv, depth, stdin, haveStdin)
		return
	}
	if isSource(name) {
		x.script(sourceScript(argv), depth, stdin, haveStdin, true)
		return
	}
	switch name {
	case "eval":
		x.bashSource(strings.Join(argv[1:], " "), depth+1)
		return
	case "trap":
		// trap [-lpP] [[--] ACTION SIGNAL...]; "-" as the action resets.
		args := argv[1:]
		if len(args) > 0 && args[0] == "--" {
			args = args[1:]
		} else if len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
			return // -l, -p, -P print
		}
		if len(args) > 0 && args[0] != "-" {
			x.bashSource(args[0], depth+1)
		}
		return
	case "alias":
		for _, a := range argv[1:] {
			if n, v, ok := strings.Cut(a, "="); ok {
				x.producerRedefined(producerBit(n))
				x.bashSource(v, depth+1)
				// The session's bash expands aliases, and reads a line
				// one line at a time: after alias Q=eval, a later line's
				// Q 'rm -f victim.txt' runs eval, which the rules see as
				// a command named Q (in bypassPermissions mode with
				// Bash(rm:*) denied, it removed the file: attack pass
				// 99). What the alias makes of the words after it is
				// not read. bash reads a whole line before it runs any
				// of it, so an alias applies to later lines only: a
				// line of one line (alias ll='ls -l'; ll) is judged as
				// before (checkAliases).
				if x.aliasWhy == "" {
					x.aliasWhy = "alias " + quoteWord(n) + " makes later lines run " + quoteWord(v) + " with their words, which the rules do not see"
				}
			}
		}
		return
	case "enable":
		// enable -n echo (then a program named echo on $PATH) or enable
		// -f LIB echo (a builtin of a library's) makes echo something else
		x.producerRedefined(allProducers)
		return
	case "watch":
		rests := x.rests(argv, wrappers.get()["watch"])
		for _, r := range rests {
			x.nestedSource(strings.Join(r, " "), depth+1)
		}
		return
	case "find":
		x.findExec(argv, depth, budget)
		return
	case "git":
		// git -c alias.p='!git push' p, -c core.pager=..., -c core.sshCommand=...
		for i := 1; i < len(argv); i++ {
			w := argv[i]
			switch {
			case w == "-c" && i+1 < len(argv):
				i++
				if k, v, ok := strings.Cut(argv[i], "="); ok {
					x.gitConfig(k, v, depth, budget)
				}
			case strings.HasPrefix(w, "-c") && len(w) > 2:
				if k, v, ok := strings.Cut(w[2:], "="); ok {
					x.gitConfig(k, v, depth, budget)
				}
			case w == "--config-env" || strings.HasPrefix(w, "--config-env="):
				x.fail("git takes configuration from the environment (--config-env)")
			}
		}
		sub := gitStripGlobals(argv)
		if sub == nil {
			sub = argv
		}
		if len(sub) > 1 && !strings.HasPrefix(sub[1], "-") {
			if !gitCommands.get()[sub[1]] {
				// an alias in some configuration (git config alias.p push,
				// then git p) runs what its name does not show
				x.fail("git " + sub[1] + " is not a git command moat knows (an alias may run anything)")
			}
			if sub[1] == "config" {
				if k, v, ok := gitConfigSet(sub[2:]); ok {
					x.gitConfig(k, v, depth, budget)
				}
			}
			// git rebase -x CMD, git bisect run CMD, git submodule
			// foreach CMD run a shell command of the line's (found by
			// attack pass 49)
			for _, c := range gitRunsCommands(sub[1:]) {
				x.nestedSource(c, depth+1)
			}
		}
		if len(sub) != len(argv) {
			x.look(sub, depth, "", false, budget)
		}
		return
	case "export", "declare", "typeset", "local", "readonly":
		for _, a := range argv[1:] {
			if n, v, ok := strings.Cut(a, "="); ok && isAssignmentWord(a) {
				x.assignedCode(n, v, depth)
			}
		}
		return
	case "xargs", "parallel", "sem":
		x.fail(name + " builds its command from its input")
	case "capsh":
		// capsh [OPTIONS] -- ARGS runs the shell (/bin/bash, or
		// --shell=PATH) with ARGS; == ARGS runs capsh again
		sh := "bash"
		for i := 1; i < len(argv); i++ {
			w := argv[i]
			switch {
			case strings.HasPrefix(w, "--shell="):
				sh = w[len("--shell="):]
			case w == "--" || w == "==":
				next := sh
				if w == "==" {
					next = "capsh"
				}
				x.look(append([]string{next}, argv[i+1:]...), depth, stdin, haveStdin, budget)
				return
			}
		}
		return
	case "sg":
		// sg GROUP [-c] COMMAND: COMMAND is a string for sh -c
		rest := argv[1:]
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") && rest[0] != "-c" {
			rest = rest[1:]
		}
		if len(rest) <= 1 || len(rest) == 2 && rest[1] == "-c" {
			// sg GROUP with no command: a shell reading the line's
			// standard input, as newgrp's (see stdinShell)
			x.ownShell(depth, stdin, haveStdin, budget)
		}
		if len(rest) > 1 {
			rest = rest[1:]
			if rest[0] == "-c" {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				x.nestedSource(rest[0], depth+1)
			}
		}
		return
	}
	x.moreCommands(argv, depth, stdin, haveStdin, budget)
	if x.runner(argv, depth, stdin, haveStdin, budget) || x.elsewhere(argv, depth, stdin, haveStdin, budget) {
		return
	}
	if name == "flatpak" {
		x.flatpak(argv, depth, stdin, haveStdin, budget)
		return
	}
	if name == "start-stop-daemon" {
		x.startStopDaemon(argv, depth, stdin, haveStdin, budget)
		return
	}
	spec, ok := wrappers.get()[name]
	if !ok {
		return
	}
	if name == "runcon" {
		// with -t, -u, -r or -l there is no context before the command
		noContext := spec
		noContext.positionals = 0
		for _, rest := range x.rests(argv, noContext) {
			x.look(rest, depth, stdin, haveStdin, budget)
		}
	}
	if spec.assignments {
		for _, a := range argv[1:] {
			if n, v, ok := strings.Cut(a, "="); ok && envAssignment(a) {
				x.assignedCode(n, v, depth)
			}
		}
	}
	if name == "sudo" {
		// sudo -s / -i CMD runs CMD with the user's shell (-c)
		for _, rest := range x.rests(argv, spec) {
			for _, w := range argv[1:] {
				if w == "-s" || w == "-i" || w == "--shell" || w == "--login" || len(w) > 2 && w[0] == '-' && w[1] != '-' && strings.ContainsAny(w, "si") {
					x.nestedSource(strings.Join(rest, " "), depth+1)
					break
				}
			}
		}
	}
	if spec.shellFlag != "" {
		letter := rune(spec.shellFlag[1])
		for i := 1; i < len(argv); i++ {
			w := argv[i]
			opt, v, eq := strings.Cut(w, "=")
			switch {
			case slices.ContainsFunc(spec.shellLongs, func(l string) bool { return longAbbrev(opt, l) }):
				if eq {
					x.nestedSource(v, depth+1)
				} else if i+1 < len(argv) {
					x.nestedSource(argv[i+1], depth+1)
				}
			case len(w) > 1 && w[0] == '-' && w[1] != '-' && strings.ContainsRune(w, letter):
				// -c CMD, and bundled or attached: -qc CMD, -c'CMD', -qcCMD
				// (read as widely as getopt might: more candidates, never fewer).
				k := strings.IndexRune(w, letter)
				if rest := w[k+1:]; rest != "" {
					x.nestedSource(rest, depth+1)
				} else if i+1 < len(argv) {
					x.nestedSource(argv[i+1], depth+1)
				}
			}
		}
	}
	for _, rest := range x.rests(argv, spec) {
		x.look(rest, depth, stdin, haveStdin, budget)
	}
}

// flatpak looks at what flatpak runs in an application's sandbox: flatpak
// run --command=CMD APP ARGS runs CMD ARGS (under Bash(flatpak run:*)
// with Bash(rm:*) denied, flatpak run --command=rm APP -f x was allowed),
// and flatpak enter INSTANCE CMD ARGS runs CMD ARGS in a running one, as
// flatpak build DIRECTORY CMD ARGS does in a build directory's sandbox
// (under Bash(flatpak:*), flatpak build dir rm -f x was allowed: attack
// pass 83; not run here, where flatpak is not installed).
// flatpak's options take a value after '=' or as the next word, and not
// every option is known here, so each word after the subcommand that is
// not an option is read as the application (or instance) in turn: more
// readings, never fewer. Without --command, run starts the application's
// own command, which the line does not show.
func (x *extraction) flatpak(argv []string, depth int, stdin string, haveStdin bool, budget *int) {
	sub := slices.IndexFunc(argv[1:], func(w string) bool { return w == "run" || w == "enter" || w == "build" }) + 1
	if sub == 0 {
		return
	}
	var cmds []string
	if argv[sub] == "run" {
		for j := sub + 1; j < len(argv); j++ {
			if v, ok := strings.CutPrefix(argv[j], "--command="); ok {
				cmds = append(cmds, v)
			} else if argv[j] == "--command" && j+1 < len(argv) {
				cmds = append(cmds, argv[j+1])
			}
		}
		if len(cmds) == 0 {
			return
		}
	}
	for j := sub + 1; j < len(argv); j++ {
		if strings.HasPrefix(argv[j], "-") {
			continue
		}
		if argv[sub] != "run" {
			if j+1 < len(argv) {
				x.look(argv[j+1:], depth, stdin, haveStdin, budget)
			}
			continue
		}
		for _, c := range cmds {
			x.look(append([]string{c}, argv[j+1:]...), depth, stdin, haveStdin, budget)
		}
	}
}

// startStopDaemon looks at what start-stop-daemon --start runs: the
// program of --startas (-a), else of --exec (-x), with the words after
// "--" as its arguments. Under Bash(start-stop-daemon:*) with Bash(rm:*)
// denied, start-stop-daemon -S -x /bin/rm -- -f victim.txt was allowed and
// removed the file (attack pass 83). Every value either option may have
// (attached, bundled after other letters as in -Sx/bin/rm, the next word,
// a long option's abbreviation) is read as the program: more readings,
// never fewer.
func (x *extraction) startStopDaemon(argv []string, depth int, stdin string, haveStdin bool, budget *int) {
	var progs, args []string
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		if w == "--" {
			args = argv[i+1:]
			break
		}
		next := ""
		if i+1 < len(argv) {
			next = argv[i+1]
		}
		switch {
		case strings.HasPrefix(w, "--"):
			name, v, eq := strings.Cut(w, "=")
			if len(name) >= 4 && strings.HasPrefix("--exec", name) || len(name) >= 8 && strings.HasPrefix("--startas", name) {
				if !eq {
					v = next
				}
				progs = append(progs, v)
			}
		case strings.HasPrefix(w, "-"):
			for k := 1; k < len(w); k++ {
				if w[k] != 'x' && w[k] != 'a' {
					continue
				}
				if k+1 < len(w) {
					progs = append(progs, w[k+1:])
				} else {
					progs = append(progs, next)
				}
			}
		}
	}
	for _, p := range progs {
		if p != "" {
			x.look(append([]string{p}, args...), depth, stdin, haveStdin, budget)
		}
	}
}

// gitRunsCommands returns the shell commands a git subcommand line (args
// from the subcommand's name on) runs: rebase's -x/--exec (each one,
// bundled and attached too, read as widely as parse-options might),
// bisect run's command and submodule foreach's.
func gitRunsCommands(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	var out []string
	switch args[0] {
	case "rebase":
		for i := 1; i < len(args); i++ {
			w := args[i]
			if w == "--" {
				break
			}
			opt, val, hasVal := strings.Cut(w, "=")
			switch {
			case strings.HasPrefix(opt, "--") && len(opt) >= 4 && strings.HasPrefix("--exec", opt):
				if hasVal {
					out = append(out, val)
				} else if i+1 < len(args) {
					out = append(out, args[i+1])
				}
			case len(w) > 1 && w[0] == '-' && w[1] != '-' && strings.ContainsRune(w, 'x'):
				if k := strings.IndexRune(w, 'x'); k+1 < len(w) {
					out = append(out, w[k+1:])
				} else if i+1 < len(args) {
					out = append(out, args[i+1])
				}
			}
		}
	case "bisect":
		if len(args) > 2 && args[1] == "run" {
			out = append(out, strings.Join(args[2:], " "))
		}
	case "submodule":
		i := 1
		for i < len(args) && strings.HasPrefix(args[i], "-") {
			i++
		}
		if i < len(args) && args[i] == "foreach" {
			i++
			for i < len(args) && strings.HasPrefix(args[i], "-") {
				i++
			}
			if i < len(args) {
				out = append(out, strings.Join(args[i:], " "))
			}
		}
	}
	return out
}

// findExec looks at the commands of find's -exec, -execdir, -ok and -okdir.
func (x *extraction) findExec(argv []string, depth int, budget *int) {
	for i := 1; i < len(argv); i++ {
		switch argv[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(argv) && argv[j] != ";" && argv[j] != "+" {
				j++
			}
			x.findNames++
			x.look(argv[i+1:j], depth, "", false, budget)
			x.findNames--
			i = j
		}
	}
}

var shellNames = lazy[map[string]bool]{make: func() map[string]bool {
	return map[string]bool{
		"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true,
		"ash": true, "yash": true, "posh": true, "fish": true, "rbash": true, "tcsh": true, "csh": true,
	}
}}

// shellArgs finds, in a shell's arguments, the index of the -c command
// string and of the script file (-1 when absent).
func shellArgs(argv []string) (cmdIdx, scriptIdx int, stdinFlag bool) {
	hasC := false
	i := 1
	for ; i < len(argv); i++ {
		w := argv[i]
		if w == "--" || w == "-" {
			i++
			break
		}
		if len(w) < 2 || (w[0] != '-' && w[0] != '+') {
			break
		}
		if strings.HasPrefix(w, "--") {
			if w == "--rcfile" || w == "--init-file" {
				i++
			}
			continue
		}
		for _, c := range w[1:] {
			switch c {
			case 'c':
				hasC = true
			case 's':
				stdinFlag = true
			case 'o', 'O':
				i++ // takes a value
			}
		}
	}
	if i >= len(argv) {
		return -1, -1, stdinFlag
	}
	if hasC {
		return i, -1, stdinFlag
	}
	if stdinFlag {
		return -1, -1, true
	}
	return -1, i, false
}

// script looks at a script operand of a shell or of source: a script
// file's contents are not on the command line (as for any program), but
// the shell's standard input as a script is (a here-string, echo ... |),
// and a process substitution or another descriptor is not to be seen.
// bash: bash runs it (source, bash SCRIPT), not maybe sh (nestedSource).
func (x *extraction) script(op string, depth int, stdin string, haveStdin, bash bool) {
	switch {
	case stdinScript(op) && haveStdin && stdin != "":
		x.nestedIn(stdin, depth+1, bash)
	case stdinScript(op) && !haveStdin:
		x.fail("a shell reads its script from standard input, which the line does not show")
	case unseenScript(op):
		x.fail("a shell reads its script from " + quoteWord(op) + ", which the line does not show")
	}
}

// isBash reports a shell name that is bash (so reads the text as bash
// does).
func isBash(name string) bool {
	switch path.Base(name) {
	case "bash", "rbash":
		return true
	}
	return false
}

func (x *extraction) shell(argv []string, depth int, stdin string, haveStdin bool) {
	// --rcfile/--init-file FILE: a start-up script (an interactive shell
	// reads it): a process substitution or a descriptor there is a script
	// the line does not show.
	bash := isBash(argv[0])
	for i := 1; i+1 < len(argv) && strings.HasPrefix(argv[i], "-"); i++ {
		if argv[i] == "--rcfile" || argv[i] == "--init-file" {
			x.script(argv[i+1], depth, stdin, haveStdin, bash)
			i++
		}
	}
	cmd, script, _ := shellArgs(argv)
	switch {
	case cmd >= 0:
		x.nestedIn(argv[cmd], depth+1, bash)
	case script >= 0:
		x.script(argv[script], depth, stdin, haveStdin, bash)
	case haveStdin && stdin != "":
		x.nestedIn(stdin, depth+1, bash)
	case haveStdin:
		// its script is a file on disk (sh < script.sh), as sh script.sh
	default:
		x.fail("a shell reads its script from standard input, which the line does not show")
	}
}

// wrapperSpec describes a command that runs another command.
type wrapperSpec struct {
	valueFlags  map[string]bool // flags that take a value ("-n", "--adjustment")
	plainFlags  map[string]bool // flags known to take none
	positionals int             // words between the flags and the command
	assignments bool            // NAME=value words before the command (env, sudo)
	split       string          // flag whose value is split into words (env -S)
	shellFlag   string          // flag whose value is a shell command (su -c)
	shellLongs  []string        // its long options (su's --command and --session-command)
}

func set(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}

// wrappers are the commands deny and ask rules look through. Unknown flags
// are read both ways (with and without a value), so no spelling hides the
// command.
var wrappers = lazy[map[string]wrapperSpec]{make: func() map[string]wrapperSpec {
	m := map[string]wrapperSpec{
		// GNU env's --default-signal, --ignore-signal and --block-signal
		// take their signal only after '=' (an optional argument): read
		// as taking the next word, env --block-signal rm -f victim.txt was
		// allowed under Bash(env:*) with Bash(rm:*) denied, and removed
		// the file (attack pass 83); --list-signal-handling takes none
		"env": {valueFlags: set("-u", "--unset", "-C", "--chdir", "-S", "--split-string", "-P"),
			plainFlags: set("-i", "--ignore-environment", "-0", "--null", "-v", "--debug", "-", "--default-signal", "--ignore-signal", "--block-signal", "--list-signal-handling"), assignments: true, split: "-S"},
		"command":          {plainFlags: set("-p", "-v", "-V")},
		"builtin":          {},
		"exec":             {valueFlags: set("-a"), plainFlags: set("-c", "-l")},
		"nohup":            {},
		"time":             {valueFlags: set("-f", "--format", "-o", "--output"), plainFlags: set("-p", "-a", "--append", "-v", "--verbose", "-q", "--quiet", "--portability"), assignments: true}, // bash's time takes a pipeline: time [--] FOO=1 cmd
		"timeout":          {valueFlags: set("-k", "--kill-after", "-s", "--signal"), plainFlags: set("--foreground", "--preserve-status", "-v", "--verbose"), positionals: 1},
		"nice":             {valueFlags: set("-n", "--adjustment")},
		"ionice":           {valueFlags: set("-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"), plainFlags: set("-t", "--ignore")},
		"stdbuf":           {valueFlags: set("-i", "--input", "-o", "--output", "-e", "--error")},
		"setsid":           {plainFlags: set("-c", "--ctty", "-f", "--fork", "-w", "--wait")},
		"sudo":             {valueFlags: set("-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host", "-p", "--prompt", "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U", "--other-user"), plainFlags: set("-E", "-H", "-n", "-S", "-i", "-s", "-k", "-K", "-b", "-A", "-P", "--preserve-env", "--login", "--shell", "--non-interactive", "--stdin", "--background", "--askpass", "--set-home"), assignments: true},
		"doas":             {valueFlags: set("-u", "-C"), plainFlags: set("-n", "-s")},
		"pkexec":           {valueFlags: set("--user")},
		"su":               {valueFlags: set("-c", "--command", "--session-command", "-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment"), plainFlags: set("-", "-l", "--login", "-m", "-p", "--preserve-environment", "-f", "-P", "--pty"), positionals: 1, shellFlag: "-c", shellLongs: []string{"--command", "--session-command"}},
		"runuser":          {valueFlags: set("-u", "--user", "-c", "--command", "--session-command", "-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w"), plainFlags: set("-", "-l", "--login", "-m", "-p", "-f", "-P", "--pty"), shellFlag: "-c", shellLongs: []string{"--command", "--session-command"}},
		"script":           {valueFlags: set("-c", "--command", "-E", "--echo", "-I", "--log-in", "-O", "--log-out", "-B", "--log-io", "-T", "--log-timing", "-m", "--logging-format", "-o", "--output-limit"), plainFlags: set("-a", "--append", "-e", "--return", "-f", "--flush", "-q", "--quiet", "--force"), shellFlag: "-c", shellLongs: []string{"--command"}},
		"flock":            {valueFlags: set("-w", "--wait", "--timeout", "-E", "--conflict-exit-code", "-c", "--command"), plainFlags: set("-s", "--shared", "-x", "-e", "--exclusive", "-u", "--unlock", "-n", "--nb", "--nonblock", "-o", "--close", "-F", "--no-fork", "--verbose"), positionals: 1, shellFlag: "-c", shellLongs: []string{"--command"}},
		"chroot":           {valueFlags: set("--userspec", "--groups"), plainFlags: set("--skip-chdir"), positionals: 1},
		"chrt":             {valueFlags: set("-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline"), plainFlags: set("-a", "--all-tasks", "-b", "--batch", "-d", "--deadline", "-f", "--fifo", "-i", "--idle", "-o", "--other", "-r", "--rr", "-R", "--reset-on-fork", "-v", "--verbose", "-m", "--max"), positionals: 1},
		"taskset":          {plainFlags: set("-a", "--all-tasks", "-c", "--cpu-list"), positionals: 1},
		"unshare":          {},
		"nsenter":          {},
		"firejail":         {},
		"busybox":          {},
		"toybox":           {},
		"caffeinate":       {valueFlags: set("-t", "-w"), plainFlags: set("-d", "-i", "-m", "-s", "-u")},
		"unbuffer":         {plainFlags: set("-p")},
		"proxychains":      {valueFlags: set("-f"), plainFlags: set("-q")},
		"proxychains4":     {valueFlags: set("-f"), plainFlags: set("-q")},
		"torsocks":         {},
		"strace":           {valueFlags: set("-o", "-e", "-p", "-s", "-E", "-u", "-a", "-b", "-I", "-O", "-S", "-P", "-X")},
		"ltrace":           {valueFlags: set("-o", "-e", "-p", "-s", "-u", "-a", "-n")},
		"xargs":            {valueFlags: set("-a", "--arg-file", "-d", "--delimiter", "-E", "--eof", "-I", "--replace", "-L", "--max-lines", "-n", "--max-args", "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"), plainFlags: set("-0", "--null", "-r", "--no-run-if-empty", "-t", "--verbose", "-p", "--interactive", "-x", "--exit", "--open-tty", "-o")},
		"parallel":         {},
		"watch":            {valueFlags: set("-n", "--interval", "-q", "--equexit"), plainFlags: set("--differences", "-b", "--beep", "-c", "--color", "-C", "--no-color", "-d", "-e", "--errexit", "-f", "--follow", "-g", "--chgexit", "-p", "--precise", "-t", "--no-title", "-w", "--no-wrap", "-x", "--exec", "-r", "--no-rerun")},
		"sg":               {positionals: 1},
		"prlimit":          {valueFlags: set("-p", "--pid", "-o", "--output")},
		"dbus-run-session": {valueFlags: set("--config-file", "--dbus-daemon")},
		"systemd-run": {valueFlags: set("-u", "--unit", "-p", "--property", "--description", "--slice", "-E", "--setenv", "-M", "--machine", "-H", "--host",
			"--working-directory", "--uid", "--gid", "--nice", "--on-active", "--on-boot", "--on-startup", "--on-unit-active", "--on-unit-inactive",
			"--on-calendar", "--timer-property", "--path-property", "--socket-property", "-G", "--service-type", "--expand-environment")},
		// zsh's precommand modifiers ("- cmd" runs cmd with a dash before
		// its argv[0]); in bash they are commands of their own names.
		"noglob":    {},
		"nocorrect": {},
		"-":         {},
		"repeat":    {positionals: 1},
		// bash's time keyword takes one "--" ("time -- FOO=1 rm x", which
		// the parser leaves as a command named "--"); elsewhere a command
		// named "--" is not found.
		"--": {assignments: true},

		// attack pass 49: more programs that run the command after their
		// options (fakeroot rm x ran rm under deny Bash(rm:*))
		"fakeroot":        {valueFlags: set("-l", "--lib", "--faked", "-s", "-i", "-b")},
		"setpriv":         {},
		"ssh-agent":       {valueFlags: set("-a", "-E", "-t", "-P", "-O")},
		"eatmydata":       {},
		"cttyhack":        {}, // busybox cttyhack rm -f victim.txt ran rm (attack pass 92)
		"chronic":         {},
		"ifne":            {},
		"dbus-launch":     {},
		"xvfb-run":        {},
		"numactl":         {},
		"systemd-inhibit": {},
		"valgrind":        {},
		"catchsegv":       {},
		"tini":            {},
		"dumb-init":       {},
		"gosu":            {positionals: 1},
		"su-exec":         {positionals: 1},

		// attack pass 62: package runners and other programs that run the
		// command after their options (npx rm x, run0 rm x, entr rm x)
		"npx":       {valueFlags: set("-p", "--package", "-c", "--call")},
		"pnpx":      {},
		"bunx":      {valueFlags: set("-p", "--package")},
		"uvx":       {valueFlags: set("--from", "--with", "-p", "--python")},
		"watchexec": {valueFlags: set("-w", "--watch", "-e", "--exts", "-f", "--filter", "-i", "--ignore", "-d", "--debounce", "-s", "--signal", "--shell", "-E", "--env")},
		"hyperfine": {},
		"rlwrap":    {},
		"entr":      {},
		"proot":     {},
		"tsp":       {},
		// flatpak-spawn --host CMD runs CMD on the host, through D-Bus
		"flatpak-spawn": {},
		"cgexec":        {valueFlags: set("-g")},
		"run0": {valueFlags: set("-u", "--user", "-g", "--group", "-D", "--chdir", "--setenv", "--unit", "--property",
			"--description", "--slice", "--nice", "--machine", "--background")},

		// attack pass 71: more programs that run the command after their
		// options (cross-env A=1 rm x, env-cmd -f .env rm x, setarch
		// x86_64 rm x, corepack pnpm exec rm x were allowed under their
		// own rule with Bash(rm:*) denied)
		"cross-env":      {assignments: true},
		"setarch":        {plainFlags: setarchOpts.get().plainFlags, positionals: 1},
		"dotenv":         {valueFlags: set("-e", "-v", "-c", "-p", "-f", "--file")},
		"env-cmd":        {valueFlags: set("-f", "--file", "-e", "--environments", "-r", "--rc-file")},
		"envdir":         {positionals: 1},
		"chpst":          {valueFlags: set("-u", "-U", "-b", "-e", "-/", "-C", "-n", "-l", "-L", "-m", "-d", "-o", "-p", "-f", "-c", "-r", "-t")},
		"faketime":       {positionals: 1},
		"trickle":        {valueFlags: set("-d", "-u", "-w", "-t", "-l", "-n")},
		"ccache":         {},
		"sccache":        {},
		"corepack":       {},
		"systemd-nspawn": {},
		"linux32":        {},
		"linux64":        {},
		"uname26":        {},

		// attack pass 81: daemontools' and s6's programs that run the
		// command after their options (softlimit -d N rm x, setlock FILE
		// rm x, envuidgid USER rm x, pgrphack rm x were allowed under
		// their own rule with Bash(rm:*) denied, and removed the file)
		"softlimit":      {valueFlags: set("-m", "-d", "-s", "-l", "-a", "-o", "-p", "-f", "-c", "-r", "-t")},
		"setuidgid":      {positionals: 1},
		"envuidgid":      {positionals: 1},
		"setlock":        {plainFlags: set("-n", "-N", "-x", "-X"), positionals: 1},
		"pgrphack":       {},
		"fghack":         {},
		"s6-softlimit":   {valueFlags: set("-m", "-d", "-s", "-l", "-a", "-o", "-p", "-f", "-c", "-r", "-t")},
		"s6-setuidgid":   {positionals: 1},
		"s6-envuidgid":   {positionals: 1},
		"s6-applyuidgid": {valueFlags: set("-u", "-g", "-G")},
		"s6-setlock":     {valueFlags: set("-t", "-d"), positionals: 1},
		"s6-envdir":      {valueFlags: set("-n", "-L", "-c"), positionals: 1},
		"s6-setsid":      {},
		// SELinux's runcon CONTEXT CMD, or runcon -t TYPE (-u, -r, -l)
		// CMD with no context: read both ways (below)
		"runcon": {valueFlags: set("-u", "--user", "-r", "--role", "-t", "--type", "-l", "--range"), plainFlags: set("-c", "--compute"), positionals: 1},

		// attack pass 88: watch's --differences (above) takes its value
		// only after '=' (an optional argument): read as taking the next
		// word, watch --differences rm -f victim.txt was allowed under
		// Bash(watch:*) with Bash(rm:*) denied and removed the file.
		// More programs that run the command after their
		// options (schroot -c NAME -- rm x, fakechroot rm x, daemonize
		// /bin/rm x, lckdo LOCK rm x, cpulimit -l 50 rm x, tcpsvd IP
		// PORT rm x were allowed under their own rule with Bash(rm:*)
		// denied); busybox's tcpsvd and udpsvd run the command for each
		// connection
		"schroot": {valueFlags: set("-c", "--chroot", "-u", "--user", "-d", "--directory", "-s", "--shell", "-o", "--option", "-n", "--session-name", "--config", "--location"),
			plainFlags: set("-p", "--preserve-environment", "-q", "--quiet", "-v", "--verbose", "-a", "--all", "--all-chroots", "--all-sessions", "--all-source-chroots",
				"-b", "--begin-session", "-r", "--run-session", "--recover-session", "-f", "--force", "--automatic-session", "--exclude-aliases")},
		"fakechroot": {valueFlags: set("-l", "--lib", "-d", "--elfloader", "-e", "--environment", "-c", "--config-dir", "-b", "--bindir"), plainFlags: set("-s", "--use-system-libs")},
		"daemonize":  {valueFlags: set("-c", "-e", "-E", "-o", "-p", "-l", "-u"), plainFlags: set("-a", "-v")},
		"lckdo":      {valueFlags: set("-W"), plainFlags: set("-q", "-w"), positionals: 1},
		"cpulimit": {valueFlags: set("-l", "--limit", "-p", "--pid", "-e", "--exe", "-P", "--path", "-c", "--cpu", "-s", "--signal"),
			plainFlags: set("-z", "--lazy", "-i", "--include-children", "-k", "--kill", "-r", "--restore", "-v", "--verbose", "-q", "--quiet", "-f", "--foreground", "-m", "--monitor-forks", "-b", "--background")},
		"tcpsvd": {valueFlags: set("-c", "-C", "-b", "-u", "-l", "-i", "-x"), plainFlags: set("-E", "-h", "-v", "-t"), positionals: 2},
		"udpsvd": {valueFlags: set("-c", "-C", "-b", "-u", "-l", "-i", "-x"), plainFlags: set("-E", "-h", "-v", "-t"), positionals: 2},
	}
	// util-linux installs setarch under the names of the architectures
	// too (x86_64, i386 here), and run so it takes setarch's options and
	// no architecture word: under Bash(x86_64:*) with Bash(rm:*) denied,
	// x86_64 rm -f victim.txt was allowed and removed the file (attack
	// pass 78)
	for _, arch := range []string{"i386", "i486", "i586", "i686", "x86_64", "aarch64", "armv7l", "armv8l",
		"ppc", "ppc32", "ppc64", "ppc64le", "s390", "s390x", "sparc", "sparc32", "sparc64",
		"mips", "mips32", "mips64", "ia64", "parisc", "parisc32", "parisc64", "riscv64", "loongarch64"} {
		if _, ok := m[arch]; !ok {
			m[arch] = wrapperSpec{plainFlags: setarchOpts.get().plainFlags}
		}
	}
	return m
}}

// runnerSubs are the tools whose subcommand runs the command after it
// (uv run CMD, poetry run CMD, npm exec CMD, mise exec -- CMD): under
// Bash(uv run:*) with Bash(rm:*) denied, uv run rm x ran rm (attack pass
// 62). Any of these words after the tool's name is taken for the
// subcommand (a global option's value could stand before it), and the
// subcommand's options are read both ways, as a wrapper's: more
// candidates, never fewer. npm takes any unambiguous abbreviation of a
// command: npm exe rm x ran rm under Bash(npm:*) (attack pass 70).
var runnerSubs = lazy[map[string][]string]{make: func() map[string][]string {
	return map[string][]string{
		"npm": {"exec", "exe", "x"}, "pnpm": {"exec", "dlx"}, "yarn": {"exec", "dlx", "run"}, "bun": {"x", "run"},
		"uv": {"run"}, "poetry": {"run"}, "pipenv": {"run"}, "conda": {"run"}, "mamba": {"run"},
		"micromamba": {"run"}, "pixi": {"run", "exec"}, "hatch": {"run"}, "rye": {"run"}, "pdm": {"run"},
		"mise": {"exec", "x"}, "asdf": {"exec", "env"}, "devbox": {"run"}, "perf": {"stat", "record", "trace"},
		"direnv": {"exec"}, "nix": {"develop", "shell"},
		// attack pass 71: secret and environment loaders, version
		// managers, build tools and machines that run the command after
		// their subcommand (dotenv run rm x, pyenv exec rm x, bundle exec
		// rm x, lxc exec c -- rm x were allowed under their tool's rule)
		"pipx": {"run"}, "dotenv": {"run"}, "dotenvx": {"run"}, "doppler": {"run"}, "op": {"run"},
		"infisical": {"run"}, "aws-vault": {"exec"}, "chamber": {"exec"}, "pyenv": {"exec"}, "rbenv": {"exec"},
		"nodenv": {"exec"}, "goenv": {"exec"}, "jenv": {"exec"}, "plenv": {"exec"}, "bundle": {"exec"},
		"bundler": {"exec"}, "volta": {"run"}, "fnm": {"exec"}, "stack": {"exec"}, "cabal": {"exec"},
		"opam": {"exec"}, "tox": {"exec"}, "toolbox": {"run"}, "distrobox": {"enter"}, "lxc": {"exec"},
		"incus": {"exec"}, "multipass": {"exec"}, "machinectl": {"shell"},
		// attack pass 81: ip netns exec NAME CMD and ip vrf exec NAME CMD
		// (ip -all netns exec CMD names none: read both ways); ip takes
		// any prefix of a subcommand's name, and ip netns e NAME rm ran
		// rm under Bash(ip:*) (attack pass 83)
		"ip": ipExec,
	}
}}

// ipExec are the words ip takes for exec in ip netns exec and ip vrf
// exec: ip reads a subcommand as any prefix of its name that no earlier
// one in its table has (matches() in iproute2), and e, ex and exe are
// exec's in both.
var ipExec = []string{"exec", "exe", "ex", "e"}

// ipBatch reports whether ip's options, which stop at its first word that
// is not one, hold -batch (-b, -ba, ... -batch, or with two dashes): ip
// then runs each line of a file, or of standard input for "-", as an ip
// command, netns exec ones too (ip -b - <<< 'netns exec NS rm -f x' ran
// rm under Bash(ip:*): attack pass 83). The lines are read by iproute2's
// own splitting, which differs between its versions (quotes, comments,
// continuations), so they are not read here: the line is unseen (ask).
// An option's value (ip -n NS) may stand between: every word up to the
// first subcommand word is looked at.
func ipBatch(argv []string) bool {
	for _, w := range argv[1:] {
		if w == "--" || slices.Contains(ipExec, w) {
			return false
		}
		if strings.HasPrefix(w, "--") {
			w = w[1:]
		}
		if len(w) >= 2 && strings.HasPrefix("-batch", w) {
			return true
		}
	}
	return false
}

// runnerPositionals are the operands between such a subcommand and the
// command it runs (direnv exec DIR CMD, aws-vault exec PROFILE CMD, asdf
// env SHIM CMD, lxc exec CONTAINER CMD).
var runnerPositionals = lazy[map[string]int]{make: func() map[string]int {
	return map[string]int{
		"direnv exec": 1, "aws-vault exec": 1, "asdf env": 1, "lxc exec": 1, "incus exec": 1,
		"multipass exec": 1, "machinectl shell": 1, "distrobox enter": 1,
		"ip exec": 1, "ip exe": 1, "ip ex": 1, "ip e": 1,
	}
}}

// shellStringRunners are the programs whose operands, or the values of
// the options named, are shell commands they run (npx -c 'rm x',
// hyperfine 'rm x', nix-shell --run 'rm x'); "" stands for every operand.
var shellStringRunners = lazy[map[string][]string]{make: func() map[string][]string {
	return map[string][]string{
		"npx": {"-c", "--call"}, "npm": {"-c", "--call"}, "bun": {"exec"},
		"mise": {"-c", "--command"}, "vagrant": {"-c", "--command"}, "cross-env-shell": {""},
		"nix-shell": {"--run", "--command"}, "nodemon": {"--exec", "-x"},
		"hyperfine": {""}, "concurrently": {""}, "watchexec": {""},
	}
}}

// runner looks at the commands of the tools in runnerSubs and
// shellStringRunners and reports whether name was one of them.
func (x *extraction) runner(argv []string, depth int, stdin string, haveStdin bool, budget *int) bool {
	name := argv[0]
	subs, isRunner := runnerSubs.get()[name]
	opts, isShell := shellStringRunners.get()[name]
	if !isRunner && !isShell {
		return false
	}
	if name == "ip" && ipBatch(argv) {
		x.fail("ip -batch runs the ip commands of a file or standard input (netns exec runs any program), which the line does not show as words")
	}
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		if isRunner && slices.Contains(subs, w) {
			spec := wrapperSpec{positionals: runnerPositionals.get()[name+" "+w]}
			switch {
			case name == "pnpm" && pnpmShellMode(argv):
				// pnpm exec -c / --shell-mode, before or after exec (pnpm
				// -c exec 'rm x'): the command's words are a shell string
				for _, rest := range x.rests(argv[i:], spec) {
					x.nestedSource(strings.Join(rest, " "), depth+1)
				}
			case name == "nix":
				// nix develop/shell [INSTALLABLE...] -c CMD: what follows
				// -c or --command
				for j := i + 1; j < len(argv); j++ {
					if argv[j] == "-c" || argv[j] == "--command" {
						x.look(argv[j+1:], depth, stdin, haveStdin, budget)
						break
					}
					if v, ok := strings.CutPrefix(argv[j], "--command="); ok {
						x.look(append([]string{v}, argv[j+1:]...), depth, stdin, haveStdin, budget)
						break
					}
				}
				continue
			}
			for _, rest := range x.rests(argv[i:], spec) {
				x.look(rest, depth, stdin, haveStdin, budget)
			}
			if name == "ip" {
				// ip -all netns exec CMD: no name before the command
				for _, rest := range x.rests(argv[i:], wrapperSpec{}) {
					x.look(rest, depth, stdin, haveStdin, budget)
				}
			}
			// mise exec TOOL@VERSION -- CMD: operands of the runner's own
			// before "--"
			if j := slices.Index(argv[i:], "--"); j > 0 && i+j+1 < len(argv) {
				x.look(argv[i+j+1:], depth, stdin, haveStdin, budget)
			}
		}
		for _, o := range opts {
			switch {
			case o == "" && !strings.HasPrefix(w, "-"):
				x.nestedSource(w, depth+1)
			case o != "" && w == o && i+1 < len(argv):
				x.nestedSource(argv[i+1], depth+1)
			case o != "" && strings.HasPrefix(o, "--") && strings.HasPrefix(w, o+"="):
				x.nestedSource(w[len(o)+1:], depth+1)
			case o != "" && !strings.HasPrefix(o, "--") && len(o) == 2 && strings.HasPrefix(w, o) && len(w) > 2:
				x.nestedSource(w[2:], depth+1) // -c'rm x'
				if w[2] == '=' {
					// npm's option parser takes -c='rm x' as -c 'rm x'
					// (attack pass 71)
					x.nestedSource(w[3:], depth+1)
				}
			}
		}
	}
	if spec, ok := wrappers.get()[name]; ok {
		for _, rest := range x.rests(argv, spec) {
			x.look(rest, depth, stdin, haveStdin, budget)
		}
	}
	return true
}

// wrapperRests returns the possible commands a wrapper runs: argv with the
// wrapper, its flags, its positionals and (for env and sudo) its
// assignments removed. An unknown flag is read both with and without a
// value, so more than one answer can come back.
func wrapperRests(argv []string, spec wrapperSpec) (rests [][]string, whole bool) {
	var out [][]string
	whole = true
	seen := map[int]bool{}
	var prefixWords []string // from env -S
	var walk func(i int, depth int)
	walk = func(i int, depth int) {
		if depth > 8 || len(out) >= 8 {
			// a reading left out could be the one the program takes
			// (setpriv with nine --pdeathsig keep before rm: attack
			// pass 67)
			whole = false
			return
		}
		for i < len(argv) {
			w := argv[i]
			if w == "--" {
				i++
				break
			}
			if len(w) < 2 || w[0] != '-' {
				break
			}
			name, _, hasEq := strings.Cut(w, "=")
			if k := splitInCluster(w, spec); k > 0 {
				// env -S'rm -rf x', -iSrm: the value attached to -S,
				// after plain flags, is split as if it were the next word
				name, hasEq = spec.split, false
				rest := append([]string{spec.split}, argv[i+1:]...)
				if k < len(w)-1 {
					rest = append([]string{spec.split, w[k+1:]}, argv[i+1:]...)
				}
				argv = append(append([]string(nil), argv[:i]...), rest...)
			}
			switch {
			case spec.split != "" && (name == spec.split || longAbbrev(name, "--split-string")):
				// getopt_long takes any prefix of --split-string (--s, --split:
				// env has no other long option in s), as it does su's --comm
				v := ""
				if hasEq {
					v = w[len(name)+1:]
				} else if i+1 < len(argv) {
					v = argv[i+1]
					i++
				}
				words, ok := envSplit(v)
				if !ok {
					whole = false
				}
				prefixWords = append(prefixWords, words...)
				i++
				continue
			case spec.plainFlags[w]:
				i++
			case spec.valueFlags[name] && hasEq:
				i++
			case spec.valueFlags[w]:
				i += 2
			case !strings.HasPrefix(w, "--") && len(w) > 2 && spec.valueFlags[w[:2]]:
				i++ // -n10: value attached
			default:
				// unknown: try it as taking a value too
				walk(i+2, depth+1)
				i++
			}
		}
		for spec.assignments && i < len(argv) && envAssignment(argv[i]) {
			i++
		}
		i += spec.positionals
		if i < len(argv) && !seen[i] {
			seen[i] = true
			rest := argv[i:]
			if len(prefixWords) > 0 {
				rest = append(append([]string(nil), prefixWords...), rest...)
			}
			out = append(out, rest)
		} else if i >= len(argv) && len(prefixWords) > 0 && !seen[-1] {
			seen[-1] = true
			out = append(out, append([]string(nil), prefixWords...))
		}
	}
	walk(1, 0)
	return out, whole
}

// rests is wrapperRests for the extraction: a line with more readings
// than wrapperRests tries is one whose command is not seen.
func (x *extraction) rests(argv []string, spec wrapperSpec) [][]string {
	out, whole := wrapperRests(argv, spec)
	if !whole {
		x.fail(argv[0] + " has too many options whose values are not known to read its command")
	}
	return out
}

// envSplit splits the value of env's -S as GNU env does, which is not as
// a shell does: an unquoted \_ separates two words (env -S'rm\_-f\_x'
// runs rm -f x, which a shell's reading took for the one word
// "rm_-f_x"), \c ends the string, a # that begins a word begins a
// comment, and ${NAME} is the environment's value, which the line does
// not show. ok is false when the words are not known from the text (a
// variable, a control character, an unknown escape, an open quote).
func envSplit(s string) (words []string, ok bool) {
	var cur strings.Builder
	in := false
	end := func() {
		if in {
			words = append(words, cur.String())
			cur.Reset()
			in = false
		}
	}
	// escape is the character env makes of a backslash and c in a word
	// (quoted: \_ is a space there); false for \c and what the line does
	// not show plainly.
	escape := func(c byte, quoted bool) (byte, bool) {
		switch c {
		case '\\', '\'', '"', '#', '$':
			return c, true
		case '_':
			return ' ', quoted
		}
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
			end()
		case c == '#' && !in:
			return words, true // a comment to the end
		case c == '$':
			return words, false
		case c == '\\':
			if i+1 >= len(s) {
				return words, false
			}
			i++
			switch s[i] {
			case '_':
				end()
			case 'c':
				end()
				return words, true
			default:
				e, good := escape(s[i], false)
				if !good {
					return words, false
				}
				in = true
				cur.WriteByte(e)
			}
		case c == '\'' || c == '"':
			in = true
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				switch {
				case s[j] == '$' && c == '"':
					return words, false
				case s[j] == '\\' && j+1 < len(s):
					if c == '\'' && s[j+1] != '\\' && s[j+1] != '\'' {
						cur.WriteByte('\\') // literal in single quotes
						continue
					}
					j++
					e, good := escape(s[j], true)
					if !good {
						return words, false
					}
					cur.WriteByte(e)
				default:
					cur.WriteByte(s[j])
				}
			}
			if j >= len(s) {
				return words, false
			}
			i = j
		default:
			in = true
			cur.WriteByte(c)
		}
	}
	end()
	return words, true
}

// splitInCluster returns the index of the split flag's letter (env's S)
// in a bundle of short flags (-Scmd, -iScmd, -iS), or -1; its value is the
// rest of the word, or the next word when nothing follows the letter.
func splitInCluster(w string, spec wrapperSpec) int {
	if spec.split == "" || len(w) < 3 || w[0] != '-' || w[1] == '-' {
		return -1
	}
	for k := 1; k < len(w); k++ {
		f := "-" + w[k:k+1]
		switch {
		case f == spec.split:
			return k
		case !spec.plainFlags[f]:
			return -1
		}
	}
	return -1
}

// envAssignment reports a NAME=VALUE word as env (and sudo) read it:
// anything with an "=" after its first byte (BASH_FUNC_x%%=... included).
func envAssignment(w string) bool {
	return strings.IndexByte(w, '=') > 0
}

func isAssignmentWord(w string) bool {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		c := w[j]
		if !(c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || j > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// gitGlobalValue are git's global options that take a value.
var gitGlobalValue = lazy[map[string]bool]{make: func() map[string]bool {
	return set("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--exec-path", "--list-cmds", "--attr-source")
}}

// gitStripGlobals returns "git SUBCOMMAND ARGS..." with the global options
// between git and the subcommand removed, or nil when there are none.
func gitStripGlobals(argv []string) []string {
	i := 1
	for i < len(argv) {
		w := argv[i]
		if len(w) < 2 || w[0] != '-' {
			break
		}
		name, _, hasEq := strings.Cut(w, "=")
		switch {
		case gitGlobalValue.get()[name] && !hasEq && name != "--exec-path":
			i += 2
		case len(w) > 2 && (strings.HasPrefix(w, "-C") || strings.HasPrefix(w, "-c")) && w[1] != '-':
			i++
		default:
			i++
		}
	}
	if i == 1 || i >= len(argv) {
		return nil
	}
	return append([]string{"git"}, argv[i:]...)
}

// bashSetOptions are the names bash's set -o knows; any other is zsh's
// (or an error in bash).
var bashSetOptions = map[string]bool{
	"allexport": true, "braceexpand": true, "emacs": true, "errexit": true, "errtrace": true,
	"functrace": true, "hashall": true, "histexpand": true, "history": true, "ignoreeof": true,
	"interactive-comments": true, "keyword": true, "monitor": true, "noclobber": true, "noexec": true,
	"noglob": true, "nolog": true, "notify": true, "nounset": true, "onecmd": true, "physical": true,
	"pipefail": true, "posix": true, "privileged": true, "verbose": true, "vi": true, "xtrace": true,
}

// zshOptions returns why a command changes zsh's options, or "": the
// agent's shell may be zsh, where setopt globsubst (or set -o
// globsubst) makes a later $X's value a pattern, and *(e:'cmd':) in it
// runs cmd, which no reading of the line as bash shows (attack pass 99).
// bash has no setopt, unsetopt or emulate, and no such set -o name.
func zshOptions(argv []string) string {
	switch path.Base(argv[0]) {
	case "setopt", "unsetopt", "emulate":
		if len(argv) > 1 {
			return path.Base(argv[0]) + " changes how zsh reads the rest of the line"
		}
	case "set":
		for i := 1; i+1 < len(argv); i++ {
			a := argv[i]
			if len(a) >= 2 && (a[0] == '-' || a[0] == '+') && a[len(a)-1] == 'o' && !bashSetOptions[argv[i+1]] { // -o, -euo
				return "set " + a + " " + quoteWord(argv[i+1]) + " is not one of bash's options: zsh may read the rest of the line otherwise"
			}
		}
	}
	return ""
}

// checkAliases makes the extraction incomplete when the line defines an
// alias and some text it runs has a later line, which may use it.
func (x *extraction) checkAliases(cmd string) {
	if x.aliasWhy != "" && (x.newline || strings.IndexByte(cmd, '\n') >= 0) {
		x.fail(x.aliasWhy)
	}
}
