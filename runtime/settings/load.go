package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/lazyre"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Default locations.
const (
	ManagedFileLinux  = "/etc/claude-code/managed-settings.json"
	ManagedFileDarwin = "/Library/Application Support/ClaudeCode/managed-settings.json"
	SRTUserFile       = ".srt-settings.json" // in the home directory
)

// Options say where to look.
type Options struct {
	// File is --settings FILE, in either format. When set, it replaces the
	// default user and project files; managed settings still apply on top.
	File string
	// Cwd is the working directory. If empty, os.Getwd.
	Cwd string
	// Home is the home directory. If empty, os.UserHomeDir.
	Home string
	// RuntimeDir is the user's runtime directory, whose credential stores
	// (policy.RuntimeSecretPaths) are default secrets. If empty and Home
	// is empty too, this process's: $XDG_RUNTIME_DIR and /run/user/UID.
	RuntimeDir string
	// ManagedFile is the managed settings file. If empty, the platform's
	// location; "-" reads none. The *.json files of managed-settings.d
	// beside it (ManagedDropInDir) are managed settings too, merged on top
	// of it in alphabetical order.
	ManagedFile string
	// NoDefaults reads no default user or project file (only File and the
	// managed file).
	NoDefaults bool
	// RunsNothing says the caller runs nothing (moat check, moat policy):
	// a working directory that Claude Code's implicit rule may not make
	// writable (a system directory) is then a note, starting with
	// RunRefusalNote, instead of an error.
	RunsNothing bool
	// Check, if set, is called for every default project or user file that
	// exists, before it is read; an error stops the load (a file that a
	// running sandbox could have written, say). If nil, nothing is checked.
	Check func(file string) error
}

// Format of a settings file.
type Format int

const (
	FormatClaude Format = iota + 1 // Claude Code settings.json
	FormatSRT                      // the npm sandbox runtime's settings file
)

func (f Format) String() string {
	switch f {
	case FormatClaude:
		return "claude-settings"
	case FormatSRT:
		return "srt-settings"
	}
	return "unknown"
}

// Level is a source's place in the precedence order (lower is stronger).
type Level int

const (
	LevelManaged Level = iota
	LevelCommandLine
	LevelLocalProject
	LevelProject
	LevelUser
	LevelSRTUser
)

var levelNames = map[Level]string{
	LevelManaged:      "managed",
	LevelCommandLine:  "command line",
	LevelLocalProject: "local project",
	LevelProject:      "project",
	LevelUser:         "user",
	LevelSRTUser:      "srt user",
}

func (l Level) String() string { return levelNames[l] }

// Source is one settings file that was read.
type Source struct {
	File   string
	Level  Level
	Format Format
}

