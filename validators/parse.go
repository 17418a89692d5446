package validators

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ParseKind classifies a command for the decision pipeline. Only Simple
// commands can ever be allowed; the other two kinds lead to Ask.
type ParseKind uint8

const (
	// Unavailable: the parser could not run or the input is not valid shell.
	Unavailable ParseKind = iota
	// TooComplex: valid shell, but with constructs moat does not analyse
	// (functions, loops, nesting beyond the limits, and so on).
	TooComplex
	// Simple: a list of simple commands joined by ;, &&, ||, | and &, each
	// with its own redirections.
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
	// tilde, glob or brace expansion).
	Static bool
}

// Assign is a leading VAR=value assignment of a simple command.
type Assign struct {
	Name  string
	Value Word
}

// Redirect is one redirection of a simple command.
type Redirect struct {
	// Op is the operator as written: ">", ">>", "<", "<<", "<<<", ">&", ...
	Op string
	// Fd is the explicit file descriptor ("2" in 2>x), or "".
	Fd string
	// Target is the file (or fd, or heredoc delimiter) word.
	Target Word
	// Heredoc is the body of a here-document ("<<" and "<<-").
	Heredoc string
	// HeredocQuoted is set when the delimiter was quoted (body is literal).
	HeredocQuoted bool
}

// SimpleCommand is one command with its arguments and redirections.
type SimpleCommand struct {
	Assigns   []Assign
	Args      []Word
	Redirects []Redirect
	// Op is the operator that follows this command: ";", "&&", "||", "|",
	// "&" or "" for the last one.
	Op string
	// Negated is set for "! cmd".
	Negated bool
	// Source is the command's source text.
	Source string
}

// Argv returns the argument values (exact only when Static reports true).
func (c SimpleCommand) Argv() []string {
	out := make([]string, len(c.Args))
	for i, w := range c.Args {
		out[i] = w.Value
	}
	return out
}

// Static reports whether every word of the command (assignments, arguments
// and redirect targets) is static.
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
	}
	return true
}

// ParseResult is the outcome of ParseForSecurity.
type ParseResult struct {
	Kind     ParseKind
	Commands []SimpleCommand
	// Reason explains TooComplex and Unavailable.
	Reason string
}

// MaxSubcommands is the largest number of simple commands analysed; more
// parts make the command TooComplex (the seed's 50-part cap).
const MaxSubcommands = 50

// ParseForSecurity parses cmd as bash and flattens it into simple commands.
func ParseForSecurity(cmd string) ParseResult {
	if strings.ContainsRune(cmd, 0) {
		return ParseResult{Kind: Unavailable, Reason: "command contains a NUL byte"}
	}
	p := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(false))
	f, err := p.Parse(strings.NewReader(cmd), "")
	if err != nil {
		return ParseResult{Kind: Unavailable, Reason: "parse error: " + err.Error()}
	}
	fl := flattener{src: cmd}
	for _, st := range f.Stmts {
		if err := fl.stmt(st, ";"); err != nil {
			return ParseResult{Kind: TooComplex, Reason: err.Error()}
		}
	}
	if len(fl.out) > 0 {
		fl.out[len(fl.out)-1].Op = ""
	}
	return ParseResult{Kind: Simple, Commands: fl.out}
}

type flattener struct {
	src string
	out []SimpleCommand
}

var errTooMany = fmt.Errorf("more than %d subcommands", MaxSubcommands)

func (fl *flattener) stmt(st *syntax.Stmt, op string) error {
	if st.Background {
		op = "&"
	}
	if st.Coprocess {
		return errors.New("coprocess")
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		if len(fl.out) >= MaxSubcommands {
			return errTooMany
		}
		sc := SimpleCommand{Op: op, Negated: st.Negated, Source: fl.text(st)}
		for _, a := range c.Assigns {
			if a.Append || a.Naked || a.Index != nil || a.Array != nil {
				return fmt.Errorf("unsupported assignment %q", fl.text(a))
			}
			var w Word
			if a.Value != nil {
				w = fl.word(a.Value)
			} else {
				w = Word{Static: true}
			}
			sc.Assigns = append(sc.Assigns, Assign{Name: a.Name.Value, Value: w})
		}
		for _, a := range c.Args {
			sc.Args = append(sc.Args, fl.word(a))
		}
		for _, r := range st.Redirs {
			rd := Redirect{Op: r.Op.String()}
			if r.N != nil {
				rd.Fd = r.N.Value
			}
			if r.Word != nil {
				rd.Target = fl.word(r.Word)
			}
			if r.Hdoc != nil {
				rd.Heredoc = fl.text(r.Hdoc)
				rd.HeredocQuoted = quotedDelim(r.Word)
			}
			sc.Redirects = append(sc.Redirects, rd)
		}
		fl.out = append(fl.out, sc)
		return nil
	case *syntax.BinaryCmd:
		if len(st.Redirs) > 0 || st.Negated {
			return errors.New("redirection or negation of a compound command")
		}
		if err := fl.stmt(c.X, c.Op.String()); err != nil {
			return err
		}
		return fl.stmt(c.Y, op)
	case nil:
		if len(st.Redirs) > 0 {
			return errors.New("redirection without a command")
		}
		return nil
	default:
		return fmt.Errorf("unsupported construct %T", c)
	}
}

func (fl *flattener) text(n syntax.Node) string {
	s, e := n.Pos().Offset(), n.End().Offset()
	if int(e) > len(fl.src) || s > e {
		return ""
	}
	return fl.src[s:e]
}

// word computes the value of a word after quote removal, when it is static.
func (fl *flattener) word(w *syntax.Word) Word {
	raw := fl.text(w)
	var b strings.Builder
	static := true
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			if strings.ContainsAny(v, "*?[") || (i == 0 && strings.HasPrefix(v, "~")) || strings.Contains(v, "{") {
				static = false
			}
			b.WriteString(unescapeLit(v))
		case *syntax.SglQuoted:
			if p.Dollar {
				static = false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				static = false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					static = false
					continue
				}
				b.WriteString(unescapeDbl(l.Value))
			}
		default:
			static = false
		}
	}
	if !static {
		return Word{Raw: raw, Value: raw}
	}
	return Word{Raw: raw, Value: b.String(), Static: true}
}

// unescapeLit removes backslash quoting from an unquoted literal.
func unescapeLit(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' { // line continuation
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDbl removes the backslashes bash removes inside double quotes.
func unescapeDbl(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func quotedDelim(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		switch p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.Contains(p.(*syntax.Lit).Value, `\`) {
				return true
			}
		}
	}
	return false
}
