package validators

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/moat-sandbox/moat/internal/shellword"
	"mvdan.cc/sh/v3/syntax"
)

// ParseKind classifies a command for the decision pipeline. Only Simple
// commands can ever be allowed; the other two kinds lead to Ask.
type ParseKind uint8

const (
	// Unavailable: the parser could not run or the input is not valid shell
	// (or not shell that mvdan.cc/sh and bash read the same way).
	Unavailable ParseKind = iota
	// TooComplex: valid shell, but with constructs moat does not analyse
	// (functions, loops, subshells, nesting beyond the limits, and so on).
	TooComplex
	// Simple: a list of simple commands joined by ;, newline, &&, ||, |, |&
	// and &, each with its own redirections.
	Simple
)

func (k ParseKind) String() string {
	switch k {
	case Simple:
		return "simple"
	case TooComplex:
		return "too-complex"
	default:
		return "unavailable"
	}
}

// Word is one shell word of a simple command.
type Word struct {
	// Raw is the word as written in the source.
	Raw string
	// Value is the word after quote removal. It is exact only when Static is
	// set; otherwise it is Raw.
	Value string
	// Static means the word expands to exactly Value, whatever the
	// environment or the filesystem (no parameter, command, arithmetic,
	// tilde, glob or brace expansion). The one substitution a static word
	// may hold is "$(cat <<'EOF' ... EOF)" inside double quotes, whose
	// output is the literal heredoc body.
	Static bool
}

// Assign is a leading VAR=value assignment of a simple command.
type Assign struct {
	Name  string
	Value Word
}

// Redirect is one redirection of a simple command.
type Redirect struct {
	// Op is the operator as written: ">", ">>", "<", "<<", "<<-", "<<<",
	// ">&", "<&", "<>", ">|", "&>", "&>>".
	Op string
	// Fd is the explicit file descriptor ("2" in 2>x), or "".
	Fd string
	// Target is the file (or fd, or heredoc delimiter) word.
	Target Word
	// Heredoc is the body of a here-document ("<<" and "<<-") as written.
	Heredoc string
	// HeredocQuoted is set when the delimiter was quoted (body is literal).
	HeredocQuoted bool
	// Body is what a here-document or here-string feeds to the command's
	// standard input: for "<<-" with leading tabs removed, for a quoted
	// delimiter verbatim, for "<<<" the word plus a newline. Body.Static
	// reports whether Body.Value is exact (an unquoted heredoc with
	// expansions is not). It is the zero Word for other operators.
	Body Word
}

// SimpleCommand is one command with its arguments and redirections.
type SimpleCommand struct {
	Assigns   []Assign
	Args      []Word
	Redirects []Redirect
	// Op is the operator that follows this command: ";", "&&", "||", "|",
	// "|&", "&" or "" for the last one. A newline separator is ";".
	Op string
	// Negated is set for "! cmd"; for "! a | b" it is set on a, the first
	// command of the negated pipeline.
	Negated bool
	// Source is the command's source text.
	Source string
	// Decl is set when the command is a declaration builtin (export,
	// declare, local, readonly, typeset, nameref); Args[0] is the builtin
	// and each further word is an argument as bash sees it.
	Decl bool
}

// Argv returns the argument values (exact only when Static reports true).
func (c SimpleCommand) Argv() []string {
	out := make([]string, len(c.Args))
	for i, w := range c.Args {
		out[i] = w.Value
	}
	return out
}

// Static reports whether every word of the command (assignments,
// arguments, redirect targets and here-document bodies) is static.
func (c SimpleCommand) Static() bool {
	for _, a := range c.Assigns {
		if !a.Value.Static {
			return false
		}
	}
	for _, w := range c.Args {
		if !w.Static {
			return false
		}
	}
	for _, r := range c.Redirects {
		if !r.Target.Static {
			return false
		}
		if isHeredocOp(r.Op) && !r.Body.Static {
			return false
		}
	}
	return true
}

// ParseResult is the outcome of ParseForSecurity.
type ParseResult struct {
	Kind ParseKind
	// Commands are the flattened commands of a Simple parse. A parse that
	// is TooComplex only because it has more than MaxSubcommands commands
	// keeps them all, so that deny rules can still be applied to each;
	// it must still never be allowed. Otherwise non-Simple parses have none.
	Commands []SimpleCommand
	// Reason explains TooComplex and Unavailable.
	Reason string
}

