package policy

import (
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ViolationKind says which layer refused something.
type ViolationKind string

const (
	FileViolation     ViolationKind = "file"
	NetworkViolation  ViolationKind = "network"
	ResourceViolation ViolationKind = "resource"
	SyscallViolation  ViolationKind = "syscall"
)

// Violation is one thing the sandbox refused.
type Violation struct {
	Kind ViolationKind `json:"kind"`
	// Op is what was attempted: "write", "create", "connect", "ptrace", ...
	Op string `json:"op"`
	// Target is the path, host:port or other object of the attempt.
	Target string `json:"target"`
	// Rule names the rule or protection that refused it.
	Rule string    `json:"rule,omitempty"`
	Time time.Time `json:"time"`
	// Pid is the process that made the attempt (host view), 0 if unknown.
	Pid int `json:"pid,omitempty"`
	// Count, when more than 1, is how many refusals of this kind, op and
	// rule under Target (a directory, shown as DIR/...) this one stands for
	// (Summarize).
	Count int `json:"count,omitempty"`
}

// Line renders the violation as one line for the <sandbox_violations>
// block: "deny file-write /etc/passwd (read-only: not in allowWrite)".
// Control, bidi and zero-width characters become spaces and angle brackets
// are dropped, so a hostile path cannot forge or close the block.
func (v Violation) Line() string {
	var b strings.Builder
	b.WriteString("deny ")
	b.WriteString(string(v.Kind))
	if v.Op != "" {
		b.WriteByte('-')
		b.WriteString(v.Op)
	}
	if v.Target != "" {
		b.WriteByte(' ')
		b.WriteString(v.Target)
	}
	if v.Count > 1 {
		if !strings.HasSuffix(v.Target, "/") {
			b.WriteByte('/')
		}
		b.WriteString("... (")
		b.WriteString(strconv.Itoa(v.Count))
		b.WriteString(" paths)")
	}
	if v.Rule != "" {
		b.WriteString(" (")
		b.WriteString(v.Rule)
		b.WriteByte(')')
	}
	return Sanitize(b.String())
}

// Sanitize makes s safe to print on one line of an annotation block.
func Sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '<' || r == '>':
			continue
		case Invisible(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Invisible reports whether r is a character that must not reach a reader
// as it is: controls (C0, DEL, C1), format characters (bidi, zero width,
// U+061C, U+180E), the line and paragraph separators U+2028/U+2029, which
// some readers take for a line break (a file name forged a report line
// with them, and a command a line of moat's question: found by attack
// passes), private-use and surrogate code points, and U+FFFD. Sanitize
// and the MCP server's question (which shows them as escapes) share it.
func Invisible(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfffd ||
		unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs)
}

// resultTags are the tags moat writes around parts of a command's result,
// as tagSkeleton spells them: the violation block, and the notice of
// output saved to a file (shell's render).
// The singular, <sandbox_violation>, reads as the block too (attack pass
// 83: it reached the agent with its bracket); as a prefix it covers the
// plural.
var resultTags = []string{tagSkeleton("sandboxviolation"), tagSkeleton("persistedoutput")}

// Defang takes the angle bracket off every tag of moat's (a
// <sandbox_violations> block, a <persisted-output> notice) in a command's
// own output, so that only moat's, around or after it, reads as one. A
// command that printed a block of its own ("deny network-connect
// github.com:443") had it shown to the agent as moat's, and with nothing
// refused no real block followed to tell them apart: an agent told the
// sandbox stopped it asks for the policy to be widened (attack pass 79,
// TestForgedViolationBlock); one that printed a notice of its own sent the
// agent to read a file of its choosing as the command's output (a secret
// the sandbox hides from the command, ~/.ssh/id_rsa), or closed moat's
// notice around its preview and opened another (attack pass 81,
// TestForgedPersistedOutput). A tag is found as a reader may take it: any
// case, '-' or '_' or neither between the words, spaces, controls and
// invisible characters (zero width, NUL) and terminal escape sequences
// anywhere in it, '/', a bracket
// that looks like '<' (fullwidth, small, single guillemet, angle
// brackets), letters that look like the name's (Cyrillic and Greek
// lookalikes, fullwidth and mathematical letters, accents, 0 for o, 1 or I
// for l), the bracket written as an entity (&lt;), the closing bracket
// left out, and cut by the end of the text (a preview's, a read's).
func Defang(out string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(out); i++ {
		c := out[i]
		if c != '<' && c != '&' && c < utf8.RuneSelf {
			continue // most of any output: one compare a byte
		}
		n := 0
		switch r, size := utf8.DecodeRuneInString(out[i:]); {
		case c == '&':
			n = entityBracket(out[i:])
		case strings.ContainsRune(openBrackets, r):
			n = size
		}
		if n == 0 || !tagFollows(out[i+n:]) {
			continue
		}
		b.WriteString(out[last:i])
		last = i + n
		i += n - 1
	}
	if last == 0 {
		return out
	}
	b.WriteString(out[last:])
	return b.String()
}

// entityBracket is the length of the HTML or XML entity for '<' that s
// starts with (&lt; &#60; &#x3c;, any case, the ';' optional), or 0.
func entityBracket(s string) int {
	for _, e := range []string{"&lt", "&#60", "&#x3c", "&#x003c", "&#0060"} {
		if len(s) >= len(e) && strings.EqualFold(s[:len(e)], e) {
			if len(s) > len(e) && s[len(e)] == ';' {
				return len(e) + 1
			}
			return len(e)
		}
	}
	return 0
}

// openBrackets are '<' and the characters a reader takes for it: fullwidth
// and small '<', the single guillemet, the angle brackets of CJK,
// mathematics and technical text, the modifier arrowhead, and the
// Canadian syllabic and ornament lookalikes.
const openBrackets = "<＜﹤‹〈⟨〈˂ᐸ❮⧼"

// tagFollows reports whether s, after a '<', starts with the name of one of
// resultTags as a reader may take it (see Defang).
func tagFollows(s string) bool {
	full, cut := scanTag(s)
	return full || cut >= 3
}

// scanTag reads s, after a '<', as the name of one of resultTags (see
// Defang): full when the whole name is there; else cut is how many of its
// letters the end of s left (a prefix of a name, 0 for none), or -1 when s
// is no such name.
func scanTag(s string) (full bool, cut int) {
	// name holds the name's letters as tagSkeleton spells them, with 0
	// for a letter of another script no lookalike maps, which stands for
	// any one (a homoglyph the table lacks).
	var buf [24]byte
	var skb [8]rune
	name := buf[:0]
	for n := 0; n < len(s); {
		r, w := utf8.DecodeRuneInString(s[n:])
		if n > 256 || len(name) > 20 {
			break
		}
		n += w
		switch {
		case r == '\x1b' || r == '\u009b':
			// A terminal's escape sequence (colour, bold: ESC[1m) shows
			// nothing, and a reader that strips them, as agents' tools
			// do, sees the name whole: <ESC[1msandbox_violations> kept
			// its '<' (attack pass 86).
			n += escapeTail(s[n:], r == '\u009b')
			continue
		case r == '-' || r == '_' || r == '/' || r == '\u2044' || r == '\u2215' || r == '\u2212' ||
			unicode.In(r, unicode.Pd, unicode.Pc, unicode.Mn, unicode.Me) || unicode.IsSpace(r) || Invisible(r):
			continue // dashes, connectors, slashes, marks, spaces, invisibles
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '|' || r == '!':
			for _, l := range appendSkeleton(skb[:0], r) {
				if l >= utf8.RuneSelf {
					l = 0
				}
				name = append(name, byte(l))
			}
			prefix := false
			for _, t := range resultTags {
				if nameIs(name, t, false) {
					return true, 0
				}
				prefix = prefix || nameIs(name, t, true)
			}
			if !prefix {
				return false, -1 // no tag's name goes on this way: an <html>, an a<b
			}
			continue
		}
		return false, -1
	}
	// the end of the text (or a run of ignorable characters) cut the name
	for _, t := range resultTags {
		if nameIs(name, t, true) {
			return false, len(name)
		}
	}
	return false, -1
}

// escapeTail is the length of the rest of a terminal escape sequence
// after its ESC (or after the one-character CSI, U+009B, when csi): a
// control sequence (ESC [, parameters, intermediates, a final byte), an
// operating system command or string (ESC ], P, X, ^ or _, up to BEL or
// ESC \), or ESC and one character with intermediates before it.
func escapeTail(s string, csi bool) int {
	i := 0
	if !csi {
		if s == "" {
			return 0
		}
		switch s[0] {
		case '[':
			i = 1
		case ']', 'P', 'X', '^', '_':
			for j := 1; j < len(s); j++ {
				if s[j] == '\a' {
					return j + 1
				}
				if s[j] == '\x1b' && j+1 < len(s) && s[j+1] == '\\' {
					return j + 2
				}
			}
			return len(s)
		default:
			for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
				i++
			}
			if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
				i++
			}
			return i
		}
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++ // parameters and intermediates
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++ // the final byte
	}
	return i
}

