package gitguard

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAuditGitConfigEnvironment: the user's environment names the global
// configuration (GIT_CONFIG_GLOBAL) or the template directory
// (GIT_TEMPLATE_DIR, which git clone and git init copy from before
// init.templateDir) in a writable tree: moat run is given that
// environment, the sandboxed command inherits it, and the user's git
// reads the same. Neither was known to the audit (found by attack pass
// 47).
func TestAuditGitConfigEnvironment(t *testing.T) {
	runGlobal(t, []globalCase{
		{"a core.fsmonitor appended to $GIT_CONFIG_GLOBAL",
			func(s *scene) {
				s.gitGlobal = filepath.Join(s.w, "dots", "gitconfig")
				s.write(s.gitGlobal, "[user]\n\tname = me\n")
			},
			`printf '[core]\n\tfsmonitor = "%s"\n' "$PROG" >> ../dots/gitconfig`,
			func(s *scene) bool { return s.userGit(s.repo, "status") }},
		{"a post-checkout hook in $GIT_TEMPLATE_DIR",
			func(s *scene) {
				s.gitTemplates = filepath.Join(s.w, "tmpl")
				s.write(filepath.Join(s.gitTemplates, "description"), "the user's template\n")
			},
			`mkdir -p ../tmpl/hooks && printf '#!/bin/sh\n"%s"\n' "$PROG" > ../tmpl/hooks/post-checkout && chmod +x ../tmpl/hooks/post-checkout`,
			func(s *scene) bool {
				c := filepath.Join(s.outside, "clone")
				os.RemoveAll(c)
				return s.userGit(s.outside, "clone", "-q", s.repo, c)
			}},
	})
}
