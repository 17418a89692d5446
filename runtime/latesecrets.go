package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/gitguard"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// recordHidden returns the policy's denyRead paths (those without a
// glob) that do not exist when a sandbox is made (missing), and those that
// do, with the file each is (present), one lstat a path. A sandbox on
// Linux hides a path by mounting over it, and there is nothing to mount
// over a path that does not exist: one the user makes later (a `gh auth
// login`, `aws configure` or `docker login` while an agent's session runs)
// shows in the sandbox's read-only view of the host as it is, and a later
// command of the session read it (attack pass 96). The mount that hides
// one that exists is on that file: when the user replaces it on the host
// (a tool writing its token file to a new name and renaming it into
// place, an editor's save, rm and a new one), the kernel detaches every
// mount on the old file in every namespace, and the new file shows as it
// is (attack pass 98: a ~/.netrc renamed into place on the host was read
// by the command). A present path below another present one is left out:
// its ancestor's mask hides whatever it becomes, unless an allowRead shows
// a part of the ancestor again (shownAgain). Sessions and runs check
// them (lateHidden). macOS hides by path, whatever exists.
//
// For moatd's client (as) every look is the client's own (asUser): root's
// lstat, through a directory of the client's home that the client had
// made a symbolic link, told the client whether a file of a secret's name
// (config.json, credentials, ...) existed in a directory only root may
// search ("was replaced" or "was made" when the link was turned to the
// client's own file: attack pass 105).
func recordHidden(pol *policy.Policy, as *enforce.Identity) (missing []string, present []hiddenFile, err error) {
	if goruntime.GOOS != "linux" {
		return nil, nil, nil
	}
	err = asUser(as, func() { missing, present = recordHiddenHere(pol) })
	return missing, present, err
}

// recordHiddenHere is recordHidden with this thread's credentials.
func recordHiddenHere(pol *policy.Policy) (missing []string, present []hiddenFile) {
	rd := resolvedDirs{}
	// Each path's lstat once a look: the name and where its directory
	// leads are mostly one path, which the walk of a symlink at the name
	// had just looked at (about a hundred default secrets a run).
	type look struct {
		fi  fs.FileInfo
		err error
	}
	looked := map[string]look{}
	lstat := func(p string) (fs.FileInfo, error) {
		l, ok := looked[p]
		if !ok {
			l.fi, l.err = os.Lstat(p)
			looked[p] = l
		}
		return l.fi, l.err
	}
	for _, r := range pol.FS.DenyRead {
		if policy.HasGlob(r.Path) {
			continue // expanded when the sandbox starts (docs/SECURITY.md)
		}
		// Both the name the policy gives and where its directory leads
		// now (hiddenWhere), where they differ: a symlink on the way that
		// is turned elsewhere shows another file at the name, which the
		// sandbox's mask (on the file it led to) does not hide
		// (TestDaemonAttackLateSecretLooksAsRoot: the client's own
		// ~/.docker turned to another config.json); one the command
		// removes leaves the name gone, while the file it led to is what
		// the user may replace (attack pass 109).
		names := []string{r.Path}
		if w := rd.hiddenWhere(r.Path); w != r.Path {
			names = append(names, w)
		}
		// And the file a symlink at the name itself leads to, which the
		// mask is on: the link's own lstat stays the same when the user
		// saves that file (a dotfiles manager's ~/.netrc -> dotfiles/netrc,
		// a new file renamed into place), and the command read the new
		// one through the link; and where it leads to nothing yet, the
		// file the user made there was read by its own name (attack
		// pass 110). Each link of a chain, read where its directory leads.
		for p, n := rd.hiddenWhere(r.Path), 0; n < 40; n++ {
			fi, err := lstat(p)
			if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				break
			}
			t, err := os.Readlink(p)
			if err != nil {
				break
			}
			if !filepath.IsAbs(t) {
				t = filepath.Join(filepath.Dir(p), t)
			}
			p = rd.hiddenWhere(t)
			if !slices.Contains(names, p) {
				names = append(names, p)
			}
		}
		for _, p := range names {
			switch fi, err := lstat(p); {
			case errors.Is(err, fs.ErrNotExist):
				missing = append(missing, p)
			case err == nil:
				born, _ := gitguard.BirthNS(p)
				present = append(present, hiddenFile{p, fi, born})
			}
		}
	}
	kept := present[:0]
	for _, h := range present {
		if !slices.ContainsFunc(present, func(o hiddenFile) bool {
			return o.path != h.path && below(h.path, o.path) && !rd.shownAgain(o.path, pol.FS.AllowRead)
		}) {
			kept = append(kept, h)
		}
	}
	return missing, kept
}

