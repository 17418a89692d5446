package darwin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/moat-sandbox/moat/runtime/gitguard"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Survey finds, on the disk, the paths a run must keep read-only inside
// its writable trees: the mandatory names (shell start-up files, editor
// and agent folders) at the top of every writable tree, the working
// directory and the home directory, and wherever they already exist within
// mandatoryDenySearchDepth; the control files of every git repository found
// there and of the working directory's (hooks, config, modules, commondir,
// config.worktree, a .git pointer, a linked worktree's redirections, the
// directories core.hooksPath names, the files config includes); a HEAD
// where there is none (a HEAD would make the directory a bare repository).
//
// It mirrors the search the Linux enforcer makes (linux/plan.go
// findProtections and linux/scan.go), with one difference Seatbelt allows:
// a protection costs a rule, not a mount point, so every mandatory name is
// protected at those places whether it exists or not.
func Survey(pol *policy.Policy, o SurveyOptions) ([]Protection, error) {
	s := &survey{pol: pol, o: o, seen: map[string]bool{}}
	if s.o.MaxDirs == 0 {
		s.o.MaxDirs = DefaultMaxDirs
	}
	return s.run()
}

// SurveyOptions tune Survey.
type SurveyOptions struct {
	// MaxDirs bounds the directories one search reads (0: DefaultMaxDirs);
	// a larger tree is refused.
	MaxDirs int
	// XDGConfigHome is $XDG_CONFIG_HOME, where git's user config may live.
	XDGConfigHome string
	// HGRCPath is $HGRCPATH, the files the user's hg reads.
	HGRCPath string
	// GitConfigGlobal, GitConfigSystem and GitTemplateDir are
	// $GIT_CONFIG_GLOBAL, $GIT_CONFIG_SYSTEM and $GIT_TEMPLATE_DIR of the
	// command's environment (the user's): where the user's git reads its
	// configuration and templates. Each is protected, and the configs
	// read, as on Linux (linux/plan.go).
	GitConfigGlobal, GitConfigSystem, GitTemplateDir string
	// SystemGitConfigs are git's system config files (nil:
	// DefaultSystemGitConfigs).
	SystemGitConfigs []string
}

// DefaultMaxDirs bounds one search (the Linux enforcer's bound).
const DefaultMaxDirs = 100_000

// DefaultSystemGitConfigs are where git's system configuration lives on
// macOS: Apple's git (Command Line Tools, Xcode), Homebrew's, and /etc.
var DefaultSystemGitConfigs = []string{
	"/etc/gitconfig",
	"/Library/Developer/CommandLineTools/usr/share/git-core/gitconfig",
	"/Applications/Xcode.app/Contents/Developer/usr/share/git-core/gitconfig",
	"/opt/homebrew/etc/gitconfig",
	"/usr/local/etc/gitconfig",
}

type survey struct {
	pol  *policy.Policy
	o    SurveyOptions
	out  []Protection
	seen map[string]bool
	home string
	// hooksPaths and includes of the user's and the system's git config.
	global gitFacts
}

func (s *survey) protect(p, why string) {
	if p == "" || s.seen[p] {
		return
	}
	s.seen[p] = true
	s.out = append(s.out, Protection{Path: p, Why: why})
}

// resolve resolves p's symlinks on this machine. The paths Survey returns
// are this machine's: Generate resolves them again with Options.Resolve
// (the same on a Mac; with the Mac's root symlinks elsewhere).
func (s *survey) resolve(p string) string {
	r, err := evalExisting(filepath.Clean(p))
	if err != nil {
		return filepath.Clean(p)
	}
	return r
}

