//go:build linux || darwin

package gitguard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A sandbox still running beside the audit (another command of the
// session, another run in the same tree) swaps a directory the audit has
// just checked for a symlink that leads outside the writable trees: the
// audit's change must not follow it. The swap is made at the moment the
// audit checked the directory and is about to use it (testHookChecked),
// the moment an attack pass won by racing (renameat2 RENAME_EXCHANGE in a
// loop): the audit rewrote a config outside the trees with the command's
// text, moved one out, and set the mode of the user's directory to the
// command's choice. Here the victims stay as they were, and the audit
// says it could not act.
func TestAuditRaceCannotReachOutside(t *testing.T) {
	t.Run("config rewritten or moved out", func(t *testing.T) {
		s := newScene(t)
		s.mayFail = true
		victimGit := filepath.Join(s.outside, "victim", ".git")
		victim := filepath.Join(victimGit, "config")
		victimText := "[remote \"origin\"]\n\turl = https://example.com/victim.git\n"
		s.write(victim, victimText)
		s.begin()
		planted := filepath.Join(s.w, "r", ".git")
		s.write(filepath.Join(planted, "config"), "[core]\n\tfsmonitor = "+s.prog+"\n[remote \"origin\"]\n\turl = https://attacker.example/x.git\n")
		s.write(filepath.Join(planted, "HEAD"), "ref: refs/heads/main\n")
		swapped := false
		race(t, planted, victimGit, planted, &swapped)
		rep := s.audit()
		if !swapped {
			t.Fatalf("the audit never acted on %s: %+v", planted, rep)
		}
		if b, err := os.ReadFile(victim); err != nil || string(b) != victimText {
			t.Fatalf("ESCAPE: the audit, raced, changed %s outside the writable trees: %q %v\n%+v", victim, b, err, rep.Findings)
		}
		failed := false
		for _, f := range rep.Findings {
			failed = failed || strings.HasPrefix(f.Action, "failed")
		}
		if !failed {
			t.Errorf("the audit must say it could not act: %+v", rep.Findings)
		}
	})
	t.Run("directory mode", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root's audit changes no mode (it needs none)")
		}
		s := newScene(t)
		s.mayFail = true
		victimDir := filepath.Join(s.outside, "victimdir")
		must(t, os.MkdirAll(victimDir, 0o755))
		s.begin()
		d := filepath.Join(s.w, "d")
		s.write(filepath.Join(d, ".git", "HEAD"), "ref: refs/heads/main\n")
		must(t, os.Chmod(d, 0o377))
		defer os.Chmod(d, 0o755)
		swapped := false
		race(t, d, victimDir, s.w, &swapped)
		s.audit()
		if !swapped {
			t.Fatal("the audit never changed the mode of " + d)
		}
		if fi, err := os.Stat(victimDir); err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("ESCAPE: the audit, raced, changed the mode of %s outside the writable trees: %v %v", victimDir, fi, err)
		}
	})
}

