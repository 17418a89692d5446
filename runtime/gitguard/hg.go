package gitguard

import (
	"os/user"
	"path/filepath"
	"strings"
)

// hgFiles are the files of a Mercurial repository's .hg that make the
// user's next hg run a program: hgrc and hgrc-not-shared are the
// repository's configuration, trusted when the user owns them, whose
// [hooks], [extensions], [alias] !commands and [ui] editor, merge and pager
// run programs (a pre-status hook at the next hg status); sharedpath sends
// hg to another repository, whose hgrc it reads. hg reads nothing else of
// .hg that runs code; requires only refuses what hg does not support.
var hgFiles = []string{"hgrc", "hgrc-not-shared", "sharedpath"}

// hgRepo judges the Mercurial repository whose .hg lies in dir: the plan
// keeps the files of hgFiles read-only where they exist when the run
// starts, but a new repository (hg init, a .hg made by hand, in the
// project or any directory below it) or a file of hgFiles the repository
// did not have was free to make, and ran a hook at the user's next hg
// status, as root and as the user (attack pass 89,
// TestHgStateTakenOut). What changed during the run is taken out,
// unless it is an hgrc that only names remote paths and the user name
// (hg clone writes one).
func (a *auditor) hgRepo(dir string) {
	h, e := a.vcsControlDir(dir, ".hg", "a .hg symlink made during the run: hg takes the directory it leads to for the repository and runs the hooks and extensions of its hgrc")
	if e == vcsNone {
		return
	}
	seen := map[string]bool{}
	for _, n := range hgFiles {
		a.hgFile(filepath.Join(h, n), n == "sharedpath", 0, seen)
	}
	// A share the user made (its sharedpath older than the run): with
	// share-safe, hg reads the source repository's hgrc too.
	if b, _, err := readSmall(filepath.Join(h, "sharedpath"), 4096); err == nil {
		t := strings.TrimRight(string(b), "\n")
		if t != "" && !strings.ContainsRune(t, 0) {
			if !filepath.IsAbs(t) {
				t = filepath.Join(h, t) // relshared
			}
			a.hgFile(filepath.Join(filepath.Clean(t), "hgrc"), false, 0, seen)
		}
	}
}

// hgSystemDirs are where hg reads the system's configuration (hgrc and
// hgrc.d/*.rc in each): /etc/mercurial, and etc/mercurial of the prefix
// its Python runs from (/usr, /usr/local).
var hgSystemDirs = []string{"/etc/mercurial", "/usr/etc/mercurial", "/usr/local/etc/mercurial"}

// hgHomeConfigs are the user's Mercurial configuration files below the
// home. ~/.hgrc is a tool name too (taken out whenever the run changed
// it): it is here for the files it includes, which hg reads at every run
// and skips where they do not exist, so a run that made the
// ~/.hgrc.local an older ~/.hgrc includes ran its hook at the user's next
// hg status (attack pass 92, TestAuditHomeHgrcInclude).
var hgHomeConfigs = []string{".hgrc", ".config/hg/hgrc"}

// hgFile judges one configuration file (or, pointer, the sharedpath) of
// Mercurial: taken out when it changed during the run; otherwise the files
// its %include lines name are judged in turn, as hg reads them.
func (a *auditor) hgFile(p string, pointer bool, depth int, seen map[string]bool) {
	if depth > 10 || seen[p] {
		return
	}
	seen[p] = true
	id, changed, ok := a.changedInRun(p)
	if !ok {
		return
	}
	b, _, rerr := readSmall(p, maxConfigSize)
	if changed {
		if !pointer && rerr == nil && hgrcHarmless(b) {
			return
		}
		a.judgedAs(p, id)
		why := "a Mercurial configuration file written during the run: hg runs the hooks, extensions, aliases and editor it names at the user's next hg status"
		if pointer {
			why = "a Mercurial sharedpath written during the run: hg reads the configuration of the repository it names"
		}
		if real, ok := a.changedActionable(p); ok {
			a.quarantine(real, why)
		}
		return
	}
	if pointer || rerr != nil {
		return
	}
	for _, inc := range hgIncludes(b, filepath.Dir(p), a.o.Home, a.hgVars()) {
		a.hgFile(inc, false, depth+1, seen)
	}
}

// hgLines splits a Mercurial configuration file as hg does (bytes'
// splitlines: a lone CR ends a line too).
func hgLines(b []byte) []string {
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	return strings.Split(strings.ReplaceAll(s, "\r", "\n"), "\n")
}