// nameIs reports whether name spells tag (a prefix of it, with prefix), a
// 0 in name standing for any letter.
func nameIs(name []byte, tag string, prefix bool) bool {
	if len(name) > len(tag) || (!prefix && len(name) != len(tag)) {
		return false
	}
	for i, c := range name {
		if c != 0 && c != tag[i] {
			return false
		}
	}
	return true
}

// TagCutAt returns where a tag of moat's that the end of text may have cut
// begins (its '<', or the '&' of an entity for it), or -1: a reader of
// output in parts (bash_output's reads) would see a '<' and the first
// letters of a name at the end of one part, which Defang keeps (a shorter
// cut than three letters is not taken for a tag: "a <" keeps its
// bracket), and the rest of the name at the start of the next, which has
// no '<' to take off (attack pass 83). The caller holds text from there
// back for the next part.
func TagCutAt(text string) int {
	i := strings.LastIndexAny(text, openBrackets+"&")
	if i < 0 {
		return -1
	}
	n := 0
	if text[i] == '&' {
		if n = entityBracket(text[i:]); n == 0 {
			if entityPrefix(text[i:]) {
				return i // the entity itself may be cut
			}
			return -1
		}
	} else {
		_, n = utf8.DecodeRuneInString(text[i:])
	}
	if full, cut := scanTag(text[i+n:]); full || cut < 0 {
		return -1
	}
	return i
}

