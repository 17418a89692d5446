// Package shellword evaluates a shell word statically: the one word
// evaluator of the validators and the permission rules, so that the two can
// never read the same word differently.
//
// A word is static when bash expands it to exactly one string whatever the
// environment, the filesystem and the time: no parameter, command,
// process or arithmetic expansion, no pathname, tilde or brace expansion.
// Value computes a static word with mvdan.cc/sh/v3/expand, with command
// substitution, process substitution, arithmetic and parameters refused:
// anything dynamic is a *DynamicError that says which expansion it is.
//
// Where bash's exact rule is fiddly (brace expansion, a tilde after '=' or
// ':', a '[' that may start a bracket expression), the check is broader
// than bash: a word wrongly called dynamic costs a prompt, a word wrongly
// called static is a disagreement with bash. The validators' differential
// tests run the values through real bash.
package shellword

import (
	"errors"
	"io"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Kind says why a word is not static.
type Kind uint8

const (
	// CmdSubst: $(...) or `...` (other than a substitution Evaluator.Subst
	// knows the output of).
	CmdSubst Kind = iota + 1
	// ProcSubst: <(...) or >(...).
	ProcSubst
	// Arith: $((...)) or $[...].
	Arith
	// Param: $x, ${x...}, $1, $@ ...
	Param
	// Glob: an unquoted *, ? or [...], or an extended glob.
	Glob
	// Tilde: an unquoted ~ at the start of the word or after '=' or ':'.
	Tilde
	// Brace: a brace expansion ({a,b}, {1..3}).
	Brace
	// ANSIC: $'...' (decoded by Approx; not static because decoders differ
	// in corner cases).
	ANSIC
	// Locale: $"..." (translated by bash at run time).
	Locale
	// Backslash: a backslash that ends the word (bash's reading depends on
	// what follows).
	Backslash
)

var kindNames = [...]string{
	CmdSubst: "command substitution", ProcSubst: "process substitution", Arith: "arithmetic expansion",
	Param: "parameter expansion", Glob: "pathname expansion", Tilde: "tilde expansion",
	Brace: "brace expansion", ANSIC: "$'...' quoting", Locale: `$"..." translation`,
	Backslash: "a trailing backslash",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// ErrDynamic is what every *DynamicError is (errors.Is).
var ErrDynamic = errors.New("the word is not static")

// DynamicError is the error of a word that is not static.
type DynamicError struct {
	Kind Kind
}

func (e *DynamicError) Error() string { return "the word is not static: " + e.Kind.String() }

// Is makes errors.Is(err, ErrDynamic) true.
func (e *DynamicError) Is(target error) bool { return target == ErrDynamic }

// KindOf returns the Kind of a *DynamicError, or 0.
func KindOf(err error) Kind {
	var d *DynamicError
	if errors.As(err, &d) {
		return d.Kind
	}
	return 0
}

// Evaluator evaluates words. The zero value refuses every command
// substitution.
type Evaluator struct {
	// Subst, if set, gives the output of a command substitution inside
	// double quotes whose output is known statically (the
	// "$(cat <<'EOF' ... EOF)" idiom), already without its trailing
	// newlines. ok false: the substitution is dynamic.
	Subst func(cs *syntax.CmdSubst) (out string, ok bool)
}

func dynamic(k Kind) error { return &DynamicError{Kind: k} }

// Value returns the word's value after quote removal when the word is
// static, and a *DynamicError otherwise.
func (ev Evaluator) Value(w *syntax.Word) (string, error) {
	if w == nil {
		return "", nil
	}
	if len(w.Parts) == 1 { // the common cases, without allocating
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			if !hasAny(p.Value, &unquotedSpecial) { // "\\*?[~{$"
				return p.Value, nil
			}
		case *syntax.SglQuoted:
			if !p.Dollar {
				return p.Value, nil
			}
		}
	}
	if v, ok := literalValue(w); ok {
		return v, nil
	}
	if err := ev.scan(w); err != nil {
		return "", err
	}
	return ev.expand(w)
}

// Byte sets for hasAny: the characters that make an unquoted literal or a
// literal inside double quotes more than its text.
var (
	unquotedSpecial     = byteSet("\\*?[~{$")
	doubleQuotedSpecial = byteSet("\\$`")
)

func byteSet(chars string) (set [256]bool) {
	for i := 0; i < len(chars); i++ {
		set[chars[i]] = true
	}
	return set
}

// hasAny is strings.ContainsAny(s, chars) for the ASCII chars of set.
func hasAny(s string, set *[256]bool) bool {
	for i := 0; i < len(s); i++ {
		if set[s[i]] {
			return true
		}
	}
	return false
}

// literalValue is the value of a word made only of literal text, without
// calling expand: unquoted literals without a character that escapes or
// expands (the single-literal fast path's set), single quotes, and double
// quotes holding only literals without '\', '$' or '`'. Such a word is
// one field, the concatenation of its parts. ok is false for any other
// word, and for an empty value (left to expand).
func literalValue(w *syntax.Word) (string, bool) {
	n := 0
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if hasAny(p.Value, &unquotedSpecial) || strings.IndexByte(p.Value, '`') >= 0 { // "\\*?[~{$`"
				return "", false
			}
			n += len(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			n += len(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || hasAny(l.Value, &doubleQuotedSpecial) { // "\\$`"
					return "", false
				}
				n += len(l.Value)
			}
		default:
			return "", false
		}
	}
	if n == 0 {
		return "", false
	}
	var b strings.Builder
	b.Grow(n)
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				b.WriteString(q.(*syntax.Lit).Value)
			}
		}
	}
	return b.String(), true
}