func (s *survey) run() ([]Protection, error) {
	pol := s.pol
	depth := pol.FS.MandatoryDenySearchDepth
	if depth <= 0 {
		depth = policy.DefaultSearchDepth
	}
	if pol.Home != "" {
		s.home = s.resolve(pol.Home)
	}
	sys := s.o.SystemGitConfigs
	if sys == nil {
		sys = DefaultSystemGitConfigs
	}
	files := append([]string(nil), sys...)
	if s.home != "" {
		// ~/.config/git/config even where $XDG_CONFIG_HOME names another
		// place, as on Linux: a shell of the user's may not set it.
		files = append(files, filepath.Join(s.home, ".gitconfig"), filepath.Join(s.home, ".config", "git", "config"))
	}
	if x := s.o.XDGConfigHome; filepath.IsAbs(x) {
		files = append(files, filepath.Join(x, "git", "config"))
	}
	for _, f := range []string{s.o.GitConfigGlobal, s.o.GitConfigSystem} {
		if filepath.IsAbs(f) {
			files = append(files, filepath.Clean(f))
		}
	}
	s.global = readGitFacts(files, s.home)
	if t := s.o.GitTemplateDir; filepath.IsAbs(t) {
		s.global.templateDirs = append(s.global.templateDirs, filepath.Clean(t))
	}

	// The writable trees: each one's top, and what the search finds in it.
	roots, err := s.writableRoots(depth)
	if err != nil {
		return nil, err
	}
	for _, r := range roots {
		s.names(r, policy.ReservedNames)
		if err := s.scan(r, depth); err != nil {
			return nil, err
		}
	}
	// The working directory and its repository.
	if pol.Cwd != "" {
		c := s.resolve(pol.Cwd)
		s.names(c, policy.CwdReservedNames)
		if gitDir, gitFile := enclosingGitDir(c, s.resolve); gitDir != "" {
			s.gitEntries(gitDir, true)
			if gitFile != "" {
				s.protect(gitFile, "git: a .git pointer is never writable")
			}
			if cd, ok := readCommondir(gitDir, s.resolve); ok {
				s.gitEntries(cd, true)
			}
		}
	}
	if s.home != "" {
		s.names(s.home, policy.HomeReservedNames)
		for _, n := range policy.HomeReservedPaths {
			s.protect(filepath.Join(s.home, n), "mandatory: ~/"+n+" is never writable")
		}
		for _, n := range policy.HomeProtectedPaths {
			s.protect(filepath.Join(s.home, n), "mandatory: ~/"+n+" is never writable (a version control tool's user configuration)")
		}
		s.danglingHomeLinks()
	}
	// The user's git configuration files outside the home's reserved
	// names: a command that wrote one (a dotfiles tree in a writable tree)
	// had the user's git, or an editor's git status during the run, run
	// its core.fsmonitor outside the sandbox (found by attack pass 54;
	// Linux's mounts since attack pass 47).
	if x := s.o.XDGConfigHome; filepath.IsAbs(x) {
		s.protect(s.resolve(filepath.Join(x, "git")), "git: the user's $XDG_CONFIG_HOME/git")
		for _, n := range policy.XDGProtectedPaths {
			s.protect(s.resolve(filepath.Join(x, n)), "mandatory: $XDG_CONFIG_HOME/"+n+" is never writable (a version control tool's user configuration)")
		}
	}
	for _, f := range []string{s.o.GitConfigGlobal, s.o.GitConfigSystem} {
		if filepath.IsAbs(f) {
			s.protect(s.resolve(f), "git: the user's git configuration ($GIT_CONFIG_GLOBAL, $GIT_CONFIG_SYSTEM)")
		}
	}
	for _, h := range s.global.hooksPaths {
		if p := gitguard.ConfigPath(h, "", s.home); p != "" {
			s.protect(s.resolve(p), "git: the user's core.hooksPath")
		}
	}
	for _, inc := range s.global.includes {
		s.protect(s.resolve(inc), "git: included by the user's git configuration")
	}
	// What the user's Mercurial configuration includes (%include): the
	// user's hg status during the run reads it (attack pass 94).
	for _, inc := range gitguard.HgUserIncludes(s.home, s.o.XDGConfigHome, s.o.HGRCPath) {
		s.protect(s.resolve(inc), "hg: included by the user's Mercurial configuration")
	}
	for _, t := range s.global.templateDirs {
		if p := gitguard.ConfigPath(t, "", s.home); p != "" {
			s.protect(s.resolve(p), "git: the user's init.templateDir")
		}
	}
	return s.out, nil
}