// BracketLen is the length of the bracket (one of the lookalikes of '<',
// or an entity for it) that s starts with, or 0: what Defang takes off
// before a tag.
func BracketLen(s string) int {
	if s == "" {
		return 0
	}
	if s[0] == '&' {
		return entityBracket(s)
	}
	if r, size := utf8.DecodeRuneInString(s); strings.ContainsRune(openBrackets, r) {
		return size
	}
	return 0
}

// entityPrefix reports whether s could be the start of one of
// entityBracket's entities, cut short.
func entityPrefix(s string) bool {
	for _, e := range []string{"&lt;", "&#60;", "&#x3c;", "&#x003c;", "&#0060;"} {
		if len(s) < len(e) && strings.EqualFold(s, e[:len(s)]) {
			return true
		}
	}
	return false
}

// tagSkeleton spells s as a reader of a tag name sees it: compatibility
// forms undone and accents dropped (NFKD), lower case, each lookalike as
// the ASCII letter it passes for, and the letters that pass for each
// other as one (i, l, 1, I, '|' and '!' as l; 0 as o; 5 as s).
func tagSkeleton(s string) string {
	var out []rune
	for _, r := range s {
		out = appendSkeleton(out, r)
	}
	return string(out)
}

// appendSkeleton appends r as tagSkeleton spells it.
func appendSkeleton(dst []rune, r rune) []rune {
	if r < utf8.RuneSelf {
		return append(dst, foldLetter(r))
	}
	for _, d := range norm.NFKD.String(string(r)) {
		if !unicode.Is(unicode.Mn, d) {
			dst = append(dst, foldLetter(d))
		}
	}
	return dst
}

