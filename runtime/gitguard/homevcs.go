package gitguard

import (
	"path/filepath"
	"strings"
)

// svnHomeConfigs are Subversion's user configuration below the home:
// config's [helpers] diff-cmd, diff3-cmd, editor-cmd and merge-tool-cmd
// and its [tunnels] run programs at the user's next svn diff, svn commit
// (without -m) or svn+NAME:// access; servers names the HTTP proxy and the
// certificate authorities the user's svn sends its passwords through and
// trusts. svn reads them from nowhere else but /etc/subversion (or
// --config-dir).
var svnHomeConfigs = []string{".subversion/config", ".subversion/servers"}

// fossilConfigDB is the user's Fossil configuration database below
// $XDG_CONFIG_HOME (~/.config by default), which fossil takes when there
// is no ~/.fossil (a tool name) and no $FOSSIL_HOME: its global settings
// editor, diff-command, gdiff-command and ssh-command run programs at the
// user's next fossil commit, fossil diff or fossil sync.
const fossilConfigDB = "fossil.db"

// svnConfig judges ~/.subversion/config or servers: the plan keeps them
// read-only where they exist, but a config made during the run (where svn
// had not been used, or the run took the old one out of the way) ran its
// diff-cmd at the user's next svn diff, as root and as the user (attack
// pass 94, TestSvnStateTakenOut's home-config rows). The templates svn
// writes on its first run hold nothing but comments and section headers,
// and are kept.
func (a *auditor) svnConfig(p string) {
	id, changed, ok := a.changedInRun(p)
	if !ok || !changed {
		return
	}
	if b, _, err := readSmall(p, maxConfigSize); err == nil && iniHarmless(b) {
		return
	}
	a.judgedAs(p, id)
	if real, ok := a.changedActionable(p); ok {
		a.quarantine(real, "Subversion's user configuration written during the run: svn runs the diff-cmd, editor-cmd and tunnels it names at the user's next svn diff, commit or svn+ssh access (servers: the proxy it sends passwords through)")
	}
}

// fossilConfig judges the user's Fossil configuration database (see
// fossilConfigDB): read-only where it exists, so one that changed during
// the run was made by it (fossil makes one at its first run, with no
// setting that runs a program; it is taken out all the same: the audit
// does not read SQLite), or changed through a hard link. A global
// diff-command set in a writable home ran at the user's next fossil diff
// (attack pass 94, TestFossilStateTakenOut's home-config-new row).
func (a *auditor) fossilConfig(p string) {
	id, changed, ok := a.changedInRun(p)
	if !ok || !changed {
		return
	}
	a.judgedAs(p, id)
	if real, ok := a.changedActionable(p); ok {
		a.quarantine(real, "Fossil's user configuration written during the run: fossil runs the editor, diff-command and ssh-command it sets at the user's next fossil commit, diff or sync")
	}
}

// iniHarmless reports a configuration file in Subversion's format that
// sets nothing: blank lines, comments (# or ;) and section headers only.
func iniHarmless(b []byte) bool {
	for _, l := range hgLines(b) {
		t := strings.TrimSpace(l)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		if l[0] == '[' && strings.HasSuffix(t, "]") {
			continue
		}
		return false
	}
	return true
}

// homeVCSConfigs judges the Subversion and Fossil user configuration of
// home, a home in the writable trees ($XDG_CONFIG_HOME's fossil.db is
// judged with the tree that holds it).
func (a *auditor) homeVCSConfigs(home string) {
	for _, n := range svnHomeConfigs {
		a.svnConfig(filepath.Join(home, n))
	}
	a.fossilConfig(filepath.Join(home, ".config", fossilConfigDB))
}
