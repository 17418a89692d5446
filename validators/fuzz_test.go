package validators

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// trickyCommands are inputs where a parser and bash could plausibly read
// the words differently: quoting, escapes, line continuations, comments,
// tildes, braces, here-documents and their closing lines.
var trickyCommands = []string{
	`a b c`,
	`a 'b c' "d e" f\ g`,
	`a "x\"y" 'x\y' "x\y" "\$x" "\\" "\` + "`" + `"`,
	"a b\\\nc",
	"a \\\n b",
	"a 'b\\\nc'",
	"a \"b\\\nc\"",
	`a # comment 'x`,
	`a#b 'x'#y "x"#y`,
	"a # b \\\nb",
	`a ~ ~/x x~ a=~ a=~/x a=b:~/y b:~/y HEAD~1 x=y~`,
	`a HEAD~1 x~ x=y~ '~' "~" \~ a=\~ "a"=~ @~`,
	`a {} {a} @{u} stash@{0} '{a,b}' "{a,b}" {a}b, a,b} {a,b`,
	`a {a,b} a{,}b {1..3} {a\,b} {"a,b"}`,
	`a \{a,b\}`,
	`a $ a$ "$" $= '$x' "a$" a$/b`,
	`a * ? [ \* \? \[ '*' "?" a]b`,
	`a \* \? \[ '*' "?" a]b ] "[" x\[y`,
	`a [ x[ [] [a "[a]" [a\] [a"]" ]`,
	`a [ b ] [ c`,
	`a -- - -x --y=z -d' ' -d"," --m="x y"`,
	`a && b || c ; d & e | f |& g`,
	`! a && b`,
	`! a || b`,
	`a | ! b`,
	`x=1 y='2 3' a $x "$y"`,
	`x=1 y='2 3' a 'x' "y"`,
	`a $u "$u" ${u} "${u}" x$u "" '' "$u$v"`,
	`a $u$v b`,
	"a <<EOF\nline $u\nEOF\n",
	"a <<'EOF'\nline $u `x` \\\nEOF\n",
	"a <<\"EOF\"\n$x\nEOF\n",
	"a <<EOF\nx\\\nEOF\nEOF\n",
	"a <<EOF\nx\nE\\\nOF\ny\nEOF\n",
	"a <<'EOF'\nx\nE\\\nOF\ny\nEOF\n",
	"a <<-EOF\n\tx\n\t\ty\n\tEOF\n",
	"a <<-'EOF'\n\tx\n  \tEOF\n\tEOF\n",
	"a <<EOF\nEOF \nEOF\n",
	"a <<EOF\n EOF\nEOF\n",
	"a <<EOF\nEOF",
	"a <<EOF\nx\nEOF",
	"a <<EOF; b\nx\nEOF\n",
	"a <<A <<B\n1\nA\n2\nB\n",
	"a <<A; b <<B\n1\nA\n2\nB\n",
	"a <<A | b <<B\n1\nA\n2\nB\n",
	"a <<E\\OF\n$x\nEOF\n",
	"a <<E'O'F\n$x\nEOF\n",
	"a <<''\nx\n\n",
	"a <<EOF\n\\$x \\` \\\\ \\a \\\"\nEOF\n",
	`a <<< "x y"`,
	`a <<< x`,
	"cat <<'EOF' | a\nhello\nEOF\n",
	"a \"$(cat <<'EOF'\nmsg line\n\nsecond\nEOF\n)\"",
	"a \"$(cat <<'EOF'\nmsg\nEOF\n)\" b",
	"a \"$(cat <<-'EOF'\n\tmsg\n\tEOF\n)\"",
	"a \"x$(cat <<'EOF'\nmsg\n\n\nEOF\n)y\"",
	"a > out.txt; b >> out.txt 2>&1; c 2>/dev/null",
	"a >&2; b 2>&1 | c",
	"a\nb\n\nc",
	"a;b;;",
	"a; b &",
	"a & b",
	"time a b",
	"time -p a",
	`a "$@" "$*" $# $? $0`,
	"a <<EOF\n$u ${v} \"$w\" '$u'\nEOF\n",
	"a <<-EOF\n\t$u\n\tEOF\n",
	"a 'it''s' \"x\"'y'z",
	`a \a\b\c \\ \' \"`,
	"a b # c \\",
	"a\tb\tc",
	"a b\f c",
	"a b\v c",
	"a b\x01c",
	"a é ü 日本 x\u00a0y",
	"a x\u200by",
	"a `b`",
	"a $(b)",
	"a $((1+2))",
	"a <(b)",
	"a ${u:-x}",
	"{ a; }",
	"(a)",
	"a=(1 2)",
	"function f { a; }",
	"if a; then b; fi",
	"a && \\\nb",
	"a |\nb",
	"a &&\n\nb",
	"EOF",
	"a <<EOF\nEOF\nEOF\n",
	"a <<EOF\n$u\nEOF",
	"a $'x\\ty'",
	"a $\"x\"",
	"a !x !",
	"a x=y=z --a=b=c",
	"a - -- --- -=",
	"a %s '%d' ^x",
}