// hgrcHarmless reports an hgrc that sets nothing but remote paths and the
// user name: comments, blank lines, section headers, [paths] items and
// [ui] username (what hg clone writes). Anything else, another item, a
// %include or %unset, is not: the allow-list is what is known to run
// nothing.
func hgrcHarmless(b []byte) bool {
	section, item := "", false
	for _, l := range hgLines(b) {
		switch {
		case strings.TrimSpace(l) == "" || l[0] == '#' || l[0] == ';':
		case l[0] == '[':
			// hg takes the name up to the first ']' as it is.
			end := strings.IndexByte(l, ']')
			if end < 2 {
				return false
			}
			section, item = l[1:end], false
		case l[0] == ' ' || l[0] == '\t':
			// A continuation of the item above: only of an allowed one.
			if !item {
				return false
			}
		default:
			k, _, ok := strings.Cut(l, "=")
			k = strings.TrimSpace(k)
			if !ok || l[0] == '%' || !(section == "paths" || section == "ui" && k == "username") {
				return false
			}
			item = true
		}
	}
	return true
}

// hgIncludes are the files a Mercurial configuration file includes
// (%include PATH, PATH relative to its directory, ~ expanded). hg expands
// environment variables in PATH ($NAME, ${NAME}) before ~: a %include
// $HOME/x in the user's ~/.hgrc read a file the run made in a writable
// tree (attack pass 94). The audit knows the user's $HOME and
// $XDG_CONFIG_HOME (vars); a path with another variable, which the user's
// hg expands from an environment the audit does not know, is not followed.
func hgIncludes(b []byte, dir, home string, vars map[string]string) []string {
	var out []string
	for _, l := range hgLines(b) {
		rest, ok := strings.CutPrefix(l, "%include")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		v, ok := hgExpandPath(strings.TrimSpace(rest), dir, home, vars)
		if !ok {
			continue
		}
		out = append(out, v)
	}
	return out
}

// hgExpandPath expands a path of a Mercurial configuration as hg's
// expandpath does ($VARS from vars, ~ and ~name) and joins a relative one
// to dir; ok is false where it cannot be known.
func hgExpandPath(v, dir, home string, vars map[string]string) (string, bool) {
	if v == "" {
		return "", false
	}
	v, ok := expandHgVars(v, vars)
	if !ok || v == "" {
		return "", false
	}
	if v == "~" || strings.HasPrefix(v, "~/") {
		if home == "" {
			return "", false
		}
		v = home + v[1:]
	} else if name, rest, _ := strings.Cut(v[1:], "/"); v[0] == '~' {
		// ~name is that user's home in the password database, as
		// Python's expanduser takes it (attack pass 98: ~daemon/../..
		// reached the writable project, and the audit joined it to
		// the hgrc's directory instead). A name it does not know
		// stays as it is, relative, as hg keeps it.
		if u, err := user.Lookup(name); err == nil && u.HomeDir != "" {
			v = strings.TrimRight(u.HomeDir, "/") + "/" + rest
		}
	}
	if !filepath.IsAbs(v) {
		if dir == "" {
			return "", false
		}
		v = filepath.Join(dir, v)
	}
	return filepath.Clean(v), true
}

// hgrcPathEntries returns what $HGRCPATH (hgrcpath) names, as hg reads
// it: each entry of the colon list is a configuration file, or a
// directory whose *.rc files are (listed now: files made since are
// among them). A relative entry is not known (hg takes it from the
// directory the user's hg runs in).
func hgrcPathEntries(hgrcpath, home string, vars map[string]string) (files, dirs []string) {
	for _, e := range strings.Split(hgrcpath, ":") {
		p, ok := hgExpandPath(e, "", home, vars)
		if !ok {
			continue
		}
		if fi, err := stat(p); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
			ents, _ := readDir(p)
			for _, en := range ents {
				if strings.HasSuffix(en.Name(), ".rc") {
					files = append(files, filepath.Join(p, en.Name()))
				}
			}
			continue
		}
		files = append(files, p)
	}
	return files, dirs
}

// expandHgVars expands $NAME and ${NAME} in v as Python's
// os.path.expandvars does (NAME of ASCII letters, digits and _), from
// vars; ok is false where a variable is not in vars (or is empty: the
// user's may not be).
func expandHgVars(v string, vars map[string]string) (string, bool) {
	if !strings.Contains(v, "$") {
		return v, true
	}
	word := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	var b strings.Builder
	for i := 0; i < len(v); {
		if v[i] != '$' {
			b.WriteByte(v[i])
			i++
			continue
		}
		var name string
		end := i + 1
		if end < len(v) && v[end] == '{' {
			j := strings.IndexByte(v[end:], '}')
			if j < 0 {
				return "", false // hg keeps it as it is: a name the audit cannot judge
			}
			name, end = v[end+1:end+j], end+j+1
		} else {
			for end < len(v) && word(v[end]) {
				end++
			}
			name = v[i+1 : end]
		}
		if name == "" {
			return "", false
		}
		val := vars[name]
		if val == "" {
			return "", false
		}
		b.WriteString(val)
		i = end
	}
	return b.String(), true
}

