package validators

import "strings"

// Views are the five pre-computed forms of a command that the seed's
// string-level checks run on. They are computed once per command, from
// the syntax tree when the parse succeeded and with a plain quote scanner
// otherwise.
type Views struct {
	// Original is the command verbatim.
	Original string
	// Base is the first word after leading VAR=value assignments (its
	// value after quote removal when static).
	Base string
	// Unquoted drops single-quoted strings and quoted here-document
	// bodies, and the double-quote characters, keeping what is inside
	// double quotes (where expansions still happen).
	Unquoted string
	// FullyUnquoted keeps only the unquoted shell text: the contents of
	// all quotes and of all here-document bodies are dropped, along with
	// the quote characters.
	FullyUnquoted string
	// UnquotedKeepQuotes is FullyUnquoted with the quote characters kept
	// ("a b" becomes ""), so that what touched a quote stays visible
	// (mid-word hash detection).
	UnquotedKeepQuotes string
}

func computeViews(p *parsed) Views {
	v := Views{Original: p.src}
	var paint []byte
	if !p.collected {
		paint = scanQuotes(p.src)
	} else if len(p.facts.spans) > 0 {
		if cap(p.paint) < len(p.src) {
			p.paint = make([]byte, len(p.src))
		}
		paint = p.paint[:len(p.src)]
		clear(paint)
		for _, s := range p.facts.spans {
			for i := s.start; i < s.end; i++ {
				paint[i] = s.kind
			}
		}
	}
	if paint == nil { // parsed, nothing quoted
		v.Unquoted, v.FullyUnquoted, v.UnquotedKeepQuotes = p.src, p.src, p.src
	} else {
		v.Unquoted = cut(p.src, paint, paintUnquoted, paintDouble, paintHeredoc)
		v.FullyUnquoted = cut(p.src, paint, paintUnquoted, paintUnquoted, paintUnquoted)
		v.UnquotedKeepQuotes = cut(p.src, paint, paintUnquoted, paintQuote, paintQuote)
	}
	if p.result.Kind == Simple {
		if cmds := p.result.Commands; len(cmds) > 0 && len(cmds[0].Args) > 0 {
			v.Base = cmds[0].Args[0].Value
		}
	} else {
		for _, f := range strings.Fields(v.FullyUnquoted) {
			if !isAssignWord(f) {
				v.Base = f
				break
			}
		}
	}
	return v
}

// cut keeps the bytes painted with one of the three classes.
func cut(src string, paint []byte, a, b, c byte) string {
	var sb strings.Builder
	sb.Grow(len(src))
	for i := 0; i < len(src); i++ {
		if k := paint[i]; k == a || k == b || k == c {
			sb.WriteByte(src[i])
		}
	}
	return sb.String()
}

// isAssignWord reports whether s looks like NAME=value.
func isAssignWord(s string) bool {
	eq := strings.IndexByte(s, '=')
	return eq > 0 && isName(s[:eq])
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

// scanQuotes paints a command the parser could not read, with bash's
// quoting rules alone (backslash, single, double and $'...' quotes; no
// nesting inside double quotes, no here-documents).
func scanQuotes(s string) []byte {
	paint := make([]byte, len(s))
	const (
		unq = iota
		sgl
		dbl
		ansi
	)
	state := unq
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch state {
		case unq:
			switch {
			case c == '\\':
				i++
			case c == '\'':
				paint[i] = paintQuote
				state = sgl
			case c == '"':
				paint[i] = paintQuote
				state = dbl
			case c == '$' && i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '"'):
				paint[i], paint[i+1] = paintQuote, paintQuote
				if s[i+1] == '\'' {
					state = ansi
				} else {
					state = dbl
				}
				i++
			}
		case sgl:
			if c == '\'' {
				paint[i] = paintQuote
				state = unq
			} else {
				paint[i] = paintSingle
			}
		case ansi:
			if c == '\\' && i+1 < len(s) {
				paint[i], paint[i+1] = paintSingle, paintSingle
				i++
			} else if c == '\'' {
				paint[i] = paintQuote
				state = unq
			} else {
				paint[i] = paintSingle
			}
		case dbl:
			if c == '\\' && i+1 < len(s) {
				paint[i], paint[i+1] = paintDouble, paintDouble
				i++
			} else if c == '"' {
				paint[i] = paintQuote
				state = unq
			} else {
				paint[i] = paintDouble
			}
		}
	}
	return paint
}
