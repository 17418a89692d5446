//go:build linux

package gitguard

// Attack pass 61: what the user's git reads that the audit did not apply
// or know: the user's own url.<base>.insteadOf / pushInsteadOf, and keys
// of git newer than this machine's (extensions.submodulePathConfig with
// submodule.<name>.gitdir, extensions.refStorage's location).

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The user's rewrites turn a URL the audit took for the network's (or
// scp-like) into a local path, where a bare repository hidden in .git
// waits: the user's git push ran its pre-receive.
func TestAuditRemoteURLUsersInsteadOf(t *testing.T) {
	mk := `git init -q sub && cd sub && echo x > x && git add x && git commit -qm x && git init -q --bare .git/stash/evil.git && ` + hookAt(".git/stash/evil.git/hooks/pre-receive") + ` && `
	cases := []struct{ name, gitconfig, attack string }{
		{"insteadOf to a local path",
			"[url \"$W/mirrors/\"]\n\tinsteadOf = https://mirror.example/\n",
			mk + `git remote add origin https://mirror.example/../repo/sub/.git/stash/evil.git`},
		{"insteadOf to a file:// URL, scp-like prefix",
			"[url \"file://$W/\"]\n\tinsteadOf = corp:\n",
			mk + `git remote add origin corp:repo/sub/.git/stash/evil.git`},
		{"pushInsteadOf, no pushurl",
			"[url \"$W/mirrors/\"]\n\tpushInsteadOf = git@mirror.example:\n",
			mk + `git remote add origin git@mirror.example:../repo/sub/.git/stash/evil.git`},
		{"the longest prefix wins",
			"[url \"https://elsewhere.example/\"]\n\tinsteadOf = https://mirror.example/\n[url \"$W/mirrors/\"]\n\tinsteadOf = https://mirror.example/x/\n",
			mk + `git remote add origin https://mirror.example/x/../repo/sub/.git/stash/evil.git`},
		{"in a file the user's config includes",
			"[includeIf \"gitdir:/\"]\n\tpath = $HOME/.gitconfig.mirrors\n",
			mk + `git remote add origin https://mirror.example/../repo/sub/.git/stash/evil.git`},
		// The user's own include lying in a writable tree (a dotfiles
		// repository), unchanged by the run: its rewrites were never read
		// (attack pass 68, through moat run).
		{"in an include lying in the tree",
			"[include]\n\tpath = $W/dotfiles/mirrors.inc\n",
			mk + `git remote add origin https://mirror.example/../repo/sub/.git/stash/evil.git`},
		{"in a file an include in the tree includes",
			"[include]\n\tpath = $W/dotfiles/gitconfig\n",
			mk + `git remote add origin https://mirror.example/../repo/sub/.git/stash/evil.git`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, withMoat := range []bool{false, true} {
				s := newScene(t)
				expand := func(v string) string {
					return strings.NewReplacer("$W", s.w, "$HOME", s.home).Replace(v)
				}
				s.write(filepath.Join(s.home, ".gitconfig"), expand(tc.gitconfig))
				s.write(filepath.Join(s.home, ".gitconfig.mirrors"), expand("[url \"$W/mirrors/\"]\n\tinsteadOf = https://mirror.example/\n"))
				s.write(filepath.Join(s.w, "dotfiles", "mirrors.inc"), expand("[url \"$W/mirrors/\"]\n\tinsteadOf = https://mirror.example/\n"))
				s.write(filepath.Join(s.w, "dotfiles", "gitconfig"), "[include]\n\tpath = mirrors.inc\n")
				if err := os.MkdirAll(filepath.Join(s.w, "mirrors"), 0o755); err != nil {
					t.Fatal(err)
				}
				s.begin()
				if withMoat {
					s.audit()
					s.begin()
				}
				s.sh(s.repo, tc.attack)
				var rep *Report
				if withMoat {
					rep = s.audit()
				}
				ran := s.userGit(filepath.Join(s.repo, "sub"), "push", "-q", "origin", "HEAD:refs/heads/x")
				switch {
				case !withMoat && !ran:
					t.Fatal("the attack does not work without moat")
				case withMoat && ran:
					t.Fatalf("ESCAPE: git push ran the hidden repository's hook after the audit (%+v)", rep.Findings)
				}
			}
		})
	}
}

