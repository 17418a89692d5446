package runtime

import (
	"errors"
	"log/slog"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// tierStart is how one caller of startTiers asks its enforcer for a
// sandbox (a run's process, a session) at a given tier.
type tierStart[T any] struct {
	// start asks for the sandbox at mode.
	start func(enforce.Mode) (T, error)
	// discard ends a sandbox that started and then reported a refusal
	// (enforce.Readier): the next tier down is tried instead.
	discard func(T)
	// stepDown, if set, runs before each try at a lower tier.
	stepDown func()
	// alwaysReady waits for enforce.Readier even without best effort and
	// fails the start on any setup error it reports (a session, whose
	// sandbox is of no use once its setup failed); without it, Ready is
	// asked only with best effort, for the refusals that step down.
	alwaysReady bool
}

// startTiers is the one best-effort tier loop of Run and NewSession: it
// starts at the policy's tier (full, or host-proc with
// enableWeakerNestedSandbox) and, with best effort, steps down a tier each
// time the enforcer reports a typed refusal (ErrNoProcfs: host-proc;
// ErrNoUserNamespace, ErrNoMounts: no-namespace), at start or through
// enforce.Readier once stage 2 has mounted, never below
// policy.MinimumTier. It returns the tier reached and what stepping down
// left out.
func startTiers[T any](pol *policy.Policy, log *slog.Logger, ts tierStart[T]) (T, enforce.Mode, []enforce.Skip, error) {
	var skipped []enforce.Skip
	mode := enforce.Full
	if pol.FS.WeakerNested {
		mode = enforce.HostProc
	}
	for {
		v, err := ts.start(mode)
		if err == nil && (ts.alwaysReady || pol.BestEffort) && mode != enforce.NoNamespaces {
			// Some refusals (a new /proc, or any mount, in a container)
			// only show once stage 2 mounts: wait for them.
			if rd, ok := any(v).(enforce.Readier); ok {
				rerr := rd.Ready()
				if rerr != nil && (ts.alwaysReady || errors.Is(rerr, enforce.ErrNoProcfs) || errors.Is(rerr, enforce.ErrNoMounts)) {
					ts.discard(v)
					err = rerr
				}
			}
		}
		if err == nil {
			log.Debug("sandbox started", "tier", mode.String())
			return v, mode, skipped, nil
		}
		var zero T
		next := mode
		switch {
		case !pol.BestEffort:
		case errors.Is(err, enforce.ErrNoProcfs) && mode == enforce.Full:
			next = enforce.HostProc
			skipped = append(skipped, enforce.Skip{Protection: enforce.ProtectionProc, Reason: "a new /proc for the sandbox (the container refuses it): the host's /proc is visible"})
		case errors.Is(err, enforce.ErrNoUserNamespace) && mode != enforce.NoNamespaces,
			errors.Is(err, enforce.ErrNoMounts) && mode != enforce.NoNamespaces:
			next = enforce.NoNamespaces
		}
		if next == mode {
			return zero, mode, skipped, err
		}
		if err := belowMinimum(pol, next, err); err != nil {
			return zero, mode, skipped, err
		}
		log.Debug("best effort", "mode", next.String(), "because", err)
		if ts.stepDown != nil {
			ts.stepDown()
		}
		mode = next
	}
}

// discardProcess ends a process whose sandbox was refused after Start.
func discardProcess(p enforce.Process) {
	_ = p.Kill()
	_, _ = p.Wait()
	_ = p.Close()
}