// Limits of the analysis. Anything beyond them is TooComplex (ask).
const (
	// MaxSubcommands is the largest number of simple commands analysed;
	// more parts make the command TooComplex (the seed's 50-part cap).
	MaxSubcommands = 50
	// MaxCommandBytes is the longest command analysed. Linux refuses a
	// single argv string longer than MAX_ARG_STRLEN (32 pages, 128 KiB),
	// so a longer command cannot be handed to "bash -c" anyway.
	MaxCommandBytes = 128 << 10
	// MaxNesting bounds how deeply brackets ((, {, [) and AST nodes may
	// nest. The parser's cost grows faster than linearly with nesting, so
	// this is checked on the raw bytes before parsing.
	MaxNesting = 64
)

// ParseForSecurity parses cmd as bash and flattens it into simple commands.
func ParseForSecurity(cmd string) ParseResult {
	p := parse(cmd)
	r := p.result
	p.release()
	return r
}

// parsed is the outcome of one parse: the public result plus what the
// validators need from the AST. It is computed once per command.
type parsed struct {
	result ParseResult
	src    string
	eval   shellword.Evaluator // the shared word evaluator, with p's idiom
	file   *syntax.File        // nil unless the parser ran and succeeded
	// calls[i] holds the AST of result.Commands[i] (only when Simple).
	calls []callAST
	facts facts
	// collected is set when the walk over the whole tree completed.
	collected bool

	// Scratch state, kept with p when it goes back to parsedPool.
	coll   collector
	walkFn func(syntax.Node) bool // p.coll.walk, bound once
	refs   []cmdRef               // Context.commands, built once
	// assignList is what Context.assignments reports, built once.
	assignList  []assignment
	assignsDone bool
	ctx         Context
	paint       []byte // computeViews
	reader      strings.Reader
	// sizes counted by the walk, to allocate the flattened commands at
	// once.
	nCalls, nWords, nAssigns, nRedirs int
}

// callAST keeps the syntax nodes of one flattened simple command.
type callAST struct {
	stmt    *syntax.Stmt
	args    []*syntax.Word // nil entries for declaration-builtin names
	assigns []*syntax.Assign
	redirs  []*syntax.Redirect
}

var parserPool = sync.Pool{New: func() any {
	return syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true))
}}

// parsedPool holds parsed values between commands, with their scratch
// slices, so that a decision allocates little beyond the syntax tree and
// what its result keeps. A parsed goes back with release once nothing
// refers to it.
var parsedPool = sync.Pool{New: func() any { return newParsed("") }}

func newParsed(src string) *parsed {
	p := &parsed{src: src}
	p.eval.Subst = p.heredocSubst
	p.coll.p = p
	p.walkFn = p.coll.walk
	return p
}

// getParsed returns an empty parsed for src from the pool.
func getParsed(src string) *parsed {
	p := parsedPool.Get().(*parsed)
	p.src = src
	return p
}

// release puts p back in the pool, emptied. p must not be used
// afterwards, nor anything of its scratch state (facts, calls, commands).
// The scratch slices are only cut to length zero, not cleared: until they
// are overwritten they keep the last command's tree alive, which is at
// most one ordinary command per pooled value (the pool lets idle values
// go at garbage collection, and huge commands' buffers are not pooled).
func (p *parsed) release() {
	if cap(p.paint) > maxPooledBytes || cap(p.facts.spans) > maxPooledItems ||
		cap(p.facts.words) > maxPooledItems || cap(p.calls) > maxPooledItems ||
		cap(p.coll.stack) > maxPooledItems || cap(p.facts.quoted) > maxPooledItems {
		// A huge command (up to MaxCommandBytes) leaves large buffers:
		// let them go rather than keep them for ordinary commands.
		return
	}
	p.result = ParseResult{}
	p.src = ""
	p.file = nil
	p.calls = p.calls[:0]
	p.facts.reset()
	p.collected = false
	p.coll.reset()
	p.refs = p.refs[:0]
	p.assignList, p.assignsDone = p.assignList[:0], false
	// p.ctx is overwritten field by field by the next analyze.
	p.paint = p.paint[:0]
	p.reader.Reset("")
	p.nCalls, p.nWords, p.nAssigns, p.nRedirs = 0, 0, 0, 0
	parsedPool.Put(p)
}

// Scratch buffers larger than this are not kept in parsedPool.
const (
	maxPooledBytes = 16 << 10
	maxPooledItems = 1 << 10
)

