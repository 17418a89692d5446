//go:build linux

package linux

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// fossilRepoName reports a directory entry that is, by its name, a Fossil
// repository database (or ~/.fossil): a regular file whose name ends in
// policy.FossilRepoSuffix. Its hooks run at the user's next fossil commit
// (attack pass 93); the search keeps it read-only as a mandatory name.
func fossilRepoName(name string, e fs.DirEntry) bool {
	return e.Type().IsRegular() && strings.HasSuffix(name, policy.FossilRepoSuffix)
}

// enclosingVCSDir returns the closest directory named name at or above
// dir ("" if none), as the tool finds the repository a command started in
// dir works in: hg's .hg, darcs's _darcs and svn's .svn (wc.db is at the
// working copy's top). A symlink there is not followed (its target's
// lookup could ask the host's automounter for a name the command chose):
// the audit judges what one leads to.
func enclosingVCSDir(dir, name string) string {
	for d := dir; ; d = filepath.Dir(d) {
		h := filepath.Join(d, name)
		if lstatKind(h) == 'd' {
			return h
		}
		if d == "/" {
			return ""
		}
	}
}

// enclosingFossilCheckout returns the checkout databases fossil would open
// for a command started in dir (.fslckout or _FOSSIL_ in the closest
// directory at or above dir holding one), none if none: each names the
// repository whose hooks the user's next fossil commit runs, so it is
// read-only when the search did not reach it (deeper than the search,
// above the writable root).
func enclosingFossilCheckout(dir string) []string {
	for d := dir; ; d = filepath.Dir(d) {
		var out []string
		for _, n := range []string{".fslckout", "_FOSSIL_"} {
			if p := filepath.Join(d, n); lstatKind(p) != 0 {
				out = append(out, p)
			}
		}
		if len(out) > 0 || d == "/" {
			return out
		}
	}
}

// isSvnRepo reports a directory svnadmin create made (format, db, hooks
// and locks), from its entries: svn runs its hooks at a file:// commit.
func isSvnRepo(has map[string]os.DirEntry) bool {
	f, ok := has["format"]
	if !ok || !f.Type().IsRegular() {
		return false
	}
	for _, n := range []string{"db", "hooks", "locks"} {
		if e, ok := has[n]; !ok || !e.IsDir() {
			return false
		}
	}
	return true
}
