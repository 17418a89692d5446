package darwin

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Globs. A policy glob (PathRule.Glob) uses the syntax Linux expands with
// path/filepath.Match, one path segment at a time, plus ** as a whole
// segment for zero or more directories. Linux expands it against the disk
// when a run starts; Seatbelt matches it as a regular expression on every
// access, so it also covers what appears later. The regex dialect written
// here is deliberately small, the part every engine reads alike: literal
// characters (the metacharacters escaped with a backslash), [^/], [^/]*,
// bracket classes of plain ASCII, groups with |, ?, * and the anchors.

// regexSpecial are the characters escaped in a literal part of a regex.
const regexSpecial = `.[]\()*+?{}|^$`

// escapeRegex makes s match itself.
func escapeRegex(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(regexSpecial, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// glob is a policy glob split at its first segment with a metacharacter:
// base is the literal directory it starts from, segs the rest.
type glob struct {
	base string
	segs []string
}

// splitGlob splits an absolute, cleaned pattern.
func splitGlob(pattern string) glob {
	segs := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	i := 0
	for i < len(segs)-1 && !hasMeta(segs[i]) {
		i++
	}
	if !hasMeta(segs[i]) { // no metacharacter at all: the last segment too
		i = len(segs) - 1
	}
	return glob{base: "/" + strings.Join(segs[:i], "/"), segs: segs[i:]}
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// depth is the number of path components a match has (the fewest, when
// the pattern holds **), and whether ** makes it vary.
func (g glob) depth() (int, bool) {
	n, star := components(g.base), false
	for _, s := range g.segs {
		if s == "**" {
			star = true
			continue
		}
		n++
	}
	return n, star
}

// regex compiles segs[:n] below base, anchored at the start only.
func (g glob) regex(n int) (string, error) {
	var b strings.Builder
	b.WriteByte('^')
	if g.base != "/" {
		b.WriteString(escapeRegex(g.base))
	}
	for _, s := range g.segs[:n] {
		if s == "**" {
			b.WriteString(`(/[^/]+)*`)
			continue
		}
		r, err := segmentRegex(s)
		if err != nil {
			return "", err
		}
		b.WriteByte('/')
		b.WriteString(r)
	}
	return b.String(), nil
}

// match is the regex of the whole pattern's matches.
func (g glob) match() (string, error) {
	r, err := g.regex(len(g.segs))
	return r + "$", err
}

// tree is the regex of the matches and everything below them (a literal
// rule's subpath).
func (g glob) tree() (string, error) {
	r, err := g.regex(len(g.segs))
	return r + "(/.*)?$", err
}

// ancestorRegexes are the regexes of the directories between base and a
// match: renaming one of them would move a match out of the pattern's
// reach. A prefix ending in ** is left out: ** matches whatever the
// directory under it is renamed to.
func (g glob) ancestorRegexes() ([]string, error) {
	var out []string
	for k := 1; k < len(g.segs); k++ {
		if g.segs[k-1] == "**" {
			continue
		}
		r, err := g.regex(k)
		if err != nil {
			return nil, err
		}
		out = append(out, r+"$")
	}
	return out, nil
}

// errGlob is wrapped by every glob the generator cannot translate.
var errGlob = errors.New("glob not expressible in Seatbelt")

// segmentRegex translates one path/filepath.Match segment.
func segmentRegex(seg string) (string, error) {
	var b strings.Builder
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w: segment %q: %s", errGlob, seg, why)
	}
	for i := 0; i < len(seg); {
		c := seg[i]
		switch c {
		case '*':
			b.WriteString(`[^/]*`)
			i++
		case '?':
			b.WriteString(`[^/]`)
			i++
		case '\\':
			if i+1 >= len(seg) {
				return bad("a trailing backslash")
			}
			_, n := utf8.DecodeRuneInString(seg[i+1:])
			b.WriteString(escapeRegex(seg[i+1 : i+1+n]))
			i += 1 + n
		case '[':
			r, n, err := classRegex(seg[i:])
			if err != nil {
				return bad(err.Error())
			}
			b.WriteString(r)
			i += n
		default:
			b.WriteString(escapeRegex(string(c)))
			i++
		}
	}
	return b.String(), nil
}

// classSpecial are the characters a bracket expression treats specially
// somewhere: they are matched outside the brackets instead.
const classSpecial = `]^-\[`

// classRegex translates the character class at the start of s (Go syntax:
// '[' ['^'] { c | '\' c | lo '-' hi } ']'), returning the regex and how
// many bytes it used. Only ASCII is accepted: a multi-byte character in a
// class would be read byte by byte by a byte-oriented engine.
func classRegex(s string) (string, int, error) {
	i := 1
	negate := false
	if i < len(s) && s[i] == '^' {
		negate = true
		i++
	}
	type item struct{ lo, hi byte }
	var items []item
	char := func() (byte, error) {
		if i >= len(s) {
			return 0, errors.New("unterminated character class")
		}
		c := s[i]
		if c == '\\' {
			i++
			if i >= len(s) {
				return 0, errors.New("unterminated character class")
			}
			c = s[i]
		} else if c == '-' || c == ']' {
			return 0, fmt.Errorf("%q must be escaped in a character class", c)
		}
		if c >= utf8.RuneSelf || c < 0x20 || c == 0x7f {
			return 0, errors.New("only printable ASCII is supported in a character class")
		}
		i++
		return c, nil
	}
	for {
		if i >= len(s) {
			return "", 0, errors.New("unterminated character class")
		}
		if s[i] == ']' {
			if len(items) == 0 {
				return "", 0, errors.New("empty character class")
			}
			i++
			break
		}
		lo, err := char()
		if err != nil {
			return "", 0, err
		}
		hi := lo
		if i < len(s) && s[i] == '-' {
			i++
			if hi, err = char(); err != nil {
				return "", 0, err
			}
			if hi < lo {
				return "", 0, fmt.Errorf("reversed range %c-%c", lo, hi)
			}
		}
		items = append(items, item{lo, hi})
	}
	var inside, outside []string
	for _, it := range items {
		switch {
		case it.lo == it.hi && it.lo == '/':
			// Never matches: a segment holds no slash.
		case it.lo == it.hi && strings.IndexByte(classSpecial, it.lo) >= 0:
			outside = append(outside, escapeRegex(string(it.lo)))
		case strings.IndexByte(classSpecial, it.lo) >= 0 || strings.IndexByte(classSpecial, it.hi) >= 0:
			return "", 0, fmt.Errorf("range %c-%c starts or ends with one of %s", it.lo, it.hi, classSpecial)
		case it.lo <= '/' && '/' <= it.hi && !negate:
			// A segment holds no slash: keep the range either side of it.
			inside = appendRange(inside, it.lo, '/'-1)
			inside = appendRange(inside, '/'+1, it.hi)
		default:
			inside = appendRange(inside, it.lo, it.hi)
		}
	}
	if negate {
		if len(outside) > 0 {
			return "", 0, fmt.Errorf("a negated class with one of %s", classSpecial)
		}
		return "[^/" + strings.Join(inside, "") + "]", i, nil
	}
	var alts []string
	if len(inside) > 0 {
		alts = append(alts, "["+strings.Join(inside, "")+"]")
	}
	alts = append(alts, outside...)
	switch len(alts) {
	case 0:
		return "", 0, errors.New("the class matches nothing in a path segment")
	case 1:
		return alts[0], i, nil
	}
	return "(" + strings.Join(alts, "|") + ")", i, nil
}

func appendRange(out []string, lo, hi byte) []string {
	switch {
	case lo > hi:
		return out
	case lo == hi:
		return append(out, string(lo))
	}
	return append(out, string(lo)+"-"+string(hi))
}

// components counts the components of a clean absolute path ("/" has 0).
func components(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// ancestors lists the directories above p, nearest first, "/" excluded.
func ancestors(p string) []string {
	var out []string
	for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
		out = append(out, d)
	}
	return out
}
