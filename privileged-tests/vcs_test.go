//go:build linux

package privtests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// vcsRoute is one way a sandboxed command leaves state for a version
// control tool that makes the user's next ordinary command of that tool,
// outside moat, run a program (attack pass 93).
type vcsRoute struct {
	name  string
	setup string // run first, as the user, outside moat, in the work tree
	cmd   string // what the sandboxed command does (one run)
	user  string // what the user then runs, outside moat, in the work tree
}

// runAs runs argv in dir with the fixture's environment, as cred (nil:
// this process's user), and returns its exit status and output.
func (f *fixture) runAs(t *testing.T, cred *syscall.Credential, dir string, argv ...string) result {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, f.env()
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", argv, err)
	}
	return result{code: code, out: string(out)}
}

// runVCSRoutes runs each route under moat, as root and as nobody, with the
// work tree and the home writable, then the user's command; the marker the
// route's program touches (MARK in the strings) must not appear. The same
// command without moat must make it appear, or the test could not see an
// escape. A protected file written during the run prints WROTE-.
func runVCSRoutes(t *testing.T, tool string, clean []string, routes []vcsRoute) {
	const nobody = 65534
	for _, tier := range []string{"root", "rootless"} {
		t.Run(tier, func(t *testing.T) {
			testutil.RequireUserns(t)
			f := makeFixture(t)
			settings := f.writeSettings(map[string]any{"allowWrite": []string{f.work, f.home}})
			var cred *syscall.Credential
			if tier == "rootless" {
				giveToNobody(t, f)
				cred = &syscall.Credential{Uid: nobody, Gid: nobody}
			}
			sh := func(argv ...string) result {
				t.Helper()
				return f.runAs(t, cred, f.work, argv...)
			}
			for _, r := range routes {
				marker := filepath.Join(f.root, "pwned-"+tool+"-"+tier+"-"+r.name)
				expand := func(s string) string { return strings.ReplaceAll(s, "MARK", marker) }
				reset := func() {
					t.Helper()
					for _, p := range clean {
						must(t, os.RemoveAll(filepath.Join(f.work, p)))
					}
					os.RemoveAll(filepath.Join(f.home, "."+tool))
					os.Remove(marker)
					if r.setup != "" {
						if got := sh("/bin/sh", "-c", expand(r.setup)); got.code != 0 {
							t.Fatalf("%s: setup: %s", r.name, got.out)
						}
					}
				}
				ran := func() bool {
					t.Helper()
					sh("/bin/sh", "-c", expand(r.user))
					_, err := os.Lstat(marker)
					return err == nil
				}
				reset()
				got := sh(moatBin, "run", "--settings", settings, "--", "/bin/sh", "-c", expand(r.cmd)+"; echo DONE")
				if !strings.Contains(got.out, "DONE") {
					t.Fatalf("%s: the command did not run under moat (exit %d):\n%s", r.name, got.code, got.out)
				}
				if strings.Contains(got.out, "WROTE-") {
					t.Errorf("%s: a protected file was writable during the run:\n%s", r.name, got.out)
				}
				if ran() {
					t.Errorf("%s: ESCAPE: the user's %s ran the program the sandboxed command left:\n%s", r.name, tool, got.out)
				}
				reset()
				sh("/bin/sh", "-c", expand(r.cmd))
				if !ran() {
					t.Errorf("%s: the same command without moat must run the program (or this test cannot see an escape)", r.name)
				}
			}
		})
	}
}

// darcs reads a repository's _darcs/prefs/defaults (and ~/.darcs/defaults)
// as every command's options, with no prompt for a prehook it names: a
// sandboxed command that made one, in an existing repository or its home,
// had the user's next darcs whatsnew run a program, as root and as the
// user (attack pass 93). An existing defaults is read-only during the run.
func TestDarcsStateTakenOut(t *testing.T) {
	testutil.RequireRoot(t)
	if viaSession() {
		t.Skip("runs moat run itself: make test-go runs it")
	}
	if _, err := exec.LookPath("darcs"); err != nil {
		t.Skip("darcs is not installed (make deps installs it): the darcs routes cannot be shown")
	}
	const hook = "printf 'ALL prehook touch MARK\\n' "
	runVCSRoutes(t, "darcs", []string{"d"}, []vcsRoute{
		{name: "defaults", setup: "mkdir d && cd d && darcs init -q",
			cmd: hook + "> d/_darcs/prefs/defaults", user: "cd d && darcs whatsnew"},
		{name: "defaults-existing", setup: "mkdir d && cd d && darcs init -q && printf 'ALL look-for-adds\\n' > _darcs/prefs/defaults",
			cmd: "(" + hook + ">> d/_darcs/prefs/defaults && echo WROTE-DEFAULTS)", user: "cd d && darcs whatsnew"},
		{name: "home", setup: "mkdir d && cd d && darcs init -q",
			cmd: "mkdir -p \"$HOME/.darcs\" && " + hook + "> \"$HOME/.darcs/defaults\"", user: "cd d && darcs whatsnew"},
	})
}

