package gitguard

import (
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
	"strings"
)

// Entry is one variable of a git config file, as git reads it.
type Entry struct {
	// Name is the full variable name as git sees it: the section
	// (lowercased), the subsection (case kept, for the `[section "sub"]`
	// form) and the key (lowercased), joined by dots.
	Name string
	// Value is the value; HasValue is false for a bare key (`[core] bare`),
	// which git reads as the boolean true.
	Value    string
	HasValue bool
	// Line is where the entry starts (1-based).
	Line int
}

// Section is the part of the name before the first dot (lowercase).
func (e Entry) Section() string {
	s, _, _ := strings.Cut(e.Name, ".")
	return s
}

// Key is the part after the last dot (lowercase).
func (e Entry) Key() string { return e.Name[strings.LastIndexByte(e.Name, '.')+1:] }

// Subsection is what lies between the section and the key ("" if none).
func (e Entry) Subsection() string {
	i, j := strings.IndexByte(e.Name, '.'), strings.LastIndexByte(e.Name, '.')
	if i == j {
		return ""
	}
	return e.Name[i+1 : j]
}

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("not a git config file git would accept")

// ParseConfig reads a git config file the way git's config.c does
// (git_parse_source and its helpers), so that every variable git would see
// is seen here under the same name. It is stricter where that cannot hurt:
// a NUL byte anywhere, or a key outside any section, is an error, and the
// caller treats an unparsable file written by a sandboxed command as
// hostile.
func ParseConfig(data []byte) ([]Entry, error) {
	p := &cfgParser{data: data, line: 1}
	return p.parse()
}

type cfgParser struct {
	data []byte
	pos  int
	line int
	eof  bool
}

// Character classes of git's sane_ctype (ASCII only; \v and \f are not
// spaces for git).
func gitSpace(c int) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func gitAlpha(c int) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func gitAlnum(c int) bool { return gitAlpha(c) || c >= '0' && c <= '9' }
func keyChar(c int) bool  { return gitAlnum(c) || c == '-' }
func lower(c int) byte {
	if c >= 'A' && c <= 'Z' {
		return byte(c + 'a' - 'A')
	}
	return byte(c)
}

// next is git's get_next_char: CRLF reads as LF, and the end of the data
// reads as a final LF with eof set.
func (p *cfgParser) next() int {
	if p.pos >= len(p.data) {
		p.eof = true
		return '\n'
	}
	c := int(p.data[p.pos])
	p.pos++
	if c == '\r' && p.pos < len(p.data) && p.data[p.pos] == '\n' {
		p.pos++
		c = '\n'
	}
	if c == '\n' {
		p.line++
	}
	return c
}

func (p *cfgParser) fail(what string) error {
	return fmt.Errorf("%w: line %d: %s", ErrSyntax, p.line, what)
}

func (p *cfgParser) parse() ([]Entry, error) {
	for _, b := range p.data {
		if b == 0 {
			return nil, fmt.Errorf("%w: a NUL byte", ErrSyntax)
		}
	}
	var out []Entry
	var section []byte // "core." or "remote.origin." once a header was read
	comment := false
	bom := "\xef\xbb\xbf"
	atStart := true
	for {
		c := p.next()
		if atStart {
			// A UTF-8 byte order mark at the very start is skipped; a
			// partial one is an error, as in git.
			if c == int(bom[0]) && strings.HasPrefix(string(p.data), bom) {
				p.pos = len(bom)
				atStart = false
				continue
			}
			atStart = false
		}
		if c == '\n' {
			if p.eof {
				return out, nil
			}
			comment = false
			continue
		}
		if comment || gitSpace(c) {
			continue
		}
		if c == '#' || c == ';' {
			comment = true
			continue
		}
		if c == '[' {
			name, err := p.header()
			if err != nil {
				return nil, err
			}
			section = append(name, '.')
			continue
		}
		if !gitAlpha(c) {
			return nil, p.fail(fmt.Sprintf("unexpected %q", rune(c)))
		}
		if section == nil {
			return nil, p.fail("a key outside any section")
		}
		line := p.line
		name := append(append([]byte(nil), section...), lower(c))
		e, err := p.entry(name)
		if err != nil {
			return nil, err
		}
		e.Line = line
		out = append(out, e)
	}
}

