//go:build linux

package linux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moat-sandbox/moat/bpf/cgroup"
	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/linux/journal"
	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Enforcer is the Linux enforcer: namespaces, mounts, Landlock, seccomp
// and (as root) eBPF, set up by a C stage 2 from a plan the supervisor
// computes (see doc.go).
type Enforcer struct {
	// progs is the eBPF set its root launches share (NewShared), or nil:
	// each loads a set of its own.
	progs *sharedPrograms
	// spares holds the stage 2 started ahead of the next launch it fits
	// (spare.go), nil for New's.
	spares *spares
}

// New returns an enforcer that keeps nothing between launches (a root
// launch loads eBPF programs of its own): for one run.
func New() *Enforcer { return &Enforcer{} }

// NewShared returns an enforcer for a long-lived supervisor (moatd): as
// root, it loads the eBPF programs at its first launch and attaches that
// one set to every launch's cgroup after that, until Close.
//
// Its launches that fit (the user's own sandbox without cgroups: moat
// serve's) also take a stage 2 it started ahead of them, after the one
// before (spare.go).
func NewShared() *Enforcer { return &Enforcer{progs: &sharedPrograms{}, spares: &spares{}} }

// Close releases what the enforcer keeps (NewShared's eBPF programs), once
// the launches still using it have ended; a launch that needs the programs
// after Close fails. It does nothing for New's. Idempotent.
func (e *Enforcer) Close() error {
	if e.spares != nil {
		e.spares.close()
	}
	if e.progs == nil {
		return nil
	}
	return e.progs.close()
}

var _ enforce.Enforcer = (*Enforcer)(nil)

// Start builds a sandbox for l and starts the command in it.
func (e *Enforcer) Start(ctx context.Context, l *enforce.Launch) (enforce.Process, error) {
	if !nsinit.Linked {
		return nil, &enforce.UnsupportedFeatureError{Feature: "a sandbox stage 2", Need: "this moat was built without cgo: build it with CGO_ENABLED=1 (make build)"}
	}
	if l.Mode == enforce.NoNamespaces && landlockABI() == 0 {
		return nil, &enforce.UnsupportedFeatureError{Feature: "Landlock", Need: "without user namespaces moat confines the command with Landlock, and this kernel has none: moat has no way to confine the command", Err: enforce.ErrNoUserNamespace}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// (With a terminal, the descriptors it replaces are /dev/null here.)
	stdio, _, sc, err := pipeStdio(l.Stdio, nil, l.As) // stdio.go
	if err != nil {
		return nil, err
	}
	lc := *l
	lc.Stdio, l = stdio, &lc
	return e.launch(ctx, l, func(ln *launcher) { ln.stdioCopy = sc })
}

// launch prepares and starts a launcher for l (a command's or a
// session's, as set apart by with); on failure it has cleaned up.
func (e *Enforcer) launch(ctx context.Context, l *enforce.Launch, with func(*launcher)) (*launcher, error) {
	pol := l.Policy
	if l.Mode == enforce.HostProc && !pol.FS.WeakerNested {
		p := *pol
		p.FS.WeakerNested = true
		pol = &p
	}
	ln := &launcher{ctx: ctx, l: l, pol: pol, nons: l.Mode == enforce.NoNamespaces, trace: l.Trace, progs: e.progs, spares: e.spares, dirs: newResolver()}
	with(ln)
	if !ln.nons {
		ln.ready = make(chan struct{}) // stage 2 says when its mounts are done
	}
	if err := ln.prepare(); err != nil {
		ln.Close()
		return nil, err
	}
	if err := ln.start(); err != nil {
		ln.terminate()
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// cleanupArg is the argv[1] with which a sandbox's init re-execs the
// supervisor's binary after the supervisor died: it removes the mount
// points the dead supervisor created (see package journal).
const cleanupArg = "__moat-cleanup"

// Reexec handles the supervisor's binary being re-executed by a sandbox's
// init to clean up after a supervisor that died. It returns handled=false
// for any other command line. A program that starts sandboxes calls it
// first thing in main (runtime.Reexec does).
func Reexec(args []string) (handled bool, err error) {
	if len(args) != 4 || args[1] != cleanupArg {
		return false, nil
	}
	if err := journal.Recover(args[2], args[3]); err != nil {
		return true, fmt.Errorf("clean-up after the supervisor died: %w", err)
	}
	return true, nil
}

// Describe resolves the policy as Start would, without running anything or
// creating any placeholder, and probes the kernel features it needs.
func (e *Enforcer) Describe(pol *policy.Policy, stateDir string) (*enforce.Description, error) {
	return describe(pol, stateDir, nil)
}

// DescribeAs is Describe for moatd's client as: the plan's survey runs on
// a thread with the client's credentials, as a launch's does.
func (e *Enforcer) DescribeAs(pol *policy.Policy, stateDir string, as *enforce.Identity) (*enforce.Description, error) {
	if as == nil {
		return describe(pol, stateDir, nil)
	}
	w, err := ascred.NewWorker(as.Uid, as.Gid, identityGroups(as))
	if err != nil {
		return nil, err
	}
	defer w.Close()
	return describe(pol, stateDir, func(fn func()) { w.Do(func() error { fn(); return nil }) })
}

// Sweep removes what runs of a supervisor that died left in stateDir (the
// placeholders its journals record) and, as root, the eBPF cgroups of dead
// runs (killing what still runs in them): moatd sweeps when it starts.
func Sweep(stateDir string) error {
	err := journal.SweepAll(filepath.Join(stateDir, "journal"))
	if os.Geteuid() == 0 {
		if m, merr := cgroup.New("moat"); merr == nil {
			_, cerr := m.CleanStale()
			err = errors.Join(err, cerr)
		}
		sweepAllLimitCgroups()
	}
	return err
}
