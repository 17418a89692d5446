// Package policycases is a table of what moat promises for a policy on
// every platform: which paths a sandboxed command can read and write, which
// it cannot rename, which addresses it can reach. Each enforcer's tests
// build a case's tree in a temporary directory, apply the case's policy
// (run the command, or read the generated profile) and check every
// promise, so that Linux and macOS are held to the same table.
//
// A case states only what both platforms promise. Where one platform
// promises more (macOS protects a mandatory name that does not exist yet,
// Linux gives the command a private /tmp), that platform's own tests say so.
//
// It imports only the standard library and runtime/policy.
package policycases

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Env is where a case lives: a temporary directory and its parts.
type Env struct {
	Root    string // the case's directory (absolute, symlinks resolved)
	Work    string // $W: the working directory, writable by default
	Home    string // $H: the home directory
	Outside string // $O: a directory that is neither writable nor secret
}

// NewEnv lays a case out under root.
func NewEnv(root string) Env {
	return Env{Root: root, Work: filepath.Join(root, "work"), Home: filepath.Join(root, "home"), Outside: filepath.Join(root, "outside")}
}

// Path expands $W, $H, $O and $R at the start of s.
func (e Env) Path(s string) string {
	for _, v := range []struct{ k, p string }{{"$W", e.Work}, {"$H", e.Home}, {"$O", e.Outside}, {"$R", e.Root}} {
		if s == v.k || strings.HasPrefix(s, v.k+"/") {
			return v.p + s[len(v.k):]
		}
	}
	return s
}

// Op is what a check attempts.
type Op string

const (
	// Read opens the file for reading (a directory: lists it).
	Read Op = "read"
	// Write creates or modifies the file.
	Write Op = "write"
	// Rename renames the path away (or removes it).
	Rename Op = "rename"
	// Connect opens a TCP connection to Target ("host:port", or Proxy).
	Connect Op = "connect"
	// UnixConnect connects to the unix socket at Target.
	UnixConnect Op = "unix-connect"
)

// Proxy stands for moat's proxy as the command is told to reach it.
const Proxy = "$PROXY"

// Check is one promise.
type Check struct {
	Op     Op
	Target string
	Want   bool // the attempt succeeds
	Why    string
}

// Case is one policy and what it promises.
type Case struct {
	Name string
	// Tree lists what exists before the command runs: "$W/a/b" a file,
	// "$W/a/" a directory, "$W/a=text" a file with that content.
	Tree []string
	// Policy builds the case's policy (start from Base).
	Policy func(e Env) *policy.Policy
	Checks []Check
}

