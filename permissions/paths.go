package permissions

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Path constraints are lexical: paths are cleaned and compared as strings
// against the working directory and the additional directories. Symbolic
// links are the sandbox's business (it resolves them in the kernel); here
// "inside" means inside by name.

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
	base := parts[len(parts)-1]
	for _, f := range policy.MandatoryFiles {
		if base == f {
			return "writing " + p + " (" + f + " can run code later)"
		}
	}
	for k, s := range parts {
		for _, d := range policy.MandatoryDirs {
			if s == d {
				return "writing into " + d + " (editor or agent settings)"
			}
		}
		if s == ".git" {
			if k == len(parts)-1 {
				return "writing the .git directory"
			}
			for _, g := range policy.GitProtected {
				if parts[k+1] == g {
					return "writing .git/" + g + " (it can run code)"
				}
			}
		}
	}
	return ""
}

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
			if err != nil { // does not exist: the rest is as written
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

// checkPath returns why a read or write of p needs a prompt, or "".
func checkPath(p string, write bool, cwds cwdSet, dirs dirSet, res *resolver) string {
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
	for _, a := range abs {
		if specialOK.get()[a] {
			continue
		}
		if why := dangerousPath(a); why != "" {
			return why
		}
		real := res.resolve(a)
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