// Load builds the Policy from the settings files, highest precedence first:
// managed (managed-settings.d's drop-ins, the last first, then the managed
// file), --settings FILE (or, without it, .claude/settings.local.json,
// .claude/settings.json, ~/.claude/settings.json and ~/.srt-settings.json).
// Lists merge across sources; a scalar comes from the strongest source that
// sets it. With no file at all, the defaults apply: reads everywhere but the
// secrets, writes nowhere but the private /tmp, no network.
func Load(opts Options) (*policy.Policy, []Source, error) {
	cwd, home, err := dirs(opts)
	if err != nil {
		return nil, nil, err
	}
	type cand struct {
		file     string
		level    Level
		format   Format // 0: by shape
		explicit bool   // missing is an error
	}
	var cands []cand
	managed := opts.ManagedFile
	if managed == "" {
		managed = ManagedFileLinux
		if isDarwin {
			managed = ManagedFileDarwin
		}
	}
	if managed != "-" {
		// Claude Code's drop-ins (managed-settings.d/*.json beside the
		// managed file) merge in alphabetical order on top of it: the
		// last is the strongest, and layers go strongest first.
		dropIns, err := managedDropIns(managed)
		if err != nil {
			return nil, nil, err
		}
		if opts.ManagedFile == "" {
			// The administrator's: root's alone to write (a drop-in a
			// user, or a sandbox the user made /etc/claude-code writable
			// in, planted would be obeyed as managed: found by an attack
			// pass).
			for _, f := range append([]string{filepath.Dir(managed), filepath.Join(filepath.Dir(managed), ManagedDropInDir), managed}, dropIns...) {
				if err := rootOnly(f); err != nil {
					return nil, nil, err
				}
			}
		}
		for i := len(dropIns) - 1; i >= 0; i-- {
			cands = append(cands, cand{file: dropIns[i], level: LevelManaged, format: FormatClaude})
		}
		cands = append(cands, cand{file: managed, level: LevelManaged, format: FormatClaude})
	}
	if opts.File != "" {
		f := opts.File
		if !filepath.IsAbs(f) {
			f = filepath.Join(cwd, f)
		}
		cands = append(cands, cand{file: f, level: LevelCommandLine, explicit: true})
	} else if !opts.NoDefaults {
		cands = append(cands, cand{file: filepath.Join(cwd, ".claude", "settings.local.json"), level: LevelLocalProject, format: FormatClaude})
		// Started in the home directory, .claude/settings.json is the
		// user's own file: read once, as the user's (it was read as a
		// project's too, and refused what only a project may not set).
		project := filepath.Join(cwd, ".claude", "settings.json")
		if home == "" || !sameFile(project, filepath.Join(home, ".claude", "settings.json")) {
			cands = append(cands, cand{file: project, level: LevelProject, format: FormatClaude})
		}
		if home != "" {
			cands = append(cands,
				cand{file: filepath.Join(home, ".claude", "settings.json"), level: LevelUser, format: FormatClaude},
				cand{file: filepath.Join(home, SRTUserFile), level: LevelSRTUser, format: FormatSRT},
			)
		}
	}

	var layers []*layer
	var sources []Source
	var notes []string
	for _, c := range cands {
		if opts.Check != nil && (c.level == LevelLocalProject || c.level == LevelProject || c.level == LevelUser || c.level == LevelSRTUser) {
			if _, err := os.Lstat(c.file); err == nil {
				if err := opts.Check(c.file); err != nil {
					return nil, nil, &Error{File: c.file, Reason: err.Error(), Err: err}
				}
			}
		}
		data, err := readFile(c.file)
		if err != nil {
			// ENOTDIR: a directory of the way is not one (another moat
			// run's placeholder at .claude, a socket): no file there.
			absent := errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
			if !absent && c.level != LevelManaged && placeholderLike(c.file) {
				// Another moat run's placeholder at a settings file's
				// name (a socket or an empty directory of mode 0: a
				// session whose working directory is the home reserves
				// ~/.srt-settings.json while it lives): no file there.
				// Every other moat of the user failed on it ("permission
				// denied") until that session ended.
				absent = true
			}
			if absent && !c.explicit {
				continue
			}
			if absent {
				return nil, nil, &Error{File: c.file, Reason: "no such file"}
			}
			reason := fmt.Sprintf("cannot read: %v", err)
			if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
				reason = fmt.Sprintf("cannot read: %v", pe.Err)
			}
			return nil, nil, &Error{File: c.file, Reason: reason, Err: err}
		}
		o, err := parseObject(c.file, data)
		if err != nil {
			return nil, nil, err
		}
		dups, err := duplicateKeys(data)
		if err != nil {
			return nil, nil, &Error{File: c.file, Reason: "not valid JSON: " + err.Error(), Err: err}
		}
		format := c.format
		if format == 0 {
			if format, err = shape(o); err != nil {
				return nil, nil, err
			}
		}
		r := resolver{cwd: cwd, home: home, dir: filepath.Dir(c.file), file: c.file, notes: &notes}
		var l *layer
		if format == FormatSRT {
			l, err = decodeSRT(o, r)
		} else {
			l, err = decodeClaude(o, r)
		}
		if err != nil {
			return nil, nil, err
		}
		// A key twice in one object: refused where moat reads it (the
		// other tool's keys are not moat's to judge).
		for _, d := range dups {
			top, _, _ := strings.Cut(d.path, ".")
			if !o.used[top] {
				continue
			}
			return nil, nil, &Error{File: c.file, Field: d.path, Reason: fmt.Sprintf("appears twice (at %s and at %s): JSON readers keep one of them silently; keep one", lineCol(data, d.first), lineCol(data, d.then))}
		}
		if c.level == LevelProject || c.level == LevelLocalProject {
			if field, why := projectWidens(l); field != "" {
				return nil, nil, &Error{File: c.file, Field: field, Reason: "a project's settings may not " + why + ": set it in your own settings (~/.claude/settings.json) or pass --settings"}
			}
		}
		l.level, l.format, l.file = c.level, format, c.file
		layers = append(layers, l)
		sources = append(sources, Source{File: c.file, Level: c.level, Format: format})
	}
	secretHomes := []string{home}
	if opts.Home == "" {
		// $HOME names the home, but the account's own home holds its
		// secrets whatever $HOME says (HOME=/elsewhere, sudo -E).
		if a := accountHome(); a != "" && a != home {
			secretHomes = append(secretHomes, a)
		}
	}
	runDirs := runtimeDirs(opts)
	// allowManagedPermissionRulesOnly: only the managed files' permission
	// rules count, for the permission engine and for the sandbox rules
	// made from them (found by an attack pass: it was ignored, and a
	// project's Read allow undid a managed deny under it). Another file's
	// is read and has no effect, as allowManagedDomainsOnly.
	rulesOnly := managedFlag(layers, func(l *layer) *bool { return l.managedRulesOnly })
	for _, l := range layers {
		drop := rulesOnly && l.level != LevelManaged
		if n := len(l.allow) + len(l.ask) + len(l.deny); drop && n > 0 {
			rules := "rules"
			if n == 1 {
				rules = "rule"
			}
			notes = append(notes, fmt.Sprintf("%s: its %d permission %s (allow, ask, deny) not used: managed settings set allowManagedPermissionRulesOnly", l.file, n, rules))
		}
		l.foldRules(drop)
	}
	if err := checkExternalProxy(layers); err != nil {
		return nil, nil, err
	}
	x := reach{depth: searchDepth(layers), entries: globBudget}
	for _, l := range layers {
		if isProject(l.level) {
			if err := x.checkProjectWrites(l); err != nil {
				return nil, nil, err
			}
		}
	}
	managedReadOnly := managedFlag(layers, func(l *layer) *bool { return l.managedReadOnly })
	g := readGuard{reach: &x, homes: secretHomes, runDirs: runDirs, ls: layers,
		dropped: func(l *layer) bool { return managedReadOnly && l.level != LevelManaged }}
	if err := g.check(); err != nil {
		return nil, nil, err
	}
	p := merge(layers, cwd, home, secretHomes, runDirs)
	p.Notes = append(p.Notes, notes...)
	if opts.ManagedFile == "" && managed != "-" {
		// The managed settings' directory is never writable in a sandbox
		// (a drop-in planted there would be obeyed as the administrator's).
		p.Protect = append(p.Protect, filepath.Dir(managed))
	}
	if n := externalProxyNote(layers, p); n != "" {
		p.Notes = append(p.Notes, n)
	}
	var projectFiles []string
	for _, l := range layers {
		if isProject(l.level) {
			projectFiles = append(projectFiles, l.file)
		}
	}
	if err := checkImplicitCwd(p, projectFiles); err != nil {
		if !opts.RunsNothing {
			return nil, nil, err
		}
		reason := err.Error()
		if se := (*Error)(nil); errors.As(err, &se) {
			reason = se.Reason
		}
		p.Notes = append(p.Notes, RunRefusalNote+reason)
	}
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return p, sources, nil
}

