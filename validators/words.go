package validators

import (
	"errors"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word computes the value of a word after quote removal, when it is
// static, with the evaluator the permission rules share
// (internal/shellword): the literal "$(cat <<'EOF' ... EOF)" idiom inside
// double quotes is the one substitution it knows the output of.
func (p *parsed) word(w *syntax.Word) Word {
	raw := p.text(w)
	v, err := p.eval.Value(w)
	if err != nil {
		return Word{Raw: raw, Value: raw}
	}
	return Word{Raw: raw, Value: v, Static: true}
}

// HeredocSubst returns, for commands parsed from src, the function that
// gives the output of the literal "$(cat <<'EOF' ... EOF)" idiom: the
// Subst of the shared word evaluator (shellword.Evaluator).
func HeredocSubst(src string) func(*syntax.CmdSubst) (string, bool) {
	return newParsed(src).heredocSubst
}

// unescapeHeredoc removes the backslashes bash removes in the body of a
// here-document with an unquoted delimiter: before $, ` and \ (a
// backslash-newline is rejected before this is called).
func unescapeHeredoc(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '\\':
				i++
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// stripTabs removes the leading tabs of every line, as "<<-" does.
func stripTabs(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	atStart := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if atStart && c == '\t' {
			continue
		}
		atStart = c == '\n'
		b.WriteByte(c)
	}
	return b.String()
}

var errHeredocContinuation = errors.New("backslash-newline in an unquoted here-document body " +
	"(bash joins the lines before it looks for the delimiter)")

// heredocBody computes what a here-document feeds to its command.
//
// Which line closes the here-document is decided by the parser; the
// differential test checks that it agrees with bash. One known
// disagreement is handled here: for an unquoted delimiter bash removes
// backslash-newline pairs before comparing a line with the delimiter, so
// "E\<newline>OF" closes a here-document for bash and not for the parser.
// Such bodies are refused.
func (p *parsed) heredocBody(r *syntax.Redirect, quoted bool) (Word, error) {
	if r.Hdoc == nil {
		return Word{Static: true}, nil
	}
	s, e := p.hdocRange(r)
	raw := p.src[s:e]
	if !quoted && strings.Contains(raw, "\\\n") {
		return Word{}, errHeredocContinuation
	}
	var b strings.Builder
	static := true
	for _, part := range r.Hdoc.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			if quoted {
				b.WriteString(x.Value)
			} else {
				b.WriteString(unescapeHeredoc(x.Value))
			}
		default:
			if quoted {
				return Word{}, errors.New("unexpected expansion in a quoted here-document")
			}
			static = false
		}
	}
	if !static {
		return Word{Raw: raw, Value: raw}, nil
	}
	v := b.String()
	if r.Op == syntax.DashHdoc {
		v = stripTabs(v)
	}
	if v != "" && !strings.HasSuffix(v, "\n") {
		return Word{}, errors.New("here-document body does not end with a newline")
	}
	return Word{Raw: raw, Value: v, Static: true}, nil
}

// hdocRange is the byte range of a here-document body in the source. The
// parser's node sometimes spans the closing delimiter line too; it is
// left out here.
func (p *parsed) hdocRange(r *syntax.Redirect) (int, int) {
	s, e := int(r.Hdoc.Pos().Offset()), int(r.Hdoc.End().Offset())
	if s < 0 || e > len(p.src) || s > e {
		return 0, 0
	}
	delim := ""
	if r.Word != nil {
		if d := p.word(r.Word); d.Static {
			delim = d.Value
		}
	}
	body := strings.TrimSuffix(p.src[s:e], "\n")
	nl := strings.LastIndexByte(body, '\n')
	if strings.TrimLeft(body[nl+1:], "\t") == delim {
		e = s + nl + 1
	}
	return s, e
}

// heredocSubst recognises $(cat <<'EOF' ... EOF), the idiom agents use to
// pass a multi-line literal (a commit message, say), and returns its
// output: the literal body without its trailing newlines. Anything else
// (an unquoted delimiter, more commands, other redirections, arguments to
// cat, comments) is not recognised.
func (p *parsed) heredocSubst(cs *syntax.CmdSubst) (string, bool) {
	if cs.Backquotes || cs.TempFile || cs.ReplyVar || len(cs.Stmts) != 1 || len(cs.Last) != 0 {
		return "", false
	}
	st := cs.Stmts[0]
	if st.Negated || st.Background || st.Coprocess || st.Disown || len(st.Comments) != 0 || len(st.Redirs) != 1 {
		return "", false
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) != 0 || len(call.Args) != 1 || len(call.Args[0].Parts) != 1 {
		return "", false
	}
	if lit, ok := call.Args[0].Parts[0].(*syntax.Lit); !ok || lit.Value != "cat" {
		return "", false
	}
	r := st.Redirs[0]
	if r.N != nil || (r.Op != syntax.Hdoc && r.Op != syntax.DashHdoc) || !quotedDelim(r.Word) {
		return "", false
	}
	if d := p.word(r.Word); !d.Static {
		return "", false
	}
	body, err := p.heredocBody(r, true)
	if err != nil || !body.Static {
		return "", false
	}
	return strings.TrimRight(body.Value, "\n"), true
}