func parse(cmd string) *parsed {
	p := getParsed(cmd)
	if kind, reason := precheck(cmd); reason != "" {
		p.result = ParseResult{Kind: kind, Reason: reason}
		return p
	}
	parser := parserPool.Get().(*syntax.Parser)
	p.reader.Reset(cmd)
	f, err := parser.Parse(&p.reader, "")
	parserPool.Put(parser)
	if err != nil {
		p.result = ParseResult{Kind: Unavailable, Reason: "parse error: " + err.Error()}
		return p
	}
	p.file = f
	if err := p.collect(); err != nil {
		kind := TooComplex
		var m misreadError
		if errors.As(err, &m) {
			kind = Unavailable
		}
		p.result = ParseResult{Kind: kind, Reason: err.Error()}
		return p
	}
	p.collected = true
	fl := flattener{p: p}
	if p.nCalls > 0 {
		// One allocation for each kind of slice the commands keep; each
		// command gets a full slice expression of it, so no append can
		// reach a neighbour's part.
		fl.out = make([]SimpleCommand, 0, p.nCalls)
		fl.words = make([]Word, 0, p.nWords)
		fl.assigns = make([]Assign, 0, p.nAssigns)
		fl.redirs = make([]Redirect, 0, p.nRedirs)
	}
	for _, st := range f.Stmts {
		if err := fl.stmt(st, ";", false); err != nil {
			kind := TooComplex
			var m misreadError
			if errors.As(err, &m) {
				kind = Unavailable
			}
			p.result = ParseResult{Kind: kind, Reason: err.Error()}
			p.calls = nil
			return p
		}
	}
	if len(fl.out) > 0 {
		fl.out[len(fl.out)-1].Op = ""
	}
	p.result = ParseResult{Kind: Simple, Commands: fl.out}
	if len(fl.out) > MaxSubcommands {
		// Still TooComplex (never allowed), but the commands are kept so
		// that deny rules apply to every one of them: a deny rule must not
		// be escaped by padding a command with 50 no-ops.
		p.result.Kind = TooComplex
		p.result.Reason = errTooMany.Error()
	}
	return p
}

// precheck rejects, before parsing, input that the parser would read
// differently from bash or that would make it slow.
func precheck(cmd string) (ParseKind, string) {
	if len(cmd) > MaxCommandBytes {
		return TooComplex, fmt.Sprintf("command longer than %d bytes", MaxCommandBytes)
	}
	depth, maxDepth := 0, 0
	var high byte // OR of all bytes: ASCII only when below 0x80
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		high |= c
		if !precheckByte[c] {
			continue
		}
		switch c {
		case 0:
			// bash -c cannot even receive a NUL; mvdan.cc/sh drops it.
			return Unavailable, "command contains a NUL byte"
		case '\r':
			// mvdan.cc/sh reads \r as a blank and \r\n as \n; bash reads
			// \r as an ordinary word character.
			return Unavailable, "command contains a carriage return"
		case '(', '{', '[':
			depth++
			if depth > maxDepth {
				maxDepth = depth
			}
		case ')', '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	if maxDepth > MaxNesting {
		return TooComplex, fmt.Sprintf("brackets nest deeper than %d", MaxNesting)
	}
	if high >= utf8.RuneSelf && !utf8.ValidString(cmd) {
		// bash works on bytes, mvdan.cc/sh on runes: they may not agree.
		return Unavailable, "command is not valid UTF-8"
	}
	return Simple, ""
}

// precheckByte marks the bytes precheck's loop looks at.
var precheckByte = [256]bool{0: true, '\r': true, '(': true, '{': true, '[': true, ')': true, '}': true, ']': true}

type flattener struct {
	p   *parsed
	out []SimpleCommand
	// Backing arrays for the commands' Args, Assigns and Redirects, sized
	// from the walk's counts.
	words   []Word
	assigns []Assign
	redirs  []Redirect
}

// wordSlice returns an empty slice for n words from the backing array, or
// nil when it is too short (append then allocates as before).
func (fl *flattener) wordSlice(n int) []Word {
	if n == 0 || len(fl.words)+n > cap(fl.words) {
		return nil
	}
	l := len(fl.words)
	fl.words = fl.words[:l+n]
	return fl.words[l : l : l+n]
}

func (fl *flattener) assignSlice(n int) []Assign {
	if n == 0 || len(fl.assigns)+n > cap(fl.assigns) {
		return nil
	}
	l := len(fl.assigns)
	fl.assigns = fl.assigns[:l+n]
	return fl.assigns[l : l : l+n]
}

