//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/runtime/gitguard"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// gitTarget is one more path a repository makes worth protecting.
type gitTarget struct {
	path    string
	why     string
	reserve bool // protect it even where it does not exist yet
}

// gitFacts are what a repository's configuration says about the files
// git reads besides its own: whether config.worktree is read
// (extensions.worktreeConfig), where hooks live (core.hooksPath) and which
// files are included.
type gitFacts struct {
	worktreeConfig bool
	hooksPaths     []string
	includes       []string // resolved
	templateDirs   []string // init.templateDir values: git clone and git init copy them into new repositories
}

// readGitFacts reads the config files of git directory g (and of the
// common directory it shares, if any).
//
// read reads a file (readSmallFile; under moatd, as the client: root read
// a config the client cannot read, and a core.hooksPath or an include
// value in it came out as a placeholder in the client's tree, found by an
// attack pass).
//
// At most maxIncludeReads files are read: another user's config in a
// shared tree including its own directory's config through 20 symlinks
// to that directory (l1/config ... l20/config) named 20^10 paths, each
// new as written, and the plan of every run that could write the tree
// never ended (attack pass 59, TestReadGitFactsIncludeFanOut). What is
// not read here is not protected during the run; the audit judges it
// after.
func readGitFacts(files []string, home string, read func(string) ([]byte, error)) gitFacts {
	var f gitFacts
	seen := map[string]bool{}
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		if depth > 10 || seen[p] || len(seen) >= maxIncludeReads {
			return
		}
		seen[p] = true
		if gitguard.AutofsOnWay(p, true) {
			// An include below an autofs mount nothing covers is not
			// read: the lookup would ask the host's automounter for a
			// name a command's config chose (attack pass 56).
			return
		}
		b, err := read(p)
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
				inc := gitguard.ConfigPath(e.Value, filepath.Dir(p), home)
				if inc != "" {
					f.includes = append(f.includes, inc)
					walk(inc, depth+1)
				}
			}
		}
	}
	for _, p := range files {
		walk(p, 0)
	}
	return f
}

// maxIncludeReads bounds the config files one readGitFacts reads: far
// above the includes of a real configuration.
const maxIncludeReads = 1000

// readConfigFile reads a git config file moat plans from (at most 1 MB).
func readConfigFile(p string) ([]byte, error) { return readSmallFile(p, 1<<20) }

// globalGitFacts reads the system's and the user's git configuration;
// home is the user's (under moatd, Launch.As: a client's, not this
// process's).
func globalGitFacts(home string) gitFacts {
	return readGitFacts(globalGitConfigs(home, ownXDGConfigHome(home)), home, readConfigFile)
}

// globalGitConfigs are the files git reads for the system's and the
// user's configuration: /etc/gitconfig, ~/.gitconfig and
// $XDG_CONFIG_HOME/git/config, ~/.config/git/config where XDG_CONFIG_HOME
// is unset. Both of the last two are read when xdgConfigHome names
// another place: a shell of the user's may set it where this one did not,
// and a hooks directory protected for nothing costs nothing.
func globalGitConfigs(home, xdgConfigHome string) []string {
	files := []string{"/etc/gitconfig"}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config"))
	}
	if filepath.IsAbs(xdgConfigHome) {
		if x := filepath.Join(xdgConfigHome, "git", "config"); !slices.Contains(files, x) {
			files = append(files, x)
		}
	}
	return files
}

// ownXDGConfigHome is this process's $XDG_CONFIG_HOME when home is this
// process's own $HOME, and "" otherwise: a root supervisor planning a
// client's sandbox (moatd) must not read its own environment as the
// client's, where git's config of root would stand for the user's.
func ownXDGConfigHome(home string) string {
	own := os.Getenv("HOME")
	if r, err := filepath.EvalSymlinks(own); err == nil {
		own = r
	}
	if filepath.Clean(own) != filepath.Clean(home) {
		return ""
	}
	return os.Getenv("XDG_CONFIG_HOME")
}

// gitRepoTargets lists what repository g (worktree: the directory holding
// its .git, "" for a bare one) adds to its GitProtected entries: the
// administrative files of its linked worktrees, config.worktree where it is
// read, its in-tree hooks directories and the files its config includes.
func gitRepoTargets(g, worktree, home string, global gitFacts, read func(string) ([]byte, error)) []gitTarget {
	var out []gitTarget
	facts := readGitFacts([]string{filepath.Join(g, "config")}, home, read)
	if facts.worktreeConfig {
		out = append(out, gitTarget{filepath.Join(g, "config.worktree"), "git: config.worktree is read (extensions.worktreeConfig)", true})
	}
	if es, err := os.ReadDir(filepath.Join(g, "worktrees")); err == nil {
		for _, e := range es {
			if !e.IsDir() {
				continue
			}
			w := filepath.Join(g, "worktrees", e.Name())
			for _, n := range policy.GitWorktreeProtected {
				reserve := n == "config.worktree" && facts.worktreeConfig
				out = append(out, gitTarget{filepath.Join(w, n), "git: a linked worktree's " + n + " is never writable", reserve})
			}
		}
	}
	base := worktree
	if base == "" {
		base = g
	}
	for _, h := range append(append([]string(nil), facts.hooksPaths...), global.hooksPaths...) {
		if p := gitguard.ConfigPath(h, base, home); p != "" {
			out = append(out, gitTarget{p, "git: core.hooksPath " + h + " holds hooks", true})
		}
	}
	for _, inc := range facts.includes {
		out = append(out, gitTarget{inc, "git: included by " + filepath.Join(g, "config"), true})
	}
	return out
}

// readSmallFile reads a regular file of at most max bytes (a FIFO or a
// device is refused, not read).
func readSmallFile(p string, max int64) ([]byte, error) {
	return sys.ReadRegular(p, max, false)
}

// envValue is the value of name in env (the last one wins, as getenv's
// callers see it), "" if absent.
func envValue(env []string, name string) string {
	v := ""
	for _, e := range env {
		if k, val, ok := strings.Cut(e, "="); ok && k == name {
			v = val
		}
	}
	return v
}
