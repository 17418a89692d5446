//go:build linux

package privtests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// A denied path reached through a second mount of the same directory
// (attack pass 84). The host has the directory that holds the denyRead
// paths bound at a second place too, and the denied directory itself at a
// third: the mask hid one path, not the files, so the command read the
// secret under the other names, as root and rootless. In the no-namespace
// tier it was worse: reads are granted on every sibling along the way to a
// hidden path, and the sibling that was the second mount is the very
// directory (its inode) that holds the secret, so the denied path itself
// was read.
func TestReadDeniedThroughSecondMount(t *testing.T) {
	testutil.RequireRoot(t)
	const nobody = 65534
	asNobody := &syscall.Credential{Uid: nobody, Gid: nobody}
	for _, tier := range []string{"root", "rootless", "no user namespace"} {
		t.Run(tier, func(t *testing.T) {
			f := makeFixture(t)
			var cred *syscall.Credential
			run, attacker := f.sandboxed, self
			switch tier {
			case "rootless":
				testutil.RequireUserns(t)
				// The fixture is nobody's, who runs moat and, for the
				// baseline, reads the secret without it.
				attacker, cred = giveToNobody(t, f), asNobody
				run = func(args ...string) result {
					return f.execAs(cred, f.env(), moatBin, append([]string{"run", "--settings", f.settings, "--", attacker}, args...)...)
				}
			case "no user namespace":
				run = f.bestEffort
			default:
				testutil.RequireUserns(t)
			}
			alias := filepath.Join(f.root, "alias")          // outside/, bound again
			dirAlias := filepath.Join(f.root, "secretalias") // outside/secretdir, bound again
			// A filesystem mounted inside the denied directory, and bound
			// elsewhere too.
			inner, innerAlias := f.outside+"/secretdir/mnt", filepath.Join(f.root, "mntalias")
			must(t, os.Mkdir(inner, 0o755))
			if err := unix.Mount("tmpfs", inner, "tmpfs", 0, "mode=0755"); err != nil {
				t.Fatalf("mount a tmpfs at %s: %v", inner, err)
			}
			t.Cleanup(func() { unix.Unmount(inner, unix.MNT_DETACH) })
			must(t, os.WriteFile(inner+"/key", []byte(secretText+"\n"), 0o644))
			for _, m := range [][2]string{{f.outside, alias}, {f.outside + "/secretdir", dirAlias}, {inner, innerAlias}} {
				must(t, os.MkdirAll(m[1], 0o755))
				if err := unix.Mount(m[0], m[1], "", unix.MS_BIND, ""); err != nil {
					t.Fatalf("bind %s at %s: %v", m[0], m[1], err)
				}
				t.Cleanup(func() { unix.Unmount(m[1], unix.MNT_DETACH) })
			}
			for _, p := range []string{
				alias + "/secret.txt",        // the file, through its parent's second mount
				alias + "/secretdir/key",     // the directory, through its parent's second mount
				dirAlias + "/key",            // the directory, through its own second mount
				innerAlias + "/key",          // a filesystem mounted inside it, through its second mount
				f.secret,                     // the file itself
				f.outside + "/secretdir/key", // the directory itself
			} {
				got := run("read", p)
				if got.escaped() {
					t.Errorf("ESCAPE under moat: read %s:\n%s", p, got.out)
				} else if !strings.Contains(got.out, "blocked:") {
					t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
				}
				if base := f.execAs(cred, f.env(), attacker, "read", p); !base.escaped() {
					t.Errorf("the secret must be readable at %s without moat:\n%s", p, base.out)
				}
			}
		})
	}
}

// The same on btrfs, where the second mount is the usual layout: the
// filesystem's top level mounted beside its subvolumes (snapper's,
// timeshift's and btrbk's), so a denyRead file of a subvolume's mount is
// also TOP/SUBVOLUME/file. Root's, the no-namespace tier's too.
func TestReadDeniedThroughBtrfsTopLevel(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tier := range []string{"root", "no user namespace"} {
		t.Run(tier, func(t *testing.T) {
			f := makeFixture(t)
			top := loopFS(t, f, "btrfs", 256<<20, "mkfs.btrfs", "btrfs-progs")
			if out, err := exec.Command("btrfs", "subvolume", "create", top+"/home").CombinedOutput(); err != nil {
				testutil.Unavailable(t, "btrfs subvolume create: %v: %s", err, out)
			}
			must(t, os.WriteFile(top+"/home/secret", []byte(secretText+"\n"), 0o644))
			sub := filepath.Join(f.root, "subvolume")
			must(t, os.Mkdir(sub, 0o755))
			if out, err := exec.Command("mount", "-o", "loop,subvol=home", top+".img", sub).CombinedOutput(); err != nil {
				t.Fatalf("mount the subvolume: %v: %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", "-l", sub).Run() })
			settings := f.writeSettings(map[string]any{"denyRead": []string{sub + "/secret"}})
			run := func(args ...string) result { return f.sandboxedWith(settings, args...) }
			if tier != "root" {
				run = func(args ...string) result {
					return f.noUserns(moatBin, append([]string{"run", "--best-effort", "--settings", settings, "--", self}, args...)...)
				}
			} else {
				testutil.RequireUserns(t)
			}
			for _, p := range []string{top + "/home/secret", sub + "/secret"} {
				f.attackWith(run, []string{"read", p}, nil)
			}
		})
	}
}

