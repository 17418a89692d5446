//go:build linux

package privtests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// Mercurial state a sandboxed command leaves that makes the user's next
// hg status, outside moat, run a program (attack pass 89): hg reads a
// repository's .hg/hgrc (and a share's hgrc-not-shared, and through
// .hg/sharedpath another repository's hgrc) when the user owns it, and runs
// its [hooks]. Each route below ran a pre-status hook, as root and as the
// user, with the working directory's tree writable: an existing
// repository's hgrc edited, a new repository made in a project that is
// not one, a share's hgrc-not-shared, a .hg symlink to a planted
// directory, a share made in one run to a directory staged in an earlier
// one, and the user's ~/.hgrc in a writable home. The same edit without
// moat must run the hook.
func TestHgStateTakenOut(t *testing.T) {
	testutil.RequireRoot(t)
	if viaSession() {
		// It runs moat run itself, as root and as nobody (not through
		// the fixture's sandboxed helpers): under MOAT_VIA=session it
		// would make the same 40 runs again.
		t.Skip("runs moat run itself: make test-go runs it")
	}
	if _, err := exec.LookPath("hg"); err != nil {
		t.Skip("hg (Mercurial) is not installed (make deps installs it): the Mercurial routes cannot be shown")
	}
	const nobody = 65534
	const hook = "[hooks]\\npre-status = touch "
	type route struct {
		name   string
		setup  string   // run first, as the user, outside moat, in the work tree
		old    bool     // what setup made is older than the run
		cmds   []string // what the command does, one run each (a pause between)
		status string   // where the user then runs hg status
		homeRO bool     // the home is not writable
	}
	for _, tier := range []string{"root", "rootless"} {
		t.Run(tier, func(t *testing.T) {
			testutil.RequireUserns(t)
			f := makeFixture(t)
			settings := f.writeSettings(map[string]any{"allowWrite": []string{f.work, f.home}})
			settingsHomeRO := f.writeSettings(map[string]any{"allowWrite": []string{f.work}})
			var cred *syscall.Credential
			if tier == "rootless" {
				giveToNobody(t, f)
				cred = &syscall.Credential{Uid: nobody, Gid: nobody}
			}
			marker := func(name string) string { return filepath.Join(f.root, "pwned-hg-"+tier+"-"+name) }
			routes := []route{
				{name: "hgrc", setup: "hg init r",
					cmds: []string{"printf '" + hook + marker("hgrc") + "\\n' >> r/.hg/hgrc"}, status: "r"},
				// An hgrc that exists when the run starts (and requires) is
				// read-only during the run: the user's hg status meanwhile
				// would run what the command wrote.
				{name: "hgrc-existing", setup: "hg init e && printf '[paths]\\n' > e/.hg/hgrc",
					cmds: []string{"(printf '" + hook + marker("hgrc-existing") + "\\n' >> e/.hg/hgrc && echo WROTE-HGRC || true) && (touch e/.hg/requires && echo WROTE-REQUIRES || true)"}, status: "e"},
				{name: "new-repository",
					cmds: []string{"mkdir -p n/.hg && printf 'store\\n' > n/.hg/requires && printf '" + hook + marker("new-repository") + "\\n' > n/.hg/hgrc"}, status: "n"},
				{name: "hgrc-not-shared", setup: "hg init src && hg --config extensions.share= share -q src dst",
					cmds: []string{"printf '" + hook + marker("hgrc-not-shared") + "\\n' > dst/.hg/hgrc-not-shared"}, status: "dst"},
				{name: "symlink",
					cmds: []string{"mkdir -p l/x && printf 'store\\n' > l/x/requires && printf '" + hook + marker("symlink") + "\\n' > l/x/hgrc && ln -s x l/.hg"}, status: "l"},
				{name: "staged-share", setup: "hg init s0",
					cmds: []string{
						"mkdir -p stage/store && cp s0/.hg/requires stage/ && cp s0/.hg/store/requires stage/store/ && printf '" + hook + marker("staged-share") + "\\n' > stage/hgrc",
						"mkdir -p x/.hg && cp s0/.hg/requires x/.hg/ && echo shared >> x/.hg/requires && echo \"$PWD/stage\" > x/.hg/sharedpath",
					}, status: "x"},
				// The user's hgrc includes a file in the tree the command
				// makes (%include, relative to the hgrc's directory).
				{name: "include", setup: "hg init i && printf '%%include ../../inc.rc\\n' > i/.hg/hgrc", old: true,
					cmds: []string{"printf '" + hook + marker("include") + "\\n' > inc.rc"}, status: "i"},
				{name: "home-config-hg", setup: "hg init h",
					cmds: []string{"mkdir -p \"$HOME/.config/hg\" && printf '" + hook + marker("home-config-hg") + "\\n' > \"$HOME/.config/hg/hgrc\""}, status: "h"},
				{name: "home-hgrc", setup: "hg init h",
					cmds: []string{"printf '" + hook + marker("home-hgrc") + "\\n' > \"$HOME/.hgrc\""}, status: "h"},
				// The user's ~/.hgrc, in a home the command cannot write,
				// includes a file of the writable project, by a relative
				// path or through $HOME, which hg expands (attack pass 94).
				{name: "user-include", setup: "hg init u && printf '%%include ../work/uinc.rc\\n' > \"$HOME/.hgrc\"", homeRO: true,
					cmds: []string{"printf '" + hook + marker("user-include") + "\\n' > uinc.rc"}, status: "u"},
				// One that exists is read-only during the run: the user's
				// hg status meanwhile would run what the command wrote.
				{name: "user-include-existing", setup: "hg init u && printf '%%include ../work/uinc.rc\\n' > \"$HOME/.hgrc\" && printf '[ui]\\n' > uinc.rc", homeRO: true,
					cmds: []string{"(printf '" + hook + marker("user-include-existing") + "\\n' >> uinc.rc && echo WROTE-INCLUDE || true)"}, status: "u"},
				{name: "user-include-env", setup: "hg init u && printf '%%include $HOME/../work/uinc.rc\\n' > \"$HOME/.hgrc\"", homeRO: true,
					cmds: []string{"printf '" + hook + marker("user-include-env") + "\\n' > uinc.rc"}, status: "u"},
				// ~name is that user's home from the password database
				// (Python's expanduser), daemon's /usr/sbin here: the
				// audit read it as a relative path and judged nothing
				// (attack pass 98).
				{name: "user-include-tilde-user", setup: "hg init u && printf '%%include ~daemon/../..%s/uinc.rc\\n' \"$PWD\" > \"$HOME/.hgrc\"", homeRO: true,
					cmds: []string{"printf '" + hook + marker("user-include-tilde-user") + "\\n' > uinc.rc"}, status: "u"},
			}
			sh := func(dir string, argv ...string) result {
				t.Helper()
				return f.runAs(t, cred, dir, argv...)
			}
			reset := func(r route) {
				t.Helper()
				for _, p := range []string{"r", "n", "src", "dst", "l", "s0", "stage", "x", "h", "e", "i", "inc.rc", "u", "uinc.rc"} {
					must(t, os.RemoveAll(filepath.Join(f.work, p)))
				}
				os.Remove(filepath.Join(f.home, ".hgrc"))
				os.RemoveAll(filepath.Join(f.home, ".config", "hg"))
				os.Remove(marker(r.name))
				if r.setup != "" {
					if got := sh(f.work, "/bin/sh", "-c", r.setup); got.code != 0 {
						t.Fatalf("%s: setup: %s", r.name, got.out)
					}
				}
			}
			ran := func(r route) bool {
				t.Helper()
				sh(filepath.Join(f.work, r.status), "hg", "status")
				_, err := os.Lstat(marker(r.name))
				return err == nil
			}
			for _, r := range routes {
				reset(r)
				for i, c := range r.cmds {
					if i > 0 || r.old {
						// Past the next run's start, rounded down, less a
						// second: what the earlier run made is old to it.
						time.Sleep(2100 * time.Millisecond)
					}
					st := settings
					if r.homeRO {
						st = settingsHomeRO
					}
					got := sh(f.work, moatBin, "run", "--settings", st, "--", "/bin/sh", "-c", c+" && echo DONE")
					if !strings.Contains(got.out, "DONE") {
						t.Fatalf("%s: the command did not run under moat (exit %d):\n%s", r.name, got.code, got.out)
					}
					if strings.Contains(got.out, "WROTE-") {
						t.Errorf("%s: a protected file of .hg was writable during the run:\n%s", r.name, got.out)
					}
				}
				if ran(r) {
					t.Errorf("%s: ESCAPE: the user's hg status ran the hook the sandboxed command left", r.name)
				}
				reset(r)
				for _, c := range r.cmds {
					if got := sh(f.work, "/bin/sh", "-c", c); got.code != 0 {
						t.Fatalf("%s: without moat: %s", r.name, got.out)
					}
				}
				if !ran(r) {
					t.Errorf("%s: the same edit without moat must run the hook (or this test cannot see an escape)", r.name)
				}
			}
		})
	}
}

