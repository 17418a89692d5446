package gitguard

import (
	"path/filepath"
)

// darcsFiles are the files of a darcs repository's _darcs that make the
// user's next darcs command run a program: prefs/defaults gives every
// command its options (ALL prehook CMD ran at the user's next darcs
// whatsnew, with no prompt), prefs/prefs the test and predist commands.
// darcs writes neither in its ordinary work (darcs setpref writes prefs).
var darcsFiles = []string{"prefs/defaults", "prefs/prefs"}

// darcsHomeConfigs are the user's darcs defaults below the home, read by
// every darcs command as the repository's are.
var darcsHomeConfigs = []string{".darcs/defaults", ".darcs/prefs"}

// darcsRepo judges the darcs repository whose _darcs lies in dir: the plan
// keeps darcsFiles read-only where they exist when the run starts, but a
// new repository, or a file the repository did not have, was free to make
// and ran a prehook at the user's next darcs whatsnew, as root and as the
// user (attack pass 93, TestDarcsAndFossilStateTakenOut). What changed
// during the run is taken out, and a _darcs symlink made during the run
// (darcs follows it).
func (a *auditor) darcsRepo(dir string) {
	h, e := a.vcsControlDir(dir, "_darcs", "a _darcs symlink made during the run: darcs takes the directory it leads to for the repository and runs the hooks its prefs/defaults names")
	if e == vcsNone {
		return
	}
	for _, n := range darcsFiles {
		a.darcsFile(filepath.Join(h, n))
	}
}

// darcsFile takes out one darcs configuration file changed during the run
// (through a symlink, the file it leads to too).
func (a *auditor) darcsFile(p string) {
	id, changed, ok := a.changedInRun(p)
	if !ok {
		return
	}
	if !changed {
		return
	}
	a.judgedAs(p, id)
	if real, ok := a.changedActionable(p); ok {
		a.quarantine(real, "a darcs configuration file written during the run: darcs runs the prehook, posthook and test commands it names at the user's next darcs command")
	}
}
