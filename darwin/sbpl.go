package darwin

import (
	"fmt"
	"strconv"
	"strings"
)

// expr is one SBPL expression: a symbol, a string, or a list. A string
// that came from the policy (a path, a regex built from a glob) is marked
// user: the parameter form of a profile passes it with -D and refers to it
// as (param "Pn"); it never appears in the profile text.
type expr struct {
	sym   string
	str   string
	isStr bool
	user  bool
	list  []expr
}

// list builds (a b c ...); a string argument is a symbol.
func list(items ...any) expr {
	e := expr{list: []expr{}}
	for _, it := range items {
		switch v := it.(type) {
		case expr:
			e.list = append(e.list, v)
		case []expr:
			e.list = append(e.list, v...)
		case string:
			e.list = append(e.list, expr{sym: v})
		default:
			panic(fmt.Sprintf("darwin: list item %T", it))
		}
	}
	return e
}

// lit is a constant string of moat's own.
func lit(s string) expr { return expr{str: s, isStr: true} }

// user is a string taken from the policy.
func user(s string) expr { return expr{str: s, isStr: true, user: true} }

func (e expr) isList() bool { return e.list != nil }

// render writes e. params assigns parameter names to user strings; when it
// is nil, user strings are written as escaped literals instead.
func (e expr) render(b *strings.Builder, params *paramSet) {
	switch {
	case e.isList():
		b.WriteByte('(')
		for i, x := range e.list {
			if i > 0 {
				b.WriteByte(' ')
			}
			x.render(b, params)
		}
		b.WriteByte(')')
	case e.isStr && e.user && params != nil:
		b.WriteString(`(param "`)
		b.WriteString(params.name(e.str))
		b.WriteString(`")`)
	case e.isStr:
		b.WriteString(quote(e.str))
	default:
		b.WriteString(e.sym)
	}
}

// quote writes s as an SBPL (TinyScheme) string literal: a backslash and a
// double quote are escaped, every other byte is written as it is. Callers
// never pass control characters (checkString refuses them first).
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String()
}

// maxLiteral is the longest string literal sandbox-exec reads ("Error
// reading string" above 1025 bytes, as the npm sandbox runtime found).
const maxLiteral = 1024

// checkString refuses what cannot be passed safely: a NUL ends an argv
// string, and control characters have no place in a path (the policy
// refuses them too; this keeps the generator safe when called directly).
func checkString(what, s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("%s %s: a control character (byte %#x) cannot go into a Seatbelt profile", what, strconv.Quote(s), c)
		}
	}
	return nil
}

// paramSet numbers the user strings of one profile: one parameter per
// distinct string, in order of first use.
type paramSet struct {
	byValue map[string]string
	order   []Param
}

func (p *paramSet) name(v string) string {
	if n, ok := p.byValue[v]; ok {
		return n
	}
	if p.byValue == nil {
		p.byValue = map[string]string{}
	}
	n := "P" + strconv.Itoa(len(p.order))
	p.byValue[v] = n
	p.order = append(p.order, Param{Name: n, Value: v})
	return n
}

// Param is one -D NAME=VALUE definition of a profile.
type Param struct {
	Name, Value string
}

// Arg is the sandbox-exec argument that defines it.
func (p Param) Arg() string { return p.Name + "=" + p.Value }

// comment makes text safe for a ';' comment: no line break or other
// control character can end it early.
func comment(text string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 || r == 0x85 {
			return '?'
		}
		return r
	}, text)
}

// String is e with user strings inline.
func (e expr) String() string {
	var b strings.Builder
	e.render(&b, nil)
	return b.String()
}