// runtimeDirs are the user's runtime directories whose credential stores
// are default secrets: opts.RuntimeDir, or for this process's own user
// (no Home given) /run/user/UID, where systemd makes it, and
// $XDG_RUNTIME_DIR when it names another (podman writes its logins to
// whichever the variable names).
func runtimeDirs(opts Options) []string {
	if opts.RuntimeDir != "" {
		return []string{filepath.Clean(opts.RuntimeDir)}
	}
	if opts.Home != "" {
		return nil
	}
	var dirs []string
	if goruntime.GOOS == "linux" {
		dirs = append(dirs, "/run/user/"+strconv.Itoa(os.Getuid()))
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) && (len(dirs) == 0 || filepath.Clean(x) != dirs[0]) {
		dirs = append(dirs, filepath.Clean(x))
	}
	return dirs
}

// accountHome is the home directory of this process's user in the
// password database (read once), or "".
var accountHome = sync.OnceValue(func() string {
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil || !filepath.IsAbs(u.HomeDir) || u.HomeDir == "/" {
		return ""
	}
	return filepath.Clean(u.HomeDir)
})

// ManagedDropInDir is the directory of managed drop-ins, beside the
// managed settings file.
const ManagedDropInDir = "managed-settings.d"

// managedDropIns lists the drop-ins of the managed file in alphabetical
// order: the *.json files of managed-settings.d beside it, dotfiles
// skipped. No directory there: none. Each is then read like the managed
// file itself (readFile: a regular file, not of a kernel filesystem, at
// most MaxFileSize).
func managedDropIns(managed string) ([]string, error) {
	dir := filepath.Join(filepath.Dir(managed), ManagedDropInDir)
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err == nil && !fi.IsDir() {
		what := "a file"
		if !fi.Mode().IsRegular() {
			what = describeMode(fi.Mode())
		}
		return nil, &Error{File: dir, Reason: fmt.Sprintf("not a directory (%s): managed drop-ins are the *.json files of a directory", what)}
	}
	var es []os.DirEntry
	if err == nil {
		es, err = os.ReadDir(dir) // sorted by name
	}
	if err != nil {
		reason := fmt.Sprintf("cannot read: %v", err)
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			reason = fmt.Sprintf("cannot read: %v", pe.Err)
		}
		return nil, &Error{File: dir, Reason: reason, Err: err}
	}
	var out []string
	for _, e := range es {
		if n := e.Name(); !strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".json") {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out, nil
}

// rootOnly refuses a managed settings file or directory that someone
// other than root may write (owned by another user, or writable by its
// group or by others). One that does not exist is no error.
func rootOnly(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		// A link (NixOS's /etc/static, configuration management): the
		// link root's, and what it leads to held to the same rule.
		if st.Uid != 0 {
			return &Error{File: p, Reason: fmt.Sprintf("managed settings must be root's alone to write: this symbolic link is owned by uid %d; chown -h root it", st.Uid)}
		}
		if fi, err = os.Stat(p); err != nil {
			return nil // leads nowhere: as absent
		}
		if st, ok = fi.Sys().(*syscall.Stat_t); !ok {
			return nil
		}
	}
	if st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
		return &Error{File: p, Reason: fmt.Sprintf("managed settings must be root's alone to write: this is owned by uid %d with mode %v; chown root and chmod go-w it", st.Uid, fi.Mode().Perm())}
	}
	return nil
}

// sameFile reports whether a and b name one file: the same path, or, both
// existing, the same inode (through a symbolic link to the home directory).
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

func dirs(opts Options) (cwd, home string, err error) {
	cwd = opts.Cwd
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return "", "", fmt.Errorf("working directory: %w", err)
		}
	}
	if !filepath.IsAbs(cwd) {
		return "", "", fmt.Errorf("working directory %q is not absolute", cwd)
	}
	home = opts.Home
	if home == "" {
		home, _ = os.UserHomeDir() // no home: ~ paths are refused where used
	}
	if err := checkEnvPaths(opts); err != nil {
		return "", "", err
	}
	return filepath.Clean(cwd), filepath.Clean(home), nil
}

