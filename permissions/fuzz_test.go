package permissions

import (
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/validators"
)

// FuzzDecide: no input panics, nothing the parser cannot read as simple
// commands is allowed (outside bypassPermissions), and nothing that runs
// "git push" is allowed while a deny rule names it. go test runs the seeds;
// go test -fuzz FuzzDecide explores.
func FuzzDecide(f *testing.F) {
	for _, c := range []string{
		"ls -la", "git status && npm run build", "echo $(git push)", "bash -c 'git push'",
		"find . -exec rm {} ;", "sed -i 's/a/b/' x", "cat <<'EOF'\nx\nEOF", "x=1 y=2", "timeout 5 git push",
		"{a,b}", "$'\\x67'it push", "a | b || c && d; e &", "git -c x=y log", "rg --pre=sh x", "",
	} {
		for m := range policy.Modes {
			f.Add(c, uint8(m))
		}
	}
	e, err := New(rules("Bash(npm run:*)", "Bash(echo:*)", "Bash(g* *)", "deny: Bash(git push:*)", "ask: Bash(rm:*)"), Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd string, m uint8) {
		mode := policy.Modes[int(m)%len(policy.Modes)]
		r := e.Decide(Request{Command: cmd, Cwd: testCwd, Mode: mode})
		if r.Decision.Verdict == policy.Passthrough || r.Warnings == nil {
			t.Fatalf("%q: malformed result %+v", cmd, r)
		}
		if r.Decision.Verdict != policy.Allow || mode == "bypassPermissions" {
			return
		}
		if strings.TrimSpace(cmd) == "" {
			return
		}
		if pr := validators.ParseForSecurity(cmd); pr.Kind != validators.Simple {
			t.Fatalf("%q (%s): allowed although the parser says %v (%s)", cmd, mode, pr.Kind, pr.Reason)
		}
		if strings.Contains(cmd, "push") && strings.Contains(cmd, "git") {
			var x extraction
			x.extractSource(cmd, 0)
			for _, c := range x.cands {
				if len(c) >= 2 && c[0] == "git" && c[1] == "push" {
					t.Fatalf("%q (%s): allowed although it runs git push", cmd, mode)
				}
			}
		}
	})
}