// Build creates the case's tree under e.
func (c Case) Build(e Env) error {
	for _, d := range []string{e.Work, e.Home, e.Outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, t := range c.Tree {
		spec, content, _ := strings.Cut(t, "=")
		p := e.Path(spec)
		if strings.HasSuffix(spec, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if content == "" {
			content = "text of " + filepath.Base(p) + "\n"
		}
		for _, v := range []struct{ k, p string }{{"$W", e.Work}, {"$H", e.Home}, {"$O", e.Outside}, {"$R", e.Root}} {
			content = strings.ReplaceAll(content, v.k, v.p)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Base is the policy most cases start from: the working directory
// writable, the default secrets unreadable, no network destination.
func Base(e Env) *policy.Policy {
	p := &policy.Policy{Cwd: e.Work, Home: e.Home, Violations: true}
	p.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	p.FS.DenyRead = policy.DefaultDenyRead(e.Home)
	p.FS.AllowWrite = []policy.PathRule{{Path: e.Work, Source: "working directory"}}
	return p
}

func rules(e Env, src string, paths ...string) []policy.PathRule {
	var out []policy.PathRule
	for i, p := range paths {
		x := e.Path(p)
		out = append(out, policy.PathRule{Path: x, Glob: policy.HasGlob(x), Source: fmt.Sprintf("case: %s[%d]", src, i)})
	}
	return out
}

func yes(op Op, target, why string) Check { return Check{op, target, true, why} }
func no(op Op, target, why string) Check  { return Check{op, target, false, why} }

// repo is a git working tree at dir (relative to $W).
func repo(dir string) []string {
	g := "$W/" + dir + "/.git/"
	if dir == "" {
		g = "$W/.git/"
	}
	return []string{g + "HEAD=ref: refs/heads/main\n", g + "config=[core]\n\tbare = false\n", g + "index", g + "objects/", g + "refs/heads/", g + "hooks/pre-commit.sample"}
}

// Cases is the table.
var Cases = []Case{
	{
		Name:   "defaults",
		Tree:   append(repo(""), "$W/src/main.go", "$H/.ssh/id_ed25519", "$H/.aws/credentials", "$H/notes.txt", "$O/target.txt"),
		Policy: Base,
		Checks: []Check{
			yes(Read, "$W/src/main.go", "the working directory is readable"),
			yes(Write, "$W/src/main.go", "and writable"),
			yes(Write, "$W/src/new.go", "new files too"),
			yes(Read, "$O/target.txt", "reads are allowed everywhere else"),
			no(Write, "$O/target.txt", "writes are not"),
			no(Write, "$O/new.txt", "nor creations"),
			yes(Read, "$H/notes.txt", "the home directory is readable"),
			no(Write, "$H/notes.txt", "but not writable"),
			no(Read, "$H/.ssh/id_ed25519", "the default secrets are unreadable"),
			no(Read, "$H/.aws/credentials", "the default secrets are unreadable"),
			no(Write, "$W/.bashrc", "a shell start-up file in the working directory"),
			no(Write, "$W/.zshrc", "a shell start-up file in the working directory"),
			no(Write, "$W/.mcp.json", "an agent's settings"),
			no(Write, "$W/.claude/settings.json", "an agent's settings folder"),
			no(Write, "$W/.vscode/tasks.json", "an editor's settings folder"),
			no(Write, "$W/HEAD", "a HEAD would make the working directory a bare repository"),
			no(Write, "$W/.git/hooks/pre-commit", "git hooks"),
			no(Write, "$W/.git/config", "git config"),
			yes(Write, "$W/.git/index", "the rest of .git is git's working state"),
			yes(Write, "$W/.git/objects/ab/cdef", "the rest of .git is git's working state"),
			yes(Write, "$W/.git/HEAD", "an existing HEAD is git's"),
			no(Rename, "$W/.git", "the directory holding protected files cannot be moved away"),
			no(Connect, "1.1.1.1:443", "no direct connection out"),
			no(Connect, "127.0.0.1:22", "no host loopback service"),
			yes(Connect, Proxy, "moat's proxy is the route out"),
		},
	},
	{
		Name: "allow git config",
		Tree: repo(""),
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.FS.AllowGitConfig = true
			return p
		},
		Checks: []Check{
			yes(Write, "$W/.git/config", "allowGitConfig"),
			no(Write, "$W/.git/hooks/post-checkout", "hooks stay protected"),
		},
	},
	{
		Name: "deny write inside a writable tree",
		Tree: []string{"$W/cfg/deploy.conf", "$W/cfg/other.conf"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.FS.DenyWrite = rules(e, "denyWrite", "$W/cfg/deploy.conf")
			return p
		},
		Checks: []Check{
			no(Write, "$W/cfg/deploy.conf", "denyWrite beats allowWrite"),
			yes(Write, "$W/cfg/other.conf", "a sibling stays writable"),
			no(Rename, "$W/cfg", "renaming the parent would carry the file out of its rule"),
			yes(Read, "$W/cfg/deploy.conf", "denyWrite is not denyRead"),
		},
	},
	{
		Name: "deny read inside a writable tree",
		Tree: []string{"$W/sec/inner/key", "$W/sec/readme"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.FS.DenyRead = append(p.FS.DenyRead, rules(e, "denyRead", "$W/sec/inner")...)
			return p
		},
		Checks: []Check{
			no(Read, "$W/sec/inner/key", "denyRead"),
			no(Write, "$W/sec/inner/key", "an unreadable path is not writable either"),
			no(Write, "$W/sec/inner/new", "nor can files be planted there"),
			no(Rename, "$W/sec", "renaming the parent would carry the secret out of its rule"),
			yes(Read, "$W/sec/readme", "a sibling stays readable"),
			yes(Write, "$W/sec/readme", "and writable"),
		},
	},
	{
		Name: "allow read re-opens a denied tree, a deeper deny closes it again",
		Tree: []string{"$H/proj/a.txt", "$H/proj/private/b.txt", "$H/other.txt"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.FS.DenyRead = append(p.FS.DenyRead, rules(e, "denyRead", "$H", "$H/proj/private")...)
			p.FS.AllowRead = rules(e, "allowRead", "$H/proj")
			return p
		},
		Checks: []Check{
			yes(Read, "$H/proj/a.txt", "allowRead is more specific than denyRead"),
			no(Read, "$H/proj/private/b.txt", "a deeper denyRead wins again"),
			no(Read, "$H/other.txt", "the rest of home stays denied"),
		},
	},
	{
		Name: "allow read of the same path wins a tie",
		Tree: []string{"$H/.ssh/known_hosts", "$H/.ssh/id_ed25519"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.FS.AllowRead = rules(e, "allowRead", "$H/.ssh/known_hosts")
			return p
		},
		Checks: []Check{
			yes(Read, "$H/.ssh/known_hosts", "allowRead inside a default secret"),
			no(Read, "$H/.ssh/id_ed25519", "the rest of the secret stays denied"),
		},
	},
	{
		Name: "allow read of the very path denied",
		Tree: []string{"$W/vault/a.txt", "$W/private/b.txt"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.FS.DenyRead = append(p.FS.DenyRead, rules(e, "denyRead", "$W/vault", "$W/private")...)
			p.FS.AllowRead = rules(e, "allowRead", "$W/vault")
			return p
		},
		Checks: []Check{
			yes(Read, "$W/vault/a.txt", "allowRead wins a tie"),
			no(Read, "$W/private/b.txt", "a denyRead alone"),
		},
	},
	{
		Name: "deny read glob",
		Tree: []string{"$W/a/server.pem", "$W/b/c/client.pem", "$W/a/readme.md"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.FS.DenyRead = append(p.FS.DenyRead, rules(e, "denyRead", "$W/**/*.pem")...)
			return p
		},
		Checks: []Check{
			no(Read, "$W/a/server.pem", "a glob match"),
			no(Read, "$W/b/c/client.pem", "a match deeper down"),
			no(Write, "$W/a/server.pem", "unreadable, so unwritable"),
			yes(Read, "$W/a/readme.md", "not a match"),
		},
	},
	{
		Name: "allow write glob",
		Tree: []string{"$R/out-1/", "$R/out-2/x", "$R/other/"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.FS.AllowWrite = append(p.FS.AllowWrite, rules(e, "allowWrite", "$R/out-*")...)
			return p
		},
		Checks: []Check{
			yes(Write, "$R/out-1/a.txt", "a glob match is a writable tree"),
			yes(Write, "$R/out-2/x", "a glob match is a writable tree"),
			no(Write, "$R/other/a.txt", "not a match"),
			no(Write, "$R/out-1/.mcp.json", "the reserved names at the top of every writable tree"),
		},
	},
	{
		Name: "deny write glob",
		Tree: []string{"$W/pkg/yarn.lock", "$W/yarn.lock", "$W/pkg/index.js"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.FS.DenyWrite = rules(e, "denyWrite", "$W/**/*.lock")
			return p
		},
		Checks: []Check{
			no(Write, "$W/pkg/yarn.lock", "a glob match"),
			no(Write, "$W/yarn.lock", "** matches no directory too"),
			yes(Write, "$W/pkg/index.js", "not a match"),
		},
	},
	{
		Name:   "a repository inside the writable tree",
		Tree:   append(repo("vendor/lib"), "$W/vendor/lib/src.c", "$W/vendor/lib/.envrc"),
		Policy: Base,
		Checks: []Check{
			no(Write, "$W/vendor/lib/.git/hooks/pre-commit.sample", "an existing repository's hooks"),
			no(Write, "$W/vendor/lib/.git/config", "an existing repository's config"),
			yes(Write, "$W/vendor/lib/.git/index", "its working state"),
			yes(Write, "$W/vendor/lib/src.c", "its files"),
			no(Write, "$W/vendor/lib/.envrc", "an existing mandatory name within the search depth"),
			no(Rename, "$W/vendor/lib/.git", "the directory holding protected files"),
		},
	},
	{
		Name:   "a bare repository inside the writable tree",
		Tree:   []string{"$W/mirror.git/HEAD=ref: refs/heads/main\n", "$W/mirror.git/config=[core]\n\tbare = true\n", "$W/mirror.git/objects/", "$W/mirror.git/refs/", "$W/mirror.git/hooks/"},
		Policy: Base,
		Checks: []Check{
			no(Write, "$W/mirror.git/config", "a bare repository's config"),
			no(Write, "$W/mirror.git/hooks/post-receive", "a bare repository's hooks"),
			yes(Write, "$W/mirror.git/objects/aa/bb", "its objects"),
		},
	},
	{
		Name: "a linked worktree",
		Tree: append(repo("main"), "$W/main/.git/worktrees/wt/gitdir=$W/wt/.git\n", "$W/main/.git/worktrees/wt/commondir=../..\n",
			"$W/main/.git/worktrees/wt/HEAD=ref: refs/heads/wt\n", "$W/wt/.git=gitdir: ../main/.git/worktrees/wt\n", "$W/wt/file.txt"),
		Policy: Base,
		Checks: []Check{
			no(Write, "$W/wt/.git", "a .git pointer"),
			no(Write, "$W/main/.git/worktrees/wt/commondir", "a linked worktree's redirection"),
			no(Write, "$W/main/.git/worktrees/wt/gitdir", "a linked worktree's redirection"),
			yes(Write, "$W/main/.git/worktrees/wt/HEAD", "a linked worktree's HEAD"),
			yes(Write, "$W/wt/file.txt", "its files"),
		},
	},
	{
		Name: "the working directory in a repository, a level down",
		Tree: append(repo(""), "$W/sub/a.txt"),
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.Cwd = e.Path("$W/sub")
			return p
		},
		Checks: []Check{
			no(Write, "$W/.git/hooks/pre-push", "the enclosing repository's hooks"),
			no(Write, "$W/.git/config", "the enclosing repository's config"),
			no(Write, "$W/sub/.bashrc", "the mandatory names in the working directory"),
			yes(Write, "$W/sub/a.txt", "its files"),
		},
	},
	{
		Name:   "a hooks directory named by the repository's config",
		Tree:   append(repo(""), "$W/.husky/pre-commit", "$W/.git/config=[core]\n\thooksPath = .husky\n"),
		Policy: Base,
		Checks: []Check{
			no(Write, "$W/.husky/pre-commit", "core.hooksPath makes .husky a hooks directory"),
			no(Write, "$W/.husky/post-merge", "and no hook can be added there"),
		},
	},
	{
		Name: "home writable",
		Tree: []string{"$H/.bashrc", "$H/notes.txt", "$H/.ssh/id_ed25519", "$H/.config/"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.FS.AllowWrite = append(p.FS.AllowWrite, rules(e, "allowWrite", "$H")...)
			return p
		},
		Checks: []Check{
			yes(Write, "$H/notes.txt", "a writable home"),
			no(Write, "$H/.bashrc", "its shell start-up files"),
			no(Write, "$H/.zshrc", "even one that does not exist yet"),
			no(Write, "$H/.gitconfig", "the user's git configuration"),
			no(Write, "$H/.config/git/config", "git's second user configuration"),
			no(Write, "$H/.ssh/id_ed25519", "a secret is neither readable nor writable"),
			no(Write, "$H/.ssh/authorized_keys", "nor can one be planted"),
			no(Rename, "$H/.ssh", "nor moved out of its rule"),
		},
	},
	{
		Name: "moat's own files and its settings",
		Tree: []string{"$W/bin/moat", "$W/moat.json"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.Protect = []string{e.Path("$W/bin/moat")}
			p.Sources = []string{e.Path("$W/moat.json")}
			return p
		},
		Checks: []Check{
			no(Write, "$W/bin/moat", "moat's binary"),
			no(Write, "$W/moat.json", "a settings file moat read"),
			no(Rename, "$W/bin", "the directory holding it"),
		},
	},
	{
		Name: "unix sockets by path",
		Tree: []string{"$O/agent.sock", "$O/docker.sock"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.Net.AllowUnixSockets = rules(e, "allowUnixSockets", "$O/agent.sock")
			return p
		},
		Checks: []Check{
			yes(UnixConnect, "$O/agent.sock", "allowUnixSockets"),
			no(UnixConnect, "$O/docker.sock", "any other socket"),
		},
	},
	{
		Name: "all unix sockets",
		Tree: []string{"$O/docker.sock"},
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.Net.AllowAllUnixSockets = true
			return p
		},
		Checks: []Check{
			yes(UnixConnect, "$O/docker.sock", "allowAllUnixSockets"),
			no(Connect, "1.1.1.1:443", "TCP stays behind the proxy"),
		},
	},
	{
		Name: "network destinations go through the proxy",
		Policy: func(e Env) *policy.Policy {
			p := Base(e)
			p.Net.AllowedDomains = []policy.DomainRule{{Pattern: "example.com", Source: "case"}, {Pattern: "*.github.com", Source: "case"}}
			return p
		},
		Checks: []Check{
			yes(Connect, Proxy, "the proxy decides"),
			no(Connect, "93.184.215.14:443", "even an allowed domain's address is not reachable directly"),
			no(Connect, "[2606:4700::1111]:443", "nor over IPv6"),
		},
	},
}