// below reports p strictly inside dir.
func below(p, dir string) bool { return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/") }

// shownAgain reports whether an allowRead rule may show a part of the
// hidden directory dir again (a path inside it, or a glob that may match
// one): below it a hidden path has no mask but its own, and one the user
// saved over it there was read, left out of the look as one under dir's
// mask (denyRead D and D/sub/token, allowRead D/sub: attack pass 109).
func (rd resolvedDirs) shownAgain(dir string, allow []policy.PathRule) bool {
	for _, a := range allow {
		p := a.Path
		if policy.HasGlob(p) {
			// Its literal directories: what it may match lies below them.
			var lit []string
			for _, c := range strings.Split(p, "/") {
				if policy.HasGlob(c) {
					break
				}
				lit = append(lit, c)
			}
			l := strings.Join(lit, "/")
			if l == "" {
				return true
			}
			for _, w := range rd.allowWhere(l) {
				if w == dir || below(w, dir) || below(dir, w) {
					return true
				}
			}
			continue
		}
		if slices.ContainsFunc(rd.allowWhere(p), func(w string) bool { return below(w, dir) }) {
			return true
		}
	}
	return false
}

// allowWhere is an allowRead path p as named, where its directory leads
// (hiddenWhere) and, where it exists, where it leads itself: a symlink
// outside the hidden directory that leads into it (allowRead ~/shortcut ->
// D/sub) shows that part again as well, and the token below it, left out
// of the look, was read once the user saved over it (attack pass 110).
func (rd resolvedDirs) allowWhere(p string) []string {
	ws := []string{p, rd.hiddenWhere(p)}
	if r, ok := rd.eval(p); ok {
		ws = append(ws, r)
	}
	return ws
}

// hiddenWhere is the hidden path p below its closest existing ancestor's
// canonical form, as the plan hides it. Named through a symlink in a
// writable tree that leads out of it (work/link/token, link -> a
// directory the command may only read), a missing one was taken for a
// path in the tree, which the command may make itself, and not looked at,
// and the file the user made there on the host while the command ran was
// read; a present one was looked at by that name, and the command
// removed the symlink: the look took the file for gone, and the file the
// user saved over it was read (attack pass 109). Its lookups are those
// the lstat of p makes.
func (rd resolvedDirs) hiddenWhere(p string) string {
	rest := ""
	for d := p; ; {
		parent := filepath.Dir(d)
		if parent == d {
			return p
		}
		rest = filepath.Join(filepath.Base(d), rest)
		if r, ok := rd.eval(parent); ok {
			return filepath.Join(r, rest)
		}
		d = parent
	}
}

// resolvedDirs remembers, for one look at the policy's hidden paths, where
// each directory led (filepath.EvalSymlinks): the default secrets share a
// few directories (the home, ~/.config), and each resolution is an lstat
// a component (hundreds a run without it).
type resolvedDirs map[string]resolvedDir

type resolvedDir struct {
	path string
	ok   bool
}

func (rd resolvedDirs) eval(p string) (string, bool) {
	if r, seen := rd[p]; seen {
		return r.path, r.ok
	}
	r, err := filepath.EvalSymlinks(p)
	rd[p] = resolvedDir{r, err == nil}
	return r, err == nil
}

// asUser runs fn with the file-system credentials of as (moatd's client),
// on a thread of its own, or with this process's where as is nil (a
// user's own moat, or root's).
func asUser(as *enforce.Identity, fn func()) error {
	if as == nil {
		fn()
		return nil
	}
	if err := ascred.Do(as.Uid, as.Gid, as.Groups, func() error { fn(); return nil }); err != nil {
		return fmt.Errorf("cannot look at the hidden paths as uid %d: %w", as.Uid, err)
	}
	return nil
}

// outsideRoots is paths less those in one of fp's writable roots: the
// command itself may make such a path (a denyRead .env a script copies
// from .env.example), and what it wrote it may read; ending the session
// for it would end every session whose build makes one. Not covered so:
// such a path that the user makes on the host while the session runs.
// One whose directory was read-only to the command, and not hidden (a
// protected name: ~/.claude in a writable home), it could not make, and is
// kept: the user's Claude Code login on the host wrote the default secret
// ~/.claude/.credentials.json there during a run, and the command read it
// (attack pass 109).
func outsideRoots(paths []string, fp enforce.Footprint) []string {
	var out []string
	for _, p := range paths {
		in := false
		for _, r := range fp.WritableRoots {
			if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
				in = true
				break
			}
		}
		if d := filepath.Dir(p); in && fp.ReadOnly != nil && fp.ReadOnly(d) && (fp.Hidden == nil || !fp.Hidden(d)) {
			in = false
		}
		if !in {
			out = append(out, p)
		}
	}
	return out
}

// hiddenFile is a denyRead path that existed when a session's sandbox was
// made, and which file it was then.
type hiddenFile struct {
	path string
	was  os.FileInfo
	born int64 // its birth (gitguard.BirthNS), 0 where the filesystem keeps none
}