// expand runs mvdan.cc/sh's expansion with everything dynamic refused.
func (ev Evaluator) expand(w *syntax.Word) (string, error) {
	cfg := &expand.Config{
		Env:     expand.ListEnviron(),
		NoUnset: true, // any parameter is an error, never ""
		CmdSubst: func(out io.Writer, cs *syntax.CmdSubst) error {
			if ev.Subst != nil {
				if s, ok := ev.Subst(cs); ok {
					_, err := io.WriteString(out, s)
					return err
				}
			}
			return dynamic(CmdSubst)
		},
		ProcSubst: func(*syntax.ProcSubst) (string, error) { return "", dynamic(ProcSubst) },
		// No ReadDir: no pathname expansion.
	}
	fields, err := expand.Fields(cfg, w)
	if err != nil {
		if KindOf(err) != 0 {
			return "", err
		}
		return "", dynamic(Param)
	}
	if len(fields) != 1 {
		return "", dynamic(Brace)
	}
	return fields[0], nil
}

// scan finds the first dynamic part of a word, following bash's order of
// expansions: brace, tilde, parameter/command/arithmetic, word splitting,
// pathname expansion and quote removal.
func (ev Evaluator) scan(w *syntax.Word) error {
	// shape is the word with quoted and escaped characters that could
	// matter to brace and tilde expansion replaced by 'q'.
	var shape []byte
	openBracket := -1 // shape index of the first unquoted '['
	for i, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			v := x.Value
			for j := 0; j < len(v); j++ {
				c := v[j]
				if c == '\\' {
					if j+1 == len(v) {
						return dynamic(Backslash)
					}
					j++
					if v[j] == '\n' { // line continuation
						continue
					}
					shape = append(shape, quotedShape(v[j]))
					continue
				}
				switch c {
				case '*', '?':
					return dynamic(Glob)
				case '[':
					// A bracket expression needs a closing ']' later in the
					// word; a lone '[' (the test command) is literal.
					if openBracket < 0 {
						openBracket = len(shape)
					}
				case '~':
					if (i == 0 && j == 0) || (len(shape) > 0 && (shape[len(shape)-1] == '=' || shape[len(shape)-1] == ':')) {
						return dynamic(Tilde)
					}
				}
				shape = append(shape, c)
			}
		case *syntax.SglQuoted:
			if x.Dollar {
				return dynamic(ANSIC)
			}
			shape = appendQuotedShape(shape, x.Value)
		case *syntax.DblQuoted:
			if x.Dollar {
				return dynamic(Locale)
			}
			for _, q := range x.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					shape = appendQuotedShape(shape, q.Value)
				case *syntax.CmdSubst:
					if ev.Subst == nil {
						return dynamic(CmdSubst)
					}
					s, ok := ev.Subst(q)
					if !ok {
						return dynamic(CmdSubst)
					}
					shape = appendQuotedShape(shape, s)
				case *syntax.ArithmExp:
					return dynamic(Arith)
				default:
					return dynamic(Param)
				}
			}
		case *syntax.CmdSubst:
			return dynamic(CmdSubst)
		case *syntax.ProcSubst:
			return dynamic(ProcSubst)
		case *syntax.ArithmExp:
			return dynamic(Arith)
		case *syntax.ExtGlob:
			return dynamic(Glob)
		default: // *syntax.ParamExp and anything newer
			return dynamic(Param)
		}
	}
	if openBracket >= 0 && strings.IndexByte(string(shape[openBracket:]), ']') >= 0 {
		return dynamic(Glob) // pathname expansion: [...]
	}
	if BraceExpands(shape) {
		return dynamic(Brace)
	}
	return nil
}

// quotedShape maps a quoted or escaped character for the shape string:
// characters that only matter to expansions when unquoted become 'q'.
func quotedShape(c byte) byte {
	switch c {
	case '{', '}', '~', '*', '?', '[':
		return 'q'
	}
	return c
}

func appendQuotedShape(shape []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		shape = append(shape, quotedShape(s[i]))
	}
	return shape
}

// Shape is the word's text with quoted and escaped characters that matter
// to brace expansion neutralised ('q'), and expansions as 'v': what
// BraceExpands looks at.
func Shape(w *syntax.Word) []byte { return AppendShape(nil, w) }

// AppendShape appends the word's Shape to shape.
func AppendShape(shape []byte, w *syntax.Word) []byte {
	for _, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			v := x.Value
			for j := 0; j < len(v); j++ {
				if v[j] == '\\' && j+1 < len(v) {
					j++
					shape = append(shape, quotedShape(v[j]))
					continue
				}
				shape = append(shape, v[j])
			}
		case *syntax.SglQuoted:
			shape = appendQuotedShape(shape, x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					shape = appendQuotedShape(shape, l.Value)
				} else {
					shape = append(shape, 'v')
				}
			}
		default:
			shape = append(shape, 'v')
		}
	}
	return shape
}

// BraceExpands over-approximates bash brace expansion on a shape: an
// unquoted '{' with a later unquoted '}' and a ',' or ".." (quoted or
// not) in between.
func BraceExpands(shape []byte) bool {
	open := -1
	for i, c := range shape {
		if c == '{' {
			open = i
			break
		}
	}
	if open < 0 {
		return false
	}
	close := -1
	for i := len(shape) - 1; i > open; i-- {
		if shape[i] == '}' {
			close = i
			break
		}
	}
	if close < 0 {
		return false
	}
	mid := shape[open+1 : close]
	for i, c := range mid {
		if c == ',' || (c == '.' && i+1 < len(mid) && mid[i+1] == '.') {
			return true
		}
	}
	return false
}
