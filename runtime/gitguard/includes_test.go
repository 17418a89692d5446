//go:build linux

package gitguard

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// An unchanged config's includes are followed, and each included file's
// too, to git's depth of 10: a config that includes a file 20 times, each
// including it 20 times again, had the audit read it 20^11 times. A
// config staged in one run in a plain directory (nothing git reads, no
// audit looks at it), turned into a bare repository by a HEAD in the
// next, hung that run's audit for ever after the command ended: moat
// never returned, the SIGTERM of a timeout did nothing, a SIGKILL left
// the run for the next moat to audit, which hung the same way, and the
// hook planted in the same run, never judged, ran on the user's git
// commit (attack pass 59). Another user's repository in a shared tree,
// whose config is never the run's, hung root's audit in the same way.
func TestAuditIncludeFanOutFinishes(t *testing.T) {
	cases := []struct {
		name  string
		stage string // run 1, in the tree's root
	}{
		{"a config including itself 20 times",
			`mkdir stage && { echo '[include]'; for i in $(seq 20); do echo '	path = config'; done; } > stage/config`},
		{"includes through 20 symlinks to the config's own directory",
			`mkdir stage && for i in $(seq 20); do ln -s . stage/l$i; done && { echo '[include]'; for i in $(seq 20); do echo "	path = l$i/config"; done; } > stage/config`},
		{"a chain of files, each including the next 20 times",
			`mkdir stage && for n in $(seq 0 11); do { echo '[include]'; for i in $(seq 20); do echo "	path = c$((n+1))"; done; } > stage/c$n; done && cp stage/c0 stage/config`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScene(t)
			s.begin()
			s.audit()
			s.begin()
			s.sh(s.w, tc.stage)
			s.audit()
			time.Sleep(30 * time.Millisecond)
			s.begin()
			s.sh(s.w, `touch stage/HEAD && git init -q zzz && `+hookAt("zzz/.git/hooks/pre-commit"))
			done := make(chan *Report, 1)
			go func() { done <- s.audit() }()
			select {
			case rep := <-done:
				if len(rep.Incomplete) > 0 {
					t.Logf("incomplete: %v", rep.Incomplete)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the audit did not finish in 30 seconds (the included files read again and again)")
			}
			if s.userGit(filepath.Join(s.w, "zzz"), "commit", "-q", "--allow-empty", "-m", "x") {
				t.Fatal("ESCAPE: the hook planted beside the fan-out ran on the user's git commit")
			}
		})
	}
}

// The same file reached at a shallower depth later is followed again
// from there: an include git reads within its depth of 10 by the second
// route (config -> a -> h) was beyond it by the first (config -> c1 ->
// ... -> c9 -> a, at depth 10, -> h), and a hooks path set in h is judged.
func TestAuditIncludeSeenDeeperFirst(t *testing.T) {
	s := newScene(t)
	s.begin()
	s.audit()
	s.begin()
	var chain strings.Builder
	for n := 1; n <= 8; n++ {
		chain.WriteString("printf '[include]\\n\\tpath = c" + strconv.Itoa(n+1) + "\\n' > stage/c" + strconv.Itoa(n) + "; ")
	}
	s.sh(s.w, `mkdir -p stage/.h && `+chain.String()+`printf '[include]\n\tpath = a\n' > stage/c9 && printf '[include]\n\tpath = h\n' > stage/a && printf '[core]\n\thooksPath = .h\n' > stage/h && printf '[include]\n\tpath = c1\n\tpath = a\n' > stage/config`)
	s.audit()
	time.Sleep(30 * time.Millisecond)
	s.begin()
	// The hook goes where the included hooks path names, relative to the
	// bare repository the HEAD makes of stage.
	s.sh(s.w, `touch stage/HEAD && `+hookAt("stage/.h/pre-receive"))
	rep := s.audit()
	for _, f := range rep.Findings {
		if strings.HasSuffix(f.Path, "/.h/pre-receive") {
			return
		}
	}
	t.Fatalf("the hook in the hooks path an include sets at depth 2 (and 11) was not judged: %+v", rep.Findings)
}