// replacedBy reports whether fi, which path is now, is another file than
// the one recorded. The inode number alone does not tell: bash saves its
// history by writing a new file and renaming it over the old one, at its
// start and again at its exit, and on ext4 the second new file got the
// number the first one freed, the very file recorded; the run's look took
// it for the hidden file, and a command read the history for the rest of
// the run, unsaid (attack pass 101). The birth time tells them apart
// where the filesystem keeps it; an append in place moves neither.
func (h hiddenFile) replacedBy(fi os.FileInfo) bool {
	if !os.SameFile(fi, h.was) {
		return true
	}
	if h.born == 0 {
		return false
	}
	born, ok := gitguard.BirthNS(h.path)
	return ok && born != h.born
}

// lateSecret is an error naming the first path lateHidden finds, or nil:
// such a path was made or replaced after the session's sandbox, which
// cannot hide it, so the session runs no command any more (fail closed; a
// new session hides it).
func lateSecret(paths []string, present []hiddenFile, as *enforce.Identity) error {
	p, replaced, err := lateHidden(paths, present, as)
	switch {
	case err != nil:
		return fmt.Errorf("%w: the session runs no more commands", err)
	case p == "":
		return nil
	case replaced:
		return fmt.Errorf("%s, which the policy hides, was replaced after this session's sandbox started, and a running sandbox cannot hide the new file: the session runs no more commands; start a new session", p)
	}
	return fmt.Errorf("%s, which the policy hides, was made after this session's sandbox started, and a running sandbox cannot hide it: the session runs no more commands; start a new session", p)
}

// lateHidden returns the first of paths that exists now, or the first of
// present that is another file now (replaced), or "". One of present that
// is gone is not returned: nothing shows in its place until a file is made
// there, which is another file. It looks with as's credentials (asUser),
// and fails (err) where it cannot take them.
func lateHidden(paths []string, present []hiddenFile, as *enforce.Identity) (path string, replaced bool, err error) {
	err = asUser(as, func() { path, replaced = lateHiddenHere(paths, present) })
	return path, replaced, err
}

// lateHiddenHere is lateHidden with this thread's credentials.
func lateHiddenHere(paths []string, present []hiddenFile) (path string, replaced bool) {
	for _, p := range paths {
		// ENOTDIR: a file where a directory on its way would be (a
		// placeholder at .vscode, below which .vscode/x.json is looked
		// at): nothing can be there.
		if _, err := os.Lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return p, false
		}
	}
	for _, h := range present {
		fi, err := os.Lstat(h.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || h.replacedBy(fi) {
			return h.path, true
		}
	}
	return "", false
}

// lateRunError is lateHidden's finding for a single run (Run), which ends
// the command.
func lateRunError(paths []string, present []hiddenFile, as *enforce.Identity) error {
	p, replaced, err := lateHidden(paths, present, as)
	switch {
	case err != nil:
		return fmt.Errorf("the command was ended: %w", err)
	case p == "":
		return nil
	case replaced:
		return fmt.Errorf("the command was ended: %s, which the policy hides, was replaced on the host while it ran, and a running sandbox cannot hide the new file", p)
	}
	return fmt.Errorf("the command was ended: %s, which the policy hides, was made on the host while it ran, and a running sandbox cannot hide it", p)
}

// lateAfterRunError is lateHidden's finding once a run's command has
// ended by itself: it ran while the path could be read.
func lateAfterRunError(paths []string, present []hiddenFile, as *enforce.Identity) error {
	p, replaced, err := lateHidden(paths, present, as)
	switch {
	case err != nil:
		return err
	case p == "":
		return nil
	case replaced:
		return fmt.Errorf("%s, which the policy hides, was replaced on the host while the command ran, and a running sandbox cannot hide the new file: the command may have read it, and what it wrote may hold it", p)
	}
	return fmt.Errorf("%s, which the policy hides, was made on the host while the command ran, and a running sandbox cannot hide it: the command may have read it, and what it wrote may hold it", p)
}

// watchLate ends the session when one of the paths missingHidden found is
// made, or one presentHidden found is replaced: a command already running (a background one) could read it, and
// the next would be refused anyway. It looks once a second (an lstat of a
// missing name each, a few microseconds): the path stays readable to what
// runs for up to that long.
func (s *Session) watchLate() {
	if len(s.missing) == 0 && len(s.present) == 0 {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := lateSecret(s.missing, s.present, s.req.As); err != nil {
				s.log.Warn("session ended", "why", err)
				s.mu.Lock()
				s.warnings = append(s.warnings, "the session was ended: "+err.Error())
				s.mu.Unlock()
				s.Close()
				return
			}
		}
	}
}
