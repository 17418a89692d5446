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

// Case folding. macOS volumes are case-insensitive by default (APFS and
// HFS+ as formatted), so that .MCP.json, .git/COMMONDIR or head name the
// files git and Claude Code read as .mcp.json, .git/commondir and HEAD. A
// deny on such a volume is also written as a regex that spells every ASCII
// letter of the path both ways ([mM]), and k and s with the two non-ASCII
// letters Unicode folds to them (U+212A KELVIN SIGN, U+017F LONG S) as an
// alternation of their UTF-8 bytes. Other non-ASCII letters, normalization
// (a composed é against e and U+0301) and HFS+'s ignorable code points are
// not folded (docs/MACOS.md).

// foldLetter is the regex of one ASCII letter in any case, "" for a byte
// that is not one.
func foldLetter(c byte) string {
	lo := c | 0x20
	if lo < 'a' || lo > 'z' {
		return ""
	}
	up := lo &^ 0x20
	switch lo {
	case 'k':
		return "(k|K|\u212a)"
	case 's':
		return "(s|S|\u017f)"
	}
	return "[" + string(lo) + string(up) + "]"
}

// ciEscape is escapeRegex with every ASCII letter folded.
func ciEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if f := foldLetter(s[i]); f != "" {
			b.WriteString(f)
			continue
		}
		if strings.IndexByte(regexSpecial, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// glob is a policy glob split at its first segment with a metacharacter:
// base is the literal directory it starts from, segs the rest. fold spells
// its regexes case-insensitively.
type glob struct {
	base string
	segs []string
	fold bool
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
		if g.fold {
			b.WriteString(ciEscape(g.base))
		} else {
			b.WriteString(escapeRegex(g.base))
		}
	}
	for _, s := range g.segs[:n] {
		if s == "**" {
			b.WriteString(`(/[^/]+)*`)
			continue
		}
		r, err := segmentRegex(s, g.fold)
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

// segmentRegex translates one path/filepath.Match segment; with fold, what
// it matches in any case.
func segmentRegex(seg string, fold bool) (string, error) {
	esc := escapeRegex
	if fold {
		esc = ciEscape
	}
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
			b.WriteString(esc(seg[i+1 : i+1+n]))
			i += 1 + n
		case '[':
			r, n, err := classRegex(seg[i:], fold)
			if err != nil {
				return bad(err.Error())
			}
			b.WriteString(r)
			i += n
		default:
			b.WriteString(esc(string(c)))
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
// class would be read byte by byte by a byte-oriented engine. With fold,
// the class is closed under case: a letter is in it when either case is
// (negated: out of it only when both cases are), and k and s bring the
// non-ASCII letters that fold to them as alternatives.
func classRegex(s string, fold bool) (string, int, error) {
	i := 1
	negate := false
	if i < len(s) && s[i] == '^' {
		negate = true
		i++
	}
	var items []classItem
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
		items = append(items, classItem{lo, hi})
	}
	var extra []string // with fold: the non-ASCII letters folding to a member
	if fold {
		items, extra = foldClass(items, negate)
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
	alts = append(alts, extra...)
	switch len(alts) {
	case 0:
		return "", 0, errors.New("the class matches nothing in a path segment")
	case 1:
		return alts[0], i, nil
	}
	return "(" + strings.Join(alts, "|") + ")", i, nil
}

// classItem is one member of a bracket class: a character or a range.
type classItem struct{ lo, hi byte }

// foldClass closes a class's ASCII members under case (see classRegex) and
// returns them as items again, with the non-ASCII letters folding to a
// member (a non-negated class only) as alternatives. A run of members is
// one range; one of classSpecial at an end of a run is an item of its own
// (classRegex matches those outside the brackets).
func foldClass(items []classItem, negate bool) ([]classItem, []string) {
	var in [128]bool
	for _, it := range items {
		for c := int(it.lo); c <= int(it.hi); c++ {
			in[c] = true
		}
	}
	other := func(c int) int { return c ^ 0x20 }
	letter := func(c int) bool { lo := c | 0x20; return lo >= 'a' && lo <= 'z' }
	var set [128]bool
	for c := range in {
		switch {
		case c == '/':
		case !letter(c):
			set[c] = in[c]
		case negate:
			set[c] = in[c] && in[other(c)] // out of it only when both cases are
		default:
			set[c] = in[c] || in[other(c)]
		}
	}
	var extra []string
	if !negate {
		if set['k'] {
			extra = append(extra, "K")
		}
		if set['s'] {
			extra = append(extra, "ſ")
		}
	}
	var out []classItem
	for c := 0; c < len(set); {
		if !set[c] {
			c++
			continue
		}
		lo := c
		for c < len(set) && set[c] {
			c++
		}
		hi := c - 1
		for lo < hi && strings.IndexByte(classSpecial, byte(lo)) >= 0 {
			out = append(out, classItem{byte(lo), byte(lo)})
			lo++
		}
		var tail []classItem
		for lo < hi && strings.IndexByte(classSpecial, byte(hi)) >= 0 {
			tail = append(tail, classItem{byte(hi), byte(hi)})
			hi--
		}
		out = append(out, classItem{byte(lo), byte(hi)})
		out = append(out, tail...)
	}
	return out, extra
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
