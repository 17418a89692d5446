//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func init() {
	// sleep-then SECONDS ATTACK ARGS...: the attack, after a while (another
	// run ends meanwhile).
	attacks["sleep-then"] = func(a []string) (string, error) {
		s, err := strconv.ParseFloat(a[0], 64)
		if err != nil {
			return "", err
		}
		time.Sleep(time.Duration(s * float64(time.Second)))
		return attacks[a[1]](a[2:])
	}
}

// TestDenyReadKeepsReservedNames: a reserved name (.vscode, .mcp.json,
// .claude: protected where it does not exist, by a placeholder) that a
// denyRead also names lost its protection where it did not exist: the
// protections kept were those the rules let the command write, and a
// hidden path is not writable, but a denyRead of a missing path masks
// nothing. The command made .vscode/tasks.json (run by VS Code when the
// folder opens) and .mcp.json in the project; a repository's own
// .claude/settings.json may add such a denyRead. And where another run's
// placeholder stood there, the mask over it held no pin: that run removed
// it as it ended, the kernel detached the mask, and the command made the
// name (attack pass 108). Without moat each write succeeds.
func TestDenyReadKeepsReservedNames(t *testing.T) {
	for _, c := range []struct {
		name, deny string
		args       func(f *fixture) []string
	}{
		{".vscode", ".vscode", func(f *fixture) []string {
			return []string{"mkdir-write", f.work + "/.vscode", "tasks.json", `{"version":"2.0.0"}`}
		}},
		{".mcp.json", ".mcp.json", func(f *fixture) []string { return []string{"write", f.work + "/.mcp.json", `{"mcpServers":{}}`} }},
		{".claude", ".claude", func(f *fixture) []string {
			return []string{"mkdir-write", f.work + "/.claude", "settings.json", `{"hooks":{}}`}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, filepath.Join(f.work, c.deny)}})
			snapshot := snapshotTree(t, f.work)
			got := f.sandboxedWith(settings, c.args(f)...)
			if got.escaped() {
				t.Fatalf("ESCAPE under moat: a denyRead of the missing %s left it writable:\n%s", c.name, got.out)
			}
			if !strings.Contains(got.out, "blocked:") {
				t.Fatalf("the attack did not run under moat:\n%s", got.out)
			}
			if after := snapshotTree(t, f.work); after != snapshot {
				t.Fatalf("the working tree changed under moat (or a placeholder was left):\nbefore:\n%s\nafter:\n%s", snapshot, after)
			}
			if base := f.direct(c.args(f)...); !base.escaped() {
				t.Fatalf("the attack must work without moat:\n%s", base.out)
			}
		})
	}

	t.Run("project settings", func(t *testing.T) {
		coldRunsOnly(t)
		f := newFixture(t)
		must(t, os.MkdirAll(filepath.Join(f.work, ".claude"), 0o755))
		must(t, os.WriteFile(filepath.Join(f.work, ".claude", "settings.json"),
			[]byte(`{"sandbox":{"enabled":true,"filesystem":{"allowWrite":["."],"denyRead":["./.vscode"]}}}`), 0o644))
		args := []string{"mkdir-write", f.work + "/.vscode", "tasks.json", `{"version":"2.0.0"}`}
		got := f.exec(moatBin, append([]string{"run", "--", self}, args...)...)
		if got.escaped() {
			t.Fatalf("ESCAPE under moat: the repository's denyRead of .vscode left it writable:\n%s", got.out)
		}
		if !strings.Contains(got.out, "blocked:") {
			t.Fatalf("the attack did not run under moat:\n%s", got.out)
		}
		if _, err := os.Lstat(filepath.Join(f.work, ".vscode")); err == nil {
			t.Fatalf(".vscode was left in the project:\n%s", got.out)
		}
		if base := f.direct(args...); !base.escaped() {
			t.Fatalf("the attack must work without moat:\n%s", base.out)
		}
	})

	t.Run("beside another run's placeholder", func(t *testing.T) {
		f := newFixture(t)
		vscode := filepath.Join(f.work, ".vscode")
		// The first run (no denyRead) makes its placeholder at .vscode
		// and ends while the second, which hides .vscode, runs on.
		first := make(chan result, 1)
		go func() { first <- f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sleep", "3") }()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Lstat(vscode); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the first run made no placeholder at %s", vscode)
			}
		}
		settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, vscode}})
		got := f.sandboxedWith(settings, "sleep-then", "4.5", "mkdir-write", vscode, "tasks.json", `{"version":"2.0.0"}`)
		if r := <-first; r.code != 0 {
			t.Fatalf("the first run failed (%d):\n%s", r.code, r.out)
		}
		// (The run ends in an error then, the hidden path "replaced":
		// what the command made stays.)
		if strings.Contains(got.out, "ESCAPED") {
			t.Fatalf("ESCAPE under moat: the other run's placeholder was removed under the mask and .vscode made:\n%s", got.out)
		}
		if !strings.Contains(got.out, "blocked:") {
			t.Fatalf("the attack did not run under moat:\n%s", got.out)
		}
		if _, err := os.Lstat(vscode); err == nil {
			t.Fatalf(".vscode was left in the project:\n%s", got.out)
		}
	})
}
