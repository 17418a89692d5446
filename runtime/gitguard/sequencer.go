package gitguard

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// The state of an interrupted rebase, cherry-pick or revert is a program
// for the user's next `git rebase --continue` (or `git cherry-pick
// --continue`, `git revert --continue`), run outside the sandbox:
//
//   - an interactive rebase's todo list (rebase-merge/git-rebase-todo)
//     runs each `exec` (`x`) line with the shell;
//   - a merge strategy that is not git's own (rebase-merge/strategy, and
//     options.strategy in a cherry-pick's or revert's sequencer/opts) runs
//     git-merge-<strategy>, which git looks up without checking the name:
//     "x/evil" runs the working tree's git-merge-x/evil (git merge and git
//     pull refuse such names; the sequencer does not).
//
// A command can leave such a state behind (git rebase -i stopped by a
// break, then the todo edited) and the user's own --continue ran it; found
// while reviewing what else git reads from its directory. What the command
// wrote there is judged: exec lines are taken out of the todo list (the
// original kept in the quarantine), a strategy that is not git's own is
// taken out, so git uses its default. A user's own exec lines in a rebase
// that a sandboxed command continued are taken out too (git rewrote the
// list in the sandbox): the audit errs on the side of the check, and says
// so in its report.

// builtinStrategies are the merge strategies git ships; the sequencer runs
// git's own for the empty name, ort and recursive, and git merge-<name>
// (installed with git) for the others.
var builtinStrategies = map[string]bool{"": true, "ort": true, "recursive": true, "resolve": true, "octopus": true, "ours": true, "subtree": true}

// sequencer judges the per-worktree git directory g's interrupted
// rebase, cherry-pick, revert or am, and its rerere record (worktree: its
// work tree, "" when not known).
func (a *auditor) sequencer(g, worktree string) {
	a.mergeRR(g, worktree)
	a.applyOpt(g)
	a.indexFile(g)
	rm := filepath.Join(g, "rebase-merge")
	changed := a.stateChanged(rm)
	a.todo(filepath.Join(rm, "git-rebase-todo"), changed)
	a.strategyFile(filepath.Join(rm, "strategy"), changed)
	a.strategyOpts(rm, changed)
	seq := filepath.Join(g, "sequencer")
	a.sequencerOpts(filepath.Join(seq, "opts"), a.stateChanged(seq))
}

// stateChanged reports a file or directory of a sequencer's state that
// the command may have written: changed during the run (or in a directory
// moved in during it), or a symlink (git never makes one there; what it
// leads to may have been written in an earlier run).
func (a *auditor) stateChanged(p string) bool {
	fi, err := lstat(p)
	if err != nil {
		return false
	}
	if fi.Mode()&fs.ModeSymlink != 0 || a.changedAt(p, idOf(fi)) || a.linkedAway(p) {
		// What is acted on later, by the path resolved then, is this
		// file (changedActionable, expectAt).
		a.judgedAs(p, idOf(fi))
		return true
	}
	return false
}

// todo takes the exec lines out of a rebase's todo list the command wrote
// (dirChanged: its directory was).
func (a *auditor) todo(p string, dirChanged bool) {
	real, data, from, ok := a.stateFile(p, dirChanged, maxConfigSize, "an interrupted rebase's todo list (the user's git rebase --continue runs its exec lines)")
	if !ok {
		return
	}
	keep, execs := dropExecLines(string(data))
	if len(execs) == 0 {
		return
	}
	why := "an interrupted rebase's todo list with exec lines the user's git rebase --continue would run: " + strings.Join(execs, "; ")
	if fi, err := lstat(real); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		a.quarantine(real, why)
		return
	}
	a.replace(real, from, []byte(keep), why, "rewrote without the exec lines")
}

// stateFile reads the file p of a sequencer's state for judging, when the
// command may have written it (or its directory: dirChanged), and returns
// where it really is; one that cannot be read (a FIFO, too large) is taken
// out, what naming it.
func (a *auditor) stateFile(p string, dirChanged bool, max int64, what string) (string, []byte, fileID, bool) {
	a.reachPath(p)
	if !dirChanged && !a.stateChanged(p) {
		return "", nil, fileID{}, false
	}
	real, ok := a.changedActionable(p)
	if !ok {
		return "", nil, fileID{}, false
	}
	data, id, err := readSmall(p, max)
	if err != nil {
		if _, lerr := lstat(p); lerr == nil {
			a.quarantine(real, what+" that moat cannot read ("+err.Error()+")")
		}
		return "", nil, fileID{}, false
	}
	return real, data, id, true
}

// dropExecLines returns the todo list without its exec lines, and those
// lines. A line is parsed as git's sequencer does (leading blanks, the
// command or its one-letter form, then a blank or the end of the line),
// comments aside; any case is taken, and a line after a NUL (which git
// does not read) too.
func dropExecLines(s string) (string, []string) {
	var keep strings.Builder
	var execs []string
	for _, line := range strings.SplitAfter(s, "\n") {
		if isExecLine(line) {
			execs = append(execs, strings.TrimSpace(line))
			continue
		}
		keep.WriteString(line)
	}
	return keep.String(), execs
}