// checkEnvPaths refuses a variable Load finds directories by that cannot
// name one moat may use: each default secret, and the tool cache, under a
// $HOME with a newline in it was an error of its own, forty lines that
// never named the variable.
func checkEnvPaths(opts Options) error {
	names := []string{"XDG_CACHE_HOME"}
	if opts.Home == "" {
		names = append(names, "HOME")
		if opts.RuntimeDir == "" {
			names = append(names, "XDG_RUNTIME_DIR")
		}
	}
	for _, n := range names {
		v := os.Getenv(n)
		if !filepath.IsAbs(v) {
			continue // not used as a directory (a relative $HOME: the account's home holds the secrets)
		}
		if err := policy.CheckPath(filepath.Clean(v)); err != nil {
			return fmt.Errorf("$%s: %w: moat finds the user's secrets and its own directories from it; set it to the directory's path", n, err)
		}
	}
	return nil
}

// shape tells the format of a file given with --settings.
func shape(o *object) (Format, error) {
	srt := o.has("filesystem") || o.has("network")
	cc := o.has("permissions") || o.has("sandbox")
	switch {
	case srt && cc:
		return 0, &Error{File: o.file, Reason: "the file mixes the srt format (top-level filesystem/network) and Claude Code's settings.json (top-level permissions/sandbox); use one"}
	case srt:
		return FormatSRT, nil
	case cc:
		return FormatClaude, nil
	}
	return 0, &Error{File: o.file, Reason: "not a settings file moat knows: expected top-level \"filesystem\" and \"network\" (srt format) or \"permissions\"/\"sandbox\" (Claude Code settings.json)"}
}

// layer is what one file says.
type layer struct {
	level  Level
	format Format
	file   string

	allowRead, denyRead, allowWrite, denyWrite []policy.PathRule
	allowGitConfig, fsDisabled, weakerNested   *bool
	searchDepth                                *int

	allowedDomains, deniedDomains []policy.DomainRule
	deniedReasons                 map[string]string
	strict, allUnix, localBinding *bool
	managedDomainsOnly            *bool
	deniedResolved                []string
	unixSockets                   []policy.PathRule
	httpPort, socksPort           *int
	parent                        *policy.ParentProxy

	allow, ask, deny []policy.Rule
	managedRulesOnly *bool     // allowManagedPermissionRulesOnly
	fromRules        ruleLists // the sandbox rules made from allow and deny
	defaultMode      *string
	disableBypass    bool
	addDirs          []policy.PathRule

	enabled, autoAllow, allowUnsandboxed, failIfUnavailable, managedReadOnly *bool
	excluded                                                                 []string
	ignoreViolations                                                         map[string][]string

	bestEffort, violations, sharedNet *bool
	toolCache                         *string // "" turns it off
	minimumTier                       *string
	timeout, cpuTime                  *time.Duration
	memory, pids, cpu, fileSize       *int64
	envAllow                          []string
	envSet                            map[string]string
	safeDirs                          []string
}

// ruleLists are the sandbox rules made from a file's permission rules
// (Read, Edit, ... and WebFetch(domain:...) in allow and deny).
type ruleLists struct {
	allowRead, denyRead, allowWrite, denyWrite []policy.PathRule
	allowedDomains, deniedDomains              []policy.DomainRule
}

// foldRules puts the sandbox rules made from the layer's permission rules
// in its lists (first: the permissions are read before the sandbox
// section), or, with drop, drops them and its permission rules.
func (l *layer) foldRules(drop bool) {
	d := l.fromRules
	l.fromRules = ruleLists{}
	if drop {
		l.allow, l.ask, l.deny = nil, nil, nil
		return
	}
	l.allowRead = append(d.allowRead, l.allowRead...)
	l.denyRead = append(d.denyRead, l.denyRead...)
	l.allowWrite = append(d.allowWrite, l.allowWrite...)
	l.denyWrite = append(d.denyWrite, l.denyWrite...)
	l.allowedDomains = append(d.allowedDomains, l.allowedDomains...)
	l.deniedDomains = append(d.deniedDomains, l.deniedDomains...)
}

