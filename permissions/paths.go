package permissions

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Path constraints compare paths, cleaned, as strings against the working
// directory and the additional directories: "inside" means inside by name.
// With Options.FollowSymlinks they also hold for the path on disk
// (resolver): links followed, ".." taken after them, glob patterns
// expanded. Otherwise symbolic links are the sandbox's business (it
// resolves them in the kernel).

// dirSet is the set of directories commands may read and write.
type dirSet []string

// contains reports whether the absolute, clean path p is one of the
// directories or below one. "/a/b" does not contain "/a/bc".
func (d dirSet) contains(p string) bool {
	for _, dir := range d {
		if p == dir || dir == "/" || strings.HasPrefix(p, dir) && p[len(dir)] == '/' {
			return true
		}
	}
	return false
}

// specialOK are device files any command may read or write.
var specialOK = lazy[map[string]bool]{make: func() map[string]bool {
	return map[string]bool{
		"/dev/null": true, "/dev/stdin": true, "/dev/stdout": true, "/dev/stderr": true,
		"/dev/fd/0": true, "/dev/fd/1": true, "/dev/fd/2": true, "/dev/zero": true,
		"/dev/random": true, "/dev/urandom": true, "/dev/tty": true, "-": true,
	}
}}

// dangerousPath reports why a path must never pass without a prompt,
// wherever it appears in a command: bash's network pseudo-files, processes'
// environment and memory, other processes' arguments (as for ps: they hold
// secrets), and patterns below /proc/PID that may name any of them. A
// command that uses one is not read-only either (docs/DECISIONS.md).
func dangerousPath(p string) string {
	if !strings.Contains(p, "/dev/") && !strings.Contains(p, "/proc/") {
		return ""
	}
	c := p
	if i := strings.Index(c, "/dev/"); i >= 0 {
		c = c[i:]
		if strings.HasPrefix(c, "/dev/tcp/") || strings.HasPrefix(c, "/dev/udp/") {
			return "bash network pseudo-file " + c
		}
	}
	if i := strings.Index(p, "/proc/"); i >= 0 {
		c = filepath.Clean(p[i:])
		parts := strings.Split(c, "/")
		for k, s := range parts {
			if k < 3 {
				continue
			}
			switch {
			case s == "environ" || s == "mem" || s == "auxv":
				return "process memory or environment " + c
			case s == "cmdline" && (k > 3 || parts[2] != "self" && parts[2] != "thread-self"):
				return "another process's arguments " + c
			case strings.ContainsAny(s, "*?["):
				return "a pattern below /proc that may name a process's environment " + c
			}
		}
	}
	return ""
}

// protectedWrite reports why writing p (absolute, clean) needs a prompt
// even inside the working directory: files that would let a command run
// code later (shell start-up files, git hooks and config, editor and agent
// settings).
func protectedWrite(p string) string {
	parts := strings.Split(p, "/")
	for k := range parts {
		parts[k] = foldName(parts[k])
	}
	base := parts[len(parts)-1]
	for _, f := range policy.MandatoryFiles {
		if strings.EqualFold(base, f) {
			return "writing " + p + " (" + f + " can run code later)"
		}
	}
	for k, s := range parts {
		for _, d := range policy.MandatoryDirs {
			if strings.EqualFold(s, d) {
				return "writing into " + d + " (editor or agent settings)"
			}
		}
		if strings.EqualFold(s, ".git") {
			if k == len(parts)-1 {
				return "writing the .git directory"
			}
			for _, g := range policy.GitProtected {
				if strings.EqualFold(parts[k+1], g) {
					return "writing .git/" + g + " (it can run code)"
				}
			}
			// The state of an interrupted rebase, cherry-pick or am, and
			// git's rerere record: the user's --continue (or commit) runs
			// what they say (an exec line, a strategy, options, paths).
			// git writes them itself; a command writing them asks (found
			// by an attack pass: tee .git/rebase-merge/git-rebase-todo
			// was an edit in acceptEdits).
			for _, g := range gitStateNames {
				if strings.EqualFold(parts[k+1], g) {
					return "writing .git/" + parts[k+1] + " (git's " + g + " state: the user's git command acts on it)"
				}
			}
		}
	}
	return ""
}