// modules/ is walked through symlinks, each directory once, but every
// entry counted in the audit's bound of directories: symlinks to a
// directory walked already (a directory of them, to ".", staged in one
// run where no repository was, made a repository's modules/ by a HEAD in
// the next) used up the bound in a tree of a few directories, and the
// walk of the tree stopped there: a hook planted in a repository it had
// not reached yet stayed, with a warning, and ran on the user's git
// commit (attack pass 59). A million symlinks cost a million inodes and
// no data block; a million directories, the bound the audit documents,
// four gigabytes.
func TestAuditModulesSymlinksDoNotUseTheBound(t *testing.T) {
	const bound = 2000
	s := newScene(t)
	s.maxDirs = bound
	s.begin()
	s.audit()
	s.begin()
	x := filepath.Join(s.w, "aaa", "modules", "x")
	s.sh(s.w, `mkdir -p aaa/modules/x`)
	for i := 0; i < bound+10; i++ {
		if err := os.Symlink(".", filepath.Join(x, "l"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	s.audit()
	time.Sleep(30 * time.Millisecond)
	s.begin()
	s.sh(s.w, `touch aaa/HEAD && git init -q zzz && `+hookAt("zzz/.git/hooks/pre-commit"))
	rep := s.audit()
	if s.userGit(filepath.Join(s.w, "zzz"), "commit", "-q", "--allow-empty", "-m", "x") {
		t.Fatalf("ESCAPE: the hook ran on the user's git commit (incomplete: %v)", rep.Incomplete)
	}
	if len(rep.Incomplete) > 0 {
		t.Errorf("the audit of a tree of a few directories is incomplete: %v", rep.Incomplete)
	}
}

// An old symlink under a repository's modules/ that leads out of the
// trees is not followed: nothing there is the run's to have planted, and
// another user's modules/x -> / in a shared tree had root's audit read the
// whole filesystem (34 s, 17 "incomplete" warnings; attack pass 59).
func TestAuditModulesSymlinkOutOfTreesNotWalked(t *testing.T) {
	const bound = 500
	outside := t.TempDir()
	for i := 0; i < bound+10; i++ {
		if err := os.Mkdir(filepath.Join(outside, "d"+strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := newScene(t)
	s.maxDirs = bound
	s.sh(s.w, `git init -q app && mkdir -p app/.git/modules && ln -s `+outside+` app/.git/modules/x`)
	s.begin()
	s.audit()
	time.Sleep(30 * time.Millisecond)
	s.begin()
	s.sh(s.w, `echo y > app/file`)
	rep := s.audit()
	if len(rep.Incomplete) > 0 {
		t.Errorf("the audit walked past a modules/ symlink out of the trees: %v", rep.Incomplete)
	}
}

// The user's include lying in a tree is read for its URL rewrites before
// the walk (attack pass 68), each file once by the path it really has: a
// staged fan-out (through 20 symlinks to its own directory, or a chain of
// files each including the next 20 times) must not make that read
// exponential, as attack pass 59's did the audit's.
func TestGlobalRewritesInTreeFanOut(t *testing.T) {
	rewrite := "[url \"/elsewhere/\"]\n\tinsteadOf = https://mirror.example/\n"
	cases := []struct{ name, stage string }{
		{"includes through 20 symlinks to the config's own directory",
			`mkdir stage && for i in $(seq 20); do ln -s . stage/l$i; done && { echo '[include]'; for i in $(seq 20); do echo "	path = l$i/config"; done; } > stage/config`},
		{"a chain of files, each including the next 20 times",
			`mkdir stage && for n in $(seq 0 11); do { echo '[include]'; for i in $(seq 20); do echo "	path = c$((n+1))"; done; } > stage/c$n; done && cp stage/c0 stage/config`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScene(t)
			s.sh(s.w, tc.stage+` && printf '`+strings.ReplaceAll(rewrite, "\n", `\n`)+`' >> stage/config`)
			s.write(filepath.Join(s.home, ".gitconfig"), "[include]\n\tpath = "+filepath.Join(s.w, "stage", "config")+"\n")
			done := make(chan globalGit, 1)
			go func() {
				done <- globalGitConfig(s.home, "", func(p string) bool { return within(p, s.w) })
			}()
			select {
			case g := <-done:
				if len(g.rewrites) == 0 {
					t.Fatal("the include's rewrite was not read")
				}
			case <-time.After(20 * time.Second):
				t.Fatal("reading the include in the tree did not finish in 20 seconds")
			}
		})
	}
}