// merge combines the layers (strongest first) into a Policy.
func merge(ls []*layer, cwd, home string, secretHomes, runDirs []string) *policy.Policy {
	p := &policy.Policy{Cwd: cwd, Home: home, Violations: true}
	p.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	p.FS.DenyRead = policy.DefaultDenyReadWith(secretHomes, runDirs)
	p.ToolCache = policy.DefaultToolCache(home, os.Getenv("XDG_CACHE_HOME"))

	managedDomainsOnly := managedFlag(ls, func(l *layer) *bool { return l.managedDomainsOnly })
	managedReadOnly := managedFlag(ls, func(l *layer) *bool { return l.managedReadOnly })
	hasSRT, hasClaude := false, false
	for _, l := range ls {
		p.Sources = append(p.Sources, l.file)
		if l.format == FormatSRT {
			hasSRT = true
		} else {
			hasClaude = true
		}
	}
	// The working directory is writable under Claude Code's semantics; the
	// srt format makes it writable only through allowWrite.
	implicitCwd := hasClaude && !hasSRT

	setB := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	// Walk weakest first so stronger layers overwrite scalars, and prepend
	// nothing: lists keep strongest-first order by walking the other way.
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		setB(&p.FS.AllowGitConfig, l.allowGitConfig)
		setB(&p.FS.Disabled, l.fsDisabled)
		setB(&p.FS.WeakerNested, l.weakerNested)
		if l.searchDepth != nil {
			p.FS.MandatoryDenySearchDepth = *l.searchDepth
		}
		setB(&p.Net.StrictAllowlist, l.strict)
		setB(&p.Net.AllowAllUnixSockets, l.allUnix)
		setB(&p.Net.AllowLocalBinding, l.localBinding)
		if l.localBinding != nil {
			p.Net.LocalBindingByProject = *l.localBinding && isProject(l.level)
		}
		if l.httpPort != nil {
			p.Net.HTTPProxyPort = *l.httpPort
		}
		if l.socksPort != nil {
			p.Net.SOCKSProxyPort = *l.socksPort
		}
		if l.parent != nil {
			p.Net.ParentProxy = l.parent
		}
		if l.defaultMode != nil {
			p.Permissions.DefaultMode = *l.defaultMode
		}
		p.Permissions.DisableBypass = p.Permissions.DisableBypass || l.disableBypass // no file can undo another's
		if l.enabled != nil {
			p.Sandbox.Enabled = l.enabled
		}
		setB(&p.Sandbox.AutoAllowBashIfSandboxed, l.autoAllow)
		if l.allowUnsandboxed != nil {
			p.Sandbox.AllowUnsandboxedCommands = l.allowUnsandboxed
		}
		if l.failIfUnavailable != nil {
			p.Sandbox.FailIfUnavailable = l.failIfUnavailable
		}
		setB(&p.BestEffort, l.bestEffort)
		setB(&p.Violations, l.violations)
		setB(&p.Net.Shared, l.sharedNet)
		if l.minimumTier != nil && policy.TierRank(*l.minimumTier) > policy.TierRank(p.MinimumTier) {
			p.MinimumTier = *l.minimumTier // any layer raises the floor, none lowers it
		}
		if l.toolCache != nil {
			p.ToolCache = *l.toolCache
			if strings.HasPrefix(p.ToolCache, "~/") {
				p.ToolCache = filepath.Join(home, p.ToolCache[2:]) // no home: relative, refused by Validate
			} else if p.ToolCache != "" {
				p.ToolCache = filepath.Clean(p.ToolCache)
			}
		}
		if l.timeout != nil {
			p.Limits.Timeout = *l.timeout
		}
		if l.cpuTime != nil {
			p.Limits.CPUTime = *l.cpuTime
		}
		for _, x := range []struct {
			dst *int64
			v   *int64
		}{{&p.Limits.Memory, l.memory}, {&p.Limits.Pids, l.pids}, {&p.Limits.CPU, l.cpu}, {&p.Limits.FileSize, l.fileSize}} {
			if x.v != nil {
				*x.dst = *x.v
			}
		}
	}
	p.Net.AllowManagedDomainsOnly = managedDomainsOnly
	p.Sandbox.AllowManagedReadPathsOnly = managedReadOnly

	for _, l := range ls {
		managed := l.level == LevelManaged
		if !managedReadOnly || managed {
			p.FS.AllowRead = appendPaths(p.FS.AllowRead, l.allowRead)
		}
		p.FS.DenyRead = appendPaths(p.FS.DenyRead, l.denyRead)
		p.FS.AllowWrite = appendPaths(p.FS.AllowWrite, l.allowWrite)
		p.FS.DenyWrite = appendPaths(p.FS.DenyWrite, l.denyWrite)
		for _, d := range l.allowedDomains {
			d.Managed = managed
			if managedDomainsOnly && !managed {
				continue
			}
			p.Net.AllowedDomains = appendDomain(p.Net.AllowedDomains, d)
		}
		for _, d := range l.deniedDomains {
			d.Managed = managed
			if r, ok := l.deniedReasons[d.Pattern]; ok {
				d.Reason = r
			}
			p.Net.DeniedDomains = appendDomain(p.Net.DeniedDomains, d)
		}
		p.Net.DeniedResolvedAddresses = appendStrings(p.Net.DeniedResolvedAddresses, l.deniedResolved)
		p.Net.AllowUnixSockets = appendPaths(p.Net.AllowUnixSockets, l.unixSockets)
		p.Permissions.Allow = append(p.Permissions.Allow, l.allow...)
		p.Permissions.Ask = append(p.Permissions.Ask, l.ask...)
		p.Permissions.Deny = append(p.Permissions.Deny, l.deny...)
		p.Permissions.AdditionalDirectories = appendPaths(p.Permissions.AdditionalDirectories, l.addDirs)
		p.Sandbox.ExcludedCommands = appendStrings(p.Sandbox.ExcludedCommands, l.excluded)
		for k, v := range l.ignoreViolations {
			if p.IgnoreViolations == nil {
				p.IgnoreViolations = map[string][]string{}
			}
			p.IgnoreViolations[k] = appendStrings(p.IgnoreViolations[k], v)
		}
		p.Env.Allow = appendStrings(p.Env.Allow, l.envAllow)
		p.Env.GitSafeDirectories = appendStrings(p.Env.GitSafeDirectories, l.safeDirs)
	}
	// Env.Set: weakest first so the strongest wins per key.
	for i := len(ls) - 1; i >= 0; i-- {
		for k, v := range ls[i].envSet {
			if p.Env.Set == nil {
				p.Env.Set = map[string]string{}
			}
			p.Env.Set[k] = v
		}
	}
	// Additional directories are writable working directories.
	for _, d := range p.Permissions.AdditionalDirectories {
		p.FS.AllowWrite = appendPaths(p.FS.AllowWrite, []policy.PathRule{d})
	}
	// (Last, so that an explicit rule for the same path is the one kept.)
	if implicitCwd {
		p.FS.AllowWrite = appendPaths(p.FS.AllowWrite, []policy.PathRule{{Path: cwd, Source: ImplicitCwdSource}})
	}
	return p
}