// Fossil keeps a repository's hooks in its database, and a checkout's
// .fslckout names that database: a sandboxed command that pointed an
// existing checkout at a copy it gave a before-commit hook, added the hook
// to a repository in the writable tree, or made a checkout in a project
// that was none, had the user's next fossil commit run a program, as root
// and as the user (attack pass 93). fossil needs its ~/.fossil writable
// (FOSSIL_HOME elsewhere, inside the sandbox) and a user name ($USER).
func TestFossilStateTakenOut(t *testing.T) {
	testutil.RequireRoot(t)
	if viaSession() {
		t.Skip("runs moat run itself: make test-go runs it")
	}
	if _, err := exec.LookPath("fossil"); err != nil {
		t.Skip("fossil is not installed (apt-get install fossil): the Fossil routes cannot be shown")
	}
	const (
		env    = "export USER=t FOSSIL_HOME=$(mktemp -d) && "
		init   = "export USER=t && fossil init r.fossil >/dev/null && mkdir c && cd c && fossil open ../r.fossil >/dev/null && echo a > a && fossil add a >/dev/null && fossil commit -m one --no-warnings >/dev/null"
		hook   = " --command 'touch MARK' --type before-commit --sequence 1"
		commit = "export USER=t && cd c && echo b >> a && fossil commit -m two --no-warnings >/dev/null"
		// A checkout outside the writable trees, of r.fossil in the work
		// tree: the audit takes out a .fslckout in the writable trees
		// changed so close to the run's start, which would hide a route
		// that leaves it as it was.
		outside = "rm -rf ../co && export USER=t && fossil init r.fossil >/dev/null && w=$PWD && mkdir ../co && cd ../co && fossil open \"$w/r.fossil\" >/dev/null && echo a > a && fossil add a >/dev/null && fossil commit -m one --no-warnings >/dev/null"
	)
	runVCSRoutes(t, "fossil", []string{"r.fossil", "r.fossil-journal", "c", "p.fossil"}, []vcsRoute{
		{name: "redirect", setup: init,
			cmd: env + "cp r.fossil c/.p.fossil && cd c && fossil hook add -R .p.fossil" + hook + " && fossil close --force && fossil open -f --keep .p.fossil >/dev/null && echo WROTE-FSLCKOUT", user: commit},
		{name: "repository", setup: init,
			cmd: env + "fossil hook add -R r.fossil" + hook + " && echo WROTE-REPOSITORY", user: commit},
		{name: "new-checkout", setup: "mkdir c && echo a > c/a",
			cmd: env + "fossil init p.fossil >/dev/null && fossil hook add -R p.fossil" + hook + " && cd c && fossil open -f --keep ../p.fossil >/dev/null && fossil add a >/dev/null", user: commit},
		// A hot journal beside the read-only repository (attack pass 94):
		// the user's next fossil rolls it in, and with it the hook of the
		// copy it was made from.
		{name: "journal", setup: outside,
			cmd:  env + "cp r.fossil $FOSSIL_HOME/b.fossil && fossil hook add -R $FOSSIL_HOME/b.fossil" + hook + " && " + python3() + " -c '" + hotJournal + "' $FOSSIL_HOME/b.fossil r.fossil-journal",
			user: "export USER=t && cd ../co && echo b >> a && fossil commit -m two --no-warnings >/dev/null 2>&1"},
		// The user's configuration ~/.config/fossil.db (where there is no
		// ~/.fossil) made in a writable home (attack pass 94): a global
		// diff-command ran at the user's next fossil diff.
		{name: "home-config-new", setup: "mkdir -p \"$HOME/.config\" && " + outside + " && rm -f \"$HOME/.config/fossil.db\"",
			cmd:  "export USER=t && printf '#!/bin/sh\\ntouch MARK\\n' > \"$HOME/h\" && chmod +x \"$HOME/h\" && fossil settings diff-command \"$HOME/h\" --global",
			user: "export USER=t && cd ../co && echo b >> a && fossil diff"},
	})
}

