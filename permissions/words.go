package permissions

import (
	"errors"
	"strings"
)

// This file holds the small string tools the rest of the package shares:
// the tokenizer for rule contents, canonical shell quoting of argument
// vectors, and the '*' glob matcher used by wildcard rules.

// ruleToken is one word of a rule's content. Parts alternate between
// literal text and wildcards: a '*' outside quotes is a wildcard, a quoted or
// backslash-escaped '*' is a literal star.
type ruleToken []tokenPart

type tokenPart struct {
	text string // literal text ("" for a wildcard)
	star bool
}

// literal returns the token's text when it holds no wildcard.
func (t ruleToken) literal() (string, bool) {
	var b strings.Builder
	for _, p := range t {
		if p.star {
			return "", false
		}
		b.WriteString(p.text)
	}
	return b.String(), true
}

// loneStar reports whether the token is a single unquoted '*'.
func (t ruleToken) loneStar() bool { return len(t) == 1 && t[0].star }

var errUnterminated = errors.New("unterminated quote")

// tokenizeRule splits rule content into words with shell quoting rules:
// blanks separate words, '...' is literal, "..." removes the backslash
// before $ ` " \ and newline, a backslash outside quotes escapes the next
// character. Nothing is expanded: '$' and '`' are ordinary characters here.
func tokenizeRule(s string) ([]ruleToken, error) {
	var (
		toks   []ruleToken
		cur    ruleToken
		lit    strings.Builder
		inWord bool
	)
	flushLit := func() {
		if lit.Len() > 0 {
			cur = append(cur, tokenPart{text: lit.String()})
			lit.Reset()
		}
	}
	endWord := func() {
		flushLit()
		if inWord {
			if len(cur) == 0 { // "" or ''
				cur = ruleToken{{text: ""}}
			}
			toks = append(toks, cur)
		}
		cur, inWord = nil, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			endWord()
		case c == '\\':
			inWord = true
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					lit.WriteByte(s[i])
				}
			} else {
				lit.WriteByte(c)
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errUnterminated
			}
			lit.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				lit.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errUnterminated
			}
		case c == '*':
			inWord = true
			flushLit()
			if n := len(cur); n == 0 || !cur[n-1].star { // ** is one wildcard
				cur = append(cur, tokenPart{star: true})
			}
		default:
			inWord = true
			lit.WriteByte(c)
		}
	}
	endWord()
	return toks, nil
}

// safeUnquoted reports whether b needs no quoting in a shell word.
func safeUnquoted(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("_@%+=:,./-", b) >= 0
}

// quoteWord renders s as one shell word, quoting only when needed. The
// rendering is canonical: two argument vectors render alike exactly when
// they are equal.
func quoteWord(s string) string {
	if s == "" {
		return "''"
	}
	for i := 0; i < len(s); i++ {
		if !safeUnquoted(s[i]) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// joinArgv renders an argument vector canonically.
func joinArgv(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteWord(a))
	}
	return b.String()
}

// globSeg is one piece of a wildcard pattern: literal text, or a '*' that
// matches any run of characters (spaces included).
type globSeg struct {
	lit  string
	star bool
}

// globMatch reports whether s matches the pattern as a whole. It runs in
// O(len(s) * stars) with no recursion.
func globMatch(pat []globSeg, s string) bool {
	// Leading literal must be a prefix, trailing literal a suffix; the
	// literals in between are found left to right (the classic greedy
	// algorithm is exact for patterns whose only metacharacter is '*').
	if len(pat) == 0 {
		return s == ""
	}
	first, last := 0, len(pat)-1
	if !pat[0].star {
		if !strings.HasPrefix(s, pat[0].lit) {
			return false
		}
		s = s[len(pat[0].lit):]
		first = 1
	}
	if first > last {
		return s == ""
	}
	if !pat[last].star {
		if !strings.HasSuffix(s, pat[last].lit) {
			return false
		}
		s = s[:len(s)-len(pat[last].lit)]
		last--
	}
	if first > last {
		return s == ""
	}
	sawStar := false
	for _, p := range pat[first : last+1] {
		if p.star {
			sawStar = true
			continue
		}
		if !sawStar { // two literals in a row cannot happen; be exact anyway
			if !strings.HasPrefix(s, p.lit) {
				return false
			}
			s = s[len(p.lit):]
			continue
		}
		i := strings.Index(s, p.lit)
		if i < 0 {
			return false
		}
		s = s[i+len(p.lit):]
	}
	return sawStar || s == ""
}