func deref(b *bool) bool { return b != nil && *b }

// managedFlag is a switch only managed settings set
// (allowManagedDomainsOnly, ...): the strongest managed layer that sets
// it decides; other layers' are not read.
func managedFlag(ls []*layer, get func(*layer) *bool) bool {
	for _, l := range ls { // strongest first
		if l.level == LevelManaged && get(l) != nil {
			return *get(l)
		}
	}
	return false
}

// searchDepth is the merged mandatoryDenySearchDepth: the strongest layer
// that sets it.
func searchDepth(ls []*layer) int {
	for _, l := range ls {
		if l.searchDepth != nil {
			return *l.searchDepth
		}
	}
	return policy.DefaultSearchDepth
}

func appendPaths(dst, src []policy.PathRule) []policy.PathRule {
outer:
	for _, r := range src {
		for _, d := range dst {
			if d.Path == r.Path && d.Glob == r.Glob {
				continue outer
			}
		}
		dst = append(dst, r)
	}
	return dst
}

func appendDomain(dst []policy.DomainRule, r policy.DomainRule) []policy.DomainRule {
	for i, d := range dst {
		if d.Pattern == r.Pattern {
			if d.Reason == "" {
				dst[i].Reason = r.Reason
			}
			return dst
		}
	}
	return append(dst, r)
}

func appendStrings(dst, src []string) []string {
outer:
	for _, s := range src {
		for _, d := range dst {
			if d == s {
				continue outer
			}
		}
		dst = append(dst, s)
	}
	return dst
}

var envNameRe = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// projectWidens names the first setting of a project's file (the
// repository's .claude/settings.json or settings.local.json) that weakens
// the sandbox in a way a repository must not choose for whoever runs moat
// in it, and why; "" for none. Found by attack passes: a repository's
// settings passed the user's credential variables in (moat.env.allow),
// moved the tool cache to ~/.local, reached the host's docker.sock, showed
// the host's /proc, turned violation reports off and the limits up.
// Writable paths and allowed domains stay a project's to widen, as Claude
// Code reads them (SECURITY.md says so); an external proxy does not (a
// project's httpProxyPort let the command reach any service on that port
// of the host's loopback, whatever the domain lists said), nor a default
// mode that allows what the user's ask rules ask about (a project's
// bypassPermissions made moat check allow curl under the user's ask rule).
func projectWidens(l *layer) (string, string) {
	t := func(b *bool) bool { return b != nil && *b }
	f := func(b *bool) bool { return b != nil && !*b }
	switch {
	case l.toolCache != nil && *l.toolCache != "":
		return "moat.toolCache", "move moat's tool cache (it is writable in every sandbox; false turns it off)"
	case len(l.envAllow) > 0:
		return "moat.env.allow", "pass the user's credential variables into the sandbox"
	case t(l.bestEffort):
		return "moat.bestEffort", "let moat run with less of the sandbox"
	case f(l.violations):
		return "moat.violations", "turn violation reports off"
	case len(l.ignoreViolations) > 0:
		return "ignoreViolations", "silence violation reports"
	case t(l.sharedNet):
		return "moat.shareNetwork", "share the host's network"
	case l.timeout != nil || l.memory != nil || l.pids != nil || l.cpu != nil || l.fileSize != nil || l.cpuTime != nil:
		return "moat.limits", "set the resource limits or the timeout"
	case t(l.weakerNested):
		return "enableWeakerNestedSandbox", "show the host's /proc in the sandbox"
	case t(l.allUnix) || len(l.unixSockets) > 0:
		return "network.allowUnixSockets", "let the command reach the host's unix sockets (docker.sock is root on the host)"
	case f(l.enabled):
		return "sandbox.enabled", "turn the sandbox off"
	case t(l.allowUnsandboxed) || len(l.excluded) > 0:
		return "sandbox.excludedCommands", "run commands outside the sandbox"
	case l.defaultMode != nil && (*l.defaultMode == "bypassPermissions" || *l.defaultMode == "acceptEdits"):
		return "permissions.defaultMode", fmt.Sprintf("make %s the default mode (it allows what your ask rules would ask about; plan and default may be a project's)", *l.defaultMode)
	case l.httpPort != nil:
		return "network.httpProxyPort", "hand the network to an external proxy (" + externalProxyWhy + ")"
	}
	for _, d := range append(append([]policy.DomainRule(nil), l.allowedDomains...), l.fromRules.allowedDomains...) {
		if what := localDomain(d.Pattern); what != "" {
			field := d.Source
			if _, f, ok := strings.Cut(d.Source, ": "); ok {
				field = f
			}
			return field, fmt.Sprintf("allow %s (%s: a repository reached the host's own services, its databases and Docker's API on 127.0.0.1)", d.Pattern, what)
		}
	}
	switch {
	case l.socksPort != nil:
		return "network.socksProxyPort", "hand the network to an external proxy (" + externalProxyWhy + ")"
	}
	return "", ""
}

