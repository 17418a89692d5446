package validators

import (
	"math/rand"
	"strings"
	"testing"
)

// shellGen builds shell commands from a grammar, choosing each production
// from a byte stream (fuzzing) or a seeded generator (plain go test). The
// grammar aims at what parsers get wrong: quoting, escapes, line
// continuations, comments, tildes, braces, globs and here-documents whose
// closing lines almost match.
type shellGen struct {
	data []byte
	pos  int
	rnd  *rand.Rand
	b    strings.Builder
	// pending here-document bodies, written after the current line.
	pending []string
}

func (g *shellGen) n(k int) int {
	if k <= 1 {
		return 0
	}
	if g.rnd != nil {
		return g.rnd.Intn(k)
	}
	if g.pos >= len(g.data) {
		return 0
	}
	v := int(g.data[g.pos])
	g.pos++
	return v % k
}

func (g *shellGen) pick(xs ...string) string { return xs[g.n(len(xs))] }

func (g *shellGen) generate() string {
	g.b.Reset()
	g.pending = nil
	for i, k := 0, 1+g.n(3); i < k; i++ {
		if i > 0 {
			sep := g.pick("; ", " && ", " || ", " & ", "\n", " ;\n", " &&\n", " ||\n\n", ";", "&&", "||", "&", ";#c\n", "\t;\t")
			if strings.HasPrefix(sep, "\n") || strings.HasPrefix(sep, " ;\n") {
				g.flushHeredocs(sep)
				continue
			}
			g.b.WriteString(sep)
			if strings.HasSuffix(sep, "\n") {
				g.flushBodies()
			}
		}
		g.pipeline()
	}
	if g.n(4) == 0 {
		g.b.WriteString(g.pick(" # note", " # it's", " #x\"y", "# a", " #"))
	}
	g.flushHeredocs("\n")
	return g.b.String()
}

// flushHeredocs ends the line with sep (which starts with a newline or
// " ;\n") and writes pending here-document bodies after it.
func (g *shellGen) flushHeredocs(sep string) {
	if len(g.pending) == 0 {
		g.b.WriteString(sep)
		return
	}
	g.b.WriteString(strings.TrimRight(sep, "\n"))
	g.b.WriteString("\n")
	g.flushBodies()
}

func (g *shellGen) flushBodies() {
	for _, body := range g.pending {
		g.b.WriteString(body)
	}
	g.pending = nil
}

func (g *shellGen) pipeline() {
	if g.n(6) == 0 {
		g.b.WriteString("! ")
	}
	for i, k := 0, 1+g.n(3); i < k; i++ {
		if i > 0 {
			g.b.WriteString(g.pick(" | ", " |& ", "|", " |\n", "|&", "| "))
			if len(g.pending) > 0 && strings.HasSuffix(g.b.String(), "\n") {
				g.flushBodies()
			}
		}
		g.command()
	}
}

func (g *shellGen) command() {
	if g.n(5) == 0 {
		g.b.WriteString(g.pick("u", "v", "x_1") + "=")
		if g.n(3) > 0 {
			g.word()
		}
		g.b.WriteString(" ")
	}
	if g.n(12) == 0 {
		g.b.WriteString("time ")
	}
	if g.n(6) == 0 {
		g.b.WriteString(g.pick("x2", "{", "}", "[[", "]]", "!", "in", "do", "then", "esac", "coproc", "select", "a=b", "2", "-", "#a"))
	} else {
		g.b.WriteString(g.pick("a", "b", "c", "git", "jq", "cat", "EOF", "q", "ls", "\\a", "'b'", "\"c\"", "a\\\nb", "$u a"))
	}
	for i, k := 0, g.n(5); i < k; i++ {
		g.b.WriteString(g.pick(" ", "  ", "\t", " \\\n "))
		g.word()
	}
	for i, k := 0, g.n(3); i < k; i++ {
		g.redirect()
	}
}

