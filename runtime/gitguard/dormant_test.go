package gitguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditDormantRepositoryCompleted: a tree can ship a git directory
// git does not take for a repository (no refs/: git looks further up),
// with a core.fsmonitor in its config that nothing runs yet. A command
// that makes the missing refs/ turns it into the repository of the user's
// next git status there; the audit took it for the user's (its config
// unchanged, read-only during the run when the mounts found it) and the
// fsmonitor ran (attack pass 82, through moat run). What completed it is
// taken out.
func TestAuditDormantRepositoryCompleted(t *testing.T) {
	t.Run(".git directory, first audit", func(t *testing.T) {
		s := newScene(t)
		sub := filepath.Join(s.w, "sub")
		s.git(s.w, "init", "-q", "sub")
		s.git(sub, "config", "core.fsmonitor", s.prog)
		if err := os.RemoveAll(filepath.Join(sub, ".git", "refs")); err != nil {
			t.Fatal(err)
		}
		s.protected[filepath.Join(sub, ".git", "config")] = true // as moat's mounts keep it
		if s.userGit(sub, "status") {
			t.Fatal("the dormant repository's fsmonitor ran before the run: the test shows nothing")
		}
		s.begin()
		s.sh(s.w, "mkdir sub/.git/refs")
		if !s.userGit(sub, "status") {
			t.Fatal("the completed repository's fsmonitor does not run: the test shows nothing")
		}
		if _, ok := birthNS(filepath.Join(sub, ".git", "refs")); !ok {
			t.Skip("no birth times on this filesystem: a first audit cannot tell")
		}
		rep := s.audit()
		if s.userGit(sub, "status") {
			t.Fatalf("the fsmonitor of a repository the run completed still runs: %+v", rep.Findings)
		}
	})
	t.Run("bare directory behind a .git symlink, audited before", func(t *testing.T) {
		s := newScene(t)
		stage := filepath.Join(s.w, "stage")
		s.git(s.w, "init", "-q", "--bare", "stage")
		s.git(stage, "config", "core.fsmonitor", s.prog)
		s.git(stage, "config", "core.bare", "false")
		s.sh(s.w, "rm -r stage/refs && mkdir sub && ln -s ../stage sub/.git")
		sub := filepath.Join(s.w, "sub")
		if s.userGit(sub, "status") {
			t.Fatal("the dormant repository's fsmonitor ran before the run: the test shows nothing")
		}
		s.begin()
		s.sh(s.w, "touch x")
		s.audit() // a run that left it alone: the record holds stage without refs/
		s.begin()
		s.sh(s.w, "mkdir stage/refs")
		if !s.userGit(sub, "status") {
			t.Fatal("the completed repository's fsmonitor does not run: the test shows nothing")
		}
		rep := s.audit()
		if s.userGit(sub, "status") {
			t.Fatalf("the fsmonitor of a repository the run completed still runs: %+v", rep.Findings)
		}
	})
	t.Run("the user's repository, worked in", func(t *testing.T) {
		s := newScene(t)
		// The user's own settings that Risk names: never moat's to take
		// out of a repository git already used.
		s.git(s.repo, "config", "alias.st", "status")
		s.git(s.repo, "config", "core.editor", "vi")
		s.begin()
		s.sh(s.repo, "echo b > b.txt && git add b.txt && git -c user.name=a -c user.email=a@a commit -qm two && git tag v1 && git checkout -qb other && git gc -q")
		rep := s.audit()
		for _, f := range rep.Findings {
			if strings.Contains(f.Reason, "completed") {
				t.Errorf("the user's repository was taken for one the run completed: %s: %s", f.Path, f.Reason)
			}
		}
		if _, err := os.Stat(filepath.Join(s.repo, ".git", "refs")); err != nil {
			t.Errorf("refs: %v", err)
		}
	})
}

// TestAuditBranchIncludeActivated: a config can include a file on a
// branch only (includeIf "onbranch:..."); a tree shipped one with a
// core.fsmonitor for a branch it was not on, so nothing ran it, and an
// ordinary git checkout -b of that branch in the sandbox made the user's
// next git status run it: the config and the included file unchanged,
// the audit took both for the user's (attack pass 82, through moat run).
// An include on a branch that sets nothing risky stays.
func TestAuditBranchIncludeActivated(t *testing.T) {
	s := newScene(t)
	gitDir := filepath.Join(s.repo, ".git")
	s.write(filepath.Join(gitDir, "evil.cfg"), "[core]\n\tfsmonitor = "+s.prog+"\n")
	s.write(filepath.Join(gitDir, "mail.cfg"), "[user]\n\temail = work@example.com\n")
	s.git(s.repo, "config", "includeIf.onbranch:evil.path", "evil.cfg")
	s.git(s.repo, "config", "includeIf.onbranch:work/.path", "mail.cfg")
	if s.userGit(s.repo, "status") {
		t.Fatal("the include's fsmonitor runs before the run: the test shows nothing")
	}
	s.begin()
	s.sh(s.repo, "git checkout -q -b evil")
	if !s.userGit(s.repo, "status") {
		t.Fatal("the include's fsmonitor does not run on the branch: the test shows nothing")
	}
	rep := s.audit()
	if s.userGit(s.repo, "status") {
		t.Fatalf("the fsmonitor of an include on the branch the run checked out still runs: %+v", rep.Findings)
	}
	if _, err := os.Stat(filepath.Join(gitDir, "mail.cfg")); err != nil {
		t.Errorf("an include on a branch that sets nothing risky was taken out: %v", err)
	}
}