// A denyWrite file reached through a second mount of its directory (attack
// pass 84): a writable root's mounts below it are writable, so with the
// file's directory bound inside the writable root too, or bound elsewhere
// and that place made writable, the command wrote the file under the
// other name. As root and rootless (the no-namespace tier does not keep
// denyWrite inside a writable tree at all, and says so).
func TestDenyWriteThroughSecondMount(t *testing.T) {
	coldRunsOnly(t)
	testutil.RequireRoot(t)
	const nobody = 65534
	for _, tier := range []string{"root", "rootless"} {
		t.Run(tier, func(t *testing.T) {
			testutil.RequireUserns(t)
			f := makeFixture(t)
			inside := filepath.Join(f.work, "dir")
			must(t, os.Mkdir(inside, 0o755))
			keep, keep2 := filepath.Join(inside, "keep"), filepath.Join(f.outside, "keep")
			writable := filepath.Join(f.root, "writable") // f.outside, bound again and made writable
			must(t, os.Mkdir(writable, 0o755))
			for _, k := range []string{keep, keep2} {
				must(t, os.WriteFile(k, []byte("orig\n"), 0o644))
			}
			settings := f.writeSettings(map[string]any{
				"allowWrite": []string{f.work, writable},
				"denyWrite":  []string{keep, keep2},
			})
			var cred *syscall.Credential
			attacker := self
			if tier == "rootless" {
				attacker = giveToNobody(t, f)
				cred = &syscall.Credential{Uid: nobody, Gid: nobody}
			}
			alias := filepath.Join(f.work, "alias") // f.work/dir, bound inside the writable root
			must(t, os.Mkdir(alias, 0o755))
			for _, m := range [][2]string{{inside, alias}, {f.outside, writable}} {
				if err := unix.Mount(m[0], m[1], "", unix.MS_BIND, ""); err != nil {
					t.Fatalf("bind %s at %s: %v", m[0], m[1], err)
				}
				t.Cleanup(func() { unix.Unmount(m[1], unix.MNT_DETACH) })
			}
			for _, c := range [][2]string{{keep, alias + "/keep"}, {keep2, writable + "/keep"}} {
				reset := func() {
					must(t, os.WriteFile(c[0], []byte("orig\n"), 0o644))
					if cred != nil {
						must(t, os.Lchown(c[0], nobody, nobody))
					}
				}
				reset()
				got := f.execAs(cred, f.env(), moatBin, "run", "--settings", settings, "--", attacker, "write", c[1], "pwned")
				if got.escaped() || readFile(t, c[0]) != "orig\n" {
					t.Errorf("ESCAPE under moat: wrote %s as %s:\n%s", c[0], c[1], got.out)
				} else if !strings.Contains(got.out, "blocked:") {
					t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
				}
				reset()
				if base := f.execAs(cred, f.env(), attacker, "write", c[1], "pwned"); !base.escaped() || readFile(t, c[0]) != "pwned" {
					t.Errorf("%s must be writable as %s without moat:\n%s", c[0], c[1], base.out)
				}
			}
		})
	}
}

// A hard link of a denyRead file beside it or in a directory above it is
// hidden too (attack pass 84: a backup kept as a link, secret.bak, was
// read; the mask hides a path, not a file). Links elsewhere stay
// readable, and moat says so (cmd/moat TestDeniedFileHardLinksNoted).
func TestReadDeniedHardLinkAbove(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tier := range []string{"root", "no user namespace"} {
		t.Run(tier, func(t *testing.T) {
			f := makeFixture(t)
			beside, above := f.outside+"/secret.bak", f.root+"/secret-copy"
			for _, l := range []string{beside, above} {
				must(t, os.Link(f.secret, l))
			}
			run := f.sandboxed
			if tier == "root" {
				testutil.RequireUserns(t)
			} else {
				run = f.bestEffort
			}
			for _, p := range []string{beside, above} {
				f.attackWith(run, []string{"read", p}, nil)
			}
			if got := run("read", f.outside+"/target.txt"); !strings.Contains(got.out, "ESCAPED") {
				t.Errorf("a file beside the hidden one must stay readable:\n%s", got.out)
			}
		})
	}
}

// giveToNobody makes the fixture's tree nobody's (65534), with a copy of
// the attack's program in it (the test's own is in root's /tmp), and
// returns that copy's path.
func giveToNobody(t *testing.T, f *fixture) string {
	t.Helper()
	attacker, err := copyExecutable(self, filepath.Join(f.root, "attack"))
	if err != nil {
		t.Fatal(err)
	}
	must(t, filepath.Walk(f.root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}))
	return attacker
}
