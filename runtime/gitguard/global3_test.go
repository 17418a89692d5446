package gitguard

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAuditLateHooksPathInEarlierRoot: a core.hooksPath (or
// init.templateDir) set by a global include lying in one writable tree,
// naming a directory in a tree the audit had walked before, was never
// judged: the late value was judged only in the tree of the include and
// in trees walked after it (found by attack pass 47: --write A --write B,
// B/team.cfg included by ~/.gitconfig setting core.hooksPath = A/x/hooks,
// A/x missing when the run began so the mounts could reserve nothing).
func TestAuditLateHooksPathInEarlierRoot(t *testing.T) {
	setup := func(key, rel string) func(s *scene) {
		return func(s *scene) {
			a, b := filepath.Join(s.root, "a"), filepath.Join(s.root, "b")
			must(t, os.MkdirAll(a, 0o755))
			s.write(filepath.Join(b, "team.cfg"), key+" = "+filepath.Join(a, rel)+"\n")
			s.write(filepath.Join(s.home, ".gitconfig"), "[include]\n\tpath = "+filepath.Join(b, "team.cfg")+"\n")
			s.roots = []string{a, s.w, b}
		}
	}
	clone := func(s *scene) bool {
		c := filepath.Join(s.outside, "clone")
		os.RemoveAll(c)
		return s.userGit(s.outside, "clone", "-q", s.repo, c)
	}
	runGlobal(t, []globalCase{
		{"core.hooksPath", setup("[core]\n\thooksPath", "x/hooks"),
			`mkdir -p ../../a/x/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../../a/x/hooks/pre-commit && chmod +x ../../a/x/hooks/pre-commit`,
			func(s *scene) bool { return s.userGit(s.repo, "commit", "-q", "--allow-empty", "-m", "x") }},
		{"init.templateDir", setup("[init]\n\ttemplateDir", "y/tmpl"),
			`mkdir -p ../../a/y/tmpl/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../../a/y/tmpl/hooks/post-checkout && chmod +x ../../a/y/tmpl/hooks/post-checkout`,
			clone},
	})
}