// localDomain says what an allowed domain opens that a project may not
// (the host's loopback, a private, link-local or metadata address, by IP
// literal in any spelling or as localhost), or "".
func localDomain(pattern string) string {
	p, err := policy.ParseDomainPattern(pattern, false)
	switch {
	case err != nil:
		return ""
	case p.IsIP():
		if what := policy.SpecialAddr(p.Addr); what != "" {
			return "a " + what + " address"
		}
		as, err := hostAddrs()
		if err != nil {
			// Unknown is refused, as the proxy refuses it (attack pass 63).
			return "perhaps an address of this host (its addresses could not be read: " + err.Error() + ")"
		}
		for _, a := range as {
			if a == p.Addr.Unmap() {
				return "an address of this host"
			}
		}
	case p.Host == "localhost" || strings.HasSuffix(p.Host, ".localhost") || p.Host == "localhost.localdomain" ||
		p.Host == "ip6-localhost" || p.Host == "ip6-loopback":
		return "the host's loopback"
	}
	return ""
}

// hostAddrs are this host's interface addresses (a project's allowed IP
// literal that is one reaches the host's own services over loopback
// routing, past firewalls on its interfaces: found by an attack pass).
var hostAddrs = func() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}

// decodeMoat reads moat's own section, in either format.
func decodeMoat(top *object, l *layer) error {
	m, ok, err := top.obj("moat")
	if err != nil || !ok {
		return err
	}
	if l.bestEffort, err = m.boolean("bestEffort"); err != nil {
		return err
	}
	if l.violations, err = m.boolean("violations"); err != nil {
		return err
	}
	if l.sharedNet, err = m.boolean("shareNetwork"); err != nil {
		return err
	}
	if l.timeout, err = m.duration("timeout"); err != nil {
		return err
	}
	if l.toolCache, err = decodeToolCache(m); err != nil {
		return err
	}
	if l.minimumTier, err = m.str("minimumTier"); err != nil {
		return err
	} else if l.minimumTier != nil && policy.TierRank(*l.minimumTier) < 0 {
		return m.errf("minimumTier", "unknown tier %q (want %s)", *l.minimumTier, strings.Join(policy.Tiers, ", "))
	}
	if lim, ok, err := m.obj("limits"); err != nil {
		return err
	} else if ok {
		if l.memory, err = lim.size("memory"); err != nil {
			return err
		}
		if l.fileSize, err = lim.size("fileSize"); err != nil {
			return err
		}
		if l.pids, err = lim.count("pids"); err != nil {
			return err
		}
		if l.cpu, err = lim.cpus("cpu"); err != nil {
			return err
		}
		if l.cpuTime, err = lim.duration("cpuTime"); err != nil {
			return err
		}
		if err := lim.unknown(); err != nil {
			return err
		}
	}
	if e, ok, err := m.obj("env"); err != nil {
		return err
	} else if ok {
		if l.envAllow, _, err = e.strs("allow"); err != nil {
			return err
		}
		for i, n := range l.envAllow {
			if !envNameRe.MatchString(n) {
				return e.errf(fmt.Sprintf("allow[%d]", i), "%q is not a variable name", n)
			}
		}
		if l.envSet, err = e.stringMap("set"); err != nil {
			return err
		}
		for k, v := range l.envSet {
			if !envNameRe.MatchString(k) {
				return e.errf("set."+k, "%q is not a variable name", k)
			}
			if strings.ContainsRune(v, 0) {
				return e.errf("set."+k, "value contains a NUL byte")
			}
		}
		if err := e.unknown(); err != nil {
			return err
		}
	}
	return m.unknown()
}

// decodeToolCache reads moat.toolCache: true (moat's own cache directory,
// the default), false (none), or a directory (absolute or ~/...).
func decodeToolCache(m *object) (*string, error) {
	r, ok := m.raw("toolCache")
	if !ok {
		return nil, nil
	}
	var b bool
	if json.Unmarshal(r, &b) == nil {
		if !b {
			off := ""
			return &off, nil
		}
		return nil, nil // the default
	}
	dir, err := m.str("toolCache")
	if err != nil {
		return nil, m.errf("toolCache", "want a boolean or a directory, got %s", kindOf(r))
	}
	d := *dir
	if !strings.HasPrefix(d, "~/") && (!filepath.IsAbs(d) || filepath.Clean(d) == "/") {
		return nil, m.errf("toolCache", "%q: want an absolute directory (or ~/...), not /", d)
	}
	return &d, nil
}