// header reads a section header after '[' (git's get_base_var and
// get_extended_base_var).
func (p *cfgParser) header() ([]byte, error) {
	var name []byte
	for {
		c := p.next()
		if p.eof {
			return nil, p.fail("unterminated section header")
		}
		if c == ']' || gitSpace(c) {
			// git also accepts "[.x]" or "[a..b]" (an empty part in the
			// name): nothing legitimate writes them and they cannot be
			// written back unambiguously, so they are refused here.
			for _, part := range strings.Split(string(name), ".") {
				if part == "" {
					return nil, p.fail("an empty part in the section name")
				}
			}
			if c == ']' {
				return name, nil
			}
			return p.subsection(name, c)
		}
		if !keyChar(c) && c != '.' {
			return nil, p.fail(fmt.Sprintf("%q in a section name", rune(c)))
		}
		name = append(name, lower(c))
	}
}

func (p *cfgParser) subsection(name []byte, c int) ([]byte, error) {
	for {
		if c == '\n' {
			return nil, p.fail("unterminated section header")
		}
		c = p.next()
		if !gitSpace(c) {
			break
		}
	}
	if c != '"' {
		return nil, p.fail(`a subsection must be quoted: [section "sub"]`)
	}
	name = append(name, '.')
	for {
		c := p.next()
		if c == '\n' {
			return nil, p.fail("unterminated subsection")
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			c = p.next()
			if c == '\n' {
				return nil, p.fail("unterminated subsection")
			}
		}
		name = append(name, byte(c))
	}
	if p.next() != ']' {
		return nil, p.fail(`"]" expected after the subsection`)
	}
	return name, nil
}