func (fl *flattener) redirSlice(n int) []Redirect {
	if n == 0 || len(fl.redirs)+n > cap(fl.redirs) {
		return nil
	}
	l := len(fl.redirs)
	fl.redirs = fl.redirs[:l+n]
	return fl.redirs[l : l : l+n]
}

var errTooMany = fmt.Errorf("more than %d subcommands", MaxSubcommands)

// stmt flattens one statement. op is the operator that follows it; inPipe
// is set for the operands of a pipeline.
func (fl *flattener) stmt(st *syntax.Stmt, op string, inPipe bool) error {
	if st.Background {
		op = "&"
	}
	if st.Coprocess || st.Disown {
		return errors.New("coprocess or disown")
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		if st.Negated && inPipe {
			return errors.New("negation inside a pipeline")
		}
		return fl.call(st, c, op)
	case *syntax.DeclClause:
		if st.Negated && inPipe {
			return errors.New("negation inside a pipeline")
		}
		return fl.decl(st, c, op)
	case *syntax.TimeClause:
		// "time" only reports timings; it runs its pipeline unchanged.
		if len(st.Redirs) > 0 || st.Negated || c.Stmt == nil || inPipe {
			return errors.New("unsupported use of time")
		}
		inner := *c.Stmt
		inner.Background = inner.Background || st.Background
		if call, ok := inner.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 && isDoubleDash(call.Args[0]) {
			// bash's time takes one unquoted "--" after it (and after
			// -p): "time -- rm x" runs rm. What follows is read afresh,
			// so a NAME=value word there would be an assignment.
			rest := call.Args[1:]
			if len(rest) > 0 && len(call.Assigns) == 0 && isAssignLike(rest[0]) {
				return errors.New("unsupported use of time")
			}
			if len(rest) == 0 && len(call.Assigns) == 0 {
				inner.Cmd = nil
			} else {
				c2 := *call
				c2.Args = rest
				inner.Cmd = &c2
			}
		}
		return fl.stmt(&inner, op, inPipe)
	case *syntax.BinaryCmd:
		pipe := c.Op == syntax.Pipe || c.Op == syntax.PipeAll
		if len(st.Redirs) > 0 || (st.Negated && (!pipe || inPipe)) {
			return errors.New("redirection or negation of a compound command")
		}
		first := len(fl.out)
		if err := fl.stmt(c.X, c.Op.String(), pipe); err != nil {
			return err
		}
		if st.Negated && first < len(fl.out) {
			// "! a | b" negates the pipeline's status; the mark goes on
			// the pipeline's first command, where the "!" is written.
			fl.out[first].Negated = true
		}
		return fl.stmt(c.Y, op, pipe || inPipe)
	case nil:
		if len(st.Redirs) > 0 || st.Negated {
			return errors.New("redirection without a command")
		}
		return nil
	default:
		return fmt.Errorf("unsupported construct %s", nodeName(c))
	}
}

func (fl *flattener) push(sc SimpleCommand, ast callAST) error {
	fl.out = append(fl.out, sc)
	fl.p.calls = append(fl.p.calls, ast)
	return nil
}

func (fl *flattener) call(st *syntax.Stmt, c *syntax.CallExpr, op string) error {
	p := fl.p
	sc := SimpleCommand{Op: op, Negated: st.Negated, Source: p.text(st)}
	sc.Assigns = fl.assignSlice(len(c.Assigns))
	sc.Args = fl.wordSlice(len(c.Args))
	for _, a := range c.Assigns {
		if a.Append || a.Naked || a.Index != nil || a.Array != nil || a.Name == nil {
			return fmt.Errorf("unsupported assignment %q", p.text(a))
		}
		w := Word{Static: true}
		if a.Value != nil {
			w = p.word(a.Value)
		}
		sc.Assigns = append(sc.Assigns, Assign{Name: a.Name.Value, Value: w})
	}
	for _, a := range c.Args {
		sc.Args = append(sc.Args, p.word(a))
	}
	var err error
	if sc.Redirects, err = p.redirects(fl.redirSlice(len(st.Redirs)), st.Redirs); err != nil {
		return err
	}
	return fl.push(sc, callAST{stmt: st, args: c.Args, assigns: c.Assigns, redirs: st.Redirs})
}

