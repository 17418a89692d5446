package main

import (
	"context"
	"errors"
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
	inv := &invocation{ctx: ctx, cwd: ci.Cwd, env: ci.Env, stdio: ci.Stdio, signals: ci.Signals, hide: ci.Hide, start: ci.Start}
	ctx = context.WithValue(ctx, invocationKey{}, inv)
	inv.mark("descriptors received")
	return runContext(ctx, append([]string{"run"}, ci.Args...), ci.Stdio[0], ci.Stdio[1], ci.Stdio[2])
}

// cliRunCheck says why moat serve must not take this moat run (the caller
// then runs moat itself), or nil: what only the caller's process can do.
func cliRunCheck(args []string) error {
	c := newRunCmd()
	_ = c.Flags().Parse(args) // a bad command line is the run's own error, said on the caller's stderr
	if c.Flags().Changed("control-fd") {
		return errors.New("--control-fd names a descriptor of the caller's")
	}
	if mayUseDaemon() {
		return errors.New("moatd serves this user's runs (MOAT_DAEMON=off runs without it)")
	}
	return nil
}
