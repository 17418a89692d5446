//go:build linux

package gitguard

// A user who can write in a tree another user's run can write (root's run
// with --write /, a group's shared project) must not steer that run's
// audit onto files the run never changed: found by an attack pass (40),
// each case a way root's audit rewrote root's config or moved root's
// hooks or .git directory out of a repository the other user cannot
// even list.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// Another user's repository names the victim's (unchanged) repository as
// a remote: the audit must not judge the victim's repository as moved in.
func TestAuditRemoteNamesAnotherRepository(t *testing.T) {
	s := newScene(t)
	victim := filepath.Join(s.w, "victim")
	s.git(s.w, "init", "-q", "victim")
	s.git(victim, "config", "alias.st", "status")
	s.write(filepath.Join(victim, ".git", "hooks", "pre-commit"), "#!/bin/sh\necho victim's own hook\n")
	cfg0, _ := os.ReadFile(filepath.Join(victim, ".git", "config"))
	s.begin()
	s.sh(s.w, `git init -q att && cd att && git remote add origin "$W/victim"`)
	rep := s.audit()
	for _, f := range rep.Findings {
		t.Logf("%s: %s", f.Path, f.Action)
	}
	if _, err := os.Stat(filepath.Join(victim, ".git", "hooks", "pre-commit")); err != nil {
		t.Errorf("ESCAPE: the victim's own hook (unchanged) was taken out: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(victim, ".git", "config")); string(b) != string(cfg0) {
		t.Errorf("ESCAPE: the victim's own config (unchanged) was rewritten:\n%s", b)
	}
}

// A .git file made during the run points at a repository whose (older)
// config is risky: the .git file is moved out. The worktree directory is
// swapped for a symlink to another repository's work tree between the
// judgment and the resolution: that repository's .git must stay.
func TestAuditRaceResolutionMovesOnlyTheJudgedPointer(t *testing.T) {
	s := newScene(t)
	s.mayFail = true
	victim := filepath.Join(s.w, "deep", "victim")
	s.git(s.w, "init", "-q", "deep/victim")
	tdir := filepath.Join(s.w, "att", "t")
	s.git(s.w, "init", "-q", "--bare", "att/t")
	s.git(tdir, "config", "core.fsmonitor", "x")
	wdir := filepath.Join(s.w, "att", "w")
	must(t, os.MkdirAll(wdir, 0o755))
	s.begin()
	s.write(filepath.Join(wdir, ".git"), "gitdir: ../t\n")
	swapped := false
	testHookResolve = func(p string) {
		if p == filepath.Join(wdir, ".git") && !swapped {
			swapped = true
			must(t, os.Rename(wdir, wdir+"-real"))
			must(t, os.Symlink(victim, wdir))
		}
	}
	t.Cleanup(func() { testHookResolve = nil })
	rep := s.audit()
	if !swapped {
		t.Fatalf("never resolved: %+v", rep.Findings)
	}
	if fi, err := os.Lstat(filepath.Join(victim, ".git")); err != nil || !fi.IsDir() {
		t.Fatalf("ESCAPE: the victim's .git was moved out: %v\n%+v", err, rep.Findings)
	}
}

// A .git file of another user's, older than the run, that leads to
// another directory than at the last audit: the victim's git directory
// must not be judged whole.
func TestAuditOtherUsersRetargetedPointer(t *testing.T) {
	testutil.RequireRoot(t) // another user's pointer: root makes it (the user's own is judged, TestAuditStagedAcrossRuns)
	s := newScene(t)
	victim := filepath.Join(s.w, "deep", "victim")
	s.git(s.w, "init", "-q", "deep/victim")
	s.git(victim, "config", "alias.st", "status")
	s.write(filepath.Join(victim, ".git", "hooks", "pre-push"), "#!/bin/sh\n")
	wdir := filepath.Join(s.w, "att", "w")
	s.write(filepath.Join(wdir, ".git"), "gitdir: ../elsewhere\n")
	time.Sleep(1100 * time.Millisecond)
	s.begin()
	s.audit() // an earlier run's audit: the record
	s.write(filepath.Join(wdir, ".git"), "gitdir: "+filepath.Join(victim, ".git")+"\n")
	// Another user's pointer, as in a tree shared with root's run.
	must(t, os.Lchown(filepath.Join(wdir, ".git"), 1013, 1013))
	time.Sleep(1100 * time.Millisecond)
	s.begin()
	s.audit()
	if _, err := os.Stat(filepath.Join(victim, ".git", "hooks", "pre-push")); err != nil {
		t.Errorf("ESCAPE: the victim's own hook was taken out: %v", err)
	}
}

// An older config of another user's includes a file through a directory
// moved in during the run, in which a symlink leads to the victim's git
// directory: the victim's config is judged "changed" by the path it was
// reached through, and rewritten.
func TestAuditIncludeThroughMovedInDirectory(t *testing.T) {
	s := newScene(t)
	victim := filepath.Join(s.w, "deep", "victim")
	s.git(s.w, "init", "-q", "deep/victim")
	s.git(victim, "config", "alias.st", "status")
	cfg0, _ := os.ReadFile(filepath.Join(victim, ".git", "config"))
	s.git(s.w, "init", "-q", "att/x/y/a")
	s.git(filepath.Join(s.w, "att/x/y/a"), "config", "include.path", filepath.Join(s.w, "att", "fresh", "link", "config"))
	time.Sleep(1100 * time.Millisecond)
	s.begin()
	s.audit() // the record: an earlier run's audit
	s.begin()
	must(t, os.MkdirAll(filepath.Join(s.w, "att", "fresh"), 0o755))
	must(t, os.Symlink(filepath.Join(victim, ".git"), filepath.Join(s.w, "att", "fresh", "link")))
	s.audit()
	if b, _ := os.ReadFile(filepath.Join(victim, ".git", "config")); string(b) != string(cfg0) {
		t.Errorf("ESCAPE: the victim's own config (unchanged) was rewritten:\n%s", b)
	}
}

// Another user's symlink (in a shared tree, or in a directory of theirs
// outside the trees) leads a hook, a hooks directory or an include to a
// file of the run's user that the run changed, in a directory that other
// user cannot even list: root's audit moved it out (attack pass 51). The
// symlink is what goes where it lies in a tree; the file stays.
func TestAuditOtherUsersSymlinkLeadsToRunsFiles(t *testing.T) {
	testutil.RequireRoot(t) // another user's symlinks: root makes them
	const other = 1013
	cases := []struct {
		name  string
		plant func(s *scene, victim string) // the other user's, before the run
	}{
		{"hook symlink outside the trees, hooks directory symlinked from the tree", func(s *scene, victim string) {
			hooks := filepath.Join(s.outside, "eve-hooks")
			must(t, os.MkdirAll(hooks, 0o755))
			must(t, os.Symlink(filepath.Join(victim, "deploy.sh"), filepath.Join(hooks, "pre-commit")))
			s.git(s.w, "init", "-q", "eve")
			must(t, os.RemoveAll(filepath.Join(s.w, "eve", ".git", "hooks")))
			must(t, os.Symlink(hooks, filepath.Join(s.w, "eve", ".git", "hooks")))
			chownAll(t, other, hooks, filepath.Join(s.w, "eve"))
		}},
		{"hook symlink outside the trees, git directory outside", func(s *scene, victim string) {
			gd := filepath.Join(s.outside, "eve-gd")
			s.git(s.outside, "init", "-q", "--bare", "eve-gd")
			must(t, os.MkdirAll(filepath.Join(gd, "hooks"), 0o755))
			must(t, os.Symlink(filepath.Join(victim, "deploy.sh"), filepath.Join(gd, "hooks", "pre-commit")))
			s.write(filepath.Join(s.w, "eve", ".git"), "gitdir: "+gd+"\n")
			chownAll(t, other, gd, filepath.Join(s.w, "eve"))
		}},
		{"include symlink outside the trees", func(s *scene, victim string) {
			inc := filepath.Join(s.outside, "eve-inc")
			must(t, os.Symlink(filepath.Join(victim, "out.txt"), inc))
			s.git(s.w, "init", "-q", "eve")
			s.git(filepath.Join(s.w, "eve"), "config", "include.path", inc)
			chownAll(t, other, inc, filepath.Join(s.w, "eve"))
		}},
		{"include through another user's symlinked directory outside the trees", func(s *scene, victim string) {
			d := filepath.Join(s.outside, "eve-dir")
			must(t, os.Symlink(victim, d))
			s.git(s.w, "init", "-q", "eve")
			s.git(filepath.Join(s.w, "eve"), "config", "include.path", filepath.Join(d, "out.txt"))
			chownAll(t, other, d, filepath.Join(s.w, "eve"))
		}},
		{"include through another user's symlinked directory in the tree", func(s *scene, victim string) {
			s.git(s.w, "init", "-q", "eve")
			d := filepath.Join(s.w, "eve", "cfg")
			must(t, os.Symlink(victim, d))
			s.git(filepath.Join(s.w, "eve"), "config", "include.path", filepath.Join(d, "out.txt"))
			chownAll(t, other, filepath.Join(s.w, "eve"))
		}},
		{"relative global core.hooksPath, another user's symlinked directory", func(s *scene, victim string) {
			s.gitGlobal = filepath.Join(s.home, "gc")
			s.write(s.gitGlobal, "[core]\n\thooksPath = .githooks\n")
			must(t, os.MkdirAll(filepath.Join(s.w, "eve"), 0o755))
			must(t, os.Symlink(victim, filepath.Join(s.w, "eve", ".githooks")))
			chownAll(t, other, filepath.Join(s.w, "eve"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newScene(t)
			s.mayFail = true // what the other user's symlink leads to is not acted on: said so
			victim := filepath.Join(s.w, "private", "proj")
			s.write(filepath.Join(victim, "deploy.sh"), "#!/bin/sh\necho deploy\n")
			s.write(filepath.Join(victim, "out.txt"), "data\n")
			must(t, os.Chmod(filepath.Dir(victim), 0o700))
			c.plant(s, victim)
			time.Sleep(1100 * time.Millisecond)
			s.begin()
			s.audit() // an earlier run's audit: the record
			s.begin()
			// The run's own, legitimate work.
			s.write(filepath.Join(victim, "deploy.sh"), "#!/bin/sh\necho deploy v2\n")
			s.write(filepath.Join(victim, "out.txt"), "data v2\n")
			rep := s.audit()
			for _, n := range []string{"deploy.sh", "out.txt"} {
				if b, err := os.ReadFile(filepath.Join(victim, n)); err != nil || !strings.Contains(string(b), "v2") {
					t.Errorf("ESCAPE: the run's own %s (another user's symlink led the audit there) was taken out or rewritten: %v %q\n%+v", n, err, b, rep.Findings)
				}
			}
		})
	}
}

// chownAll gives paths (not followed) and all they hold to uid.
func chownAll(t *testing.T, uid int, paths ...string) {
	t.Helper()
	for _, p := range paths {
		must(t, filepath.Walk(p, func(q string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(q, uid, uid)
		}))
	}
}

// The run's own symlink leads the audit through another user's symlink (any
// symlink of theirs to a directory, climbed out of with ".."): the hook it
// planted was reached through another user's symlink outside the trees,
// and stayed with a warning, though the run chose that way (attack pass
// 52). The run's symlink goes.
func TestAuditRunsSymlinkThroughOtherUsersSymlink(t *testing.T) {
	testutil.RequireRoot(t) // another user's symlink: root makes it
	const other = 1013
	cases := []struct {
		name   string
		global string // the user's global config ("": none)
		plant  func(s *scene, via string) (repo string)
	}{
		{"a new repository's hooks directory", "", func(s *scene, via string) string {
			app := filepath.Join(s.w, "app")
			s.git(s.w, "init", "-q", "app")
			s.write(filepath.Join(app, ".evil", "pre-commit"), "#!/bin/sh\ntouch "+s.mark+"\n")
			must(t, os.RemoveAll(filepath.Join(app, ".git", "hooks")))
			must(t, os.Symlink(via+"/w/app/.evil", filepath.Join(app, ".git", "hooks")))
			return app
		}},
		{"a relative global core.hooksPath in a new repository", "[core]\n\thooksPath = .githooks\n", func(s *scene, via string) string {
			app := filepath.Join(s.w, "app")
			s.git(s.w, "init", "-q", "app")
			s.write(filepath.Join(app, ".evil", "pre-commit"), "#!/bin/sh\ntouch "+s.mark+"\n")
			must(t, os.Symlink(via+"/w/app/.evil", filepath.Join(app, ".githooks")))
			return app
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newScene(t)
			s.mayFail = true
			if c.global != "" {
				s.gitGlobal = filepath.Join(s.home, "gc")
				s.write(s.gitGlobal, c.global)
			}
			// The other user's: a symlink to a directory of theirs.
			dir := filepath.Join(s.outside, "eve", "Documents")
			must(t, os.MkdirAll(dir, 0o755))
			link := filepath.Join(s.outside, "eve", "docs")
			must(t, os.Symlink(dir, link))
			chownAll(t, other, filepath.Join(s.outside, "eve"))
			s.begin()
			s.audit() // an earlier run's audit: the record
			s.begin()
			// eve/docs -> eve/Documents; ../../.. climbs to the scene's root.
			repo := c.plant(s, link+"/../../..")
			rep := s.audit()
			if s.userGit(repo, "commit", "-q", "--allow-empty", "-m", "x") {
				t.Errorf("ESCAPE: the hook planted through another user's symlink ran\n%+v", rep.Findings)
			}
		})
	}
}

// Another user's symlinked hooks directory in a shared tree leads to a
// directory of the run's user (one that other user cannot list) that holds
// the user's symlink to a file the run changed: root's audit took the
// user's symlink for a hook and moved it out (linkedHookChanged acted on
// it before asking whose symlink led there; attack pass 52). The other
// user's symlink is what goes.
func TestAuditOtherUsersHooksSymlinkToUsersLinks(t *testing.T) {
	testutil.RequireRoot(t) // another user's symlinks: root makes them
	const other = 1013
	s := newScene(t)
	victim := filepath.Join(s.w, "private", "proj")
	s.write(filepath.Join(victim, "src", "run.sh"), "#!/bin/sh\necho run\n")
	must(t, os.MkdirAll(filepath.Join(victim, "bin"), 0o755))
	must(t, os.Symlink("../src/run.sh", filepath.Join(victim, "bin", "run")))
	must(t, os.Chmod(filepath.Dir(victim), 0o700))
	s.git(s.w, "init", "-q", "eve")
	must(t, os.RemoveAll(filepath.Join(s.w, "eve", ".git", "hooks")))
	must(t, os.Symlink(filepath.Join(victim, "bin"), filepath.Join(s.w, "eve", ".git", "hooks")))
	chownAll(t, other, filepath.Join(s.w, "eve"))
	time.Sleep(1100 * time.Millisecond)
	s.begin()
	s.audit() // an earlier run's audit: the record
	s.begin()
	// The run's own, legitimate work.
	s.write(filepath.Join(victim, "src", "run.sh"), "#!/bin/sh\necho run v2\n")
	rep := s.audit()
	if _, err := os.Lstat(filepath.Join(victim, "bin", "run")); err != nil {
		t.Errorf("ESCAPE: the user's own symlink (another user's symlinked hooks directory led the audit there) was taken out: %v\n%+v", err, rep.Findings)
	}
	if _, err := os.Lstat(filepath.Join(s.w, "eve", ".git", "hooks")); err == nil {
		t.Errorf("the other user's symlinked hooks directory, leading to a file the run changed, stayed\n%+v", rep.Findings)
	}
}

// Another user's symlinked hooks directory (or hook) in a shared tree
// leads through the user's own symlink that the
// run retargeted (a "current -> v2" release link): root's audit took the
// user's symlink for one the run made on the way to a hooks directory and
// moved it out (attack pass 52). The other user's symlink is what goes.
func TestAuditOtherUsersSymlinkThroughUsersChangedLink(t *testing.T) {
	testutil.RequireRoot(t) // another user's symlinks: root makes them
	const other = 1013
	cases := []struct {
		name  string
		plant func(s *scene, cur string)
	}{
		{"hooks directory", func(s *scene, cur string) {
			s.git(s.w, "init", "-q", "eve")
			must(t, os.RemoveAll(filepath.Join(s.w, "eve", ".git", "hooks")))
			must(t, os.Symlink(filepath.Join(cur, "hooks"), filepath.Join(s.w, "eve", ".git", "hooks")))
			chownAll(t, other, filepath.Join(s.w, "eve"))
		}},
		{"hooks directory, a hook in it", func(s *scene, cur string) {
			s.git(s.w, "init", "-q", "eve")
			must(t, os.Symlink(filepath.Join(cur, "hooks", "README"), filepath.Join(s.w, "eve", ".git", "hooks", "pre-commit")))
			chownAll(t, other, filepath.Join(s.w, "eve"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newScene(t)
			s.mayFail = true
			victim := filepath.Join(s.w, "private", "proj")
			for _, v := range []string{"v1", "v2"} {
				s.write(filepath.Join(victim, v, "hooks", "README"), v+"\n")
				s.write(filepath.Join(victim, v, "gitconfig"), "[user]\n\tname = "+v+"\n")
			}
			cur := filepath.Join(victim, "current")
			must(t, os.Symlink("v1", cur))
			must(t, os.Chmod(filepath.Dir(victim), 0o700))
			c.plant(s, cur)
			time.Sleep(1100 * time.Millisecond)
			s.begin()
			s.audit() // an earlier run's audit: the record
			s.begin()
			// The run's own, legitimate work: a release.
			must(t, os.Remove(cur))
			must(t, os.Symlink("v2", cur))
			rep := s.audit()
			if _, err := os.Lstat(cur); err != nil {
				t.Errorf("ESCAPE: the user's own symlink (another user's symlink led the audit there) was taken out: %v\n%+v", err, rep.Findings)
			}
			// What is taken out instead is said to be the other user's
			// symlink, not one the run made.
			for _, f := range rep.Findings {
				if strings.Contains(f.Reason, "symlink made during the run") {
					t.Errorf("a finding blames the run for another user's symlink: %+v", f)
				}
			}
		})
	}
}

// The command retargets a link past another user's symlinked hooks
// directory to hooks it staged in an earlier run: the other user's symlink
// in the tree is taken out (TestAuditOtherUsersSymlinkThroughUsersChangedLink
// keeps the changed link), so git's way to the staged hooks is cut all the
// same.
func TestAuditStagedHooksPastOtherUsersSymlink(t *testing.T) {
	testutil.RequireRoot(t) // another user's symlinks: root makes them
	const other = 1013
	s := newScene(t)
	s.mayFail = true
	shared := filepath.Join(s.w, "shared")
	s.git(s.w, "init", "-q", "shared")
	must(t, os.MkdirAll(filepath.Join(shared, "hooks-v"), 0o755))
	must(t, os.RemoveAll(filepath.Join(shared, ".git", "hooks")))
	must(t, os.Symlink(filepath.Join(shared, "hooks-v"), filepath.Join(shared, ".git", "hooks")))
	must(t, os.Lchown(filepath.Join(shared, ".git", "hooks"), other, other))
	time.Sleep(1100 * time.Millisecond)
	s.begin()
	s.audit()
	s.begin()
	// Run 1: plain data.
	s.write(filepath.Join(shared, "stage", "pre-commit"), "#!/bin/sh\ntouch "+s.mark+"\n")
	s.audit()
	time.Sleep(1100 * time.Millisecond)
	s.begin()
	// Run 2: the link.
	must(t, os.RemoveAll(filepath.Join(shared, "hooks-v")))
	must(t, os.Symlink("stage", filepath.Join(shared, "hooks-v")))
	rep := s.audit()
	if s.userGit(shared, "commit", "-q", "--allow-empty", "-m", "x") {
		t.Errorf("ESCAPE: the staged hook ran\n%+v", rep.Findings)
	}
}