// hgVars are the environment variables the audit knows the user's value
// of, for hgIncludes.
func (a *auditor) hgVars() map[string]string {
	return map[string]string{"HOME": a.o.Home, "XDG_CONFIG_HOME": a.o.XDGConfigHome}
}

// hgUserIncludes judges the files in the tree being audited (in) that the
// user's own Mercurial configuration includes, wherever that lies: a home
// that is not writable may hold a ~/.hgrc whose %include names a file of
// a writable project, and the run that wrote it (or made it: hg skips an
// include that does not exist) ran its hook at the user's next hg status,
// in any repository (attack pass 94, TestHgStateTakenOut's user-include
// rows). What the configuration includes outside the tree is read for its
// own includes, not judged: the run could not write it.
func (a *auditor) hgUserIncludes(in func(string) bool) {
	hgUserChain(a.o.Home, a.o.XDGConfigHome, a.o.HGRCPath, func(p string, depth int) bool {
		if in(p) {
			a.hgFile(p, false, depth, map[string]bool{})
			return false
		}
		return true
	})
}

// HgUserIncludes returns the files the user's Mercurial configuration
// (~/.hgrc, ~/.config/hg/hgrc, $XDG_CONFIG_HOME/hg/hgrc) includes, ten
// deep, existing or not, with the values of home and xdg for $HOME and
// $XDG_CONFIG_HOME: the plan keeps those in the writable trees read-only
// where they exist (the audit judges them after the run), so the user's
// hg status during the run reads none the command wrote (attack pass 94).
// The files and directories $HGRCPATH (hgrcpath) names are among them,
// and what those include (attack pass 103).
func HgUserIncludes(home, xdg, hgrcpath string) []string {
	var out []string
	hgUserChain(home, xdg, hgrcpath, func(p string, _ int) bool {
		out = append(out, p)
		return true
	})
	_, dirs := hgrcPathEntries(hgrcpath, home, map[string]string{"HOME": home, "XDG_CONFIG_HOME": xdg})
	return append(out, dirs...)
}

// hgUserChain calls visit for each file the user's Mercurial
// configuration includes, and reads those for which visit returns true
// for their own includes. The files $HGRCPATH names are visited
// themselves: a user whose shell points it at a file of a writable
// project (a per-project HGRCPATH, set by direnv) gave that file an
// hgrc's power, and a run that added a hook to it ran the hook at the
// user's next hg status (attack pass 103).
func hgUserChain(home, xdg, hgrcpath string, visit func(p string, depth int) bool) {
	if home == "" {
		return
	}
	files := []string{}
	for _, n := range hgHomeConfigs {
		files = append(files, filepath.Join(home, n))
	}
	if filepath.IsAbs(xdg) {
		files = append(files, filepath.Join(xdg, "hg", "hgrc"))
	}
	// The system's configuration is root's and read-only, but what it
	// includes may lie in a writable tree (%include ~/x, a shared path):
	// a run that made the file /etc/mercurial/hgrc.d/site.rc included ran
	// its hook at the user's next hg status (attack pass 103).
	for _, d := range hgSystemDirs {
		files = append(files, filepath.Join(d, "hgrc"))
		ents, _ := readDir(filepath.Join(d, "hgrc.d"))
		for _, en := range ents {
			if strings.HasSuffix(en.Name(), ".rc") {
				files = append(files, filepath.Join(d, "hgrc.d", en.Name()))
			}
		}
	}
	vars := map[string]string{"HOME": home, "XDG_CONFIG_HOME": xdg}
	seen := map[string]bool{}
	var chain func(p string, depth int, root bool)
	chain = func(p string, depth int, root bool) {
		if depth > 10 || seen[p] {
			return
		}
		seen[p] = true
		if (depth > 0 || root) && !visit(p, depth) {
			return
		}
		b, _, err := readSmall(p, maxConfigSize)
		if err != nil {
			return
		}
		for _, inc := range hgIncludes(b, filepath.Dir(p), home, vars) {
			chain(inc, depth+1, false)
		}
	}
	for _, f := range files {
		chain(f, 0, false)
	}
	pathFiles, _ := hgrcPathEntries(hgrcpath, home, vars)
	for _, f := range pathFiles {
		chain(f, 0, true)
	}
}