// RunRefusalNote begins the note of a load with RunsNothing where moat run
// would refuse to start.
const RunRefusalNote = "moat run would refuse to start here: "

// ImplicitCwdSource is the Source of the rule Claude Code's format adds:
// the working directory is writable.
const ImplicitCwdSource = "working directory"

// The system directories: the implicit rule of Claude Code's format (the
// working directory is writable) never makes one of them writable. The
// list is README.md's ("Settings"); an explicit allowWrite still may.
//
// systemTrees are directories whose contents belong to the system: the
// directory and everything under it. /var's are the package manager's and
// the services' state, caches, logs, spools and mail (/var/tmp is not
// one: a scratch folder like /tmp, whose subfolders are projects).
var systemTrees = withPrivateVar([]string{
	"/bin", "/boot", "/dev", "/efi", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/lost+found",
	"/nix", "/proc", "/run", "/sbin", "/snap", "/sys", "/usr",
	"/var/backups", "/var/cache", "/var/crash", "/var/db", "/var/empty", "/var/lib", "/var/local",
	"/var/lock", "/var/log", "/var/mail", "/var/opt", "/var/run", "/var/spool",
	// macOS
	"/System", "/Library", "/Applications", "/private/etc",
})

// systemDirs are directories that must not be made writable themselves:
// their subdirectories are where projects and data live (/srv/www,
// /opt/app, /home/you/proj, /mnt/disk/proj).
var systemDirs = withPrivateVar([]string{
	"/", "/home", "/media", "/mnt", "/opt", "/root", "/srv", "/var", "/var/www",
	// macOS
	"/Users", "/Volumes", "/private",
})

// withPrivateVar adds macOS's /private/var/X for each /var/X (/var is a
// symbolic link to /private/var there).
func withPrivateVar(dirs []string) []string {
	for _, d := range dirs {
		if d == "/var" || strings.HasPrefix(d, "/var/") {
			dirs = append(dirs, "/private"+d)
		}
	}
	return dirs
}

// homeDirs are system directories that are a user's home (root's): the
// working directory may be one when it is the home directory.
var homeDirs = []string{"/root", "/var/root", "/private/var/root"}

// checkImplicitCwd refuses the implicit writable working directory where
// it would hand the system to the command (moat started from /, /etc, ...),
// unless an explicit allowWrite says the user wants it (one of a project's
// files, projectFiles, does not: a repository at such a place must not
// lift the refusal); and notes a whole home directory made writable that
// way.
func checkImplicitCwd(p *policy.Policy, projectFiles []string) error {
	cwd := p.Cwd
	fromProject := func(r policy.PathRule) bool {
		return slices.ContainsFunc(projectFiles, func(f string) bool { return strings.HasPrefix(r.Source, f+": ") })
	}
	// A project's rule for the working directory itself is judged as the
	// implicit one (the merge keeps one rule per path: the project's).
	implicit := false
	for _, r := range p.FS.AllowWrite {
		if r.Source == ImplicitCwdSource || (fromProject(r) && !r.Glob && r.Path == cwd) {
			implicit = true
		}
	}
	if !implicit {
		return nil
	}
	for _, r := range p.FS.AllowWrite {
		if r.Source != ImplicitCwdSource && !fromProject(r) && !r.Glob && (r.Path == "/" || cwd == r.Path || strings.HasPrefix(cwd, r.Path+"/")) {
			return nil // the user said so explicitly
		}
	}
	// The system directories first: a home directory of / or /etc (HOME=/
	// is one variable away) exempts nothing. The working directory is
	// checked as named and as it resolves (a symbolic link into /etc).
	resolved, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		resolved = cwd
	}
	if systemDir(cwd, p.Home) || systemDir(resolved, p.Home) {
		also := ""
		if resolved != cwd {
			also = fmt.Sprintf(" (it is %s)", resolved)
		}
		if cwd == p.Home {
			also = fmt.Sprintf(" (it is also the home directory, which does not make %s one moat makes writable)", cwd)
		}
		return &Error{Field: "working directory", Reason: fmt.Sprintf("%s is a system directory%s: Claude Code's settings make the working directory writable, and moat will not make %s writable by that rule; run moat from a project directory, or name it in sandbox.filesystem.allowWrite (\"//%s\") of your own settings if you mean it", cwd, also, cwd, strings.TrimPrefix(cwd, "/"))}
	}
	if cwd == p.Home {
		p.Notes = append(p.Notes, fmt.Sprintf("the working directory is your home directory %s: all of it is writable to the command (shell start-up files, .gitconfig, .ssh and the other protected names stay read-only or hidden)", cwd))
	}
	return nil
}

// systemDir says whether dir is a system directory the implicit rule must
// not make writable: one of systemDirs (but a home directory among
// homeDirs when it is the home), inside one of systemTrees, or an ancestor
// of the home directory.
func systemDir(dir, home string) bool {
	for _, d := range systemDirs {
		if dir == d && !(dir == home && slices.Contains(homeDirs, d)) {
			return true
		}
	}
	for _, d := range systemTrees {
		if dir == d || strings.HasPrefix(dir, d+"/") {
			return true
		}
	}
	return home != "" && home != "/" && strings.HasPrefix(home, dir+"/")
}
