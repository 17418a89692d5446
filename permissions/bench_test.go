package permissions

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// benchRules are the rules of a typical project's settings.
var benchRules = []string{
	"Bash(npm run:*)", "Bash(npm test)", "Bash(go test:*)", "Bash(go build:*)", "Bash(cargo test:*)",
	"Bash(make test)", "Bash(git add:*)", "Bash(pytest:*)", "Bash(docker ps)", "Bash(gh pr view:*)",
	"ask: Bash(git commit:*)", "ask: Bash(docker * --privileged)",
	"deny: Bash(git push:*)", "deny: Bash(rm -rf:*)", "deny: Bash(curl *)", "deny: Bash(sudo:*)",
	"Read(./src/**)", "WebFetch(domain:github.com)",
}

// loadCorpus reads testdata/corpus.jsonl: realistic agent commands.
func loadCorpus(tb testing.TB) []string {
	tb.Helper()
	out := loadCommands(tb, "testdata/corpus.jsonl")
	if len(out) < 1000 {
		tb.Fatalf("corpus has %d commands", len(out))
	}
	return out
}

// loadCommands reads a file of JSON lines {"cmd": "..."}.
func loadCommands(tb testing.TB, name string) []string {
	tb.Helper()
	f, err := os.Open(name)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r struct{ Cmd string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			tb.Fatal(err)
		}
		out = append(out, r.Cmd)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// TestCorpus decides every corpus command in every mode: no panic, and
// the shape invariants hold.
func TestCorpus(t *testing.T) {
	e := mustEngine(t, rules(benchRules...))
	counts := map[string]int{}
	for _, c := range loadCorpus(t) {
		for _, mode := range policy.Modes {
			r := e.Decide(Request{Command: c, Cwd: testCwd, Mode: mode})
			v := r.Decision.Verdict
			counts[mode+" "+v.String()]++
			if v == policy.Passthrough || r.Decision.Reason == "" || r.Warnings == nil || r.Kind == "" {
				t.Fatalf("%q (%s): malformed result %+v", c, mode, r)
			}
			if r.Suggestion != "" && v != policy.Ask {
				t.Errorf("%q (%s): suggestion with %v", c, mode, v)
			}
			if mode == "plan" && v == policy.Allow && !r.ReadOnly {
				t.Errorf("%q: plan mode allowed a command that is not read-only", c)
			}
			if v == policy.Allow && mode != "bypassPermissions" && strings.Contains(c, "git push") {
				t.Errorf("%q (%s): allowed despite the deny rule", c, mode)
			}
		}
	}
	t.Logf("decisions: %v", counts)
}

// BenchmarkDecide decides the corpus, one command per iteration. Run with
// -cpu 1: ns/op is the cost of one decision on one core.
func BenchmarkDecide(b *testing.B) {
	e := mustEngine(b, rules(benchRules...))
	corpus := loadCorpus(b)
	modes := []string{"default", "default", "default", "acceptEdits", "plan", "bypassPermissions"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Decide(Request{Command: corpus[i%len(corpus)], Cwd: testCwd, Mode: modes[i%len(modes)]})
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// hostile are inputs that must not blow up: each must be decided in well
// under 100 ms (see docs/PERFORMANCE.md for the figures).
func hostile() map[string]string {
	return map[string]string{
		"chain10k":     strings.Repeat("echo hello world && ", 10000) + "git push",
		"script1MB":    strings.Repeat("ls -la src/some/dir; grep -rn TODO .\n", (1<<20)/37),
		"pipes10k":     strings.Repeat("cat x | ", 10000) + "wc -l",
		"substs":       strings.Repeat("echo $(echo $(echo x)) ", 5000),
		"nested":       strings.Repeat("$(", 200) + "git push" + strings.Repeat(")", 200),
		"deepNest":     strings.Repeat("(", 100000),
		"bigWord":      "echo " + strings.Repeat("a", 1<<20-10),
		"manyArgs":     "ls " + strings.Repeat("x ", 200000),
		"braces":       "echo " + strings.Repeat("{a,b}", 30),
		"bashC":        "bash -c '" + strings.Repeat("true && ", 5000) + "git push'",
		"evalNest":     strings.Repeat("eval ", 1000) + "git push",
		"quotes":       strings.Repeat(`"a"'b'$'c'`, 50000),
		"heredocs":     strings.Repeat("cat <<'EOF'\nline\nEOF\n", 20000),
		"flags":        "git log " + strings.Repeat("--oneline ", 100000),
		"sedScript":    "sed -n '" + strings.Repeat("s/a/b/;", 30000) + "' x",
		"wildcardRule": strings.Repeat("git push x ", 50000) + "--force",
	}
}

// BenchmarkHostile decides each hostile input (with deny, ask and
// wildcard rules, in the default and bypass modes).
func BenchmarkHostile(b *testing.B) {
	e := mustEngine(b, rules(append(benchRules, "deny: Bash(git * --force)", "ask: Bash(* --x *)")...))
	for name, cmd := range hostile() {
		for _, mode := range []string{"default", "bypassPermissions"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					e.Decide(Request{Command: cmd, Cwd: testCwd, Mode: mode})
				}
			})
		}
	}
}

// TestHostile checks the decisions on hostile input (not their time: the
// benchmark measures that).
func TestHostile(t *testing.T) {
	e := mustEngine(t, rules(append(benchRules, "deny: Bash(git * --force)")...))
	for name, cmd := range hostile() {
		for _, mode := range policy.Modes {
			r := e.Decide(Request{Command: cmd, Cwd: testCwd, Mode: mode})
			if r.Decision.Verdict == policy.Allow && strings.Contains(cmd, "git push") {
				t.Errorf("%s (%s): allowed: %v", name, mode, r.Decision)
			}
		}
	}
}

// BenchmarkDecideResolve is BenchmarkDecide with symbolic links followed
// on disk (as moat check does): the working directory is this package's
// directory, so the paths of the corpus partly exist.
func BenchmarkDecideResolve(b *testing.B) {
	e, err := New(rules(benchRules...), Options{FollowSymlinks: true})
	if err != nil {
		b.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	corpus := loadCorpus(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Decide(Request{Command: corpus[i%len(corpus)], Cwd: wd})
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
