package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/runtime/settings"
	"github.com/moat-sandbox/moat/shell/api"
)

// invocation is a moat run that moat serve runs for another process of
// its user (POST /v1/cli/run, handed over by moat's C client before its Go
// runtime started: MOAT_SERVER). Everything moat run takes from its own
// process comes from here instead: the working directory, the
// environment, the descriptors, the signals and the end of the caller.
// What the server shares with the caller by construction (the variables
// moat reads itself, umask, limits, groups, cgroup, namespaces and
// confinement) was checked before the run was taken (api.sameProcess).
// A nil *invocation is this process.
type invocation struct {
	ctx     context.Context
	cwd     string
	env     []string
	stdio   [3]*os.File
	signals <-chan os.Signal
	hide    []string
	// enforcer is the server's, kept for its life (as root, the eBPF
	// programs verified once for all its runs).
	enforcer *runtime.Enforcer
	// start is when the server took the request; marks are MOAT_TRACE's
	// phases before the run's own.
	start time.Time
	marks []mark
}

type mark struct {
	at   time.Time
	what string
}

// mark records a phase of the server's work before the run (MOAT_TRACE).
func (inv *invocation) mark(what string) {
	if inv != nil {
		inv.marks = append(inv.marks, mark{time.Now(), what})
	}
}

type invocationKey struct{}

// invocationOf is the invocation ctx carries, nil for this process.
func invocationOf(ctx context.Context) *invocation {
	if ctx == nil {
		return nil
	}
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

// getenv reads the caller's environment (the first entry, as os.Getenv).
func (inv *invocation) getenv(name string) string {
	if inv == nil {
		return os.Getenv(name)
	}
	for _, kv := range inv.env {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v
		}
	}
	return ""
}

// loadPolicy is loadPolicy in the caller's working directory (its project
// settings, a relative --settings), with the server's socket hidden.
// With noDefaults and no file, only the managed settings are read.
func (inv *invocation) loadPolicy(file string, noDefaults bool) (*policy.Policy, error) {
	if inv == nil {
		return loadPolicyOpts(settings.Options{File: file, NoDefaults: noDefaults, Check: runtime.SettingsCheck("")})
	}
	if file != "" && !filepath.IsAbs(file) {
		file = filepath.Join(inv.cwd, file)
	}
	pol, _, err := settings.Load(settings.Options{File: file, Cwd: inv.cwd, NoDefaults: noDefaults, Check: runtime.SettingsCheck("")})
	if err != nil {
		return nil, &exitError{code: exitMoatError, err: err}
	}
	for _, p := range inv.hide {
		pol.FS.DenyRead = append(pol.FS.DenyRead, policy.PathRule{Path: p, Source: "moat serve: the server's socket"})
	}
	return pol, nil
}

// serveCLIRun runs moat run's command line for a caller of moat serve
// (api.Config.CLIRun) and returns moat run's exit status. moat's messages
// go to the caller's stderr, as they would have in its own process.
func serveCLIRun(ctx context.Context, ci api.CLIInvocation, enf *runtime.Enforcer) int {
	inv := &invocation{ctx: ctx, cwd: logicalCwd(ci.Cwd, ci.Env), env: ci.Env, stdio: ci.Stdio, signals: ci.Signals, hide: ci.Hide, start: ci.Start, enforcer: enf}
	ctx = context.WithValue(ctx, invocationKey{}, inv)
	inv.mark("descriptors received")
	return runContext(ctx, append([]string{"run"}, ci.Args...), ci.Stdio[0], ci.Stdio[1], ci.Stdio[2])
}

// logicalCwd is the working directory as os.Getwd gives it in the caller:
// $PWD when it is absolute and names the directory the caller's getcwd(3)
// gave (a path through a symlink), else that one. Relative settings paths
// and --write resolve against it, as they would have in the caller.
func logicalCwd(cwd string, env []string) string {
	inv := &invocation{env: env}
	pwd := inv.getenv("PWD")
	if !filepath.IsAbs(pwd) {
		return cwd
	}
	a, err1 := os.Stat(pwd)
	b, err2 := os.Stat(cwd)
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		return cwd
	}
	return pwd
}

// cliRunCheck says why moat serve must not take this moat run (the caller
// then runs moat itself), or nil: what only the caller's process can do.
func cliRunCheck(args []string, cwd string, env []string) error {
	c := newRunCmd()
	_ = c.Flags().Parse(args) // a bad command line is the run's own error, said on the caller's stderr
	if c.Flags().Changed("control-fd") {
		return errors.New("--control-fd names a descriptor of the caller's")
	}
	// A path that names a process's own files through /proc/self or
	// /dev/fd would name the server's here (its working directory, its
	// descriptors): on the command line, in a settings file, or through a
	// symlink on the way. The policy is loaded as the run will load it.
	inv := &invocation{cwd: logicalCwd(cwd, env), env: env}
	paths, _ := c.Flags().GetStringArray("write")
	settingsFile := ""
	if f := c.Flags().Lookup("settings"); f != nil {
		settingsFile = f.Value.String()
	}
	if settingsFile != "" {
		paths = append(paths, settingsFile)
	}
	if pol, err := inv.loadPolicy(settingsFile, false); err == nil {
		for _, rs := range [][]policy.PathRule{pol.FS.AllowRead, pol.FS.DenyRead, pol.FS.AllowWrite, pol.FS.DenyWrite} {
			for _, r := range rs {
				paths = append(paths, r.Path)
			}
		}
		paths = append(append(append(paths, pol.Sources...), pol.Protect...), pol.ToolCache)
	} // else the run says why the settings are refused, as it would in the caller
	plain := procPaths{}
	for _, p := range paths {
		if p == "" || strings.HasPrefix(p, "~") {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(inv.cwd, p)
		}
		if via := plain.check(p); via != "" {
			return fmt.Errorf("%s leads through %s, which would name the server's own files, not the caller's", p, via)
		}
	}
	if mayUseDaemon() {
		return errors.New("moatd serves this user's runs (MOAT_DAEMON=off runs without it)")
	}
	return nil
}

// procPaths.check says where p, as written or through a symlink on the
// way, goes under /proc or to /dev/fd, /dev/stdin, /dev/stdout,
// /dev/stderr (names of a process's own files), or "". Each component is
// looked at with lstat; a symlink's target is followed as written, never
// resolved through /proc (which would lead to the server's files and hide
// it). A prefix seen to be no symlink is not looked at again (a policy's
// paths share most of theirs).
type procPaths map[string]bool

func (plain procPaths) check(p string) string {
	procLike := func(p string) bool {
		for _, pre := range []string{"/proc", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"} {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return false
	}
	cur := filepath.Clean(p)
	for hops := 0; hops < 40; hops++ {
		if procLike(cur) {
			return cur
		}
		parts := strings.Split(strings.TrimPrefix(cur, "/"), "/")
		next := ""
		for i := range parts {
			prefix := "/" + strings.Join(parts[:i+1], "/")
			if plain[prefix] {
				continue
			}
			fi, err := os.Lstat(prefix)
			if err != nil {
				return "" // what does not exist has no symlink further on
			}
			if fi.Mode()&os.ModeSymlink == 0 {
				if plain != nil {
					plain[prefix] = true
				}
				continue
			}
			target, err := os.Readlink(prefix)
			if err != nil {
				return ""
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(prefix), target)
			}
			next = filepath.Join(append([]string{target}, parts[i+1:]...)...)
			break
		}
		if next == "" {
			return ""
		}
		cur = filepath.Clean(next)
	}
	return cur // a loop: not followed further, and not handed over
}
