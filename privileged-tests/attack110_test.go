//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSecretReplacedBehindFinalSymlink: a denyRead path that is itself a
// symbolic link (a dotfiles manager's ~/.netrc -> dotfiles/netrc) is
// hidden by a mask on the file it leads to; the run's look for replaced
// hidden files took the link's own lstat, which stays the same when the
// user saves the file it leads to (a new file renamed into place, which
// takes the mask away), and the command read the new file through the
// link (attack pass 110). The run is ended naming the file it leads to;
// without moat the user reads it.
func TestSecretReplacedBehindFinalSymlink(t *testing.T) {
	f := newFixture(t)
	dots := filepath.Join(f.outside, "dotfiles")
	must(t, os.Mkdir(dots, 0o755))
	target := filepath.Join(dots, "netrc")
	must(t, os.WriteFile(target, []byte("old\n"), 0o600))
	link := filepath.Join(f.outside, ".netrc")
	must(t, os.Symlink(target, link))
	marker := filepath.Join(f.work, "started")
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, link}})
	wait := onceStarted(marker, func() {
		saveOver(target)
	})
	got := f.sandboxedWith(settings, "mark-then", marker, "sleep-then", "2.5", "read", link)
	wait()
	f.checkLateSecret(t, got, marker, target, "a hidden symlink's target, replaced on the host, was read through the link")
}

// TestSecretMadeBehindDanglingSymlink: a denyRead path that is a symbolic
// link to a file that does not exist yet (a dotfiles manager's ~/.netrc ->
// dotfiles/netrc before the first login) is hidden at its name, and the
// file it leads to was looked at by no one: the user made it on the host
// while the command ran (a login), and the command read it by its own
// name, which readlink tells (attack pass 110). The run is ended naming
// it; without moat the user reads it.
func TestSecretMadeBehindDanglingSymlink(t *testing.T) {
	f := newFixture(t)
	dots := filepath.Join(f.outside, "dotfiles")
	must(t, os.Mkdir(dots, 0o755))
	target := filepath.Join(dots, "netrc")
	link := filepath.Join(f.outside, ".netrc")
	must(t, os.Symlink(target, link))
	marker := filepath.Join(f.work, "started")
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, link}})
	wait := onceStarted(marker, func() {
		saveOver(target)
	})
	got := f.sandboxedWith(settings, "mark-then", marker, "sleep-then", "2.5", "read", target)
	wait()
	f.checkLateSecret(t, got, marker, target, "a file made on the host where a hidden dangling symlink leads was read")
}

// TestSecretReplacedBelowReadAgainByLink: denyRead D and D/sub/token,
// allowRead a symbolic link that leads to D/sub: the allowRead shows D/sub
// again, so nothing but the token's own mask hides it, and the look for
// replaced hidden files left it out as one under D's mask (it compared
// where the link's directory leads, not where the link leads): the file
// the user saved over it on the host was read (attack pass 110). Without
// moat the user reads it.
func TestSecretReplacedBelowReadAgainByLink(t *testing.T) {
	f := newFixture(t)
	d := filepath.Join(f.outside, "conf")
	sub := filepath.Join(d, "sub")
	must(t, os.MkdirAll(sub, 0o755))
	token := filepath.Join(sub, "token")
	must(t, os.WriteFile(token, []byte("old\n"), 0o600))
	shortcut := filepath.Join(f.outside, "shortcut")
	must(t, os.Symlink(sub, shortcut))
	marker := filepath.Join(f.work, "started")
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, d, token}, "allowRead": []string{shortcut}})
	wait := onceStarted(marker, func() {
		saveOver(token)
	})
	got := f.sandboxedWith(settings, "mark-then", marker, "sleep-then", "2.5", "read", token)
	wait()
	f.checkLateSecret(t, got, marker, token, "a hidden file below an allowRead symlink's target in a hidden directory, replaced on the host, was read")
}