// foldName is a path component as a case-insensitive file system may
// read it: names are compared with strings.EqualFold (.GIT is .git on
// macOS, and Unicode's simple folding takes the Kelvin sign for k), and
// the code points HFS+ ignores (zero-width joiners, directional marks,
// the byte-order mark) are dropped, as git does for .git (is_hfs_dotgit).
func foldName(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return strings.Map(func(r rune) rune {
				switch {
				case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
					return -1
				}
				return r
			}, s)
		}
	}
	return s
}

// gitStateNames are the entries of a git directory whose content the
// user's later git command acts on (gitguard audits them after a run).
var gitStateNames = []string{"rebase-merge", "rebase-apply", "sequencer", "rr-cache", "MERGE_RR"}

// cwdSet tracks the directories a part of a command line may run in: the
// starting directory, and every directory a cd before it may have moved to
// (a cd may fail, so the old directory stays possible). An empty string
// stands for an unknown directory.
type cwdSet []string

func (c cwdSet) with(dir string) cwdSet {
	for _, x := range c {
		if x == dir {
			return c
		}
	}
	return append(append(cwdSet(nil), c...), dir)
}

// resolve returns the absolute forms of p in every possible directory, and
// false when one of them is unknown.
func (c cwdSet) resolve(p string) ([]string, bool) {
	return c.appendResolved(nil, p)
}

// appendResolved is resolve appending to out (a caller's buffer).
func (c cwdSet) appendResolved(out []string, p string) ([]string, bool) {
	if strings.HasPrefix(p, "/") {
		return append(out, filepath.Clean(p)), true
	}
	for _, d := range c {
		if d == "" {
			return nil, false
		}
		out = append(out, filepath.Join(d, p))
	}
	return out, true
}

// ResolveOnDisk returns the path an absolute, clean path names on disk:
// every symbolic link on the way is followed, dangling ones included (a
// write through a dangling link creates its target), and components that
// do not exist are kept as written.
func ResolveOnDisk(p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	return resolveFrom("/", p, "/")
}

// resolveFrom resolves the components of p after prefix (a directory that
// resolves to base) on disk, starting from base.
func resolveFrom(base, p, prefix string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(p, prefix), "/")
	if rest == "" {
		return base
	}
	todo := strings.Split(rest, "/")
	done := base
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			done = next
			if err != nil && !slices.Contains(todo, "..") {
				// does not exist: the rest is as written. With a ".."
				// to come (mkdir -p new/../link/../x), the walk goes on:
				// ".." leads back to components that exist.
				return filepath.Join(append([]string{done}, todo...)...)
			}
			continue
		}
		if hops++; hops > 40 {
			return p // a loop: keep the lexical path (the lexical check still applies)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return p
		}
		if filepath.IsAbs(target) {
			done = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return done
}

// resolver follows symbolic links for the path constraints of one
// decision: the allowed directories are resolved once, and a path inside
// one of them is resolved from there.
type resolver struct {
	lex   dirSet // the allowed directories as given
	dirs  dirSet // the same, resolved
	cache map[string]string
}

func newResolver(dirs dirSet) *resolver {
	r := &resolver{lex: dirs}
	for _, d := range dirs {
		r.dirs = append(r.dirs, ResolveOnDisk(d))
	}
	return r
}

func (r *resolver) resolve(p string) string {
	if r == nil {
		return p
	}
	if v, ok := r.cache[p]; ok {
		return v
	}
	if r.cache == nil {
		r.cache = map[string]string{}
	}
	v := ""
	for i, d := range r.lex {
		if p == d || strings.HasPrefix(p, d) && p[len(d)] == '/' {
			v = resolveFrom(r.dirs[i], p, d)
			break
		}
	}
	if v == "" {
		v = ResolveOnDisk(p)
	}
	r.cache[p] = v
	return v
}

