package permissions

import (
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
var specialOK = map[string]bool{
	"/dev/null": true, "/dev/stdin": true, "/dev/stdout": true, "/dev/stderr": true,
	"/dev/fd/0": true, "/dev/fd/1": true, "/dev/fd/2": true, "/dev/zero": true,
	"/dev/random": true, "/dev/urandom": true, "/dev/tty": true, "-": true,
}

// dangerousPath reports why a path must never pass without a prompt,
// wherever it appears in a command: bash's network pseudo-files and other
// processes' environment and memory.
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
			if k >= 3 && (s == "environ" || s == "mem" || s == "auxv") {
				return "process memory or environment " + c
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
	if strings.HasPrefix(p, "/") {
		return []string{filepath.Clean(p)}, true
	}
	out := make([]string, 0, len(c))
	for _, d := range c {
		if d == "" {
			return nil, false
		}
		out = append(out, filepath.Join(d, p))
	}
	return out, true
}

// checkPath returns why a read or write of p needs a prompt, or "".
func checkPath(p string, write bool, cwds cwdSet, dirs dirSet) string {
	if specialOK[p] {
		return ""
	}
	if strings.HasPrefix(p, "~") {
		return "path " + quoteWord(p) + " is in the home directory"
	}
	abs, ok := cwds.resolve(p)
	if !ok {
		return "relative path " + quoteWord(p) + " after cd to an unknown directory"
	}
	for _, a := range abs {
		if specialOK[a] {
			continue
		}
		if why := dangerousPath(a); why != "" {
			return why
		}
		if !dirs.contains(a) {
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
	}
	return ""
}