// danglingHomeLinks protects where each of the home's own protected names
// that is a dangling symlink leads (~/.gitconfig -> a dotfiles tree's
// gitconfig not made yet): Seatbelt compares the path a file is made at,
// and Generate resolves only what exists, so the profile named the symlink
// alone and the command could make the file the home's name reads (found
// by attack pass 54). As on Linux (linux/plan.go, "A dangling symlink"):
// the home's own names only (a link the command planted in a tree is not
// followed, or it could lock a path of a later run's tree), never a path
// in a git directory or one that holds a writable root.
func (s *survey) danglingHomeLinks() {
	var roots []string
	for _, r := range s.pol.FS.AllowWrite {
		roots = append(roots, s.resolve(r.Path))
	}
	for _, pr := range slices.Clone(s.out) {
		if !policy.HomeOwn(pr.Path, s.home) {
			continue
		}
		t, ok := danglingTarget(pr.Path, s.resolve)
		if !ok || strings.Contains(t+"/", "/.git/") || slices.ContainsFunc(roots, func(r string) bool { return within(r, t) }) {
			continue
		}
		s.protect(t, pr.Why+" (where the symlink "+pr.Path+" leads)")
	}
}

// danglingTarget follows p, a symlink, link by link (at most 40, as the
// kernel does) to the path that does not exist where the chain ends; ok is
// false when p is no symlink or the chain ends at something that exists.
func danglingTarget(p string, resolve func(string) string) (string, bool) {
	t := p
	for i := 0; i < 40; i++ {
		l, err := os.Readlink(t)
		if err != nil {
			break
		}
		if !filepath.IsAbs(l) {
			l = filepath.Join(filepath.Dir(t), l)
		}
		t = resolve(l)
	}
	if t == p {
		return "", false
	}
	if _, err := os.Lstat(t); !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	return t, true
}