// TestAuditRaceStaysInTheJudgedDirectory: the swap leads to a directory
// inside the writable trees, where the audit may act, but that is not the
// one it read the file in. A user who shares a writable tree with a run
// (root's run with --write /, a group's project) can write where the
// run's audit reads: a concurrent root run rewrote the config another user
// planted into a root-only directory, the file's kept entries (which a
// shell runs, sourced) now root's, or moved root's file of that name out
// (TestDaemonAttackAuditRaceWritesAsRoot failed once this way). Each of
// the audit's steps (the check that the file is the one it read, the copy
// of the original, the rewrite) resolved the path again: the swap is made
// before each of them in turn, as a symlink and as another real directory
// renamed into place. The victim's config stays as it was, and nothing is
// written beside it.
func TestAuditRaceStaysInTheJudgedDirectory(t *testing.T) {
	for _, how := range []string{"symlink", "directory"} {
		for step := 1; step <= 3; step++ {
			t.Run(fmt.Sprintf("%s before step %d", how, step), func(t *testing.T) {
				s := newScene(t)
				s.mayFail = true
				victimGit := filepath.Join(s.w, "victim", ".git")
				victim := filepath.Join(victimGit, "config")
				victimText := "[remote \"origin\"]\n\turl = https://example.com/victim.git\n"
				s.write(victim, victimText)
				s.begin()
				planted := filepath.Join(s.w, "r", ".git")
				s.write(filepath.Join(planted, "config"), "[core]\n\tfsmonitor = "+s.prog+"\n[user]\n\tname = kept\n")
				s.write(filepath.Join(planted, "HEAD"), "ref: refs/heads/main\n")
				calls, swapped := 0, false
				testHookAct = func(dir string) {
					if dir != planted || swapped {
						return
					}
					if calls++; calls < step {
						return
					}
					swapped = true
					must(t, os.Rename(planted, planted+"-real"))
					if how == "symlink" {
						must(t, os.Symlink(victimGit, planted))
					} else {
						must(t, os.Rename(victimGit, planted))
					}
				}
				t.Cleanup(func() { testHookAct = nil })
				rep := s.audit()
				at := victimGit
				if swapped && how == "directory" {
					at = planted // the victim's directory, renamed
				}
				es, _ := os.ReadDir(at)
				var names []string
				for _, e := range es {
					names = append(names, e.Name())
				}
				if b, err := os.ReadFile(filepath.Join(at, "config")); err != nil || string(b) != victimText || len(names) != 1 {
					t.Fatalf("ESCAPE: the audit, raced (swapped: %v), changed the victim's directory %s inside the trees: config %q %v, entries %v\n%+v", swapped, at, b, err, names, rep.Findings)
				}
				if !swapped {
					// The audit resolved the path fewer times than step:
					// the planted config is rewritten where it is.
					if b, err := os.ReadFile(filepath.Join(planted, "config")); err != nil || strings.Contains(string(b), "fsmonitor") {
						t.Fatalf("the planted config was not rewritten: %q %v\n%+v", b, err, rep.Findings)
					}
					return
				}
				failed := false
				for _, f := range rep.Findings {
					failed = failed || strings.HasPrefix(f.Action, "failed")
				}
				if !failed {
					t.Errorf("the audit must say it could not act: %+v", rep.Findings)
				}
			})
		}
	}
}

// TestAuditRaceJudgedFileOnly: the swap comes between the audit's look
// at a file it judged changed during the run (a hook; git's index)
// and its resolving the file's path to act on it: the path then leads to
// a file of the same name in another directory inside the trees, older
// than the run, which the audit moved out (a hook's name is the planter's
// choice: any file of the trees). It moves out only the file it judged,
// and says it could not act.
func TestAuditRaceJudgedFileOnly(t *testing.T) {
	for _, tc := range []struct{ name, swap, file, text string }{
		{"hook", "r/.git/hooks", "pre-commit", "#!/bin/sh\nexit 1\n"},
		{"git state", "r/.git", "index", "not an index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScene(t)
			s.mayFail = true
			victimDir := filepath.Join(s.w, "victim")
			victim := filepath.Join(victimDir, tc.file)
			s.write(victim, "the victim's own file\n")
			s.begin()
			swap := filepath.Join(s.w, tc.swap)
			planted := filepath.Join(swap, tc.file)
			s.write(filepath.Join(s.w, "r", ".git", "HEAD"), "ref: refs/heads/main\n")
			s.write(planted, tc.text)
			swapped := false
			testHookResolve = func(p string) {
				if p == planted && !swapped {
					swapped = true
					must(t, os.Rename(swap, swap+"-real"))
					must(t, os.Symlink(victimDir, swap))
				}
			}
			t.Cleanup(func() { testHookResolve = nil })
			rep := s.audit()
			if !swapped {
				t.Fatalf("the audit never resolved %s: %+v", planted, rep.Findings)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "the victim's own file\n" {
				t.Fatalf("ESCAPE: the audit, raced, moved or changed %s, a file it never judged: %q %v\n%+v", victim, b, err, rep.Findings)
			}
			failed := false
			for _, f := range rep.Findings {
				failed = failed || strings.HasPrefix(f.Action, "failed")
			}
			if !failed {
				t.Errorf("the audit must say it could not act: %+v", rep.Findings)
			}
		})
	}
}

