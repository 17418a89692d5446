package gitguard

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAuditGlobalTemplateDirPastLimit: the audit judged at most 10000
// files of the user's template directory, in name order, and left the
// rest (reported as not checked, but in place): a command that could
// write there (the mounts hold a template path through a symlink, or one
// whose parent was missing, not) made a directory of 10001 files (symlinks) sorting
// first and then the template's commondir, which git init copied into the
// next new repository, whose git status then read the common directory's
// config (core.fsmonitor) the command had made outside any repository
// (found by attack pass 47).
func TestAuditGlobalTemplateDirPastLimit(t *testing.T) {
	setup := func(s *scene) {
		s.write(filepath.Join(s.home, ".gitconfig"), "[init]\n\ttemplateDir = "+filepath.Join(s.w, "tmpl")+"\n")
		s.write(filepath.Join(s.w, "tmpl", "description"), "the user's template\n")
	}
	initThenStatus := func(s *scene) bool {
		n := filepath.Join(s.outside, "new")
		os.RemoveAll(n)
		s.userGit(s.outside, "init", "-q", n)
		return s.userGit(n, "status")
	}
	runGlobal(t, []globalCase{
		{"commondir past 10000 files", setup,
			`mkdir -p ../evil/objects ../evil/refs ../tmpl/aaa && printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "%s"\n' "$PROG" > ../evil/config && mkdir ../many && (cd ../many && seq 1 10001 | xargs touch) && rmdir ../tmpl/aaa && cp -rs "$W/many" ../tmpl/aaa && echo "$W/evil" > ../tmpl/commondir`,
			initThenStatus},
	})
}