// writableRoots are the directories of allowWrite: each literal one that
// is a directory, and each directory an allowWrite glob matches now.
func (s *survey) writableRoots(depth int) ([]string, error) {
	var out []string
	for _, r := range s.pol.FS.AllowWrite {
		if !r.Glob || !hasMeta(r.Path) {
			p := s.resolve(r.Path)
			if kind(p) == 'd' {
				out = append(out, p)
			}
			continue
		}
		ms, err := s.expand(r.Path, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// expand lists the directories a glob matches now, ** spanning at most
// depth directories, as Linux's expansion does.
func (s *survey) expand(pattern string, depth int) ([]string, error) {
	g := splitGlob(pattern)
	g.base = s.resolve(g.base)
	m, err := g.match()
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", pattern, errGlob, err)
	}
	limit := depth
	for _, seg := range g.segs {
		if seg != "**" {
			limit++
		}
	}
	var out []string
	n := 0
	err = walkDirs(g.base, limit, func(dir string, _ []fs.DirEntry) error {
		if n++; n > s.o.MaxDirs {
			return fmt.Errorf("expanding allowWrite %s read more than %d directories", pattern, s.o.MaxDirs)
		}
		if re.MatchString(dir) {
			out = append(out, dir)
		}
		return nil
	})
	return out, err
}

// walkDirs calls f with dir and its entries, then with the directories
// below it, down to depth levels, breadth first, never into .git or
// node_modules, never through a symlink. An unreadable directory is
// skipped.
func walkDirs(dir string, depth int, f func(string, []fs.DirEntry) error) error {
	type item struct {
		dir string
		d   int
	}
	queue := []item{{dir, 0}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		es, err := os.ReadDir(it.dir)
		if err != nil {
			continue
		}
		if err := f(it.dir, es); err != nil {
			return err
		}
		if it.d >= depth {
			continue
		}
		for _, e := range es {
			if e.IsDir() && foldName(e.Name()) != ".git" && e.Name() != "node_modules" {
				queue = append(queue, item{filepath.Join(it.dir, e.Name()), it.d + 1})
			}
		}
	}
	return nil
}

// names protects the mandatory names at the top of dir: every one of them
// (a rule costs nothing where the name is absent), and HEAD where it is
// absent if reserve lists it.
func (s *survey) names(dir string, reserve []string) {
	for _, n := range policy.MandatoryFiles {
		s.protect(filepath.Join(dir, n), "mandatory: "+n+" is never writable")
	}
	for _, n := range policy.MandatoryDirs {
		s.protect(filepath.Join(dir, n), "mandatory: "+n+" is never writable")
	}
	for _, n := range reserve {
		p := filepath.Join(dir, n)
		if n == "HEAD" {
			// Only where it is absent: an existing HEAD is a repository's,
			// and git must keep writing it. A HEAD that is not (no objects/
			// and refs/ beside it) would become one with them.
			switch {
			case kind(p) == 0:
				s.protect(p, "git: a HEAD here would make this directory a repository")
			case kind(filepath.Join(dir, "objects")) != 'd' || kind(filepath.Join(dir, "refs")) != 'd':
				for _, m := range []string{"objects", "refs"} {
					if kind(filepath.Join(dir, m)) == 0 {
						s.protect(filepath.Join(dir, m), "git: beside this HEAD, "+m+"/ would make the directory a repository")
					}
				}
			}
			continue
		}
		s.protect(p, "mandatory: "+n+" is never writable")
	}
}

// scan searches root down to depth for git repositories and existing
// mandatory names (linux/scan.go's search).
func (s *survey) scan(root string, depth int) error {
	mandatory := map[string]bool{}
	for _, n := range policy.MandatoryFiles {
		mandatory[foldName(n)] = true
	}
	for _, n := range policy.MandatoryDirs {
		mandatory[foldName(n)] = true
	}
	n := 0
	return walkDirs(root, depth, func(dir string, es []fs.DirEntry) error {
		if n++; n > s.o.MaxDirs {
			return fmt.Errorf("the search for git repositories under %s read more than %d directories at depth ≤ %d; lower mandatoryDenySearchDepth or narrow allowWrite", root, s.o.MaxDirs, depth)
		}
		// Names are matched with case folded: on a case-insensitive
		// volume (macOS's default) .GIT is the .git git finds and
		// .Claude the .claude Claude Code reads. On a case-sensitive one
		// the folded matches are protected too, which costs nothing.
		has := map[string][]fs.DirEntry{}
		for _, e := range es {
			k := foldName(e.Name())
			has[k] = append(has[k], e)
			if mandatory[k] {
				s.protect(filepath.Join(dir, e.Name()), "mandatory: "+e.Name()+" is never writable")
			}
		}
		for _, g := range has[".git"] {
			p := filepath.Join(dir, g.Name())
			s.names(dir, nil)
			switch {
			case g.IsDir():
				s.gitEntries(p, false)
			case g.Type().IsRegular():
				s.protect(p, "git: a .git pointer is never writable")
				if t, ok := readGitPointer(p, s.resolve); ok {
					s.gitEntries(t, false)
					if c, ok := readCommondir(t, s.resolve); ok {
						s.gitEntries(c, false)
					}
				}
			}
		}
		if isBareRepo(has) {
			s.gitEntries(dir, false)
		}
		return nil
	})
}

// foldName is a name with its case folded, for matching names as a
// case-insensitive volume does (ASCII letters, and U+212A KELVIN SIGN and
// U+017F LONG S, which fold to k and s).
func foldName(n string) string { return strings.ToLower(strings.ToUpper(n)) }

// gitEntries protects the control files of git directory g: where they
// exist, or also where they do not when reserve is set (the working
// directory's repository).
func (s *survey) gitEntries(g string, reserve bool) {
	allowConfig := s.pol.FS.AllowGitConfig
	for _, n := range policy.GitProtected {
		if (n == "config" || n == "config.worktree") && allowConfig {
			continue
		}
		p := filepath.Join(g, n)
		if kind(p) != 0 || (reserve && slices.Contains(policy.GitReserved, n)) {
			s.protect(p, "git: "+n+" is never writable")
		}
	}
	facts := readGitFacts([]string{filepath.Join(g, "config")}, s.home)
	if facts.worktreeConfig && !allowConfig {
		s.protect(filepath.Join(g, "config.worktree"), "git: config.worktree is read (extensions.worktreeConfig)")
	}
	if es, err := os.ReadDir(filepath.Join(g, "worktrees")); err == nil {
		for _, e := range es {
			if !e.IsDir() {
				continue
			}
			for _, n := range policy.GitWorktreeProtected {
				if n == "config.worktree" && allowConfig {
					continue
				}
				s.protect(filepath.Join(g, "worktrees", e.Name(), n), "git: a linked worktree's "+n+" is never writable")
			}
		}
	}
	base := g
	if filepath.Base(g) == ".git" {
		base = filepath.Dir(g)
	}
	for _, h := range append(append([]string(nil), facts.hooksPaths...), s.global.hooksPaths...) {
		if p := gitguard.ConfigPath(h, base, s.home); p != "" {
			s.protect(s.resolve(p), "git: core.hooksPath "+h+" holds hooks")
		}
	}
	for _, inc := range facts.includes {
		s.protect(s.resolve(inc), "git: included by "+filepath.Join(g, "config"))
	}
}

// kind says what is at p: 'd' directory, 'f' anything else, 0 nothing.
func kind(p string) byte {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0
	}
	if fi.IsDir() {
		return 'd'
	}
	return 'f'
}

// isBareRepo is git's test for a git directory: HEAD, objects/ and refs/
// (by folded name: see scan).
func isBareRepo(has map[string][]fs.DirEntry) bool {
	some := func(name string, dir bool) bool {
		for _, e := range has[name] {
			if e.IsDir() == dir {
				return true
			}
		}
		return false
	}
	return some("head", false) && some("objects", true) && some("refs", true)
}

// enclosingGitDir finds the git directory of the repository holding dir
// as git's discovery does.
func enclosingGitDir(dir string, resolve func(string) string) (gitDir, gitFile string) {
	for d := dir; ; d = filepath.Dir(d) {
		g := filepath.Join(d, ".git")
		switch kind(g) {
		case 'd':
			return g, ""
		case 'f':
			if t, ok := readGitPointer(g, resolve); ok {
				return t, g
			}
			return "", ""
		}
		if kind(filepath.Join(d, "HEAD")) == 'f' && kind(filepath.Join(d, "objects")) == 'd' && kind(filepath.Join(d, "refs")) == 'd' {
			return d, "" // a bare repository (git's test, three lstats)
		}
		if d == "/" || d == "." {
			return "", ""
		}
	}
}

// readGitPointer reads a .git file ("gitdir: PATH") as git does.
func readGitPointer(p string, resolve func(string) string) (string, bool) {
	b, err := readSmall(p, 4096)
	if err != nil {
		return "", false
	}
	line := string(b)
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	line = strings.TrimPrefix(line, "\ufeff")
	target, ok := strings.CutPrefix(line, "gitdir:")
	target = strings.TrimSpace(target)
	if !ok || target == "" || strings.ContainsRune(target, 0) {
		return "", false
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(p), target)
	}
	return resolve(target), true
}

