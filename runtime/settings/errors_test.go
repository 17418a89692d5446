package settings

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// A field's error keeps the failure it reports: errors.Is and errors.As
// reach it through the *settings.Error, not only its text.
func TestErrorsWrapTheirCause(t *testing.T) {
	_, _, _, ruleErr := ParseRule("Bash(npm")
	if ruleErr == nil {
		t.Fatal("ParseRule accepted Bash(npm")
	}
	for _, tc := range []struct {
		name, body, field string
		is                error // reached by errors.Is, if set
		cause             string
	}{
		{"claude rule", `{"permissions":{"allow":["Bash(npm"]}}`, "permissions.allow[0]", nil, ruleErr.Error()},
		{"claude domain", `{"permissions":{"allow":["WebFetch(domain:https://example.com)"]}}`, "permissions.allow[0]", policy.ErrDomainPattern, ""},
		{"srt domain", `{"network":{"allowedDomains":["https://example.com"],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, "network.allowedDomains[0]", policy.ErrDomainPattern, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			_, err := e.load(e.write(filepath.Join(e.cwd, "bad.json"), tc.body))
			var se *Error
			if !errors.As(err, &se) || se.Field != tc.field {
				t.Fatalf("want a *settings.Error for %s, got %v", tc.field, err)
			}
			if se.Err == nil {
				t.Fatalf("%v: the cause is not kept (Err nil)", err)
			}
			if tc.cause != "" && se.Err.Error() != tc.cause {
				t.Errorf("Err = %v, want %s", se.Err, tc.cause)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) is false", err, tc.is)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Error("errors.Is(err, ErrInvalid) is false")
			}
		})
	}
}

// A Claude Code file (user, project, managed) with what its writer meant
// as policy in a place Claude Code ignores is refused, not read as no
// policy: the npm runtime's top-level filesystem/network, keys spelt with
// other capitals, rules naming a tool with other capitals (each ran with
// the rule dropped: found by an attack pass).
func TestClaudeFileMisspellingsRefused(t *testing.T) {
	for _, tc := range []struct{ body, field, says string }{
		{`{"sandbox":{"enabled":true},"filesystem":{"denyRead":["~/secrets"]}}`, "filesystem", "sandbox.filesystem"},
		{`{"network":{"allowedDomains":[]}}`, "network", "sandbox.network"},
		{`{"Sandbox":{"filesystem":{"denyRead":["~/secrets"]}}}`, "Sandbox", `did you mean "sandbox"`},
		{`{"Permissions":{"deny":["Read(~/secrets)"]}}`, "Permissions", `did you mean "permissions"`},
		{`{"permissions":{"deny":["read(~/secrets)"]}}`, "permissions.deny[0]", "the tool is Read"},
		{`{"permissions":{"deny":["READ(~/secrets)"]}}`, "permissions.deny[0]", "the tool is Read"},
		{`{"permissions":{"deny":["bash(rm:*)"]}}`, "permissions.deny[0]", "the tool is Bash"},
		{`{"permissions":{"allow":["Webfetch(domain:example.com)"]}}`, "permissions.allow[0]", "the tool is WebFetch"},
	} {
		for _, where := range []string{"user", "project"} {
			e := newEnv(t)
			file := filepath.Join(e.home, ".claude", "settings.json")
			if where == "project" {
				file = filepath.Join(e.cwd, ".claude", "settings.json")
			}
			e.write(file, tc.body)
			_, err := e.load("")
			var se *Error
			if !errors.As(err, &se) || se.Field != tc.field || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s file %s: got %v, want an error at %s saying %q", where, tc.body, err, tc.field, tc.says)
			}
		}
	}
	e := newEnv(t)
	e.write(filepath.Join(e.home, ".claude", "settings.json"), `{"env":{"A":"1"},"model":"x","hooks":{},"permissions":{"deny":["Read(~/secrets)","Bash(rm:*)"]}}`)
	if _, err := e.load(""); err != nil {
		t.Errorf("an ordinary Claude Code file: %v", err)
	}
}

// A limit that rounds to zero is refused: zero is "no limit", so 0.05% of
// a CPU, 0.4 bytes or 1e-10 seconds ran with none (found by an attack
// pass); zero itself and "unlimited" still mean none.
func TestLimitsRoundingToZeroRefused(t *testing.T) {
	for _, lim := range []string{
		`"limits":{"cpu":"0.05%"}`, `"limits":{"cpu":0.0004}`, `"limits":{"memory":"0.4"}`,
		`"limits":{"fileSize":"0.5"}`, `"limits":{"memory":"0.0001k"}`, `"timeout":1e-10`,
		`"timeout":"0.4ns"`, `"limits":{"cpuTime":1e-12}`,
	} {
		e := newEnv(t)
		_, err := e.load(e.write(filepath.Join(e.cwd, "s.json"), `{"sandbox":{"enabled":true},"moat":{`+lim+`}}`))
		if err == nil || !strings.Contains(err.Error(), "no limit") {
			t.Errorf("%s: got %v, want a refusal saying 0 would mean no limit", lim, err)
		}
	}
	for _, lim := range []string{`"limits":{"cpu":0,"memory":"0","fileSize":"unlimited"}`, `"timeout":0`, `"limits":{"cpu":"50%","memory":"1.5GiB"}`, `"timeout":"1ns"`} {
		e := newEnv(t)
		if _, err := e.load(e.write(filepath.Join(e.cwd, "s.json"), `{"sandbox":{"enabled":true},"moat":{`+lim+`}}`)); err != nil {
			t.Errorf("%s: %v", lim, err)
		}
	}
}
