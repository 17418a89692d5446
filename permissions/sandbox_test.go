package permissions

import (
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Claude Code's sandbox switches, as the seeds' shouldUseSandbox and the
// auto-allow read them.
func TestSandboxSwitches(t *testing.T) {
	f, tr := false, true
	perms := policy.Permissions{
		Deny: []policy.Rule{{Rule: "Bash(rm:*)"}},
		Ask:  []policy.Rule{{Rule: "Bash(git push:*)"}},
	}
	cases := []struct {
		name      string
		sw        *policy.Switches
		command   string
		noSandbox bool
		verdict   policy.Verdict
		sandboxed *bool // nil: no SandboxInfo
		reason    string
	}{
		{"no switches: ask as ever", nil, "make build", false, policy.Ask, nil, ""},
		{"switches, auto-allow off", &policy.Switches{}, "make build", false, policy.Ask, &tr, ""},
		{"auto-allow", &policy.Switches{AutoAllowBashIfSandboxed: true}, "make build", false, policy.Allow, &tr, ""},
		{"auto-allow: a security check's ask too", &policy.Switches{AutoAllowBashIfSandboxed: true}, "echo $(id)", false, policy.Allow, &tr, ""},
		{"auto-allow: deny rule wins", &policy.Switches{AutoAllowBashIfSandboxed: true}, "rm -rf build", false, policy.Deny, &tr, ""},
		{"auto-allow: ask rule wins", &policy.Switches{AutoAllowBashIfSandboxed: true}, "git push origin", false, policy.Ask, &tr, ""},
		{"excluded: not sandboxed, not auto-allowed", &policy.Switches{AutoAllowBashIfSandboxed: true, ExcludedCommands: []string{"docker", "npm run"}}, "cd x && docker run img", false, policy.Ask, &f, "excludedCommands"},
		{"excluded prefix does not match a longer word", &policy.Switches{AutoAllowBashIfSandboxed: true, ExcludedCommands: []string{"docker"}}, "dockerd-tool x", false, policy.Allow, &tr, ""},
		{"excluded multi-word", &policy.Switches{AutoAllowBashIfSandboxed: true, ExcludedCommands: []string{"npm run"}}, "npm run build", false, policy.Ask, &f, "excludedCommands"},
		{"dangerouslyDisableSandbox permitted by default", &policy.Switches{AutoAllowBashIfSandboxed: true}, "make build", true, policy.Ask, &f, "dangerouslyDisableSandbox"},
		{"dangerouslyDisableSandbox refused by the settings", &policy.Switches{AutoAllowBashIfSandboxed: true, AllowUnsandboxedCommands: &f}, "make build", true, policy.Allow, &tr, "not honoured"},
		{"sandbox disabled", &policy.Switches{Enabled: &f, AutoAllowBashIfSandboxed: true}, "make build", false, policy.Ask, &f, "enabled is false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(perms, Options{Sandbox: tc.sw})
			if err != nil {
				t.Fatal(err)
			}
			res := e.Decide(Request{Command: tc.command, Cwd: "/work", DangerouslyDisableSandbox: tc.noSandbox})
			if got := res.Decision.Final().Verdict; got != tc.verdict {
				t.Errorf("verdict %s, want %s (%s)", got, tc.verdict, res.Decision.Final().Reason)
			}
			switch {
			case tc.sandboxed == nil && res.Sandbox != nil:
				t.Errorf("SandboxInfo without switches: %+v", res.Sandbox)
			case tc.sandboxed != nil && res.Sandbox == nil:
				t.Errorf("no SandboxInfo")
			case tc.sandboxed != nil && (res.Sandbox.Sandboxed != *tc.sandboxed || !strings.Contains(res.Sandbox.Reason, tc.reason)):
				t.Errorf("sandbox %+v, want sandboxed %v with %q", res.Sandbox, *tc.sandboxed, tc.reason)
			}
		})
	}
	if _, err := New(perms, Options{Sandbox: &policy.Switches{ExcludedCommands: []string{" "}}}); err == nil || !strings.Contains(err.Error(), "excludedCommands[0]") {
		t.Errorf("an empty excludedCommands entry must be an error naming it: %v", err)
	}
}
