package gitguard

import (
	"io/fs"
	"os"
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
		fi, err := os.Lstat(p)
		if err != nil || !a.changedAt(p, idOf(fi)) {
			return nil
		}
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
	data, id, err := readSmall(packed, maxIndexSize)
	if err != nil {
		return // git fails on it too
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
		a.replace(real, id, []byte(strings.Join(keep, "")), "packed-refs written during the run holds replace refs (git replace): the user's git shows other commits than the ones git push sends", "rewrote without the replace refs")
	}
}
