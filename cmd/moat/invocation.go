package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
func (inv *invocation) loadPolicy(file string) (*policy.Policy, error) {
	if inv == nil {
		return loadPolicy(file)
	}
	if file != "" && !filepath.IsAbs(file) {
		file = filepath.Join(inv.cwd, file)
	}
	pol, _, err := settings.Load(settings.Options{File: file, Cwd: inv.cwd, Check: runtime.SettingsCheck("")})
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
func serveCLIRun(ctx context.Context, ci api.CLIInvocation) int {
	inv := &invocation{ctx: ctx, cwd: logicalCwd(ci.Cwd, ci.Env), env: ci.Env, stdio: ci.Stdio, signals: ci.Signals, hide: ci.Hide, start: ci.Start}
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
	// /dev/fd would name the server's here: its working directory, its
	// descriptors.
	paths, _ := c.Flags().GetStringArray("write")
	if f := c.Flags().Lookup("settings"); f != nil && f.Value.String() != "" {
		paths = append(paths, f.Value.String())
	}
	base := logicalCwd(cwd, env)
	for _, p := range paths {
		if p == "" || strings.HasPrefix(p, "~") {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		if selfPath(p) {
			return fmt.Errorf("%s names the calling process's own files (/proc/self, /dev/fd)", p)
		}
	}
	if mayUseDaemon() {
		return errors.New("moatd serves this user's runs (MOAT_DAEMON=off runs without it)")
	}
	return nil
}

// selfPath says whether p, as written or with its symlinks resolved here,
// names this process's own files: /proc/self, /proc/thread-self, /dev/fd,
// /dev/std*, or /proc/PID of this process.
func selfPath(p string) bool {
	own := "/proc/" + strconv.Itoa(os.Getpid())
	under := func(p string) bool {
		p = filepath.Clean(p)
		for _, pre := range []string{"/proc/self", "/proc/thread-self", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr", own} {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return false
	}
	if under(p) {
		return true
	}
	// Resolve what exists of it: the longest existing prefix.
	for q := p; q != "/" && q != "."; q = filepath.Dir(q) {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			return under(r)
		}
	}
	return false
}
