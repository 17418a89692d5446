package gitguard

import (
	"path/filepath"
	"testing"
)

// TestAuditGlobalRelativeHooksPathNoRepositoryYet: the user's global
// core.hooksPath is relative (.githooks: each repository's own hooks
// directory). A hook the command put in a repository of the tree is taken
// out, but one it put in a directory that was no repository yet stayed,
// and ran on the user's first commit after git init there (a project the
// agent scaffolded; found by attack pass 47).
func TestAuditGlobalRelativeHooksPathNoRepositoryYet(t *testing.T) {
	initCommit := func(s *scene) bool {
		p := filepath.Join(s.w, "proj")
		s.userGit(p, "init", "-q")
		s.userGit(p, "add", "main.py")
		return s.userGit(p, "commit", "-q", "-m", "init")
	}
	setup := func(s *scene) {
		s.write(filepath.Join(s.home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n")
	}
	runGlobal(t, []globalCase{
		{"a hook in a directory that is no repository yet", setup,
			`mkdir -p ../proj/.githooks && echo 'print(1)' > ../proj/main.py && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../proj/.githooks/pre-commit && chmod +x ../proj/.githooks/pre-commit`,
			initCommit},
		{"the hooks directory a symlink to another directory", setup,
			`mkdir -p ../proj/h && echo 'print(1)' > ../proj/main.py && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../proj/h/pre-commit && chmod +x ../proj/h/pre-commit && ln -s h ../proj/.githooks`,
			initCommit},
	})
}

// TestAuditGlobalRelativeTemplateDir: a relative init.templateDir is
// taken by git init in the directory it makes a repository of (git 2.39
// looks it up from there): a template the command put in a directory of
// the tree ran its hook on the user's git init there (found by attack
// pass 47).
func TestAuditGlobalRelativeTemplateDir(t *testing.T) {
	runGlobal(t, []globalCase{
		{"a template in a directory that is no repository yet",
			func(s *scene) {
				s.write(filepath.Join(s.home, ".gitconfig"), "[init]\n\ttemplateDir = .git-template\n")
			},
			`mkdir -p ../proj/.git-template/hooks && echo 'print(1)' > ../proj/main.py && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../proj/.git-template/hooks/pre-commit && chmod +x ../proj/.git-template/hooks/pre-commit`,
			func(s *scene) bool {
				p := filepath.Join(s.w, "proj")
				s.userGit(p, "init", "-q")
				s.userGit(p, "add", "main.py")
				return s.userGit(p, "commit", "-q", "-m", "init")
			}},
	})
}
