package validators

import (
	"strings"
	"testing"
)

// BenchmarkCheck decides the realistic agent corpus
// (testdata/agent_commands.txt), one command per iteration.
func BenchmarkCheck(b *testing.B) {
	corpus := loadCorpus(b, "testdata/agent_commands.txt")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Check(corpus[i%len(corpus)])
	}
}

// BenchmarkParseForSecurity is the parse alone, over the same corpus.
func BenchmarkParseForSecurity(b *testing.B) {
	corpus := loadCorpus(b, "testdata/agent_commands.txt")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ParseForSecurity(corpus[i%len(corpus)])
	}
}

// BenchmarkCheckLarge decides the large and hostile inputs: each must stay
// well under 100 ms.
func BenchmarkCheckLarge(b *testing.B) {
	inputs := map[string]string{
		"1MB_script":        strings.Repeat("git diff --stat -- src/main.go && ls -la | grep x\n", 20000),
		"10000_chained":     strings.Repeat("git status && ", 9999) + "ls",
		"120KB_chained":     strings.Repeat("a && ", 24000) + "a",
		"100KB_heredoc":     "cat <<'EOF' > f\n" + strings.Repeat("some line of text $x `y` \"z\n", 3500) + "EOF\n",
		"100KB_unq_heredoc": "cat <<EOF\n" + strings.Repeat("$a $(b) `c` text\n", 6000) + "EOF\n",
		"deep_nesting":      "echo " + strings.Repeat("$(", MaxNesting) + strings.Repeat(")", MaxNesting),
		"deep_parens_cap":   strings.Repeat("(", MaxNesting) + "a" + strings.Repeat(")", MaxNesting),
		"120KB_quotes":      "echo " + strings.Repeat(`"a" 'b' `, 15000),
		"deep_if":           strings.Repeat("if a; then ", 3000) + "b" + strings.Repeat("; fi", 3000),
	}
	for name, cmd := range inputs {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(cmd)))
			for i := 0; i < b.N; i++ {
				Check(cmd)
			}
		})
	}
}