// entry reads the rest of a key and its value (git's get_value).
func (p *cfgParser) entry(name []byte) (Entry, error) {
	var c int
	for {
		c = p.next()
		if p.eof || !keyChar(c) {
			break
		}
		name = append(name, lower(c))
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	e := Entry{Name: string(name)}
	if c == '\n' {
		return e, nil
	}
	if c != '=' {
		return Entry{}, p.fail(fmt.Sprintf("%q after the key %s", rune(c), name))
	}
	v, err := p.value()
	if err != nil {
		return Entry{}, err
	}
	e.Value, e.HasValue = v, true
	return e, nil
}

// value is git's parse_value: quotes toggle, # and ; start a comment
// outside quotes, runs of spaces inside the value become one space per
// character, trailing spaces are dropped, \n \t \b \\ \" and a
// backslash-newline are the only escapes.
func (p *cfgParser) value() (string, error) {
	var b []byte
	quote, comment, space := false, false, 0
	for {
		c := p.next()
		if c == '\n' {
			if quote {
				return "", p.fail("unterminated quote")
			}
			return string(b), nil
		}
		if comment {
			continue
		}
		if gitSpace(c) && !quote {
			if len(b) > 0 {
				space++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			b = append(b, ' ')
		}
		if c == '\\' {
			c = p.next()
			switch c {
			case '\n':
				if p.eof {
					return "", p.fail("backslash at the end of the file")
				}
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", p.fail(fmt.Sprintf("unknown escape \\%c", rune(c)))
			}
			b = append(b, byte(c))
			continue
		}
		if c == '"' {
			quote = !quote
			continue
		}
		b = append(b, byte(c))
	}
}

// FormatConfig writes entries back as a config file git reads as exactly
// these entries (section headers in the quoted form, every value quoted
// and escaped).
func FormatConfig(es []Entry) []byte {
	var b strings.Builder
	cur := "\x00"
	for _, e := range es {
		sec, sub, key := e.Section(), e.Subsection(), e.Key()
		head := sec + "\x00" + sub
		if head != cur {
			cur = head
			if sub == "" {
				fmt.Fprintf(&b, "[%s]\n", sec)
			} else {
				fmt.Fprintf(&b, "[%s \"%s\"]\n", sec, escapeSub(sub))
			}
		}
		if !e.HasValue {
			fmt.Fprintf(&b, "\t%s\n", key)
			continue
		}
		fmt.Fprintf(&b, "\t%s = \"%s\"\n", key, escapeValue(e.Value))
	}
	return []byte(b.String())
}

func escapeSub(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return r.Replace(s)
}

func escapeValue(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\b", `\b`)
	return r.Replace(s)
}

// Bool is e read as git reads a boolean (git_config_bool): a bare key is
// true, and so is any value ParseBool reads as true.
func (e Entry) Bool() bool {
	if !e.HasValue {
		return true
	}
	b, _ := ParseBool(e.Value)
	return b
}

// ParseBool reads v as git's git_parse_maybe_bool does: true, yes, on and
// false, no, off, "" in any case, or an integer as git_parse_int reads it
// (decimal, 0x hex or 0 octal, a sign, a k/m/g unit: "2" and "1k" are
// true); ok is false for anything else, where git refuses the value.
func ParseBool(v string) (b, ok bool) {
	switch strings.ToLower(v) {
	case "true", "yes", "on":
		return true, true
	case "", "false", "no", "off":
		return false, true
	}
	n, ok := parseGitInt(v)
	return n != 0, ok
}

// parseGitInt is git_parse_int: strtoimax with base 0 (leading white
// space, a sign, 0x or 0 prefixes), one optional unit letter, the result
// within an int.
func parseGitInt(v string) (int64, bool) {
	s := strings.TrimLeft(v, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	base, digits := int64(10), "0123456789"
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") && strings.ContainsRune("0123456789abcdefABCDEF", rune(s[2])):
		base, digits, s = 16, "0123456789abcdefABCDEF", s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, "01234567"
	}
	var n int64
	i := 0
	for ; i < len(s) && strings.IndexByte(digits, s[i]) >= 0; i++ {
		d := int64(strings.IndexByte(digits, s[i]))
		if d >= 16 { // upper-case hex digits follow the lower-case ones
			d -= 6
		}
		if n = n*base + d; n > 1<<31 {
			return 0, false
		}
	}
	if i == 0 {
		return 0, false
	}
	factor := int64(1)
	switch strings.ToLower(s[i:]) {
	case "":
	case "k":
		factor = 1 << 10
	case "m":
		factor = 1 << 20
	case "g":
		factor = 1 << 30
	default:
		return 0, false
	}
	if neg {
		n = -n
	}
	n *= factor
	if n > 1<<31-1 || n < -1<<31 {
		return 0, false
	}
	return n, true
}

// ConfigPath resolves a path value of a git config file as git does: "~"
// and "~/..." are in home ("" when home is unknown), "~user" and
// "~user/..." in that user's home directory (git's interpolate_path asks
// getpwnam; "" for a user unknown here, where git refuses the value), an
// absolute path is cleaned, a relative one is relative to base ("" when
// base is "").
//
// "~user/" was taken for a relative path (base/~user/...): an include,
// core.hooksPath or init.templateDir the user wrote as ~name/dotfiles/...
// named a file neither the mounts nor the audit knew, and a command that
// could write there had its core.fsmonitor run by the user's git status
// (found by attack pass 47).
func ConfigPath(v, base, home string) string {
	switch {
	case v == "~" || strings.HasPrefix(v, "~/"):
		if home == "" {
			return ""
		}
		return filepath.Join(home, strings.TrimPrefix(v, "~"))
	case strings.HasPrefix(v, "~"):
		name, rest, _ := strings.Cut(v[1:], "/")
		u, err := user.Lookup(name)
		if err != nil || !filepath.IsAbs(u.HomeDir) {
			return ""
		}
		return filepath.Join(u.HomeDir, rest)
	case filepath.IsAbs(v):
		return filepath.Clean(v)
	case base == "":
		return ""
	}
	return filepath.Join(base, v)
}