// A config the run wrote keeps only the extensions known to change
// nothing git runs or reads from elsewhere, and a submodule.<name>.gitdir
// only under the repository's own modules/ (git 2.52+ takes it for the
// submodule's git directory with extensions.submodulePathConfig).
func TestAuditNewGitExtensionsAndSubmoduleGitdir(t *testing.T) {
	s := newScene(t)
	s.begin()
	s.audit()
	s.begin()
	s.sh(s.w, `git init -q n && C="git config -f n/.git/config" && $C core.repositoryFormatVersion 1 &&
$C extensions.submodulePathConfig true &&
$C extensions.objectFormat sha1 && $C extensions.worktreeConfig true &&
$C extensions.refStorage "files://$W/n/.git/stash" &&
$C extensions.fancyNewThing true &&
$C submodule.ok.gitdir .git/modules/ok && $C submodule.abs.gitdir "$W/n/.git/modules/abs" &&
$C submodule.evil.gitdir .git/stash/modules/evil && $C submodule.up.gitdir .git/modules/../stash/modules/up &&
$C submodule.far.gitdir "$OUT/modules/far"`)
	rep := s.audit()
	es, err := ParseConfig([]byte(readFile(t, filepath.Join(s.w, "n", ".git", "config"))))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		if e.Section() == "extensions" || e.Section() == "submodule" {
			got = append(got, e.Name)
		}
	}
	want := []string{"extensions.submodulepathconfig", "extensions.objectformat", "extensions.worktreeconfig", "submodule.ok.gitdir", "submodule.abs.gitdir"}
	if !slices.Equal(got, want) {
		t.Fatalf("kept %q, want %q (%+v)", got, want, rep.Findings)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newGit is the directory of a git new enough for submodule.<name>.gitdir
// (2.52+): MOAT_TEST_NEW_GIT names it (a build of git's source, never
// installed on PATH); the test that needs it is skipped without it.
func newGit(t *testing.T) string {
	d := os.Getenv("MOAT_TEST_NEW_GIT")
	if d == "" {
		t.Skip("MOAT_TEST_NEW_GIT (the bin directory of git 2.52 or later) is not set")
	}
	out, err := exec.Command(filepath.Join(d, "git"), "version").Output()
	if err != nil {
		t.Fatalf("MOAT_TEST_NEW_GIT: %v", err)
	}
	var maj, min int
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "git version ")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) >= 2 {
		maj, _ = strconv.Atoi(parts[0])
		min, _ = strconv.Atoi(parts[1])
	}
	if maj < 2 || maj == 2 && min < 52 {
		t.Skipf("MOAT_TEST_NEW_GIT is git %s, older than 2.52", v)
	}
	return d
}

// With extensions.submodulePathConfig (git 2.52+), submodule.<name>.gitdir
// is the submodule's git directory: one the run pointed at a repository
// hidden in .git had the user's git submodule update run its post-checkout
// (attack pass 61, with git built from source). Run with MOAT_TEST_NEW_GIT.
func TestAuditSubmoduleGitdirConfig(t *testing.T) {
	t.Setenv("PATH", newGit(t)+":"+os.Getenv("PATH"))
	setup := `git init -q lib && git -C lib commit -q --allow-empty -m l && git init -q app && cd app && git -c protocol.file.allow=always submodule add -q ../lib m && git commit -qm s && git submodule deinit -q -f m && rm -rf .git/modules/m && git -c protocol.file.allow=always clone -q ../lib ../t && mkdir -p .git/stash/modules && mv ../t/.git .git/stash/modules/m && rm -rf ../t && ` + hookAt(".git/stash/modules/m/hooks/post-checkout") + ` && git config core.repositoryFormatVersion 1 && git config extensions.submodulePathConfig true && `
	runGitAttacks(t, []pushAttack{
		{"relative, hidden in .git", setup + `git config submodule.m.gitdir .git/stash/modules/m`},
		{"absolute", setup + `git config submodule.m.gitdir "$PWD/.git/stash/modules/m"`},
		{"under modules/ with ..", setup + `mkdir -p .git/modules && git config submodule.m.gitdir .git/modules/../stash/modules/m`},
	}, func(s *scene) string { return s.w }, func(s *scene) bool {
		return s.userGit(filepath.Join(s.w, "app"), "submodule", "update", "--init")
	}, "git submodule update ran the planted hook")
}

// The user's own submodule.<name>.gitdir (a config moat kept read-only)
// naming a git directory hidden inside .git: a hook the run put there is
// taken out, as for a remote's hidden repository (the walk never goes
// there).
func TestAuditUsersSubmoduleGitdirHidden(t *testing.T) {
	s := newScene(t)
	cfg := filepath.Join(s.repo, ".git", "config")
	s.git(s.repo, "config", "-f", cfg, "core.repositoryFormatVersion", "1")
	s.git(s.repo, "config", "-f", cfg, "extensions.submodulePathConfig", "true")
	s.git(s.repo, "config", "-f", cfg, "submodule.m.gitdir", ".git/subs/modules/m")
	s.git(s.repo, "init", "-q", "--bare", ".git/subs/modules/m")
	s.begin()
	s.audit()
	s.begin()
	hook := filepath.Join(s.repo, ".git", "subs", "modules", "m", "hooks", "post-checkout")
	s.write(hook, "#!/bin/sh\n"+s.prog+"\n")
	rep := s.audit()
	if _, err := os.Lstat(hook); err == nil {
		t.Fatalf("the hook in the git directory submodule.m.gitdir names stayed (%+v)", rep.Findings)
	}
}
