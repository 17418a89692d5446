//go:build linux

package privtests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

func init() {
	// read-each PATH...: read every file given; escaped when any of them
	// has contents, naming each that had.
	attacks["read-each"] = func(a []string) (string, error) {
		var got []string
		for _, p := range a {
			if b, err := readContent(p); err == nil {
				got = append(got, p+": "+firstLine(b))
			}
		}
		if len(got) == 0 {
			return "", os.ErrNotExist
		}
		return "read " + strings.Join(got, "; "), nil
	}
}

// TestOtherToolsCredentialStoresHidden: the credential stores of tools
// beside those moat hid first are default secrets too. Attack pass 96 read,
// with the default policy, git's second credential store
// (~/.config/git/credentials, which `credential.helper store` reads as it
// reads the hidden ~/.git-credentials), podman's registry logins
// ($XDG_RUNTIME_DIR/containers/auth.json, where `podman login` writes, and
// ~/.config/containers/auth.json), helm's, glab's token, sops' age keys,
// rclone's remotes and a browser profile's cookies.
func TestOtherToolsCredentialStoresHidden(t *testing.T) {
	f := newFixture(t)
	run := filepath.Join(f.root, "run")
	f.extraEnv = []string{"XDG_RUNTIME_DIR=" + run}
	files := []string{
		f.home + "/.config/git/credentials",
		f.home + "/.config/containers/auth.json",
		run + "/containers/auth.json",
		f.home + "/.config/helm/registry/config.json",
		f.home + "/.config/glab-cli/config.yml",
		f.home + "/.config/composer/auth.json",
		f.home + "/.config/sops/age/keys.txt",
		f.home + "/.config/rclone/rclone.conf",
		f.home + "/.mozilla/firefox/x.default/cookies.sqlite",
		f.home + "/.config/google-chrome/Default/Cookies",
		f.home + "/.Xauthority",
	}
	f.hiddenByDefault(t, files)
}

// TestHostServiceKeysHidden: as root, the host's TLS private keys
// (/etc/ssl/private, and the other service keys of
// policy.SystemSecretPaths) are default secrets: attack pass 96 read the
// machine's key there under moat run as root. Only root reads them, so
// the test needs root and a key there (Debian's ssl-cert package makes
// one).
func TestHostServiceKeysHidden(t *testing.T) {
	testutil.RequireRoot(t)
	// A key of the test's own in the host's directory of TLS keys (made
	// with the directory where the host has none: a fresh machine without
	// the ssl-cert package), so that the attack always has a target.
	dir := "/etc/ssl/private"
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		if err := os.MkdirAll(dir, 0o710); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(dir) })
	}
	key := fmt.Sprintf("%s/moat-test-%d.key", dir, os.Getpid())
	if err := os.WriteFile(key, []byte("-----BEGIN PRIVATE KEY-----\nmoat-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(key) })
	f := newFixture(t)
	f.attack([]string{"read", key}, nil)
}

// A default secret of another user's that this user may not read
// (/etc/shadow) gets no mask in the user's own sandbox: the kernel keeps
// it closed there as outside, and the sandbox cannot gain more (its
// capabilities are its user namespace's, which maps no other user).
func TestOtherUsersSecretClosedWithoutMask(t *testing.T) {
	testutil.RequireUnprivileged(t)
	const shadow = "/etc/shadow"
	if _, err := os.ReadFile(shadow); !os.IsPermission(err) {
		t.Skipf("%s is readable to this user or missing (%v): nothing the kernel holds", shadow, err)
	}
	f := newFixture(t)
	got := f.sandboxed("read", shadow)
	if got.escaped() || !strings.Contains(strings.ToLower(got.out), "permission denied") {
		t.Errorf("%s under moat (exit %d), want the kernel's refusal:\n%s", shadow, got.code, got.out)
	}
}

// hiddenByDefault writes a secret into each of files (made with their
// directories) and reads them all under moat with the fixture's settings,
// which hide none of them themselves: none may be read. Without moat each
// is read, or the test could not tell an escape.
func (f *fixture) hiddenByDefault(t *testing.T, files []string) {
	t.Helper()
	for _, p := range files {
		must(t, os.MkdirAll(filepath.Dir(p), 0o700))
		must(t, os.WriteFile(p, []byte(secretText+"\n"), 0o600))
	}
	args := append([]string{"read-each"}, files...)
	if got := f.sandboxed(args...); got.escaped() {
		t.Errorf("ESCAPE under moat: %s", got.out)
	} else if !strings.Contains(got.out, "blocked:") {
		t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
	}
	base := f.direct(args...)
	for _, p := range files {
		if !strings.Contains(base.out, p+": "+secretText) {
			t.Errorf("without moat %s must be read (or this test cannot detect an escape):\n%s", p, base.out)
		}
	}
}