// decl flattens export/declare/local/readonly/typeset/nameref into a
// simple command whose words are the builtin's arguments.
func (fl *flattener) decl(st *syntax.Stmt, c *syntax.DeclClause, op string) error {
	p := fl.p
	sc := SimpleCommand{Op: op, Negated: st.Negated, Source: p.text(st), Decl: true}
	ast := callAST{stmt: st, redirs: st.Redirs}
	sc.Args = fl.wordSlice(len(c.Args) + 1)
	sc.Args = append(sc.Args, Word{Raw: c.Variant.Value, Value: c.Variant.Value, Static: true})
	ast.args = append(ast.args, nil)
	for _, a := range c.Args {
		if a.Append || a.Index != nil || a.Array != nil {
			return fmt.Errorf("unsupported declaration %q", p.text(a))
		}
		var w Word
		switch {
		case a.Naked && a.Name == nil: // an option or an expanded word
			w = p.word(a.Value)
			ast.args = append(ast.args, a.Value)
		case a.Naked: // a bare name
			w = Word{Raw: a.Name.Value, Value: a.Name.Value, Static: true}
			ast.args = append(ast.args, nil)
		default: // name=value
			raw := p.text(a)
			w = Word{Raw: raw, Value: raw, Static: true}
			if a.Value != nil {
				v := p.word(a.Value)
				w.Static = v.Static
				if v.Static {
					w.Value = a.Name.Value + "=" + v.Value
				}
				ast.args = append(ast.args, nil)
			} else {
				w.Value = a.Name.Value + "="
				ast.args = append(ast.args, nil)
			}
		}
		sc.Args = append(sc.Args, w)
		ast.assigns = append(ast.assigns, a)
	}
	var err error
	if sc.Redirects, err = p.redirects(fl.redirSlice(len(st.Redirs)), st.Redirs); err != nil {
		return err
	}
	return fl.push(sc, ast)
}

// redirects appends the redirections rs to out.
func (p *parsed) redirects(out []Redirect, rs []*syntax.Redirect) ([]Redirect, error) {
	for _, r := range rs {
		if r.Word != nil {
			// Digits right before '<' or '>' are a file descriptor number
			// for bash ("a >2>x" is a syntax error there), a target for
			// the parser.
			end := int(r.Word.End().Offset())
			if end < len(p.src) && (p.src[end] == '<' || p.src[end] == '>') && allDigits(p.text(r.Word)) {
				return nil, misread(fmt.Sprintf("redirection target %q is read as a file descriptor by bash", p.text(r.Word)))
			}
		}
		rd := Redirect{Op: r.Op.String()}
		if r.N != nil {
			if !allDigits(r.N.Value) {
				return nil, fmt.Errorf("unsupported redirection %q", p.text(r))
			}
			rd.Fd = r.N.Value
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			delim := p.word(r.Word)
			if !delim.Static || strings.ContainsAny(delim.Value, "\n") {
				return nil, fmt.Errorf("unsupported here-document delimiter %q", delim.Raw)
			}
			rd.Target = delim
			rd.HeredocQuoted = quotedDelim(r.Word)
			body, err := p.heredocBody(r, rd.HeredocQuoted)
			if err != nil {
				return nil, err
			}
			rd.Body = body
			rd.Heredoc = body.Raw
		case syntax.WordHdoc:
			rd.Target = p.word(r.Word)
			rd.Body = Word{Raw: rd.Target.Raw, Value: rd.Target.Value + "\n", Static: rd.Target.Static}
		case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.RdrInOut, syntax.DplIn,
			syntax.DplOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
			rd.Target = p.word(r.Word)
		default:
			return nil, fmt.Errorf("unsupported redirection %q", p.text(r))
		}
		out = append(out, rd)
	}
	return out, nil
}

func isHeredocOp(op string) bool { return op == "<<" || op == "<<-" || op == "<<<" }

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// text returns the source text of a node.
func (p *parsed) text(n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if e > len(p.src) || s > e || s < 0 {
		return ""
	}
	return p.src[s:e]
}

func quotedDelim(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, part := range w.Parts {
		switch part := part.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.Contains(part.Value, `\`) {
				return true
			}
		}
	}
	return false
}

// isDoubleDash reports whether w is an unquoted "--".
func isDoubleDash(w *syntax.Word) bool {
	if len(w.Parts) != 1 {
		return false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	return ok && l.Value == "--"
}

// isAssignLike reports whether w starts like an assignment (NAME= or
// NAME+= or NAME[), whatever follows.
func isAssignLike(w *syntax.Word) bool {
	if len(w.Parts) == 0 {
		return false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok {
		return false
	}
	v := l.Value
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '_' || isLetter(c) || i > 0 && c >= '0' && c <= '9':
		case i > 0 && (c == '=' || c == '[' || c == '+'):
			return true
		default:
			return false
		}
	}
	return false
}
