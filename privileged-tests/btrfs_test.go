//go:build linux

package privtests

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
	"golang.org/x/sys/unix"
)

// btrfsDir returns a new directory on btrfs that this user may write:
// under MOAT_TEST_BTRFS if it names one, or, as root, on a btrfs image
// the test makes and mounts (mkfs.btrfs); the test skips otherwise.
func btrfsDir(t *testing.T, f *fixture) string {
	t.Helper()
	isBtrfs := func(dir string) bool {
		var st unix.Statfs_t
		return unix.Statfs(dir, &st) == nil && st.Type == unix.BTRFS_SUPER_MAGIC
	}
	if d := os.Getenv("MOAT_TEST_BTRFS"); d != "" {
		if !isBtrfs(d) {
			t.Fatalf("MOAT_TEST_BTRFS=%s is not on btrfs", d)
		}
		dir, err := os.MkdirTemp(d, "moat-btrfs-")
		must(t, err)
		os.Chmod(dir, 0o755)
		t.Cleanup(func() { os.RemoveAll(dir) }) // (an empty subvolume goes with rmdir)
		return dir
	}
	if !root() {
		t.Skip("no btrfs at hand: as root (it makes one), or with MOAT_TEST_BTRFS naming a btrfs directory this user may write")
	}
	return loopFS(t, f, "btrfs", 256<<20, "mkfs.btrfs", "btrfs-progs")
}