// What the user does with Mercurial inside the sandbox still works: a
// commit in an existing repository, and a clone whose hgrc only names its
// source (kept by the audit).
func TestHgWorkKeptInSandbox(t *testing.T) {
	coldRunsOnly(t)
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("hg"); err != nil {
		t.Skip("hg (Mercurial) is not installed (make deps installs it)")
	}
	testutil.RequireUserns(t)
	f := makeFixture(t)
	cmd := exec.Command("hg", "init", "repo")
	cmd.Dir = f.work
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hg init: %v\n%s", err, out)
	}
	got := f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c",
		"cd repo && echo a > f && hg add -q f && hg -q commit -u t -m one && cd .. && hg -q clone repo copy && echo DONE")
	if got.code != 0 || !strings.Contains(got.out, "DONE") {
		t.Fatalf("hg under moat (exit %d):\n%s", got.code, got.out)
	}
	if strings.Contains(got.out, "hgrc") {
		t.Errorf("the clone's hgrc ([paths] only) was taken out:\n%s", got.out)
	}
	if b, err := os.ReadFile(filepath.Join(f.work, "copy", ".hg", "hgrc")); err != nil || !strings.Contains(string(b), "default = ") {
		t.Errorf("the clone's hgrc: %q, %v", b, err)
	}
}