// seedCommands returns the realistic corpus, the tricky inputs and the
// advisory cases: the static seed corpus of the fuzz targets.
func seedCommands(t testing.TB) []string {
	t.Helper()
	cmds := append([]string(nil), trickyCommands...)
	cmds = append(cmds, loadCorpus(t, "testdata/agent_commands.txt")...)
	for _, tc := range advisoryCases {
		cmds = append(cmds, tc.cmd)
	}
	return cmds
}

// loadCorpus reads a corpus file: one JSON string per line, with blank
// lines and lines starting with "//" ignored.
func loadCorpus(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		var s string
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBashAgreement runs the differential check over the tricky inputs and
// the whole seed corpus.
func TestBashAgreement(t *testing.T) {
	bashStubs(t)
	cmds := seedCommands(t)
	if testing.Short() {
		cmds = trickyCommands
	}
	ran := 0
	for _, cmd := range cmds {
		if agree(t, cmd) {
			ran++
		}
	}
	if ran < 60 {
		t.Errorf("only %d commands were comparable with bash", ran)
	}
	t.Logf("%d commands compared with bash", ran)
}

// FuzzBashAgreement: whatever the input, a Simple parse with predictable
// words must agree with bash.
func FuzzBashAgreement(f *testing.F) {
	for _, c := range seedCommands(f) {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		if len(cmd) > 512 {
			return
		}
		bashStubs(t)
		agree(t, cmd)
	})
}

// FuzzCheck: Check never panics, never denies, only allows Simple
// commands, and is deterministic; Analyze's parse is ParseForSecurity's.
func FuzzCheck(f *testing.F) {
	for _, c := range seedCommands(f) {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		res := Analyze(cmd)
		d := res.Decision
		switch d.Verdict {
		case policy.Deny:
			t.Fatalf("Check(%q) denied", cmd)
		case policy.Allow:
			if res.Parse.Kind != Simple {
				t.Fatalf("Check(%q) allowed a %s parse", cmd, res.Parse.Kind)
			}
			if res.Validator != "git_commit" {
				t.Fatalf("Check(%q) allowed by %q", cmd, res.Validator)
			}
		case policy.Ask:
			if d.Reason == "" || d.Rule == "" {
				t.Fatalf("Check(%q) asked without a reason or rule: %+v", cmd, d)
			}
		case policy.Passthrough:
			if res.Parse.Kind != Simple {
				t.Fatalf("Check(%q) passed a %s parse", cmd, res.Parse.Kind)
			}
		}
		if res.Parse.Kind != Simple && d.Verdict != policy.Ask {
			t.Fatalf("Check(%q) = %v for a %s parse", cmd, d, res.Parse.Kind)
		}
		if res.Parse.Kind == Simple && len(res.Parse.Commands) > MaxSubcommands {
			t.Fatalf("Check(%q): a Simple parse with %d commands", cmd, len(res.Parse.Commands))
		}
		if again := Check(cmd); again != d {
			t.Fatalf("Check(%q) not deterministic: %v then %v", cmd, d, again)
		}
		if pr := ParseForSecurity(cmd); pr.Kind != res.Parse.Kind || len(pr.Commands) != len(res.Parse.Commands) {
			t.Fatalf("ParseForSecurity(%q) differs from Analyze's parse", cmd)
		}
		if res.Views.Original != cmd {
			t.Fatalf("Views.Original differs from the command")
		}
		if d.Verdict == policy.Allow {
			// An allowed command must be static and free of every
			// construct the later validators look for.
			for _, sc := range res.Parse.Commands {
				if !sc.Static() {
					t.Fatalf("Check(%q) allowed a non-static command", cmd)
				}
			}
		}
	})
}
