package gitguard

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// Replace refs (refs/replace/<id>, `git replace X B`) make git show B
// wherever X is named: the user's git log, diff and status showed a benign
// commit while git push, which ignores replacements, sent the command's
// own X (found by an attack pass). One made during the run is taken out:
// a loose ref is moved to the quarantine, packed ones are dropped from
// packed-refs (the rest of the file kept).
func (a *auditor) replaceRefs(common string) {
	dir := filepath.Join(common, "refs", "replace")
	a.reach(dir)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := lstat(p)
		if err != nil || !a.changedAt(p, idOf(fi)) {
			return nil
		}
		a.judgedAs(p, idOf(fi))
		if real, ok := a.actionable(p); ok {
			a.quarantine(real, "a replace ref made during the run (git replace): the user's git shows another commit than the one git push sends")
		}
		return nil
	})
	packed := filepath.Join(common, "packed-refs")
	if !a.stateChanged(packed) {
		return
	}
	real, ok := a.changedActionable(packed)
	if !ok {
		return
	}
	data, id, err := a.readBig(packed)
	if err != nil {
		// git reads what moat will not (a sparse file of 257 MiB carried a
		// replace ref past the audit; found by an attack pass): out.
		a.quarantine(real, "packed-refs written during the run that moat cannot read ("+err.Error()+"): it may hold replace refs or refs git reads all the same")
		return
	}
	var keep []string
	dropped := 0
	lines := strings.SplitAfter(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if f := strings.Fields(l); len(f) == 2 && strings.HasPrefix(f[1], "refs/replace/") {
			dropped++
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "^") {
				i++ // its peeled line
			}
			continue
		}
		keep = append(keep, l)
	}
	if dropped > 0 {
		if fi, err := lstat(real); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			a.quarantine(real, "packed-refs (a symlink) written during the run holds replace refs (git replace): the user's git shows other commits than the ones git push sends")
			return
		}
		a.replace(real, id, []byte(strings.Join(keep, "")), "packed-refs written during the run holds replace refs (git replace): the user's git shows other commits than the ones git push sends", "rewrote without the replace refs")
	}
}

// objectCaches takes out what git trusts in a repository's object store
// without checking it against the objects, when the run wrote it: the
// commit-graph (and its chain, commit-graphs/) gives each commit's tree
// and parents, and a forged one made git status, diff, log and show
// display one tree while git push sent the commit's real one (found by an
// attack pass); alternates (objects/info/alternates, http-alternates)
// lead git to another object store, with a commit-graph of its own. git
// rebuilds the caches (git gc, git commit-graph write); a repository
// that borrowed objects through an alternates file the run wrote loses
// them, and the finding says so.
func (a *auditor) objectCaches(common string) {
	info := filepath.Join(common, "objects", "info")
	a.reach(info)
	grafts := filepath.Join(common, "info", "grafts")
	a.reach(filepath.Dir(grafts))
	cands := []string{filepath.Join(info, "commit-graph"), filepath.Join(info, "alternates"), filepath.Join(info, "http-alternates"), grafts}
	if es, err := readDir(filepath.Join(info, "commit-graphs")); err == nil {
		for _, e := range es {
			cands = append(cands, filepath.Join(info, "commit-graphs", e.Name()))
		}
	}
	for _, p := range cands {
		fi, err := lstat(p)
		if err != nil || fi.IsDir() || !a.changedAt(p, idOf(fi)) {
			continue
		}
		why := "a commit-graph written during the run: git trusts the trees and parents it gives, so what the user's git shows can differ from what git push sends (git rebuilds it)"
		if b := filepath.Base(p); b == "alternates" || b == "http-alternates" {
			why = "objects/info/" + b + " written during the run: git takes objects (and a commit-graph) from the store it names"
		} else if p == grafts {
			why = "info/grafts written during the run: git gives commits the parents it names, so what the user's git shows can differ from what git push sends (found by an attack pass)"
		}
		a.judgedAs(p, idOf(fi))
		if real, ok := a.actionable(p); ok {
			a.quarantine(real, why)
		}
	}
}