func isExecLine(line string) bool {
	l := strings.TrimLeft(line, " \t")
	for _, cmd := range []string{"exec", "x"} {
		if len(l) >= len(cmd) && strings.EqualFold(l[:len(cmd)], cmd) {
			rest := l[len(cmd):]
			if rest == "" || strings.ContainsRune(" \t\r\n", rune(rest[0])) {
				return true
			}
		}
	}
	return false
}

// strategyFile takes out a rebase's merge strategy that is not git's own.
func (a *auditor) strategyFile(p string, dirChanged bool) {
	real, data, _, ok := a.stateFile(p, dirChanged, 64<<10, "an interrupted rebase's merge strategy")
	if !ok {
		return
	}
	if name := strings.TrimSpace(string(data)); !builtinStrategies[name] {
		a.quarantine(real, "an interrupted rebase's merge strategy "+quoteName(name)+" is not git's own: the user's git rebase --continue would run git-merge-"+quoteName(name))
	}
}

// internalStrategies are the strategies git runs in its own process, whose
// options (-X) it parses itself; the others are programs (git-merge-resolve,
// a shell script, passes every option on to git read-tree unchecked).
var internalStrategies = map[string]bool{"": true, "ort": true, "recursive": true}

// strategyOpts takes a rebase's strategy options out when its strategy is
// a program: git merge-resolve took '--index-output=FILE' for a base and
// handed it to git read-tree, which wrote the index over FILE, anywhere the
// user can write, on the user's git rebase --continue (found reviewing the
// sequencer's state after an attack pass pointed at it).
func (a *auditor) strategyOpts(rm string, dirChanged bool) {
	p := filepath.Join(rm, "strategy_opts")
	a.reachPath(p)
	if !dirChanged && !a.stateChanged(p) && !a.stateChanged(filepath.Join(rm, "strategy")) {
		return
	}
	if _, err := lstat(p); err != nil {
		return
	}
	name := ""
	if b, _, err := readSmall(filepath.Join(rm, "strategy"), 64<<10); err == nil {
		name = strings.TrimSpace(string(b))
	}
	if internalStrategies[name] {
		return
	}
	if real, ok := a.changedActionable(p); ok {
		a.quarantine(real, "an interrupted rebase's options for the merge strategy "+quoteName(name)+", a program that passes them on unchecked (--index-output= overwrote any file) on the user's git rebase --continue")
	}
}

// sequencerOpts takes options.strategy out of a cherry-pick's or revert's
// options (a git config file) when it is not git's own.
func (a *auditor) sequencerOpts(p string, dirChanged bool) {
	real, data, from, ok := a.stateFile(p, dirChanged, maxConfigSize, "an interrupted cherry-pick's or revert's options")
	if !ok {
		return
	}
	es, perr := ParseConfig(data)
	if perr != nil {
		a.quarantine(real, "an interrupted cherry-pick's or revert's options that moat cannot parse the way git does ("+perr.Error()+")")
		return
	}
	strategy := ""
	for _, e := range es {
		if e.Name == "options.strategy" {
			strategy = strings.TrimSpace(e.Value)
		}
	}
	var keep []Entry
	var bad []string
	for _, e := range es {
		switch {
		case e.Name == "options.strategy" && !builtinStrategies[strings.TrimSpace(e.Value)]:
			bad = append(bad, quoteName(e.Value))
			continue
		case e.Name == "options.strategy-option" && !internalStrategies[strategy]:
			// A program's options, passed on unchecked (strategyOpts).
			bad = append(bad, quoteName(strategy)+" with the option "+quoteName(e.Value))
			continue
		}
		keep = append(keep, e)
	}
	if len(bad) == 0 {
		return
	}
	why := "an interrupted cherry-pick's or revert's merge strategy (" + strings.Join(bad, "; ") + ") runs a program, or passes it options unchecked, on the user's git cherry-pick --continue (or revert)"
	if fi, err := lstat(real); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		a.quarantine(real, why)
		return
	}
	a.replace(real, from, FormatConfig(keep), why, "rewrote without that strategy")
}

func quoteName(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strings.ToValidUTF8(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s), "?")
}

// hashSize is the size of an object id in the repository of git directory
// g: 32 with extensions.objectFormat = sha256, 20 otherwise.
func (a *auditor) hashSize(g string) int {
	common := g
	if c, _, _, ok := readCommondir(g); ok {
		common = c
	}
	b, id, err := readSmall(filepath.Join(common, "config"), maxConfigSize)
	if err != nil {
		return 20
	}
	es, err := a.parseConfig(id, b)
	if err != nil {
		return 20
	}
	for _, e := range es {
		if e.Name == "extensions.objectformat" && strings.EqualFold(strings.TrimSpace(e.Value), "sha256") {
			return 32
		}
	}
	return 20
}
