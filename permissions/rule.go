package permissions

import (
	"fmt"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// RuleKind says how a Bash rule matches a command.
type RuleKind uint8

const (
	// RuleAny is "Bash" or "Bash(*)": every command.
	RuleAny RuleKind = iota
	// RuleExact is "Bash(git status)": exactly that argument vector.
	RuleExact
	// RulePrefix is "Bash(npm run:*)": those words, then anything.
	RulePrefix
	// RuleWildcard is "Bash(git * --force)": '*' matches any characters.
	RuleWildcard
	// RuleOtherTool is a rule for another tool (Read, Edit, WebFetch, an
	// MCP tool, ...). It never matches a command.
	RuleOtherTool
)

func (k RuleKind) String() string {
	switch k {
	case RuleAny:
		return "any"
	case RuleExact:
		return "exact"
	case RulePrefix:
		return "prefix"
	case RuleWildcard:
		return "wildcard"
	}
	return "other-tool"
}

// Rule is one compiled permission rule.
type Rule struct {
	// Text is the rule as written, e.g. "Bash(npm run:*)".
	Text string
	// Source names where it came from (a settings file and field), if known.
	Source string
	// Tool is the tool name, e.g. "Bash" or "Read".
	Tool string
	Kind RuleKind

	words   []string  // RuleExact, RulePrefix: the words to compare
	pattern []globSeg // RuleWildcard: matched against the canonical command
	// optTail: the pattern ends in " *", which also matches nothing at all
	// ("Bash(ls *)" matches "ls").
	optTail []globSeg
	// first: the command name a wildcard rule starts with, when it is a
	// plain word ("git" for "git * --force"); a quick reject.
	first string
}

func (r *Rule) String() string { return r.Text }

// ParseRule compiles one rule string in the settings syntax. Rules for other
// tools are accepted (Kind RuleOtherTool) when well formed; malformed rules of
// any tool are errors.
func ParseRule(s string) (*Rule, error) {
	if s == "" || strings.TrimSpace(s) != s {
		return nil, fmt.Errorf("rule %q: empty or surrounded by spaces", s)
	}
	tool, content, hasContent := s, "", false
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return nil, fmt.Errorf("rule %q: missing closing parenthesis (want Tool(content), e.g. Bash(npm run:*))", s)
		}
		tool, content, hasContent = s[:i], s[i+1:len(s)-1], true
	} else if strings.IndexByte(s, ')') >= 0 {
		return nil, fmt.Errorf("rule %q: unbalanced parenthesis", s)
	}
	if !validToolName(tool) {
		return nil, fmt.Errorf("rule %q: %q is not a tool name (want Tool or Tool(content), e.g. Bash(npm run:*))", s, tool)
	}
	if strings.EqualFold(tool, "bash") && tool != "Bash" {
		// A misspelt tool name would silently turn a deny rule into a
		// rule for no tool at all.
		return nil, fmt.Errorf("rule %q: tool names are case-sensitive; did you mean Bash(...)?", s)
	}
	if hasContent && strings.TrimSpace(content) == "" {
		return nil, fmt.Errorf("rule %q: empty parentheses", s)
	}
	if !balanced(content) {
		return nil, fmt.Errorf("rule %q: unbalanced parentheses in the content", s)
	}
	r := &Rule{Text: s, Tool: tool, Kind: RuleOtherTool}
	if tool != "Bash" {
		return r, nil
	}
	if err := r.compileBash(strings.TrimSpace(content)); err != nil {
		return nil, fmt.Errorf("rule %q: %v", s, err)
	}
	return r, nil
}