// checkPath returns why a read or write of p needs a prompt, or "". With
// symbolic links followed (res), a glob pattern is checked by what it
// matches too, each match with its links resolved: l*/x may be a link's
// way out of the working directory.
func checkPath(p string, write bool, cwds cwdSet, dirs dirSet, res *resolver) string {
	if why := checkOnePath(p, write, cwds, dirs, res); why != "" || res == nil || !strings.ContainsAny(p, "*?[") {
		return why
	}
	for _, d := range cwds {
		pat := p
		if !strings.HasPrefix(p, "/") {
			pat = d + "/" + p
		}
		matches, ok := globMatches(pat)
		if !ok {
			return "glob pattern " + quoteWord(p) + " matches too many files to check"
		}
		for _, m := range matches {
			if why := checkOnePath(m, write, nil, dirs, res); why != "" {
				return "glob pattern " + quoteWord(p) + " matches " + m + ": " + why
			}
		}
		if strings.HasPrefix(p, "/") {
			break
		}
	}
	return ""
}

// checkOnePath is checkPath for p as one path (a glob pattern as written).
func checkOnePath(p string, write bool, cwds cwdSet, dirs dirSet, res *resolver) string {
	if specialOK.get()[p] {
		return ""
	}
	if strings.HasPrefix(p, "~") {
		return "path " + quoteWord(p) + " is in the home directory"
	}
	var buf [2]string
	abs, ok := cwds.appendResolved(buf[:0], p)
	if !ok {
		return "relative path " + quoteWord(p) + " after cd to an unknown directory"
	}
	dotdot := res != nil && hasDotDot(p)
	for k, a := range abs {
		if specialOK.get()[a] {
			continue
		}
		if why := dangerousPath(a); why != "" {
			return why
		}
		var real string
		if dotdot {
			// The kernel takes ".." after the links before it: lnk/..
			// is the parent of lnk's target, not the directory of lnk.
			raw := p
			if !strings.HasPrefix(p, "/") {
				raw = cwds[k] + "/" + p
			}
			real = res.resolve(raw)
		} else {
			real = res.resolve(a)
		}
		if !dirs.contains(a) && (res == nil || !res.dirs.contains(real)) {
			verb := "reads"
			if write {
				verb = "writes"
			}
			return "command " + verb + " " + a + ", outside the working directory and the additional directories"
		}
		if write {
			if why := protectedWrite(a); why != "" {
				return why
			}
		}
		// The same checks on the path symbolic links lead to.
		if real != a {
			if why := dangerousPath(real); why != "" {
				return quoteWord(p) + " leads to " + why
			}
			if !dirs.contains(real) && (res == nil || !res.dirs.contains(real)) {
				return quoteWord(p) + " is a symbolic link to " + real + ", outside the working directory and the additional directories"
			}
			if write {
				if why := protectedWrite(real); why != "" {
					return quoteWord(p) + " leads to " + real + ": " + why
				}
			}
		}
	}
	return ""
}

// netDevice reports a path bash may open as a network connection itself
// (/dev/tcp/HOST/PORT, /dev/udp/HOST/PORT) in a redirection.
func netDevice(p string) bool {
	if p == "" {
		return false
	}
	c := filepath.Clean("/" + p)
	return strings.Contains(p, "/dev/tcp") || strings.Contains(p, "/dev/udp") ||
		strings.HasPrefix(c, "/dev/tcp") || strings.HasPrefix(c, "/dev/udp")
}

// hasDotDot reports whether p has a ".." component.
func hasDotDot(p string) bool {
	for p != "" {
		c, rest, _ := strings.Cut(p, "/")
		if c == ".." {
			return true
		}
		p = rest
	}
	return false
}

// Bounds of a glob expansion for the path checks; beyond them the pattern
// asks.
const (
	maxGlobMatches  = 1024
	maxGlobDirReads = 512
)

