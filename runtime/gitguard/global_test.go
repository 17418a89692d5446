package gitguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// globalCase is a plant that the user's own git configuration (not the
// repository's) leads git to: each is run once without moat (the attack
// must work) and once with the audit between the plant and the user's git.
type globalCase struct {
	name    string
	setup   func(s *scene)
	plant   string
	planted func(s *scene) bool
}

func runGlobal(t *testing.T, cases []globalCase) {
	staged := make([]stagedCase, len(cases))
	for i, tc := range cases {
		staged[i] = stagedCase{name: tc.name, setup: tc.setup, run1: "true", run2: tc.plant, planted: tc.planted}
	}
	runStaged(t, staged)
}

// TestAuditGlobalConfigIncludedSettings: what the user's global config
// says through a file it includes counts as what it says itself. The audit
// read the core.hooksPath of ~/.gitconfig and the files it includes
// directly, but no core.hooksPath set in an included file (a common layout:
// ~/.gitconfig includes ~/.gitconfig.local, or an includeIf for work
// repositories), nor a file included by an included file: the mounts
// protect both (readGitFacts follows includes), the audit did not, and a
// repository deeper than the mounts' search, or a directory missing when
// the run began, was left to the audit (found by attack pass 45).
func TestAuditGlobalConfigIncludedSettings(t *testing.T) {
	runGlobal(t, []globalCase{
		{"relative core.hooksPath in an included global file",
			func(s *scene) {
				s.write(filepath.Join(s.home, ".gitconfig"), "[include]\n\tpath = ~/.gitconfig.local\n")
				s.write(filepath.Join(s.home, ".gitconfig.local"), "[core]\n\thooksPath = .githooks\n")
			},
			`mkdir -p .githooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > .githooks/pre-commit && chmod +x .githooks/pre-commit`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
		{"absolute core.hooksPath in an includeIf'd global file",
			func(s *scene) {
				s.write(filepath.Join(s.home, ".gitconfig"), "[includeIf \"gitdir:"+s.w+"/\"]\n\tpath = ~/.gitconfig-work\n")
				s.write(filepath.Join(s.home, ".gitconfig-work"), "[core]\n\thooksPath = "+filepath.Join(s.w, "team", "hooks")+"\n")
			},
			`mkdir -p ../team/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../team/hooks/pre-commit && chmod +x ../team/hooks/pre-commit`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
		{"a config in the tree included by an included global file",
			func(s *scene) {
				s.write(filepath.Join(s.home, ".gitconfig"), "[include]\n\tpath = ~/.gitconfig.local\n")
				s.write(filepath.Join(s.home, ".gitconfig.local"), "[include]\n\tpath = "+filepath.Join(s.w, "shared", "git.cfg")+"\n")
			},
			`mkdir -p ../shared && printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../shared/git.cfg`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
		{"core.hooksPath in a global include that lies in the tree",
			func(s *scene) {
				s.write(filepath.Join(s.w, "team.cfg"), "[core]\n\thooksPath = .githooks\n")
				s.write(filepath.Join(s.home, ".gitconfig"), "[include]\n\tpath = "+filepath.Join(s.w, "team.cfg")+"\n")
			},
			`mkdir -p .githooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > .githooks/pre-commit && chmod +x .githooks/pre-commit`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
	})
}

// TestAuditGlobalHooksPathWithoutRepository: the user's global
// core.hooksPath lying in a writable tree was judged only from a
// repository the walk visited (repo); in a tree that holds none, a hook
// planted there ran on the user's next commit in any repository (found by
// attack pass 45: moat's mount reserves the directory only where its
// parent exists when the run starts).
func TestAuditGlobalHooksPathWithoutRepository(t *testing.T) {
	setup := func(s *scene) string {
		// The user's repository is outside the tree; the tree holds none.
		user := filepath.Join(s.outside, "mine")
		if err := os.Rename(s.repo, user); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(s.repo, 0o755); err != nil {
			t.Fatal(err)
		}
		s.write(filepath.Join(s.home, ".gitconfig"), "[core]\n\thooksPath = "+filepath.Join(s.w, "tools", "hooks")+"\n")
		return user
	}
	plant := `mkdir -p ../tools/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../tools/hooks/pre-commit && chmod +x ../tools/hooks/pre-commit`
	s := newScene(t)
	user := setup(s)
	s.sh(s.repo, plant)
	if !s.userGit(user, "commit", "-q", "--allow-empty", "-m", "x") {
		t.Fatal("the attack does not work without moat")
	}
	s = newScene(t)
	user = setup(s)
	s.begin()
	s.audit()
	s.begin()
	s.sh(s.repo, plant)
	rep := s.audit()
	if s.userGit(user, "commit", "-q", "--allow-empty", "-m", "x") {
		t.Fatalf("ESCAPE (findings %+v)", rep.Findings)
	}
}

// TestAuditGlobalTemplateDir: git clone and git init copy the user's
// init.templateDir (hooks, config, every other file) into each new
// repository; one in a writable tree (~/.git_template with a writable
// home) took a planted post-checkout hook into the next clone, which ran
// it, and a planted config's core.fsmonitor into every git status there.
// Neither the mounts nor the audit knew the directory (found by attack
// pass 45).
func TestAuditGlobalTemplateDir(t *testing.T) {
	clone := func(s *scene) bool {
		c := filepath.Join(s.outside, "clone")
		os.RemoveAll(c)
		if s.userGit(s.outside, "clone", "-q", s.repo, c) {
			return true
		}
		return s.userGit(c, "status")
	}
	setup := func(s *scene) {
		s.write(filepath.Join(s.home, ".gitconfig"), "[init]\n\ttemplateDir = "+filepath.Join(s.w, "tmpl")+"\n")
		s.write(filepath.Join(s.w, "tmpl", "description"), "the user's template\n")
	}
	runGlobal(t, []globalCase{
		{"a post-checkout hook in the template", setup,
			`mkdir -p ../tmpl/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../tmpl/hooks/post-checkout && chmod +x ../tmpl/hooks/post-checkout`,
			clone},
		{"core.fsmonitor in the template's config", setup,
			`printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" > ../tmpl/config`,
			clone},
		{"the template directory renamed into place", setup,
			`mkdir -p ../stage/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../stage/hooks/post-checkout && chmod +x ../stage/hooks/post-checkout && mv ../tmpl ../tmpl.old && mv ../stage ../tmpl`,
			clone},
	})
}

// TestAuditGlobalTemplateDirUsersOwn: the user's own template (a hook,
// a config, a description) is left where the run did not write it.
func TestAuditGlobalTemplateDirUsersOwn(t *testing.T) {
	s := newScene(t)
	tmpl := filepath.Join(s.w, "tmpl")
	s.write(filepath.Join(s.home, ".gitconfig"), "[init]\n\ttemplateDir = "+tmpl+"\n")
	s.write(filepath.Join(tmpl, "description"), "the user's template\n")
	s.write(filepath.Join(tmpl, "hooks", "post-checkout"), "#!/bin/sh\nctags -R . 2>/dev/null; exit 0\n")
	s.write(filepath.Join(tmpl, "config"), "[core]\n\tpager = less -R\n")
	s.begin()
	s.audit()
	s.begin()
	s.sh(s.repo, `echo work > b.txt && mkdir -p ../tmpl2 && echo x > ../tmpl2/description`)
	rep := s.audit()
	if len(rep.Findings) != 0 {
		t.Fatalf("findings in the user's own template: %+v", rep.Findings)
	}
	for _, n := range []string{"description", "hooks/post-checkout", "config"} {
		if _, err := os.Lstat(filepath.Join(tmpl, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// TestAuditQuarantineLongName: a plant whose name is 255 bytes long is
// taken out all the same: the quarantine's name for it (a number before
// the name) was too long, the move failed, and the plant stayed (found by
// attack pass 45: a legacy remote .git/remotes/<255 bytes>).
func TestAuditQuarantineLongName(t *testing.T) {
	s := newScene(t)
	s.begin()
	s.audit()
	s.begin()
	name := strings.Repeat("o", 255)
	p := filepath.Join(s.repo, ".git", "remotes", name)
	s.write(p, "URL: /elsewhere\n")
	rep := s.audit()
	if _, err := os.Lstat(p); err == nil {
		t.Fatalf("a legacy remote of a 255-byte name stayed (findings %+v)", rep.Findings)
	}
}

// TestAuditRelativeHooksPathInGitDir: a relative core.hooksPath (the
// user's global .githooks, a repository's own .husky/_) is taken by
// receive-pack from the git directory it enters, not the work tree: a
// pre-receive the command put in .git/.githooks, where the walk never
// goes, ran on the user's next push to the repository (attack pass 51).
func TestAuditRelativeHooksPathInGitDir(t *testing.T) {
	push := func(s *scene) bool {
		src := filepath.Join(s.outside, "src")
		if _, err := os.Stat(src); err != nil {
			s.git(s.outside, "clone", "-q", s.repo, src)
			s.git(src, "commit", "-q", "--allow-empty", "-m", "mine")
		}
		return s.userGit(src, "push", "-q", s.repo, "HEAD:refs/heads/pushed")
	}
	hook := func(dir string) string {
		return `mkdir -p .git/` + dir + ` && printf '#!/bin/sh\n"%s"\n' "$PROG" > .git/` + dir + `/pre-receive && chmod +x .git/` + dir + `/pre-receive`
	}
	runGlobal(t, []globalCase{
		{"the user's global core.hooksPath = .githooks",
			func(s *scene) {
				s.write(filepath.Join(s.home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n")
				s.git(s.repo, "commit", "-q", "--allow-empty", "-m", "init")
			},
			hook(".githooks"), push},
		{"the repository's own core.hooksPath = .husky/_",
			func(s *scene) {
				s.git(s.repo, "config", "core.hooksPath", ".husky/_")
				s.git(s.repo, "commit", "-q", "--allow-empty", "-m", "init")
			},
			hook(".husky/_"), push},
	})
}