// foldLetter is one character of tagSkeleton's, accents already dropped.
func foldLetter(r rune) rune {
	if a, ok := lookalikes[r]; ok {
		r = a
	}
	r = unicode.ToLower(r)
	if a, ok := lookalikes[r]; ok {
		r = a
	}
	switch r {
	case 'i', '1', '|', '!':
		return 'l'
	case '0':
		return 'o'
	case '5':
		return 's'
	}
	return r
}

// lookalikes are letters of other scripts that pass for the Latin letters
// of moat's tag names (after lower-casing; from Unicode's confusables).
var lookalikes = map[rune]rune{
	// Cyrillic
	'а': 'a', 'ь': 'b', 'в': 'b', 'ԁ': 'd', 'е': 'e', 'ё': 'e', 'і': 'i', 'ї': 'i', 'ӏ': 'l',
	'о': 'o', 'р': 'p', 'ѕ': 's', 'т': 't', 'у': 'y', 'х': 'x', 'п': 'n', 'и': 'u', 'ц': 'u', 'ѵ': 'v',
	'ԛ': 'q', 'ԝ': 'w', 'һ': 'h', 'ј': 'j', 'ҽ': 'e', 'ɩ': 'i',
	// Greek
	'α': 'a', 'β': 'b', 'δ': 'd', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p',
	'σ': 'o', 'τ': 't', 'υ': 'u', 'χ': 'x', 'η': 'n', 'ϲ': 'c', 'ϳ': 'j',
	// Latin extensions and IPA
	'ı': 'i', 'ɑ': 'a', 'ƅ': 'b', 'ɗ': 'd', 'ȷ': 'j', 'ʋ': 'u', 'ᴠ': 'v', 'ꭵ': 'i', 'ɪ': 'i',
	'ʟ': 'l', 'ᴏ': 'o', 'ᴘ': 'p', 'ꜱ': 's', 'ᴛ': 't', 'ᴜ': 'u', 'ᴅ': 'd', 'ʀ': 'r', 'ᴇ': 'e',
	'ɴ': 'n', 'ʙ': 'b', 'ᴀ': 'a', 'ⅼ': 'l', 'ⅰ': 'i', 'ⅴ': 'v', 'ⅾ': 'd',
	// Armenian and Cherokee that read as Latin
	'օ': 'o', 'ս': 'u', 'ո': 'n', 'ր': 'n', 'Ꭰ': 'd', 'Ꭼ': 'e', 'Ꭲ': 't', 'Ꮪ': 's', 'Ꮲ': 'p',
}