// globMatches expands the glob pattern pat (an absolute path as written,
// ".." and all) on disk, and returns the paths it matches, as written
// (".." stays for the checks to take after the links, as the kernel does).
// The expansion is a superset of bash's and zsh's: '*' and '?' match a
// leading dot (dotglob), a bracket expression matches any one character
// (POSIX classes, negation and all), "." and ".." are matched by a pattern
// starting with '.' that allows them (bash before 5.2), and "**" also
// descends into every directory below (links too), as zsh's **/ and ***/
// do. ok is false when the expansion is too
// large to check.
func globMatches(pat string) (matches []string, ok bool) {
	cur := []string{"/"}
	reads := 0
	expanded := false // a pattern component came before
	join := func(dir, name string) string {
		if dir == "/" {
			return "/" + name
		}
		return dir + "/" + name
	}
	for _, c := range strings.Split(pat, "/") {
		if c == "" || c == "." {
			continue
		}
		if !strings.ContainsAny(c, "*?[") {
			// After a pattern, a path is a match only if it exists, as
			// for the shell.
			keep := cur[:0]
			for _, dir := range cur {
				p := join(dir, c)
				if expanded {
					if _, err := os.Lstat(p); err != nil {
						continue
					}
				}
				keep = append(keep, p)
			}
			if cur = keep; len(cur) == 0 {
				return nil, true
			}
			continue
		}
		expanded = true
		gp := globToGo(c)
		var next []string
		add := func(p string) bool {
			next = append(next, p)
			return len(next) <= maxGlobMatches
		}
		var walk func(dir string, recursive bool, depth int) bool
		walk = func(dir string, recursive bool, depth int) bool {
			if reads++; reads > maxGlobDirReads || depth > 16 {
				return false
			}
			// "." and ".." only for a pattern that starts with a literal
			// '.' (.* in bash before 5.2's globskipdots): a name's
			// leading dot is never matched by '*', '?' or a bracket.
			for _, dot := range []string{".", ".."} {
				if m, _ := filepath.Match(gp, dot); m && c[0] == '.' && !add(join(dir, dot)) {
					return false
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				return true // not a directory, or unreadable: no match
			}
			for _, e := range entries {
				p := join(dir, e.Name())
				if m, _ := filepath.Match(gp, e.Name()); m && !add(p) {
					return false
				}
				if recursive {
					if fi, err := os.Stat(p); err == nil && fi.IsDir() {
						if !add(p) || !walk(p, true, depth+1) {
							return false
						}
					}
				}
			}
			return true
		}
		recursive := strings.Contains(c, "**")
		for _, dir := range cur {
			if recursive && !add(dir) {
				return nil, false
			}
			if !walk(dir, recursive, 0) {
				return nil, false
			}
		}
		if len(next) == 0 {
			return nil, true
		}
		cur = next
	}
	return cur, true
}

// globToGo turns one component of a shell glob pattern into a pattern for
// filepath.Match that matches every name the shell's does (and maybe
// more): a bracket expression becomes '?', and so does a '[' without its
// ']'.
func globToGo(c string) string {
	var b strings.Builder
	for i := 0; i < len(c); i++ {
		switch ch := c[i]; ch {
		case '*', '?':
			b.WriteByte(ch)
		case '[':
			if end := bracketEnd(c, i); end > i {
				i = end
			}
			b.WriteByte('?')
		case '\\', ']':
			b.WriteByte('\\')
			b.WriteByte(ch)
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

// bracketEnd returns the index of the ']' that closes the bracket
// expression opening at c[i], or -1.
func bracketEnd(c string, i int) int {
	j := i + 1
	if j < len(c) && (c[j] == '!' || c[j] == '^') {
		j++
	}
	if j < len(c) && c[j] == ']' {
		j++
	}
	for j < len(c) {
		switch {
		case c[j] == '[' && j+1 < len(c) && strings.IndexByte(":.=", c[j+1]) >= 0:
			end := strings.Index(c[j+2:], string(c[j+1])+"]")
			if end < 0 {
				return -1
			}
			j += 2 + end + 2
		case c[j] == ']':
			return j
		default:
			j++
		}
	}
	return -1
}
