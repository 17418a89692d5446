package permissions

import (
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/shellword"
	"github.com/moat-sandbox/moat/validators"
	"mvdan.cc/sh/v3/syntax"
)

// agreementWords are words the two readers once read differently, and
// words near them.
var agreementWords = []string{
	`plain`, `'single'`, `"double"`, `"a\"b\$c\\d\x"`, `a\ b`, `a\\b`, `\*`, `a*`, `"*"`, `'*'`,
	`a[b]`, `[`, `]`, `a[`, `\[a]`, `"[a]"`, `~`, `~/x`, `x=~/a`, `a:~`, `"~"`, `\~`, `a~`,
	`{a,b}`, `"{a,b}"`, `\{a,b\}`, `{a}`, `HEAD@{1}`, `{1..3}`, `x{,.bak}`, `$'a\nb'`, `$'\x2d'rf`,
	`$"x"`, `$x`, `"$x"`, `${x}`, `${x:-y}`, `$(id)`, "`id`", `"$(id)"`, `$((1))`, `$[1]`, `<(x)`,
	`a\`, `--flag=*.go`, `-'-'rf`, `'a'\''b'`, `""`, `''`, `a""b`, `"a b"c`, `@(x)`, `a$`, `"$"`,
	"\"$(cat <<'EOF'\nmsg\n\nmore\nEOF\n)\"", "\"$(cat <<EOF\nx\nEOF\n)\"", "\"a\\\nb\"", "a\\\nb",
}

// TestOneWordEvaluator feeds the same words to the validators' parse and to
// the permission rules' extraction: they must agree on whether each word is
// static and on its value.
func TestOneWordEvaluator(t *testing.T) {
	cmds := loadCorpus(t)
	for _, w := range agreementWords {
		cmds = append(cmds, "echo "+w, w+" x", "x "+w+" y")
	}
	compared := 0
	for _, cmd := range cmds {
		pr := validators.ParseForSecurity(cmd)
		if pr.Kind != validators.Simple {
			continue
		}
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
		if err != nil {
			t.Fatalf("%q: Simple for the validators, does not parse: %v", cmd, err)
		}
		var calls [][]*syntax.Word
		syntax.Walk(f, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.CallExpr:
				if len(n.Args) > 0 {
					calls = append(calls, n.Args)
				}
			case *syntax.DeclClause:
				calls = append(calls, nil) // compared by the validators only
			}
			return true
		})
		var sc []validators.SimpleCommand
		for _, c := range pr.Commands {
			if len(c.Args) > 0 {
				sc = append(sc, c)
			}
		}
		if len(calls) != len(sc) {
			continue // here-document idioms hold commands of their own
		}
		x := extraction{ev: shellword.Evaluator{Subst: validators.HeredocSubst(cmd)}}
		for i, args := range calls {
			if args == nil || sc[i].Decl || len(args) != len(sc[i].Args) {
				continue
			}
			for j, w := range args {
				v, static := x.wordValue(w)
				vw := sc[i].Args[j]
				compared++
				if static != vw.Static || (static && v != vw.Value) {
					t.Errorf("%q word %q: permissions read (%q, static %v), validators (%q, static %v)",
						cmd, vw.Raw, v, static, vw.Value, vw.Static)
				}
			}
		}
	}
	if compared < 5000 {
		t.Errorf("only %d words compared", compared)
	}
	t.Logf("%d words compared", compared)
}