func (g *shellGen) word() {
	for i, k := 0, 1+g.n(3); i < k; i++ {
		switch g.n(9) {
		case 0, 1, 2:
			for j, m := 0, 1+g.n(4); j < m; j++ {
				g.b.WriteString(g.pick("x", "-", "--", "=", ":", "~", "#", "{", "}", ",", "..", ".", "/", "@", "%", "^", "!", "+", "$", "]", "0", "EOF", "-c",
					"if", "fi", "{}", "[[", "é", "\u00a0", "\x01", "\f", "\v", "2", "x=y"))
			}
		case 3:
			g.b.WriteString(g.pick(`\ `, `\#`, `\;`, `\|`, `\&`, `\<`, `\>`, `\'`, `\"`, `\\`, `\$`, `\*`, `\{`, `\~`, `\a`, "\\\n", `\=`))
		case 4:
			g.b.WriteString("'")
			for j, m := 0, g.n(4); j < m; j++ {
				g.b.WriteString(g.pick("a", " ", "\\", "\"", "$u", "\n", "\n#", "`", "~", "{a,b}", "*", "\t", "EOF"))
			}
			g.b.WriteString("'")
		case 5:
			g.b.WriteString(`"`)
			for j, m := 0, g.n(4); j < m; j++ {
				g.b.WriteString(g.pick("a", " ", `\\`, `\"`, `\$`, "\\`", `\a`, "\\\n", "\n", "'", "$u", "${v}", "~", "{a,b}", "*", "#", "!"))
			}
			g.b.WriteString(`"`)
		case 6:
			g.b.WriteString(g.pick("$u", "${u}", "$v", `"$u"`, "$u$v", "${u}x", "$", "$'a'", `$"a"`))
		case 7:
			g.b.WriteString(g.pick("''", `""`, "'-'", `"-"`, "-''", "x''y"))
		case 8:
			op := g.pick("'EOF'", "\"EOF\"", "\\EOF", "-'EOF'")
			g.b.WriteString("\"$(cat <<" + op + "\n")
			g.b.WriteString(g.bodyLines("EOF"))
			if strings.HasPrefix(op, "-") {
				g.b.WriteString(g.pick("", "\t"))
			}
			g.b.WriteString(g.pick("EOF\n)\"", "EOF\n  )\""))
		}
	}
}

func (g *shellGen) redirect() {
	switch g.n(6) {
	case 0, 1:
		delim := g.pick("EOF", "X", "E_1", "E-F", "E.F", "_")
		quoted := g.pick("", "'", "\"", "\\")
		op := g.pick("<<", "<<-", "<< ", "<<-")
		switch quoted {
		case "'", "\"":
			g.b.WriteString(" " + op + quoted + delim + quoted)
		case "\\":
			g.b.WriteString(" " + op + "\\" + delim)
		default:
			g.b.WriteString(" " + op + delim)
		}
		indent := ""
		if strings.HasPrefix(op, "<<-") {
			indent = g.pick("", "\t", "\t\t")
		}
		g.pending = append(g.pending, g.bodyLines(delim)+indent+delim+"\n")
	case 2:
		g.b.WriteString(" <<< ")
		g.word()
	case 3:
		g.b.WriteString(g.pick(" > out", " >> out", " 2>&1", " >/dev/null", " 2> err", " &> all", " >&2",
			" 2 >out", " x2>out", " >|out", " 1>&2", " >out2", " 2>>err", " &>>all", " >& out",
			">out", "2>err", " 3>&1", " 2>&1 >out", " >out 2>&1", " 0<&-", " 1>&-"))
	default:
	}
}

func (g *shellGen) bodyLines(delim string) string {
	var b strings.Builder
	for i, k := 0, g.n(4); i < k; i++ {
		b.WriteString(g.pick("text", "", "\t"+"indented", delim+" ", " "+delim, delim+"\\", "$u", "${v}", `\$u`, "\\`", `\\`,
			"a\\", "#"+delim, "'"+delim+"'", delim+")", "x\"y", "~", "\t"+delim+"x"))
		b.WriteString("\n")
	}
	return b.String()
}

// TestBashAgreementGenerated compares a few hundred generated commands
// with bash (the same check as FuzzBashAgreementGrammar, deterministic).
func TestBashAgreementGenerated(t *testing.T) {
	bashStubs(t)
	n := 800
	if testing.Short() {
		n = 60
	}
	g := &shellGen{rnd: rand.New(rand.NewSource(1))}
	ran := 0
	for i := 0; i < n; i++ {
		if agree(t, g.generate()) {
			ran++
		}
	}
	t.Logf("%d of %d generated commands compared with bash", ran, n)
	if ran < n/8 {
		t.Errorf("only %d of %d generated commands were comparable", ran, n)
	}
}

// FuzzBashAgreementGrammar drives the grammar with the fuzzer's bytes.
func FuzzBashAgreementGrammar(f *testing.F) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 64; i++ {
		b := make([]byte, 48)
		r.Read(b)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		bashStubs(t)
		g := &shellGen{data: data}
		agree(t, g.generate())
	})
}