// hotJournal is a Python program: hotJournal SRC JOURNAL writes an SQLite
// rollback journal holding every page of the database SRC, marked hot
// (unsynced: its record count is read from its size), so that the next
// program to open a database of the same page size beside JOURNAL copies
// SRC into it. SQLite's format: an 8-byte magic, the record count, the
// checksum seed, the database's page count, the sector and page sizes,
// padded to the sector; then per page its number, its bytes and a checksum
// (the seed plus every 200th byte from the end). No single quote: it goes
// in one on sh's command line.
const hotJournal = `import struct, sys
b = open(sys.argv[1], "rb").read()
ps = struct.unpack(">H", b[16:18])[0]
ps = 65536 if ps == 1 else ps
n, seed = len(b) // ps, 0x1234
j = (bytes.fromhex("d9d505f920a163d7") + struct.pack(">IIIII", 0xffffffff, seed, n, 512, ps)).ljust(512, b"\0")
for i in range(n):
    pg, c, k = b[i*ps:(i+1)*ps], seed, ps - 200
    while k > 0:
        c, k = (c + pg[k]) & 0xffffffff, k - 200
    j += struct.pack(">I", i + 1) + pg + struct.pack(">I", c)
open(sys.argv[2], "wb").write(j)`

// A Subversion working copy's .svn/wc.db names its repository; a commit to
// a file:// repository runs that repository's hooks in the user's svn. A
// sandboxed command that relocated an existing working copy to a
// repository it made with the working copy's UUID (no access to the real
// one needed), or checked one out of such a repository in a project that
// was none, had the user's next svn commit run its start-commit hook, as
// root and as the user (attack pass 93); so did a hook written in a file://
// repository in the writable tree, found by the search or deeper.
func TestSvnStateTakenOut(t *testing.T) {
	testutil.RequireRoot(t)
	if viaSession() {
		t.Skip("runs moat run itself: make test-go runs it")
	}
	for _, p := range []string{"svn", "svnadmin"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skip(p + " is not installed (apt-get install subversion): the Subversion routes cannot be shown")
		}
	}
	const (
		hook     = "printf '#!/bin/sh\\ntouch MARK\\n' > HOOK && chmod +x HOOK"
		commit   = "cd wc && echo b >> a && svn commit -q -m two"
		checkout = "svnadmin create repo && svn -q checkout \"file://$PWD/repo\" wc && cd wc && echo a > a && svn -q add a && svn -q commit -m one"
		diff     = "cd wc && echo b >> a && svn diff"
	)
	helper := strings.ReplaceAll(hook, "HOOK", "\"$HOME/h\"")
	runVCSRoutes(t, "svn", []string{"repo", "wc", "p", "a"}, []vcsRoute{
		{name: "relocate", setup: "svnadmin create repo && svn -q checkout \"file://$PWD/repo\" wc && cd wc && echo a > a && svn -q add a && svn -q commit -m one",
			cmd: "cd wc && u=$(svn info --show-item repos-uuid) && svnadmin create .svn/x && svnadmin setuuid .svn/x \"$u\" && " +
				strings.ReplaceAll(hook, "HOOK", ".svn/x/hooks/start-commit") + " && svn relocate \"file://$PWD/.svn/x\" && echo WROTE-WCDB", user: commit},
		// The repository itself in the writable tree: its hooks (read-only
		// where the search finds it, judged by the audit deeper).
		{name: "repository-hook", setup: "svnadmin create repo && svn -q checkout \"file://$PWD/repo\" wc && cd wc && echo a > a && svn -q add a && svn -q commit -m one",
			cmd: "(" + strings.ReplaceAll(hook, "HOOK", "repo/hooks/start-commit") + " && echo WROTE-HOOK)", user: commit},
		{name: "repository-deep", setup: "mkdir -p a/b/c && svnadmin create a/b/c/repo && svn -q checkout \"file://$PWD/a/b/c/repo\" wc && cd wc && echo a > a && svn -q add a && svn -q commit -m one",
			cmd: strings.ReplaceAll(hook, "HOOK", "a/b/c/repo/hooks/start-commit"), user: commit},
		{name: "new-checkout",
			cmd: "svnadmin create p && " + strings.ReplaceAll(hook, "HOOK", "p/hooks/start-commit") +
				" && svn -q checkout \"file://$PWD/p\" wc && echo a > wc/a && svn -q add wc/a", user: commit},
		// ~/.subversion/config in a writable home (attack pass 94): its
		// diff-cmd ran at the user's next svn diff, the file edited (svn
		// wrote it at the checkout) or made.
		{name: "home-config", setup: "rm -rf \"$HOME/.subversion\" && " + checkout,
			cmd: "(" + helper + " && printf '[helpers]\\ndiff-cmd = %s\\n' \"$HOME/h\" >> \"$HOME/.subversion/config\" && echo WROTE-SVNCONFIG)", user: diff},
		{name: "home-config-new", setup: "rm -rf \"$HOME/.subversion\" && " + checkout + " && rm \"$HOME/.subversion/config\"",
			cmd: helper + " && printf '[helpers]\\ndiff-cmd = %s\\n' \"$HOME/h\" > \"$HOME/.subversion/config\"", user: diff},
	})
}