// Annotate renders violations as the block appended to a command's stderr.
// It returns "" when there are none.
func Annotate(vs []Violation) string {
	if len(vs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<sandbox_violations>\n")
	for _, v := range vs {
		b.WriteString(v.Line())
		b.WriteByte('\n')
	}
	b.WriteString("</sandbox_violations>\n")
	return b.String()
}

// groupAt is how many refused paths of one kind, op and rule under one
// directory make a group in Summarize.
const groupAt = 4

// Summarize turns a command's violations into the report a user can act
// on. The refusals themselves are unchanged; only the report is:
//
//   - Refused paths of the same kind, op and rule that share a directory
//     are one line with a count when there are groupAt or more of them: a
//     build writing its cache gives "deny file-write ~/.cache/go-build/...
//     (43 paths)", not 43 lines. Directories that hold few refusals each
//     are merged into their parent while that makes a group (a cache's
//     00/ .. ff/ fan-out).
//   - A refused socket(AF_UNIX) names no target: when the command
//     succeeded anyway (succeeded), it was a probe (the C library looking
//     for nscd, from id, ls -l, git...) and is left out. When the command
//     failed it is kept: a client that needed a unix socket is what
//     network.allowUnixSockets is for.
//   - A refused write of the go command's telemetry counters
//     (~/.config/go, ~/.config/go/telemetry/...: every go command tries)
//     is left out when the command succeeded: the build did not need it.
//
// The order is that of each line's first refusal.
func Summarize(vs []Violation, succeeded bool) []Violation {
	type groupKey struct {
		kind     ViolationKind
		op, rule string
		dir      string
	}
	var kept []Violation
	paths := map[groupKey][]int{} // by parent directory: indexes into vs
	for i, v := range vs {
		if succeeded && (v.isUnixProbe() || v.isGoTelemetry()) {
			continue
		}
		if v.Kind == FileViolation && strings.HasPrefix(v.Target, "/") && v.Count <= 1 {
			k := groupKey{v.Kind, v.Op, v.Rule, path.Dir(v.Target)}
			paths[k] = append(paths[k], i)
		}
	}
	// Merge small directories into their parent while the parent then
	// holds a group; a few rounds cover a two-level fan-out.
	for round := 0; round < 3; round++ {
		byParent := map[groupKey][]groupKey{}
		for k, idx := range paths {
			if len(idx) >= groupAt || k.dir == "/" {
				continue
			}
			p := k
			p.dir = path.Dir(k.dir)
			byParent[p] = append(byParent[p], k)
		}
		merged := false
		for p, children := range byParent {
			n := len(paths[p])
			for _, c := range children {
				n += len(paths[c])
			}
			if len(children) < 2 || n < groupAt {
				continue
			}
			for _, c := range children {
				paths[p] = append(paths[p], paths[c]...)
				delete(paths, c)
			}
			merged = true
		}
		if !merged {
			break
		}
	}
	group := map[int]Violation{} // first index of a group -> its line
	skip := map[int]bool{}
	for k, idx := range paths {
		if len(idx) < groupAt {
			continue
		}
		sort.Ints(idx)
		line := vs[idx[0]]
		line.Target, line.Count = k.dir, len(idx)
		group[idx[0]] = line
		for _, i := range idx[1:] {
			skip[i] = true
		}
	}
	for i, v := range vs {
		if skip[i] || (succeeded && (v.isUnixProbe() || v.isGoTelemetry())) {
			continue
		}
		if g, ok := group[i]; ok {
			v = g
		}
		kept = append(kept, v)
	}
	return kept
}

// isGoTelemetry: a refused write of the go command's telemetry directory
// (os.UserConfigDir()/go/telemetry, made on every go command).
func (v Violation) isGoTelemetry() bool {
	if v.Kind != FileViolation || v.Op != "write" {
		return false
	}
	t := v.Target
	return strings.HasSuffix(t, "/.config/go") || strings.HasSuffix(t, "/.config/go/telemetry") || strings.Contains(t, "/.config/go/telemetry/")
}

// isUnixProbe: a refused socket(AF_UNIX), which names no target.
func (v Violation) isUnixProbe() bool {
	return v.Kind == NetworkViolation && v.Op == "unix-socket" && v.Target == "socket(AF_UNIX)"
}

// Reported is what a run's report shows of vs: the policy's
// ignoreViolations drop the lines they name, for the commands they name
// ("*": every command; otherwise a substring of the command line argv).
func (p *Policy) Reported(argv []string, vs []Violation) []Violation {
	if len(p.IgnoreViolations) == 0 {
		return vs
	}
	cmdline := strings.Join(argv, " ")
	var keep []Violation
	for _, v := range vs {
		line := v.Line()
		drop := false
		for pat, subs := range p.IgnoreViolations {
			if pat != "*" && !strings.Contains(cmdline, pat) {
				continue
			}
			for _, s := range subs {
				if strings.Contains(line, s) {
					drop = true
				}
			}
		}
		if !drop {
			keep = append(keep, v)
		}
	}
	return keep
}