// $HGRCPATH of the user's shell (a per-project one, set by direnv) names
// files of the writable project: hg reads each as an hgrc, and a
// directory's *.rc files too. A run that added a hook to one, made one
// that did not exist, or made an .rc in such a directory ran the hook at
// the user's next hg status, outside moat (attack pass 103). The same
// edit without moat must run it.
func TestHgrcPathTakenOut(t *testing.T) {
	testutil.RequireRoot(t)
	if viaSession() {
		t.Skip("runs moat run itself: make test-go runs it")
	}
	if _, err := exec.LookPath("hg"); err != nil {
		t.Skip("hg (Mercurial) is not installed (make deps installs it): the Mercurial routes cannot be shown")
	}
	const nobody = 65534
	for _, tier := range []string{"root", "rootless"} {
		t.Run(tier, func(t *testing.T) {
			testutil.RequireUserns(t)
			f := makeFixture(t)
			settings := f.writeSettings(map[string]any{"allowWrite": []string{f.work}})
			var cred *syscall.Credential
			if tier == "rootless" {
				giveToNobody(t, f)
				cred = &syscall.Credential{Uid: nobody, Gid: nobody}
			}
			marker := filepath.Join(f.root, "pwned-hgrcpath-"+tier)
			hook := "printf '[hooks]\\npre-status = touch " + marker + "\\n'"
			hgrcpath := "HGRCPATH=" + f.work + "/team.hgrc:" + f.work + "/new.rc:" + f.work + "/hgrc.d"
			sh := func(argv ...string) result {
				t.Helper()
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Dir, cmd.Env = f.work, append(f.env(), hgrcpath)
				if cred != nil {
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
				}
				out, _ := cmd.CombinedOutput()
				return result{out: string(out)}
			}
			for _, r := range []struct{ name, cmd string }{
				{"existing-file", hook + " >> team.hgrc"},
				{"new-file", hook + " > new.rc"},
				{"directory", hook + " > hgrc.d/x.rc"},
			} {
				for _, p := range []string{"repo", "team.hgrc", "new.rc", "hgrc.d"} {
					must(t, os.RemoveAll(filepath.Join(f.work, p)))
				}
				os.Remove(marker)
				if got := sh("/bin/sh", "-c", "hg init repo && printf '[ui]\\nusername = u\\n' > team.hgrc && mkdir hgrc.d && echo OK"); !strings.Contains(got.out, "OK") {
					t.Fatalf("%s: setup: %s", r.name, got.out)
				}
				time.Sleep(1100 * time.Millisecond) // the setup is older than the run
				got := sh(moatBin, "run", "--settings", settings, "--", "/bin/sh", "-c", "("+r.cmd+" || true) && echo DONE")
				if !strings.Contains(got.out, "DONE") {
					t.Fatalf("%s: the command did not run under moat:\n%s", r.name, got.out)
				}
				sh("/bin/sh", "-c", "cd repo && hg status")
				if _, err := os.Lstat(marker); err == nil {
					t.Errorf("%s: ESCAPE: the user's hg status ran the hook the sandboxed command left in a file $HGRCPATH names:\n%s", r.name, got.out)
				}
				os.Remove(marker)
				sh("/bin/sh", "-c", r.cmd)
				sh("/bin/sh", "-c", "cd repo && hg status")
				if _, err := os.Lstat(marker); err != nil {
					t.Errorf("%s: the same edit without moat must run the hook (or this test cannot see an escape)", r.name)
				}
			}
		})
	}
}