func validToolName(t string) bool {
	if t == "" || !('A' <= t[0] && t[0] <= 'Z' || 'a' <= t[0] && t[0] <= 'z') {
		return false
	}
	for i := 1; i < len(t); i++ {
		c := t[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// balanced reports whether the parentheses in s balance, outside quotes
// and backslash escapes.
func balanced(s string) bool {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '\\':
			i++
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

func (r *Rule) compileBash(content string) error {
	if content == "" || content == "*" || content == ":*" {
		if content == ":*" {
			return fmt.Errorf("\":*\" needs a command before it, e.g. Bash(npm run:*)")
		}
		r.Kind = RuleAny
		return nil
	}
	if strings.HasSuffix(content, ":*") && !strings.HasSuffix(content, `\:*`) {
		prefix := strings.TrimSpace(content[:len(content)-2])
		toks, err := tokenizeRule(prefix)
		if err != nil {
			return err
		}
		if len(toks) == 0 {
			return fmt.Errorf("\":*\" needs a command before it, e.g. Bash(npm run:*)")
		}
		for _, t := range toks {
			w, ok := t.literal()
			if !ok {
				return fmt.Errorf("a prefix rule (\":*\") cannot hold another wildcard; use Bash(%s) instead", content[:len(content)-2]+" *")
			}
			r.words = append(r.words, w)
		}
		r.Kind = RulePrefix
		return nil
	}
	if strings.Contains(content, ":*") {
		return fmt.Errorf("\":*\" is only allowed at the end of a rule")
	}
	toks, err := tokenizeRule(content)
	if err != nil {
		return err
	}
	if len(toks) == 0 {
		return fmt.Errorf("empty rule")
	}
	wild := false
	for _, t := range toks {
		if _, ok := t.literal(); !ok {
			wild = true
		}
	}
	if !wild {
		for _, t := range toks {
			w, _ := t.literal()
			r.words = append(r.words, w)
		}
		r.Kind = RuleExact
		return nil
	}
	if len(toks) == 1 && toks[0].loneStar() {
		r.Kind = RuleAny
		return nil
	}
	r.Kind = RuleWildcard
	r.pattern = compilePattern(toks)
	if w, ok := toks[0].literal(); ok && len(toks) > 1 && quoteWord(w) == w {
		r.first = w
	}
	if n := len(toks); n > 1 && toks[n-1].loneStar() {
		r.optTail = compilePattern(toks[:n-1])
	}
	return nil
}

// compilePattern turns tokens into glob segments over the canonical
// rendering of a command (see joinArgv). A token without wildcards is
// rendered with the same quoting as an argument; literal text inside a token
// with wildcards is compared as written.
func compilePattern(toks []ruleToken) []globSeg {
	var segs []globSeg
	add := func(g globSeg) {
		n := len(segs)
		switch {
		case g.star && n > 0 && segs[n-1].star:
		case !g.star && n > 0 && !segs[n-1].star:
			segs[n-1].lit += g.lit
		case !g.star && g.lit == "":
		default:
			segs = append(segs, g)
		}
	}
	for i, t := range toks {
		if i > 0 {
			add(globSeg{lit: " "})
		}
		if w, ok := t.literal(); ok {
			add(globSeg{lit: quoteWord(w)})
			continue
		}
		for _, p := range t {
			if p.star {
				add(globSeg{star: true})
			} else {
				add(globSeg{lit: p.text})
			}
		}
	}
	return segs
}

// matchArgv reports whether the rule matches an argument vector exactly as
// it is (the narrow match used for allow rules).
func (r *Rule) matchArgv(argv []string) bool {
	return r.matchCand(&cand{argv: argv}, false)
}

// matchBroad is the wide match used for deny and ask rules: the narrow
// match, plus flags (and one value after each) skipped between the words of
// exact and prefix rules ("git -C x push" meets "git push:*"), plus wildcard
// patterns tried against the plain space-joined words as well.
func (r *Rule) matchBroad(argv []string) bool {
	return r.matchCand(&cand{argv: argv}, true)
}

// cand is an argument vector with its renderings, computed once for all
// the rules it is matched against.
type cand struct {
	argv         []string
	canon, plain string
	haveCanon    bool
	havePlain    bool
}

func (c *cand) canonical() string {
	if !c.haveCanon {
		c.canon, c.haveCanon = joinArgv(c.argv), true
	}
	return c.canon
}

func (c *cand) spaced() string {
	if !c.havePlain {
		c.plain, c.havePlain = strings.Join(c.argv, " "), true
	}
	return c.plain
}

func (r *Rule) matchCand(c *cand, broad bool) bool {
	argv := c.argv
	switch r.Kind {
	case RuleAny:
		return len(argv) > 0
	case RuleExact, RulePrefix:
		if len(argv) == 0 || argv[0] != r.words[0] {
			return false
		}
		if r.Kind == RuleExact && equalWords(argv, r.words) ||
			r.Kind == RulePrefix && len(argv) >= len(r.words) && equalWords(argv[:len(r.words)], r.words) {
			return true
		}
		return broad && len(r.words) > 1 && matchSkippingFlags(argv, r.words, r.Kind == RulePrefix)
	case RuleWildcard:
		if r.first != "" && (len(argv) == 0 || argv[0] != r.first) {
			return false
		}
		if r.globAny(c.canonical()) {
			return true
		}
		return broad && r.globAny(c.spaced())
	}
	return false
}

func (r *Rule) globAny(s string) bool {
	return globMatch(r.pattern, s) || (r.optTail != nil && globMatch(r.optTail, s))
}

// matchSkippingFlags matches words against argv, where argv may hold extra
// option words (starting with '-', each maybe followed by one value) between
// the matched words. The first word must match argv[0]. It is a dynamic
// programme over (position in argv, position in words): O(len(argv)*len(words)).
func matchSkippingFlags(argv, words []string, prefix bool) bool {
	if len(argv) == 0 || argv[0] != words[0] {
		return false
	}
	n, m := len(argv), len(words)
	isFlag := func(s string) bool { return len(s) > 1 && s[0] == '-' && s != "--" }
	// seen[ai*(m+1)+wi]: state reached
	seen := make([]bool, (n+1)*(m+1))
	stack := []int{1*(m+1) + 1}
	seen[stack[0]] = true
	push := func(ai, wi int) {
		if ai > n {
			return
		}
		k := ai*(m+1) + wi
		if !seen[k] {
			seen[k] = true
			stack = append(stack, k)
		}
	}
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ai, wi := k/(m+1), k%(m+1)
		if wi == m {
			if prefix || ai == n {
				return true
			}
			continue
		}
		if ai == n {
			continue
		}
		if argv[ai] == words[wi] {
			push(ai+1, wi+1)
		}
		if isFlag(argv[ai]) {
			push(ai+1, wi)
			if ai+1 < n && !isFlag(argv[ai+1]) {
				push(ai+2, wi)
			}
		}
	}
	return false
}

func equalWords(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ruleSet is the compiled allow, ask and deny lists.
type ruleSet struct {
	allow, ask, deny []*Rule // Bash rules only
}

// Kind of list a rule is in.
const (
	listAllow = "allow"
	listAsk   = "ask"
	listDeny  = "deny"
)

func (rs *ruleSet) add(list string, pr policy.Rule) error {
	r, err := ParseRule(pr.Rule)
	if err != nil {
		if pr.Source != "" {
			return fmt.Errorf("%s: %w", pr.Source, err)
		}
		return err
	}
	r.Source = pr.Source
	if r.Kind == RuleOtherTool {
		return nil // it feeds the sandbox (runtime/settings), not commands
	}
	switch list {
	case listAllow:
		rs.allow = append(rs.allow, r)
	case listAsk:
		rs.ask = append(rs.ask, r)
	case listDeny:
		rs.deny = append(rs.deny, r)
	default:
		return fmt.Errorf("unknown rule list %q", list)
	}
	return nil
}

// ParseRuleLine reads one rule of a request's "rules" list: "deny: R" and
// "ask: R" put R in that list, "allow: R" or a bare R in the allow list.
func ParseRuleLine(s string) (list string, rule string) {
	for _, l := range []string{listDeny, listAsk, listAllow} {
		if rest, ok := strings.CutPrefix(s, l+":"); ok {
			return l, strings.TrimSpace(rest)
		}
	}
	return listAllow, s
}
