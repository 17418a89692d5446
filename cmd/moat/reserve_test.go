package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/runtime/settings"
)

// The sandbox's advice when it cannot reserve a protected name ("or leave
// it out of allowWrite") is reworded when only the implicit working
// directory makes the folder writable: there is nothing to leave out.
func TestExplainReserveError(t *testing.T) {
	sentinel := errors.New("permission denied")
	reserve := func(path, dir string) error {
		return fmt.Errorf("sandbox setup failed: moat must reserve %s (a protected name: it creates an empty placeholder there for the run), but %s is not writable by this user: %w; make that folder writable by you, or leave it out of allowWrite", path, dir, sentinel)
	}
	implicit := &policy.Policy{Cwd: "/srv/proj"}
	implicit.FS.AllowWrite = []policy.PathRule{{Path: "/srv/proj", Source: settings.ImplicitCwdSource}}
	explicit := &policy.Policy{Cwd: "/srv/proj"}
	explicit.FS.AllowWrite = []policy.PathRule{{Path: "/srv/proj", Source: settings.ImplicitCwdSource}, {Path: "/srv", Source: "s.json: allowWrite[0]"}}
	other := &policy.Policy{Cwd: "/srv/proj"}
	other.FS.AllowWrite = []policy.PathRule{{Path: "/srv/proj", Source: settings.ImplicitCwdSource}, {Path: "/data", Source: "s.json: allowWrite[0]"}}

	for _, tc := range []struct {
		name     string
		pol      *policy.Policy
		err      error
		reworded bool
	}{
		{"the working directory, implicitly", implicit, reserve("/srv/proj/.bashrc", "/srv/proj"), true},
		{"a folder inside it", implicit, reserve("/srv/proj/sub/.git", "/srv/proj/sub"), true},
		{"also named in allowWrite", explicit, reserve("/srv/proj/.bashrc", "/srv/proj"), false},
		{"another allowWrite folder", other, reserve("/data/.bashrc", "/data"), false},
		{"another error", implicit, errors.New("create the mount point /srv/proj/.x: no space left on device"), false},
	} {
		got := explainReserveError(tc.pol, tc.err)
		if !errors.Is(got, tc.err) {
			t.Errorf("%s: the error chain is lost", tc.name)
		}
		msg := got.Error()
		if tc.reworded {
			if strings.Contains(msg, "allowWrite, ") || strings.Contains(msg, "leave it out of allowWrite") || !strings.Contains(msg, "only because it is the working directory") || !strings.Contains(msg, "run moat from a folder you can write to") || !errors.Is(got, sentinel) {
				t.Errorf("%s: %s", tc.name, msg)
			}
		} else if msg != tc.err.Error() {
			t.Errorf("%s: reworded: %s", tc.name, msg)
		}
	}
}
