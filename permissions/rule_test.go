package permissions

import (
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		rule string
		kind RuleKind
		err  string // substring of the error; "" for none
	}{
		{"Bash", RuleAny, ""},
		{"Bash(*)", RuleAny, ""},
		{"Bash(git status)", RuleExact, ""},
		{"Bash(npm run:*)", RulePrefix, ""},
		{"Bash(npm run test:*)", RulePrefix, ""},
		{"Bash(git * --force)", RuleWildcard, ""},
		{"Bash(ls *)", RuleWildcard, ""},
		{"Bash(echo \"a b\")", RuleExact, ""},
		{"Bash(echo '(x)')", RuleExact, ""},
		{"Bash(echo ')')", RuleExact, ""},
		{"Bash(echo \\*)", RuleExact, ""},
		{"Read(./src/**)", RuleOtherTool, ""},
		{"Edit(//tmp/x)", RuleOtherTool, ""},
		{"WebFetch(domain:example.com)", RuleOtherTool, ""},
		{"mcp__github__create_issue", RuleOtherTool, ""},
		{"Read(./a(1).txt)", RuleOtherTool, ""},

		{"", 0, "empty"},
		{" Bash(ls)", 0, "spaces"},
		{"Bash(ls", 0, "closing parenthesis"},
		{"Bash ls)", 0, "unbalanced"},
		{"Bash()", 0, "empty parentheses"},
		{"Bash(  )", 0, "empty parentheses"},
		{"bash(ls)", 0, "case-sensitive"},
		{"BASH(rm:*)", 0, "case-sensitive"},
		{"Bash(:*)", 0, "needs a command"},
		{"Bash(npm:* run)", 0, "only allowed at the end"},
		{"Bash(git *:*)", 0, "cannot hold another wildcard"},
		{"Bash(echo 'x)", 0, "unterminated"},
		{"Bash(echo (x)", 0, "unbalanced"},
		{"Bash(echo ((x))", 0, "unbalanced"},
		{"1Bash(x)", 0, "not a tool name"},
		{"Ba sh(x)", 0, "not a tool name"},
		{"Read(x))", 0, "unbalanced"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			r, err := ParseRule(tc.rule)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseRule(%q) = %v, %v; want error containing %q", tc.rule, r, err, tc.err)
				}
				if !strings.Contains(err.Error(), tc.rule) && tc.rule != "" {
					t.Errorf("error %q does not name the rule", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRule(%q): %v", tc.rule, err)
			}
			if r.Kind != tc.kind {
				t.Errorf("ParseRule(%q).Kind = %v, want %v", tc.rule, r.Kind, tc.kind)
			}
		})
	}
}

func TestRuleMatch(t *testing.T) {
	type m struct {
		argv  string // space-separated words; '_' stands for a space inside a word
		allow bool   // narrow (allow rules)
		broad bool   // broad (deny and ask rules)
	}
	words := func(s string) []string {
		f := strings.Fields(s)
		for i := range f {
			f[i] = strings.ReplaceAll(f[i], "_", " ")
		}
		return f
	}
	for _, tc := range []struct {
		rule string
		ms   []m
	}{
		{"Bash(git status)", []m{
			{"git status", true, true},
			{"git status -s", false, false},
			{"git", false, false},
			{"git statuses", false, false},
		}},
		{"Bash(npm run:*)", []m{
			{"npm run", true, true},
			{"npm run build", true, true},
			{"npm run build --watch", true, true},
			{"npm runx", false, false},
			{"npm install", false, false},
			{"npm --prefix x run build", false, true},
			{"npx run", false, false},
		}},
		{"Bash(git push:*)", []m{
			{"git push", true, true},
			{"git push origin main --force", true, true},
			{"git -C /x push", false, true},
			{"git -c a=b --no-pager push", false, true},
			{"git log push", false, false},
			{"git pushx", false, false},
		}},
		{"Bash(git * --force)", []m{
			{"git push --force", true, true},
			{"git push origin main --force", true, true},
			{"git push --force-with-lease", false, false},
			{"git push --force_x", false, false}, // "--force x" is one word: quoted in the canonical form
			{"git --force", false, false},
		}},
		{"Bash(ls *)", []m{
			{"ls", true, true},
			{"ls -la", true, true},
			{"lsx", false, false},
		}},
		{"Bash(npm run test*)", []m{
			{"npm run test", true, true},
			{"npm run test:unit", true, true},
			{"npm run build", false, false},
		}},
		{"Bash(echo \"a b\")", []m{
			{"echo a_b", true, true},
			{"echo a b", false, false},
		}},
		{"Bash(echo \\*)", []m{
			{"echo *", true, true},
			{"echo x", false, false},
		}},
		{"Bash", []m{
			{"anything at all", true, true},
		}},
	} {
		r, err := ParseRule(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range tc.ms {
			argv := words(c.argv)
			if got := r.matchArgv(argv); got != c.allow {
				t.Errorf("%s matchArgv(%q) = %v, want %v", tc.rule, argv, got, c.allow)
			}
			if got := r.matchBroad(argv); got != c.broad {
				t.Errorf("%s matchBroad(%q) = %v, want %v", tc.rule, argv, got, c.broad)
			}
		}
	}
}

func TestQuoteWordRoundTrip(t *testing.T) {
	for _, w := range []string{"", "a", "a b", "it's", "*", "$HOME", "a'b'c", "--x=y", "\n", "(", "é"} {
		toks, err := tokenizeRule(quoteWord(w))
		if err != nil || len(toks) != 1 {
			t.Fatalf("quoteWord(%q) = %q does not tokenize to one word: %v %v", w, quoteWord(w), toks, err)
		}
		if got, ok := toks[0].literal(); !ok || got != w {
			t.Errorf("round trip of %q gave %q (literal %v)", w, got, ok)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	seg := func(p string) []globSeg {
		var out []globSeg
		for i, s := range strings.Split(p, "*") {
			if i > 0 {
				out = append(out, globSeg{star: true})
			}
			if s != "" {
				out = append(out, globSeg{lit: s})
			}
		}
		return out
	}
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"a*", "abc", true}, {"*c", "abc", true}, {"a*c", "ac", true}, {"a*c", "ab", false},
		{"ab*ba", "aba", false}, {"ab*ba", "abba", true}, {"*", "", true}, {"a*b*c", "aXbYc", true},
		{"a*b*c", "aXcYb", false}, {"abc", "abc", true}, {"abc", "abcd", false}, {"*x*", "yyy", false},
	} {
		if got := globMatch(seg(tc.pat), tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
}

func TestParseRuleLine(t *testing.T) {
	for _, tc := range []struct{ in, list, rule string }{
		{"Bash(ls)", listAllow, "Bash(ls)"},
		{"deny: Bash(rm:*)", listDeny, "Bash(rm:*)"},
		{"ask:Bash(git push:*)", listAsk, "Bash(git push:*)"},
		{"allow: Bash(x)", listAllow, "Bash(x)"},
	} {
		l, r := ParseRuleLine(tc.in)
		if l != tc.list || r != tc.rule {
			t.Errorf("ParseRuleLine(%q) = %q, %q; want %q, %q", tc.in, l, r, tc.list, tc.rule)
		}
	}
}