// loopFS makes a filesystem of size bytes on a loop image in the
// fixture's root with mkfs (and its arguments after the image's name:
// none), mounts it and returns where; it is unmounted when the test
// ends. pkg is the Debian package with mkfs (make deps installs it).
func loopFS(t *testing.T, f *fixture, name string, size int64, mkfs, pkg string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath(mkfs)
	if err != nil {
		testutil.Unavailable(t, "%s: %v (make deps installs %s)", mkfs, err, pkg)
	}
	img, mnt := filepath.Join(f.root, name+".img"), filepath.Join(f.root, name)
	must(t, os.WriteFile(img, nil, 0o600))
	must(t, os.Truncate(img, size))
	must(t, os.Mkdir(mnt, 0o755))
	if out, err := exec.Command(bin, append(append([]string{"-q"}, args...), img)...).CombinedOutput(); err != nil {
		testutil.Unavailable(t, "%s %v: %v: %s", mkfs, args, err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		testutil.Unavailable(t, "mount a %s image: %v: %s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	return mnt
}

// btrfs's subvolume and snapshot ioctls are refused in every tier (attack
// pass 80). They act on a directory opened for reading, judged by its mode
// alone: a snapshot of a subvolume the user owns copied its denyRead
// directory into the writable tree, where the command read it (the mask
// hides the path, not the subvolume); and in the no-namespace tier, where
// Landlock alone keeps writes in the writable paths, a subvolume, and a
// snapshot of one the command filled (an authorized_keys), was made in a
// directory outside them. Each attack works without moat.
func TestBtrfsSubvolumes(t *testing.T) {
	f := makeFixture(t)
	bt := btrfsDir(t, f)
	work, outside := filepath.Join(bt, "work"), filepath.Join(bt, "outside")
	must(t, os.Mkdir(work, 0o755))
	must(t, os.Mkdir(outside, 0o755))
	// A subvolume of the user's with a denyRead directory in it (a home
	// directory that is a subvolume, as systemd-homed makes them), and one
	// in the writable tree holding a file to plant outside.
	home, sv := filepath.Join(bt, "home"), filepath.Join(work, "sv")
	for _, d := range []string{home, sv} {
		if got := f.direct("btrfs-subvol", filepath.Dir(d), filepath.Base(d)); !got.escaped() {
			t.Fatalf("a subvolume must be made without moat:\n%s", got.out)
		}
	}
	must(t, os.Mkdir(filepath.Join(home, ".secret"), 0o700))
	must(t, os.WriteFile(filepath.Join(home, ".secret", "key"), []byte(secretText+"\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(sv, "authorized_keys"), []byte(targetText+"\n"), 0o600))
	settings := f.writeSettings(map[string]any{
		"allowWrite": []string{f.work, work},
		"denyRead":   []string{f.secret, f.outside + "/secretdir", filepath.Join(home, ".secret")},
	})
	attacks := func(t *testing.T, tier string, sandboxed func(...string) result) {
		for _, a := range []struct {
			name string
			args func(suffix string) []string
		}{
			{"snapshot of a denyRead directory", func(s string) []string {
				return []string{"btrfs-snapshot", home, work, "snap" + s, ".secret/key"}
			}},
			{"subvolume outside the writable paths", func(s string) []string {
				return []string{"btrfs-subvol", outside, "planted" + s}
			}},
			{"snapshot planted outside the writable paths", func(s string) []string {
				return []string{"btrfs-snapshot", sv, outside, ".ssh" + s, "authorized_keys"}
			}},
		} {
			t.Run(a.name, func(t *testing.T) {
				got := sandboxed(a.args("-moat-" + tier)...)
				if got.escaped() {
					t.Errorf("ESCAPE under moat: %s", got.out)
				} else if !strings.Contains(got.out, "blocked:") {
					t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
				} else if !viaSession() && !strings.Contains(got.out, "btrfs") {
					t.Errorf("the refused ioctl must be reported:\n%s", got.out)
				}
				if base := f.direct(a.args("-direct-" + tier)...); !base.escaped() {
					t.Errorf("the attack must work without moat:\n%s", base.out)
				}
			})
		}
	}
	t.Run("namespaces", func(t *testing.T) {
		testutil.RequireUserns(t)
		attacks(t, "ns", func(args ...string) result { return f.sandboxedWith(settings, args...) })
	})
	if landlockABI() > 0 && !viaSession() {
		t.Run("no-namespace tier", func(t *testing.T) {
			attacks(t, "nons", func(args ...string) result {
				return f.noUserns(moatBin, append([]string{"run", "--best-effort", "--settings", settings, "--", self}, args...)...)
			})
		})
	}
}

// fscryptDir returns a new directory on a filesystem with encryption
// (fscrypt) that this user may write: under MOAT_TEST_FSCRYPT if it names
// one, or, as root, on an ext4 image made with -O encrypt and mounted for
// the test (its keys go with the unmount); the test skips otherwise.
func fscryptDir(t *testing.T, f *fixture) string {
	t.Helper()
	if d := os.Getenv("MOAT_TEST_FSCRYPT"); d != "" {
		dir, err := os.MkdirTemp(d, "moat-fscrypt-")
		must(t, err)
		os.Chmod(dir, 0o755)
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	if !root() {
		t.Skip("no fscrypt filesystem at hand: as root (it makes one), or with MOAT_TEST_FSCRYPT naming a directory this user may write on one")
	}
	return loopFS(t, f, "fscrypt", 32<<20, "mkfs.ext4", "e2fsprogs", "-O", "encrypt")
}

// fscrypt's keys and policies are refused in every tier (attack pass 80).
// A key added to a filesystem, through any file of it opened for reading
// (a read-only mount too), stays in the filesystem's keyring after the
// run, charged to the user's key quota: a command filled the quota, and
// the user's own add_key and unlocking failed afterwards (EDQUOT); and
// removing the user's claim to a key locks the user's encrypted
// directory. Each works without moat.
func TestFscryptKeys(t *testing.T) {
	f := makeFixture(t)
	fs := fscryptDir(t, f)
	// An encrypted directory of the user's, unlocked, outside the
	// writable paths.
	locked := filepath.Join(fs, "private")
	must(t, os.Mkdir(locked, 0o700))
	raw := []byte(strings.Repeat("u", 64))
	id, err := fscryptAddKey(fs, raw)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTTY) {
		testutil.Unavailable(t, "no fscrypt in this kernel: %v", err)
	}
	must(t, err)
	must(t, fscryptSetPolicy(locked, id))
	must(t, os.WriteFile(filepath.Join(locked, "notes"), []byte(secretText+"\n"), 0o600))
	t.Cleanup(func() { // the user's key quota, where the filesystem stays mounted
		for _, k := range [][]byte{raw, []byte(strings.Repeat("k", 64))} {
			if id, err := fscryptAddKey(fs, k); err == nil {
				fscryptKeyIoctl(fs, fsIocRemoveEncryptionKey, id)
			}
		}
	})
	unlock := func() {
		if _, err := fscryptAddKey(fs, raw); err != nil {
			t.Fatalf("unlock %s again: %v", locked, err)
		}
	}
	attacks := func(t *testing.T, sandboxed func(...string) result) {
		for _, args := range [][]string{{"fscrypt-add-key", fs}, {"fscrypt-lock", locked}} {
			t.Run(args[0], func(t *testing.T) {
				got := sandboxed(args...)
				if got.escaped() {
					t.Errorf("ESCAPE under moat: %s", got.out)
				} else if !strings.Contains(got.out, "blocked:") {
					t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
				} else if !viaSession() && !strings.Contains(got.out, "fscrypt") {
					t.Errorf("the refused ioctl must be reported:\n%s", got.out)
				}
				unlock()
				if base := f.direct(args...); !base.escaped() {
					t.Errorf("the attack must work without moat:\n%s", base.out)
				}
				unlock()
			})
		}
	}
	t.Run("namespaces", func(t *testing.T) {
		testutil.RequireUserns(t)
		attacks(t, f.sandboxed)
	})
	if landlockABI() > 0 && !viaSession() {
		t.Run("no-namespace tier", func(t *testing.T) {
			attacks(t, f.bestEffort)
		})
	}
}
