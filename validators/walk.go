package validators

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxASTDepth bounds the depth of the syntax tree the walk accepts. The
// raw bracket limit (MaxNesting) does not bound keyword nesting
// ("if if if ..."), so the tree is bounded as well.
const maxASTDepth = 8 * MaxNesting

// facts is everything the validators need from the syntax tree, gathered
// in one walk so that no validator walks or parses again.
type facts struct {
	// substs are command and process substitutions (not the literal
	// $(cat <<'EOF' ...) idiom), anywhere, including here-document bodies.
	substs []syntax.Node
	// ariths are arithmetic expansions and commands: bash evaluates array
	// subscripts in them, which can run command substitutions held in
	// variables.
	ariths []syntax.Node
	// params are all parameter expansions.
	params []*syntax.ParamExp
	// ansiQuotes are $'...' and $"..." strings.
	ansiQuotes []syntax.Node
	// comments are all comments.
	comments []syntax.Comment
	// assigns are all assignment nodes (prefix assignments and
	// declaration-builtin arguments).
	assigns []*syntax.Assign
	// heredocs are the here-document redirections.
	heredocs []*syntax.Redirect
	// words are the shell words (not here-document bodies), in order.
	words []*syntax.Word
	// wordLits[i] tells which of the characters some validators look for
	// the unquoted literal parts of words[i] hold (lit* bits), so that
	// they skip the words without them.
	wordLits []byte
	// quoted are the literal strings inside single or double quotes.
	quoted []string
	// newlineSeps are offsets of newlines that separate two statements.
	newlineSeps []int
	// spans paint the source for the views, in pre-order.
	spans []span
	// seen counts the node types met (for tests).
	seen map[string]int
}

// Bits of facts.wordLits: a character in a word's unquoted literals.
const (
	litBackslash byte = 1 << iota // '\'
	litBrace                      // '{' or '}'
	litHash                       // '#'
	litDollar                     // '$'
)

// litClass maps a byte to its lit* bit.
var litClass = [256]byte{'\\': litBackslash, '{': litBrace, '}': litBrace, '#': litHash, '$': litDollar}

// wordLits computes the lit* bits of a word's unquoted literal parts.
func wordLits(w *syntax.Word) byte {
	var bits byte
	for _, part := range w.Parts {
		if l, ok := part.(*syntax.Lit); ok {
			v := l.Value
			for i := 0; i < len(v); i++ {
				bits |= litClass[v[i]]
			}
		}
	}
	return bits
}

// span is a byte range of the source and how it is quoted.
type span struct {
	start, end int
	kind       byte // paint* constants
}

// Paint classes of the source bytes, from which the views are cut.
const (
	paintUnquoted byte = iota // shell syntax
	paintQuote                // a quote character: ' " $' $"
	paintDouble               // inside double quotes (expansions live)
	paintSingle               // inside single quotes or a quoted heredoc body
	paintHeredoc              // unquoted heredoc body (expansions live)
)

// collect walks the whole tree once. Every node type is listed; an unknown
// one makes the command TooComplex, so a newer parser cannot introduce a
// construct the validators silently skip.
func (p *parsed) collect() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("syntax tree walk failed: %v", r)
		}
	}()
	c := &p.coll
	c.reset()
	syntax.Walk(p.file, p.walkFn)
	return c.err
}

// walk is the function collect gives syntax.Walk (as p.walkFn, so that
// no closure is allocated per command).
func (c *collector) walk(n syntax.Node) bool {
	if c.err != nil {
		return false
	}
	if n == nil {
		c.depth--
		c.stack = c.stack[:len(c.stack)-1]
		return true
	}
	if c.err = c.visit(n); c.err != nil {
		return false
	}
	c.stack = append(c.stack, n)
	c.depth++
	if c.depth > maxASTDepth {
		c.err = fmt.Errorf("syntax tree deeper than %d", maxASTDepth)
		return false
	}
	return true
}

// reset empties the collector for another walk, keeping its p, its track
// setting and the capacity of its slices (see parsed.release).
func (c *collector) reset() {
	c.depth = 0
	c.err = nil
	c.hdocs = c.hdocs[:0]
	c.stack = c.stack[:0]
}

// reset empties the facts, keeping the capacity of their slices.
func (f *facts) reset() {
	f.substs = f.substs[:0]
	f.ariths = f.ariths[:0]
	f.params = f.params[:0]
	f.ansiQuotes = f.ansiQuotes[:0]
	f.comments = f.comments[:0]
	f.assigns = f.assigns[:0]
	f.heredocs = f.heredocs[:0]
	f.words = f.words[:0]
	f.wordLits = f.wordLits[:0]
	f.quoted = f.quoted[:0]
	f.newlineSeps = f.newlineSeps[:0]
	f.spans = f.spans[:0]
	f.seen = nil
}

type collector struct {
	p     *parsed
	err   error // the walk's outcome
	depth int
	// hdocs are the body words of here-documents met so far.
	hdocs []*syntax.Word
	// track records node types in p.facts.seen (tests only).
	track bool
	// stack holds the ancestors of the node being visited.
	stack []syntax.Node
}