// race makes dir a symlink to victim each time the audit has checked the
// directory at (to act in it), and puts it back before the audit checks
// again: a racer that always wins.
func race(t *testing.T, dir, victim, at string, swapped *bool) {
	real := dir + "-real"
	restore := func() {
		if fi, err := os.Lstat(dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			must(t, os.Remove(dir))
			must(t, os.Rename(real, dir))
		}
	}
	testHookBefore = func(string) { restore() }
	testHookChecked = func(checked string) {
		if checked == at {
			*swapped = true
			must(t, os.Rename(dir, real))
			must(t, os.Symlink(victim, dir))
		}
	}
	t.Cleanup(func() {
		testHookBefore, testHookChecked = nil, nil
		restore()
		os.Chmod(dir, 0o755)
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A config the command wrote that names a directory hidden from the
// sandbox as a remote (or a submodule) would have the user's git fetch
// copy what it holds into the repository, where the next sandboxed
// command reads it (found by an attack pass): the entry is taken out.
func TestAuditRemoteAtHiddenPath(t *testing.T) {
	s := newScene(t)
	private := filepath.Join(s.outside, "private")
	s.git(s.outside, "init", "-q", "private")
	s.hidden = func(p string) bool { return p == private || within(p, private) }
	s.begin()
	s.sh(s.w, `git init -q clone && cd clone && git remote add backup "$OUT/private" && git remote add b2 "file://localhost$OUT/pr%69vate" && git remote add origin https://example.com/x.git && git config submodule.s.url ../../outside/private`)
	s.audit()
	cfg, err := os.ReadFile(filepath.Join(s.w, "clone", ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), "private") || strings.Contains(string(cfg), "pr%69vate") {
		t.Errorf("ESCAPE: a remote at a hidden directory stayed:\n%s", cfg)
	}
	if !strings.Contains(string(cfg), "https://example.com/x.git") {
		t.Errorf("a network remote must stay:\n%s", cfg)
	}
}

// A replace ref made during the run (git replace X B: the user's git log
// shows B, git push sends X; found by an attack pass) is taken out, loose
// or packed.
func TestAuditReplaceRefs(t *testing.T) {
	for _, packed := range []bool{false, true} {
		s := newScene(t)
		s.begin()
		script := `git commit -q --allow-empty -m evil && X=$(git rev-parse HEAD) && git reset -q --hard HEAD~1 && git commit -q --allow-empty -m benign && git replace $X HEAD && git reset -q --hard $X`
		if packed {
			script += ` && git pack-refs --all`
		}
		s.sh(s.repo, script)
		if out := s.git(s.repo, "log", "-1", "--format=%s"); !strings.Contains(out, "benign") {
			t.Fatalf("the replacement does not work without moat (or this test cannot fail): %q", out)
		}
		s.audit()
		if out := s.git(s.repo, "log", "-1", "--format=%s"); !strings.Contains(out, "evil") {
			t.Errorf("packed %v: after the audit the user's git still shows the replacement: %q", packed, out)
		}
	}
}

// What git trusts in the object store without checking it, written during
// the run, is taken out: a forged commit-graph made git show one tree and
// push another (found by an attack pass); alternates lead to another
// store with a graph of its own.
func TestAuditObjectCaches(t *testing.T) {
	s := newScene(t)
	s.begin()
	s.sh(s.repo, `git commit-graph write --reachable && mkdir -p ../vendor/objs && echo "$W/vendor/objs" > .git/objects/info/alternates`)
	s.audit()
	for _, n := range []string{"commit-graph", "alternates"} {
		if _, err := os.Lstat(filepath.Join(s.repo, ".git", "objects", "info", n)); err == nil {
			t.Errorf("objects/info/%s written during the run stayed", n)
		}
	}
	if out := s.git(s.repo, "log", "-1", "--format=%s"); !strings.Contains(out, "one") {
		t.Errorf("the repository after the audit: %q", out)
	}
}

// A file past the audit's size limit is not one git refuses: a sparse
// packed-refs of 257 MiB carried a replace ref past the audit (found by an
// attack pass). It is taken out.
func TestAuditOversizedPackedRefs(t *testing.T) {
	s := newScene(t)
	s.begin()
	s.sh(s.repo, `git commit -q --allow-empty -m evil && X=$(git rev-parse HEAD) && git reset -q --hard HEAD~1 && git commit -q --allow-empty -m benign && B=$(git rev-parse HEAD) && git reset -q --hard $X && printf '# pack-refs with: peeled fully-peeled sorted ' > .git/packed-refs && truncate -s 300M .git/packed-refs && printf '\n%s refs/heads/main\n%s refs/replace/%s\n' $X $B $X >> .git/packed-refs && rm -f .git/refs/heads/main`)
	if out := s.git(s.repo, "log", "-1", "--format=%s"); !strings.Contains(out, "benign") {
		t.Fatalf("the oversized packed-refs does not work without moat (or this test cannot fail): %q", out)
	}
	s.audit()
	if out, _ := exec.Command("git", "-C", s.repo, "log", "-1", "--format=%s").CombinedOutput(); strings.Contains(string(out), "benign") {
		t.Errorf("after the audit the user's git still shows the replacement: %q", out)
	}
}

// TestUnblockedRetriesOnce: a change the owner was refused (EPERM,
// EACCES) is tried once more after what blocks it is taken off, where the
// system lets an owner block it (macOS: UF_IMMUTABLE, UF_APPEND, a deny
// ACL entry); on Linux nothing an owner sets blocks the owner, and the
// change is not tried again. Another error is never retried.
func TestUnblockedRetriesOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pfd)
	want := 2
	if runtime.GOOS == "linux" {
		want = 1
	}
	for _, refusal := range []error{unix.EPERM, unix.EACCES} {
		n := 0
		err := unblocked(pfd, "f", func() error {
			if n++; n == 1 {
				return refusal
			}
			return nil
		})
		if n != want || (want == 2) != (err == nil) {
			t.Errorf("%v: %d calls (want %d), %v", refusal, n, want, err)
		}
	}
	n := 0
	if err := unblocked(pfd, "f", func() error { n++; return unix.ENOENT }); n != 1 || err != unix.ENOENT {
		t.Errorf("ENOENT: %d calls, %v", n, err)
	}
}

// info/grafts written during the run gives a commit other parents: git
// log showed a commit without the file git push sends (found by an attack
// pass). It is taken out.
func TestAuditGrafts(t *testing.T) {
	s := newScene(t)
	s.begin()
	s.sh(s.repo, `echo evil > install.sh && git add install.sh && git commit -q -m "docs: README" && M=$(git rev-parse HEAD) && `+
		`F=$(echo fake | git commit-tree $(git rev-parse HEAD^{tree}) -p HEAD~1) && mkdir -p .git/info && echo "$M $F" > .git/info/grafts`)
	if out := s.git(s.repo, "show", "--stat", "--format=%s", "HEAD"); strings.Contains(out, "install.sh") {
		t.Fatalf("the grafts file does not hide the change without moat (or this test cannot fail): %q", out)
	}
	s.audit()
	if _, err := os.Lstat(filepath.Join(s.repo, ".git", "info", "grafts")); err == nil {
		t.Errorf("info/grafts written during the run stayed")
	}
	if out, _ := exec.Command("git", "-C", s.repo, "show", "--stat", "--format=%s", "HEAD").CombinedOutput(); !strings.Contains(string(out), "install.sh") {
		t.Errorf("after the audit the user's git still hides the change: %q", out)
	}
}
