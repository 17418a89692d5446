package gitguard

import (
	"path/filepath"
	"strings"
)

// Two more files of a git directory that a user's own git command turns
// into writes and reads outside the tree (found by an attack pass):
//
//   - MERGE_RR names, for git's rerere, the files of a conflicted merge by
//     path, unchecked: git commit (and merge, am, rebase --continue,
//     cherry-pick) wrote a recorded resolution to "../../../home/u/.bashrc"
//     (or copied a hidden file into rr-cache, where the next sandboxed
//     command read it). A planted rr-cache directory is enough to turn
//     rerere on. Each entry must name a path inside the work tree, its
//     symlinks followed: one that does not, or a MERGE_RR of a repository
//     whose work tree is not known, is taken out, whenever the audit finds
//     it (a symlink put on its way in a later run leads it out as well).
//   - rebase-apply/apply-opt holds git apply's options for git am
//     --continue (and a rebase of the apply backend): with
//     --build-fake-ancestor=FILE git wrote an index over FILE, anywhere the
//     user can write. Only options known to stay in the tree are kept;
//     otherwise the file is taken out.

// mergeRR judges g's MERGE_RR (worktree: the work tree its paths are in,
// "" when not known).
func (a *auditor) mergeRR(g, worktree string) {
	p := filepath.Join(g, "MERGE_RR")
	a.reachPath(p)
	if _, err := lstat(p); err != nil {
		return
	}
	real, ok := a.changedActionable(p)
	if !ok {
		return
	}
	data, _, err := readSmall(p, maxConfigSize)
	if err != nil {
		a.quarantine(real, "git's rerere record (MERGE_RR) that moat cannot read ("+err.Error()+"): the user's git commit writes to the paths it names")
		return
	}
	if worktree == "" {
		worktree = worktreeOf(g)
	}
	hexsz := 2 * a.hashSize(g)
	for _, e := range strings.Split(string(data), "\x00") {
		if e == "" {
			continue
		}
		path, canonical := rrPath(e, hexsz)
		if !canonical {
			a.quarantine(real, "git's rerere record (MERGE_RR) holds a record that is not \"<hash>[.<n>]<TAB><path>\" ("+quoteName(e)+"): git reads the path in it as "+quoteName(path)+", and would write or read that file on the user's git commit")
			return
		}
		if !insideWorktree(worktree, path) {
			a.quarantine(real, "git's rerere record (MERGE_RR) names "+quoteName(path)+", outside the work tree: the user's git commit (merge, am, rebase --continue) would write a recorded resolution there, or copy it into the repository")
			return
		}
	}
}

// worktreeOf is the work tree of a linked worktree's git directory g (its
// gitdir file names the work tree's .git file), or "".
func worktreeOf(g string) string {
	b, _, err := readSmall(filepath.Join(g, "gitdir"), 64<<10)
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if !filepath.IsAbs(s) {
		return ""
	}
	return filepath.Dir(s)
}

// insideWorktree reports whether the work tree's file path (relative, as
// git names it) stays in the work tree, its symlinks followed as far as
// they exist.
func insideWorktree(worktree, path string) bool {
	if worktree == "" || path == "" || filepath.IsAbs(path) {
		return false
	}
	for _, c := range strings.Split(path, "/") {
		if c == ".." {
			return false
		}
	}
	root := physical(worktree)
	return within(physical(filepath.Join(worktree, path)), root)
}

// applyOpt judges g's rebase-apply/apply-opt.
func (a *auditor) applyOpt(g string) {
	p := filepath.Join(g, "rebase-apply", "apply-opt")
	a.reachPath(p)
	if _, err := lstat(p); err != nil {
		return
	}
	real, ok := a.changedActionable(p)
	if !ok {
		return
	}
	data, _, err := readSmall(p, 64<<10)
	if err != nil {
		a.quarantine(real, "git am's options for git apply that moat cannot read ("+err.Error()+")")
		return
	}
	words, ok := sqDequote(string(data))
	if !ok {
		a.quarantine(real, "git am's options for git apply, in a form moat cannot read the way git does")
		return
	}
	for _, w := range words {
		if !harmlessApplyOpt(w) {
			a.quarantine(real, "git am's options for git apply hold "+quoteName(w)+": the user's git am --continue (or rebase --continue) would pass it on (--build-fake-ancestor=FILE overwrote any file)")
			return
		}
	}
}

// harmlessApplyOpt: the options git am stores for git apply that keep its
// writes in the work tree.
func harmlessApplyOpt(w string) bool {
	for _, p := range []string{"--whitespace=", "--exclude=", "--include=", "-p", "-C"} {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	switch w {
	case "--ignore-space-change", "--ignore-whitespace", "--reject", "--quiet", "-q", "--no-add", "--3way", "--recount":
		return true
	}
	if d, ok := strings.CutPrefix(w, "--directory="); ok {
		if filepath.IsAbs(d) {
			return false
		}
		for _, c := range strings.Split(d, "/") {
			if c == ".." {
				return false
			}
		}
		return true
	}
	return false
}

// sqDequote splits what git's sq_quote_argv wrote (' '-separated words in
// single quotes, a quote inside written as quote, backslash, quote,
// quote); false for anything else.
func sqDequote(s string) ([]string, bool) {
	var out []string
	s = strings.TrimSpace(s)
	for s != "" {
		if s[0] != '\'' {
			return nil, false
		}
		var b strings.Builder
		i := 1
		for {
			j := strings.IndexByte(s[i:], '\'')
			if j < 0 {
				return nil, false
			}
			b.WriteString(s[i : i+j])
			i += j + 1
			if strings.HasPrefix(s[i:], "\\''") {
				b.WriteByte('\'')
				i += 3
				continue
			}
			break
		}
		out = append(out, b.String())
		s = strings.TrimLeft(s[i:], " ")
	}
	return out, true
}

// rrPath is the path of a MERGE_RR record as git's read_rr reads it: the
// hash's hexsz hex digits, then, after a '.', a variant number read by
// strtol (which skips white space, tabs included, and a sign), then a tab
// and the path. canonical is false for anything but "<hex><TAB><path>" or
// "<hex>.<digits><TAB><path>": splitting at the first tab took
// "<hex>.<TAB><TAB>0<TAB>/home/u/key" for a relative path "<TAB>0<TAB>...",
// where git read the absolute one (found by an attack pass).
func rrPath(e string, hexsz int) (path string, canonical bool) {
	if len(e) < hexsz+2 {
		return "", false
	}
	for i := 0; i < hexsz; i++ {
		if c := e[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", false
		}
	}
	rest := e[hexsz:]
	end := 0
	canonical = true
	if rest[0] == '.' {
		j := 1
		for j < len(rest) && strings.IndexByte(" \t\n\v\f\r", rest[j]) >= 0 {
			j++
		}
		if j < len(rest) && (rest[j] == '+' || rest[j] == '-') {
			j++
		}
		d := j
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == d {
			end = 1 // no number: strtol leaves its end where it began
		} else {
			end = j
			canonical = d == 1
		}
		canonical = canonical && end > 1
	}
	if end >= len(rest) || rest[end] != '\t' {
		return "", false
	}
	return rest[end+1:], canonical
}
