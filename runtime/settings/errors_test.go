package settings

import (
	"errors"
	"path/filepath"
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
