package validators

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func TestParseKinds(t *testing.T) {
	tests := []struct {
		cmd  string
		kind ParseKind
	}{
		{"", Simple},
		{"ls", Simple},
		{"a && b || c; d & e | f |& g", Simple},
		{"! a | b", Simple},
		{"time a | b", Simple},
		{"export A=1 B", Simple},
		{"x=1", Simple},
		{"a > f 2>&1 < g", Simple},
		{"a $(b)", Simple}, // a word-level substitution: the validators ask
		{"(a)", TooComplex},
		{"{ a; }", TooComplex},
		{"if a; then b; fi", TooComplex},
		{"for i in 1; do a; done", TooComplex},
		{"while a; do b; done", TooComplex},
		{"case x in y) a;; esac", TooComplex},
		{"f() { a; }", TooComplex},
		{"((x++))", TooComplex},
		{"[[ -f x ]]", TooComplex},
		{"let x=1", TooComplex},
		{"coproc a", TooComplex},
		{"a=(1 2)", TooComplex},
		{"a+=1", TooComplex},
		{"a[0]=1 b", Unavailable},
		// '$' then backslash-newline: bash joins the lines ("$(id)")
		{"echo \"$\\\n(id)\"", Unavailable},
		{"echo \"a$\\\n\\\n(id)\"", Unavailable},
		{"echo $\\\n{x}", Unavailable},
		{"echo \\$\\\nx", Simple},    // an escaped '$' is literal
		{"echo '$\\\n(id)'", Simple}, // single quotes keep both
		{"a 3<>{fd}", Simple},
		{"a {fd}>x", TooComplex},
		{"a <<$x\nb\n$x\n", Unavailable},
		{"echo @(x)", TooComplex},
		{"a | time b", TooComplex},
		{strings.Repeat("a;", MaxSubcommands), Simple},
		{strings.Repeat("a;", MaxSubcommands+1), TooComplex},
		{strings.Repeat("(", MaxNesting+1) + "a" + strings.Repeat(")", MaxNesting+1), TooComplex},
		{"echo " + strings.Repeat("x", MaxCommandBytes), TooComplex},
		{"a &&", Unavailable},
		{"echo 'unclosed", Unavailable},
		{"a\x00b", Unavailable},
		{"a\r\nb", Unavailable},
		{"a \xff", Unavailable},
		{"a # b \\\nc", Unavailable},
		{"a <<'E'#x\nE#x\n", Unavailable},
		{"a 1>0>00", Unavailable},
		{"a >2<x", Unavailable},
		{"a >x2>y", Simple},
		{"a \"$(cat <<'E'\nE)\"\nE\n)\"", Unavailable},
	}
	for _, tc := range tests {
		if got := ParseForSecurity(tc.cmd); got.Kind != tc.kind {
			t.Errorf("ParseForSecurity(%q).Kind = %s (%s); want %s", trunc(tc.cmd), got.Kind, got.Reason, tc.kind)
		} else if got.Kind != Simple && got.Reason == "" {
			t.Errorf("ParseForSecurity(%q): %s without a reason", trunc(tc.cmd), got.Kind)
		}
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

func TestParseCommands(t *testing.T) {
	type cmd struct {
		argv   []string
		op     string
		static bool
	}
	c := func(op string, static bool, argv ...string) cmd { return cmd{argv, op, static} }
	tests := []struct {
		src  string
		want []cmd
	}{
		{"ls -la", []cmd{c("", true, "ls", "-la")}},
		{"a && b || c", []cmd{c("&&", true, "a"), c("||", true, "b"), c("", true, "c")}},
		{"a | b |& c", []cmd{c("|", true, "a"), c("|&", true, "b"), c("", true, "c")}},
		{"a; b & c\nd", []cmd{c(";", true, "a"), c("&", true, "b"), c(";", true, "c"), c("", true, "d")}},
		{`a 'b c' "d\"e" f\ g`, []cmd{c("", true, "a", "b c", `d"e`, "f g")}},
		{`a "\$x" '$x' "\\" "\a"`, []cmd{c("", true, "a", "$x", "$x", `\`, `\a`)}},
		{"a b\\\nc", []cmd{c("", true, "a", "bc")}},
		{`a $x`, []cmd{c("", false, "a", "$x")}},
		{`a ~/x`, []cmd{c("", false, "a", "~/x")}},
		{`a HEAD~1 @{u} {} x=y`, []cmd{c("", true, "a", "HEAD~1", "@{u}", "{}", "x=y")}},
		{`a x=~/y`, []cmd{c("", false, "a", "x=~/y")}},
		{`a *.go`, []cmd{c("", false, "a", "*.go")}},
		{`a \*.go`, []cmd{c("", true, "a", "*.go")}},
		{`[ -d x ]`, []cmd{c("", true, "[", "-d", "x", "]")}},
		{`a [x] b[ ]c`, []cmd{c("", false, "a", "[x]", "b[", "]c")}},
		{`a x[ ]`, []cmd{c("", true, "a", "x[", "]")}},
		{`a {x,y}`, []cmd{c("", false, "a", "{x,y}")}},
		{`a $'x'`, []cmd{c("", false, "a", "$'x'")}},
		{"time -p a b", []cmd{c("", true, "a", "b")}},
		{"export A=1 B=$x C", []cmd{c("", false, "export", "A=1", "B=$x", "C")}},
		{"a \"$(cat <<'EOF'\nx\n\nEOF\n)\"", []cmd{c("", true, "a", "x")}},
		{"a \"$(cat <<EOF\nx\nEOF\n)\"", []cmd{c("", false, "a", "\"$(cat <<EOF\nx\nEOF\n)\"")}},
	}
	for _, tc := range tests {
		r := ParseForSecurity(tc.src)
		if r.Kind != Simple {
			t.Errorf("ParseForSecurity(%q) = %s: %s", tc.src, r.Kind, r.Reason)
			continue
		}
		var got []cmd
		for _, sc := range r.Commands {
			got = append(got, cmd{sc.Argv(), sc.Op, sc.Static()})
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("ParseForSecurity(%q):\n got %v\nwant %v", tc.src, got, tc.want)
		}
	}
}

func TestParseDetails(t *testing.T) {
	r := ParseForSecurity("! FOO=1 BAR='x y' a 2>/dev/null <<-'EOF' >out\n\tbody $x\n\tEOF\n")
	if r.Kind != Simple || len(r.Commands) != 1 {
		t.Fatalf("got %+v", r)
	}
	sc := r.Commands[0]
	if !sc.Negated || sc.Decl {
		t.Errorf("Negated/Decl = %v/%v", sc.Negated, sc.Decl)
	}
	if len(sc.Assigns) != 2 || sc.Assigns[1].Name != "BAR" || sc.Assigns[1].Value.Value != "x y" {
		t.Errorf("assigns = %+v", sc.Assigns)
	}
	if len(sc.Redirects) != 3 {
		t.Fatalf("redirects = %+v", sc.Redirects)
	}
	if rd := sc.Redirects[0]; rd.Op != ">" || rd.Fd != "2" || rd.Target.Value != "/dev/null" {
		t.Errorf("redirect 0 = %+v", rd)
	}
	hd := sc.Redirects[1]
	if hd.Op != "<<-" || !hd.HeredocQuoted || hd.Target.Value != "EOF" || !hd.Body.Static || hd.Body.Value != "body $x\n" {
		t.Errorf("heredoc = %+v", hd)
	}
	if !strings.Contains(hd.Heredoc, "body $x") {
		t.Errorf("Heredoc = %q", hd.Heredoc)
	}
	if !sc.Static() {
		t.Errorf("Static() = false")
	}
	// An unquoted body with an expansion makes the command non-static.
	r = ParseForSecurity("cat <<EOF\n$HOME\nEOF\n")
	if r.Commands[0].Static() || r.Commands[0].Redirects[0].Body.Static {
		t.Errorf("unquoted heredoc with an expansion is static")
	}
	r = ParseForSecurity("cat <<< 'a b'")
	if b := r.Commands[0].Redirects[0].Body; !b.Static || b.Value != "a b\n" {
		t.Errorf("here-string body = %+v", b)
	}
	// Over the cap, the commands are kept (TooComplex, never allowed).
	r = ParseForSecurity(strings.Repeat("true && ", MaxSubcommands) + "curl x")
	if r.Kind != TooComplex || len(r.Commands) != MaxSubcommands+1 || r.Commands[MaxSubcommands].Argv()[0] != "curl" {
		t.Errorf("over the cap: kind %s, %d commands", r.Kind, len(r.Commands))
	}
}

func TestViews(t *testing.T) {
	tests := []struct {
		cmd                   string
		base, unq, full, keep string
	}{
		{`FOO=1 git commit -m "a b" 'c d' x`, "git", `FOO=1 git commit -m a b  x`, `FOO=1 git commit -m   x`, `FOO=1 git commit -m "" '' x`},
		{`echo "$(echo 'x')" y`, "echo", `echo $(echo ) y`, `echo $(echo ) y`, `echo "$(echo '')" y`},
		{"cat <<'E'\nbody\nE\n", "cat", "cat <<\nE\n", "cat <<\nE\n", "cat <<''\nE\n"},
		{"cat <<E\n$x\nE\n", "cat", "cat <<E\n$x\nE\n", "cat <<E\nE\n", "cat <<E\nE\n"},
		{`echo $'a' $"b"`, "echo", `echo  b`, `echo  `, `echo $'' $""`},
		{`echo 'unclosed`, "echo", `echo `, `echo `, `echo '`},
		{`if a; then "b"; fi`, "if", `if a; then b; fi`, `if a; then ; fi`, `if a; then ""; fi`},
	}
	for _, tc := range tests {
		v := Analyze(tc.cmd).Views
		want := Views{tc.cmd, tc.base, tc.unq, tc.full, tc.keep}
		if v != want {
			t.Errorf("views of %q:\n got %#v\nwant %#v", tc.cmd, v, want)
		}
	}
}

// allNodeNames is every syntax.Node type of mvdan.cc/sh/v3 (the list its
// own tests keep). The walker must know each one.
var allNodeNames = []string{
	"ArithmCmd", "ArithmExp", "ArrayElem", "ArrayExpr", "Assign",
	"BinaryArithm", "BinaryCmd", "BinaryTest", "Block", "BraceExp",
	"CStyleLoop", "CallExpr", "CaseClause", "CaseItem", "CmdSubst", "Comment",
	"CoprocClause", "DblQuoted", "DeclClause", "ExtGlob", "File", "FlagsArithm",
	"ForClause", "FuncDecl", "IfClause", "LetClause", "Lit", "ParamExp",
	"ParenArithm", "ParenTest", "ProcSubst", "Redirect", "SglQuoted", "Stmt",
	"Subshell", "TestClause", "TestDecl", "TimeClause", "UnaryArithm",
	"UnaryTest", "WhileClause", "Word", "WordIter",
}

// TestWalkerHandlesEveryNode parses bash that holds every node type the
// parser produces and checks the walker met each one; then feeds the
// walker each type it must refuse, and an unknown type.
func TestWalkerHandlesEveryNode(t *testing.T) {
	src := `foo=bar qux >redir <<EOF
hdoc $x
EOF
baz=(one [two]=three)
! foo | bar || baz & 'sgl' "dbl" ${foo:-x} $(cmd) $((1 + -2)) $(( ($x) )) <(proc) {a,b}
if foo; then bar; else baz; fi
for i in x; do foo; done
for ((i = 0; i < 3; i++)); do foo; done
while foo; do bar; done
case i in foo) bar ;; esac
{ foo; }
(foo)
foo() { bar; }
declare -A foo
let x=1
time foo
coproc foo
((2))
[[ ! (foo && -n bar) ]]
# comment
`
	f, err := syntax.NewParser(syntax.KeepComments(true)).Parse(strings.NewReader(src), "")
	if err != nil {
		t.Fatal(err)
	}
	p := newParsed(src)
	p.file = f
	c := collector{p: p, track: true}
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			return true
		}
		if err := c.visit(n); err != nil {
			t.Errorf("visit(%s): %v", nodeName(n), err)
		}
		return true
	})
	refused := map[string]syntax.Node{
		"ExtGlob":     &syntax.ExtGlob{Pattern: &syntax.Lit{Value: "x"}},
		"FlagsArithm": &syntax.FlagsArithm{},
		"TestDecl":    &syntax.TestDecl{},
	}
	for name, n := range refused {
		if err := c.visit(n); err == nil {
			t.Errorf("visit(%s) accepted a node bash does not parse the same way", name)
		}
		c.p.facts.seen[name]++
	}
	c.p.facts.seen["BraceExp"]++ // never produced by the parser; accepted
	if err := c.visit(&syntax.BraceExp{}); err != nil {
		t.Errorf("visit(BraceExp): %v", err)
	}
	var missing []string
	for _, n := range allNodeNames {
		if c.p.facts.seen[n] == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("node types never met by the walker: %v", missing)
	}
	for n := range c.p.facts.seen {
		if !slices.Contains(allNodeNames, n) {
			t.Errorf("walker met %s, which allNodeNames lacks: update the list", n)
		}
	}
	// Fail closed on a type the walker does not know.
	if err := c.visit(unknownNode{}); err == nil {
		t.Errorf("visit(unknown node) succeeded; want an error (TooComplex)")
	}
}

type unknownNode struct{}

func (unknownNode) Pos() syntax.Pos { return syntax.Pos{} }
func (unknownNode) End() syntax.Pos { return syntax.Pos{} }

// TestHostileInputsReturn feeds inputs built to make a parser or a
// validator blow up (deep nesting, huge heredocs, many quotes, long
// chains) and checks each is decided, and is not allowed. Timing belongs
// to the benchmarks; this bounds the work by construction.
func TestHostileInputsReturn(t *testing.T) {
	for name, cmd := range hostileInputs() {
		res := Analyze(cmd)
		if res.Decision.Verdict == 1 /* Allow */ {
			t.Errorf("%s: allowed", name)
		}
		if res.Views.Original != cmd {
			t.Errorf("%s: views not computed", name)
		}
	}
}

func hostileInputs() map[string]string {
	return map[string]string{
		"deep parens":        strings.Repeat("(", 5000) + "a" + strings.Repeat(")", 5000),
		"deep arithmetic":    "echo $((" + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000) + "))",
		"deep substitution":  "echo " + strings.Repeat("$(", 3000) + strings.Repeat(")", 3000),
		"deep quotes":        "echo " + strings.Repeat(`"$(`, 2000) + strings.Repeat(`)"`, 2000),
		"deep if":            strings.Repeat("if a; then ", 3000) + "b" + strings.Repeat("; fi", 3000),
		"deep brace groups":  strings.Repeat("{ ", 3000) + "a;" + strings.Repeat(" };", 3000),
		"deep param":         "echo " + strings.Repeat("${a:-", 3000) + strings.Repeat("}", 3000),
		"many quotes":        "echo " + strings.Repeat(`"a" 'b' `, 15000),
		"unbalanced quotes":  strings.Repeat(`"`, 100001),
		"huge heredoc":       "cat <<'EOF'\n" + strings.Repeat("line of text $x `y` \"z\n", 5000) + "EOF\n",
		"huge unquoted hdoc": "cat <<EOF\n" + strings.Repeat("$a $(b) `c`\n", 8000) + "EOF\n",
		"10000 chained":      strings.Repeat("git status && ", 9999) + "ls",
		"long pipeline":      strings.Repeat("a | ", 20000) + "a",
		"1MB script":         strings.Repeat("git diff --stat -- src/main.go && ls -la | grep x\n", 20000),
		"many heredocs":      strings.Repeat("cat <<E\nx\nE\n", 5000),
		"many comments":      strings.Repeat("a # it's\n", 10000),
		"nested shells":      strings.Repeat(`bash -c "`, 50) + "ls" + strings.Repeat(`"`, 50),
		"long word":          "echo " + strings.Repeat("a", 120000),
		"many braces":        "echo " + strings.Repeat("{a,b}", 20000),
		"backquote nesting":  "echo " + strings.Repeat("`", 4000),
		"wrapper chain":      strings.Repeat("env ", 30000) + "-S x",
		"many args":          "rg " + strings.Repeat("--pre ", 20000),
		"many shells":        strings.Repeat("sh ", 40000) + "-c x",
	}
}