func readCommondir(gitdir string, resolve func(string) string) (string, bool) {
	b, err := readSmall(filepath.Join(gitdir, "commondir"), 4096)
	if err != nil {
		return "", false
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" || strings.ContainsRune(v, 0) {
		return "", false
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(gitdir, v)
	}
	return resolve(v), true
}

// gitFacts are what git config files say about files git reads besides
// its own: whether config.worktree is read, hooks directories, includes.
type gitFacts struct {
	worktreeConfig bool
	hooksPaths     []string
	includes       []string
	templateDirs   []string // init.templateDir values
}

// readGitFacts reads at most maxIncludeReads files, as Linux's: includes
// through symlinks to a config's own directory (l1/config ... l20/config)
// named 20^10 paths, each new as written (attack pass 59).
func readGitFacts(files []string, home string) gitFacts {
	var f gitFacts
	seen := map[string]bool{}
	var read func(p string, depth int)
	read = func(p string, depth int) {
		if depth > 10 || seen[p] || len(seen) >= maxIncludeReads {
			return
		}
		seen[p] = true
		b, err := readSmall(p, 1<<20)
		if err != nil {
			return
		}
		es, err := gitguard.ParseConfig(b)
		if err != nil {
			return
		}
		for _, e := range es {
			switch {
			case e.Name == "extensions.worktreeconfig" && e.Bool():
				f.worktreeConfig = true
			case e.Name == "core.hookspath" && e.HasValue && e.Value != "":
				f.hooksPaths = append(f.hooksPaths, e.Value)
			case e.Name == "init.templatedir" && e.HasValue && e.Value != "":
				f.templateDirs = append(f.templateDirs, e.Value)
			case (e.Section() == "include" || e.Section() == "includeif") && e.Key() == "path" && e.HasValue:
				if inc := gitguard.ConfigPath(e.Value, filepath.Dir(p), home); inc != "" {
					f.includes = append(f.includes, inc)
					read(inc, depth+1)
				}
			}
		}
	}
	for _, p := range files {
		read(p, 0)
	}
	return f
}

// maxIncludeReads bounds the config files one readGitFacts reads.
const maxIncludeReads = 1000

// readSmall reads a regular file of at most max bytes (a FIFO or a device
// is refused, not read).
func readSmall(p string, max int64) ([]byte, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, errors.New("not a small regular file")
	}
	return os.ReadFile(p)
}
