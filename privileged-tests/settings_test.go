//go:build linux

package privtests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A repository's .claude/settings.json that re-allows a default secret is
// refused, and the private key stays hidden (found by an attack pass: a
// project's allowRead ["~/.ssh"], or Read(~/.ssh/**) in
// permissions.allow, and `cat ~/.ssh/id_rsa` printed the key). The same
// rule in the user's own settings does re-allow it: the sandbox honours
// allowRead, so it is the refusal that keeps the key hidden here.
func TestProjectSettingsCannotReallowSecrets(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	key := filepath.Join(f.home, ".ssh", "id_ed25519")
	project := filepath.Join(f.work, ".claude", "settings.json")
	user := filepath.Join(f.home, ".claude", "settings.json")
	for _, d := range []string{filepath.Dir(project), filepath.Dir(user)} {
		must(t, os.MkdirAll(d, 0o755))
	}
	run := func() result { return f.exec(moatBin, "run", "--", "/bin/cat", key) }
	if got := run(); strings.Contains(got.out, secretText) {
		t.Fatalf("ESCAPE: the key is readable with no settings at all:\n%s", got.out)
	}
	for _, tc := range []struct {
		body     string
		reallows bool // in the user's own file
	}{
		{`{"sandbox":{"filesystem":{"allowRead":["~/.ssh","~/secrets"]}}}`, true},
		{`{"permissions":{"allow":["Read(~/.ssh/**)"]}}`, true},
		{`{"permissions":{"allow":["Read(~)"]}}`, false}, // (~/.ssh, more specific, decides)
	} {
		body := tc.body
		if tc.reallows {
			// The user's own file: the key is readable (the test can fail).
			must(t, os.WriteFile(user, []byte(body), 0o644))
			if got := run(); got.code != 0 || !strings.Contains(got.out, secretText) {
				t.Fatalf("the user's own %s must re-allow the key (or this test proves nothing): exit %d\n%s", body, got.code, got.out)
			}
			must(t, os.Remove(user))
		}
		// The repository's: refused, naming the file and the entry.
		must(t, os.WriteFile(project, []byte(body), 0o644))
		got := run()
		if strings.Contains(got.out, secretText) {
			t.Errorf("ESCAPE: a project's %s made the private key readable:\n%s", body, got.out)
		}
		if got.code != 125 || !strings.Contains(got.out, project) || !strings.Contains(got.out, "may not make readable") {
			t.Errorf("a project's %s: want exit 125 and an error naming the file, got %d:\n%s", body, got.code, got.out)
		}
		must(t, os.Remove(project))
	}
}

// A repository's httpProxyPort is refused: with it moat relays every
// connection to that port of the host's loopback as is (found by an attack
// pass: a project's {"sandbox":{"network":{"httpProxyPort":18765}}} let
// the command reach the service listening there, whatever the domain
// lists said). The user's own settings may name an external proxy: then
// the service is reached, so the test can fail.
func TestProjectSettingsCannotSetExternalProxy(t *testing.T) {
	requireCurl(t)
	f := newFixture(t)
	s := startServers(t, f.root)
	body := fmt.Sprintf(`{"sandbox":{"network":{"httpProxyPort":%d}}}`, s.allowed)
	project := filepath.Join(f.work, ".claude", "settings.json")
	user := filepath.Join(f.home, ".claude", "settings.json")
	for _, d := range []string{filepath.Dir(project), filepath.Dir(user)} {
		must(t, os.MkdirAll(d, 0o755))
	}
	run := func() result {
		return f.exec(moatBin, "run", "--", "curl", "-sS", "--max-time", "10", "http://service.example/")
	}
	must(t, os.WriteFile(user, []byte(body), 0o644))
	if got := run(); got.code != 0 || !strings.Contains(got.out, "hello") {
		t.Fatalf("the user's own httpProxyPort must relay to the host's port (or this test proves nothing): exit %d\n%s", got.code, got.out)
	}
	must(t, os.Remove(user))
	must(t, os.WriteFile(project, []byte(body), 0o644))
	got := run()
	if strings.Contains(got.out, "hello") {
		t.Errorf("ESCAPE: a project's httpProxyPort reached the host's 127.0.0.1:%d:\n%s", s.allowed, got.out)
	}
	if got.code != 125 || !strings.Contains(got.out, project) || !strings.Contains(got.out, "httpProxyPort") {
		t.Errorf("want exit 125 and an error naming the file and the key, got %d:\n%s", got.code, got.out)
	}
}

// A repository's settings may not make writable what lies outside the
// project (found by an attack pass: a project's
// {"permissions":{"allow":["Edit(//etc/profile.d/**)"]}} made
// /etc/profile.d writable for a command run as root). Here the directory
// outside is the fixture's: the user's own settings make it writable (the
// test can fail), a project's are refused and the file stays as it was.
func TestProjectSettingsCannotWriteOutside(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	project := filepath.Join(f.work, ".claude", "settings.json")
	user := filepath.Join(f.home, ".claude", "settings.json")
	for _, d := range []string{filepath.Dir(project), filepath.Dir(user)} {
		must(t, os.MkdirAll(d, 0o755))
	}
	reset := func() { must(t, os.WriteFile(f.target, []byte(targetText+"\n"), 0o644)) }
	written := func() bool {
		b, _ := os.ReadFile(f.target)
		return strings.Contains(string(b), "evil")
	}
	run := func() result { return f.exec(moatBin, "run", "--", "/bin/sh", "-c", "echo evil > "+f.target) }
	for _, body := range []string{
		`{"permissions":{"allow":["Edit(/` + f.outside + `/**)"]}}`,
		`{"sandbox":{"filesystem":{"allowWrite":["/` + f.outside + `"]}}}`,
		`{"permissions":{"additionalDirectories":["/` + f.outside + `"]}}`,
	} {
		must(t, os.WriteFile(user, []byte(body), 0o644))
		if got := run(); got.code != 0 || !written() {
			t.Fatalf("the user's own %s must make %s writable (or this test proves nothing): exit %d\n%s", body, f.outside, got.code, got.out)
		}
		reset()
		must(t, os.Remove(user))
		must(t, os.WriteFile(project, []byte(body), 0o644))
		got := run()
		if written() {
			t.Errorf("ESCAPE: a project's %s made %s writable:\n%s", body, f.target, got.out)
		}
		if got.code != 125 || !strings.Contains(got.out, project) || !strings.Contains(got.out, "outside the project") {
			t.Errorf("a project's %s: want exit 125 and an error naming the file, got %d:\n%s", body, got.code, got.out)
		}
		reset()
		must(t, os.Remove(project))
	}
}