// substEnd returns the token that ends the innermost substitution the
// current node is in: ')' for $(...), <(...) and >(...), '`' for
// backquotes, 0 outside substitutions.
func (c *collector) substEnd() byte {
	for i := len(c.stack) - 1; i >= 0; i-- {
		switch n := c.stack[i].(type) {
		case *syntax.CmdSubst:
			if n.Backquotes {
				return '`'
			}
			return ')'
		case *syntax.ProcSubst:
			return ')'
		}
	}
	return 0
}

// checkHeredocInSubst refuses a here-document inside a substitution when
// one of its lines starts with the delimiter and holds the token that ends
// the substitution later on. bash (5.2) ends the here-document at such a
// line ("delimited by end-of-file") and reads the rest of the line as
// shell code; the parser only ends it at an exact delimiter line. Without
// this, "$(cat <<'EOF'" + "\nEOF) $(evil) ..." reads as a literal to the
// parser and runs evil in bash.
func (c *collector) checkHeredocInSubst(r *syntax.Redirect) error {
	end := c.substEnd()
	if end == 0 {
		return nil
	}
	delim := c.p.word(r.Word)
	if !delim.Static {
		return nil // refused by the flattener
	}
	body := c.p.text(r.Hdoc) // the whole node: its last line may matter
	for len(body) > 0 {
		line := body
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = ""
		}
		line = strings.TrimLeft(line, "\t")
		if strings.HasPrefix(line, delim.Value) && strings.IndexByte(line[len(delim.Value):], end) >= 0 {
			return misread(fmt.Sprintf("here-document line %q inside a substitution: bash ends the here-document there", line))
		}
	}
	return nil
}

func (c *collector) visit(n syntax.Node) error {
	f := &c.p.facts
	if c.track {
		if f.seen == nil {
			f.seen = map[string]int{}
		}
		f.seen[nodeName(n)]++
	}
	switch n := n.(type) {
	// Statements and lists.
	case *syntax.File:
		c.stmtList(n.Stmts)
	case *syntax.Comment:
		// bash ends a comment at the newline even after a backslash; the
		// parser takes the backslash-newline as a continuation and reads
		// the next line as part of the commented line.
		start := int(n.Hash.Offset())
		if start > 0 && start <= len(c.p.src) && strings.IndexByte(" \t\n;&|()<>", c.p.src[start-1]) < 0 {
			// bash starts a comment only at the start of a word; the
			// parser also after a closing quote ('EOF'#x).
			return misread(fmt.Sprintf("'#' after %q starts a comment for the parser, not for bash", c.p.src[start-1]))
		}
		if start >= 0 && start < len(c.p.src) {
			line := c.p.src[start:]
			if i := strings.IndexByte(line, '\n'); i >= 0 {
				line = line[:i]
			}
			if strings.HasSuffix(line, `\`) {
				return misread("a comment ends with a backslash-newline")
			}
		}
		f.comments = append(f.comments, *n)
	case *syntax.Stmt:
		c.p.nRedirs += len(n.Redirs)
	case *syntax.CallExpr:
		c.p.nCalls++
		c.p.nWords += len(n.Args)
		c.p.nAssigns += len(n.Assigns)
	case *syntax.BinaryCmd:
	case *syntax.Assign:
		f.assigns = append(f.assigns, n)
	case *syntax.Redirect:
		if n.Hdoc != nil {
			if err := c.checkHeredocInSubst(n); err != nil {
				return err
			}
			f.heredocs = append(f.heredocs, n)
			c.hdocs = append(c.hdocs, n.Hdoc)
			kind := paintHeredoc
			if quotedDelim(n.Word) {
				kind = paintSingle
			}
			if s, e := c.p.hdocRange(n); s < e {
				c.p.facts.spans = append(c.p.facts.spans, span{s, e, kind})
			}
		} else if n.Op == syntax.Hdoc || n.Op == syntax.DashHdoc {
			f.heredocs = append(f.heredocs, n)
		}
	// Compound commands: the flattener refuses them (TooComplex), but their
	// words and substitutions are still gathered for the views.
	case *syntax.Subshell:
		c.stmtList(n.Stmts)
	case *syntax.Block:
		c.stmtList(n.Stmts)
	case *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.WordIter,
		*syntax.CStyleLoop, *syntax.CaseClause, *syntax.CaseItem, *syntax.FuncDecl,
		*syntax.TestClause, *syntax.BinaryTest, *syntax.UnaryTest, *syntax.ParenTest,
		*syntax.TimeClause, *syntax.CoprocClause,
		*syntax.ArrayExpr, *syntax.ArrayElem:
	case *syntax.DeclClause:
		c.p.nCalls++
		c.p.nWords += len(n.Args) + 1
	case *syntax.LetClause:
		f.ariths = append(f.ariths, n)
	case *syntax.ArithmCmd:
		f.ariths = append(f.ariths, n)
	// Words.
	case *syntax.Word:
		if !c.isHeredoc(n) {
			f.words = append(f.words, n)
			f.wordLits = append(f.wordLits, wordLits(n))
		}
	case *syntax.Lit:
		if err := c.dollarContinuation(n); err != nil {
			return err
		}
	case *syntax.SglQuoted:
		if n.Dollar {
			f.ansiQuotes = append(f.ansiQuotes, n)
		}
		f.quoted = append(f.quoted, n.Value)
		c.quoteSpan(n, n.Dollar)
	case *syntax.DblQuoted:
		if n.Dollar {
			f.ansiQuotes = append(f.ansiQuotes, n)
		}
		for _, q := range n.Parts {
			if l, ok := q.(*syntax.Lit); ok {
				f.quoted = append(f.quoted, l.Value)
			}
		}
		c.quoteSpan(n, n.Dollar)
	case *syntax.CmdSubst:
		if _, ok := c.p.heredocSubst(n); !ok {
			f.substs = append(f.substs, n)
		}
		c.span(n, paintUnquoted)
		c.stmtList(n.Stmts)
	case *syntax.ProcSubst:
		f.substs = append(f.substs, n)
		c.span(n, paintUnquoted)
		c.stmtList(n.Stmts)
	case *syntax.ParamExp:
		f.params = append(f.params, n)
	case *syntax.ArithmExp:
		f.ariths = append(f.ariths, n)
	case *syntax.BinaryArithm, *syntax.UnaryArithm, *syntax.ParenArithm:
	case *syntax.BraceExp:
		// Only produced by syntax.SplitBraces, which is never called.
	// Constructs bash does not read the way the parser does.
	case *syntax.ExtGlob:
		return fmt.Errorf("extended glob %q (bash parses it only with extglob on)", c.p.text(n))
	case *syntax.FlagsArithm, *syntax.TestDecl:
		return fmt.Errorf("construct %s is not bash", nodeName(n))
	default:
		return fmt.Errorf("unknown syntax node %s", nodeName(n))
	}
	return nil
}

// dollarContinuation refuses a '$' followed by backslash-newline: bash
// removes the pair first and reads "$\<newline>(id)" as "$(id)" (inside
// double quotes too), the parser as a literal '$' and "(id)".
func (c *collector) dollarContinuation(l *syntax.Lit) error {
	src := c.p.src
	s, e := int(l.Pos().Offset()), int(l.End().Offset())
	if s < 0 || e > len(src) || s > e {
		return nil
	}
	for i := s; i < e && i < len(src); i++ {
		if src[i] != '$' || !strings.HasPrefix(src[i+1:], "\\\n") {
			continue
		}
		bs := 0
		for j := i - 1; j >= 0 && src[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 0 {
			return misread("'$' followed by a backslash-newline: bash joins the lines and may read an expansion")
		}
	}
	return nil
}

func (c *collector) isHeredoc(w *syntax.Word) bool {
	for _, h := range c.hdocs {
		if h == w {
			return true
		}
	}
	return false
}

// stmtList records newlines that separate consecutive statements. A
// backslash-newline is a continuation and a comment runs to its newline.
func (c *collector) stmtList(stmts []*syntax.Stmt) {
	for i := 0; i+1 < len(stmts); i++ {
		from, to := int(stmts[i].End().Offset()), int(stmts[i+1].Pos().Offset())
		if from < 0 || to > len(c.p.src) || from >= to {
			continue
		}
		gap := c.p.src[from:to]
		for j := 0; j < len(gap); j++ {
			switch gap[j] {
			case '\\':
				j++
			case '#':
				k := strings.IndexByte(gap[j:], '\n')
				if k < 0 {
					j = len(gap)
					continue
				}
				j += k - 1
			case '\n':
				c.p.facts.newlineSeps = append(c.p.facts.newlineSeps, from+j)
			}
		}
	}
}

func (c *collector) span(n syntax.Node, kind byte) {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(c.p.src) || s >= e {
		return
	}
	c.p.facts.spans = append(c.p.facts.spans, span{s, e, kind})
}

// quoteSpan paints a quoted string: its quote characters and its inside.
func (c *collector) quoteSpan(n syntax.Node, dollar bool) {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	open := 1
	if dollar {
		open = 2
	}
	if s < 0 || e > len(c.p.src) || e-s < open+1 {
		return
	}
	kind := paintSingle
	if _, ok := n.(*syntax.DblQuoted); ok {
		kind = paintDouble
	}
	spans := &c.p.facts.spans
	*spans = append(*spans, span{s, s + open, paintQuote}, span{s + open, e - 1, kind}, span{e - 1, e, paintQuote})
}

// misreadError marks input the parser reads differently from bash: the
// parse is Unavailable rather than TooComplex.
type misreadError string

func (e misreadError) Error() string { return string(e) }

func misread(s string) error { return misreadError(s) }

// nodeName is the type name of a syntax node, without the package.
func nodeName(n any) string {
	s := fmt.Sprintf("%T", n)
	s = strings.TrimPrefix(s, "*")
	return strings.TrimPrefix(s, "syntax.")
}
