package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// DoctorReport is what moat doctor says about this host: the facts the
// sandbox depends on, and what a real launch gave.
type DoctorReport struct {
	// Tier is what moat run gets here without best effort ("full",
	// "host-proc" when enableWeakerNestedSandbox asks for it), or
	// "unavailable" when it refuses to run.
	Tier string `json:"tier"`
	// Refusal is why moat refuses without best effort, if it does.
	Refusal string `json:"refusal,omitempty"`
	// BestEffortTier is the tier --best-effort gets ("unavailable" when
	// even that fails), and BestEffortSkips what it leaves out.
	BestEffortTier  string   `json:"bestEffortTier"`
	BestEffortError string   `json:"bestEffortError,omitempty"`
	BestEffortSkips []string `json:"bestEffortSkips,omitempty"`
	// Root: moat runs as root (eBPF, cgroups).
	Root   bool            `json:"root"`
	Checks []enforce.Check `json:"checks"`
}

// DoctorOptions configure Doctor.
type DoctorOptions struct {
	// StateDir is moat's state directory; if empty, DefaultStateDir().
	StateDir string
	// Policy is the base of the trial's policy (its minimum tier, its
	// weaker-nested switch); if nil, moat's defaults.
	Policy *policy.Policy
}

// Doctor probes the host and launches /bin/true in a sandbox that can write
// nothing and reach nothing, first as moat run would, then with best
// effort, and reports the tier each gets.
func Doctor(ctx context.Context, o DoctorOptions) (*DoctorReport, error) {
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir()
	}
	rep := &DoctorReport{Root: os.Geteuid() == 0, Tier: "unavailable", BestEffortTier: "unavailable"}
	enf := platform()
	if p, ok := enf.(enforce.Prober); ok {
		rep.Checks = p.Probe(o.StateDir)
	}
	if enf == nil {
		rep.Refusal = "moat has no sandbox on " + goos() + " in this build"
		return rep, nil
	}
	if err := prepareStateDir(o.StateDir); err != nil {
		return nil, err
	}
	// Beside the state directory, not in it: every sandbox hides moat's
	// state.
	dir, err := os.MkdirTemp(filepath.Dir(filepath.Clean(o.StateDir)), "moat-doctor-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	trial := func(bestEffort bool) (*Result, error) {
		pol := &policy.Policy{Cwd: dir, Home: dir}
		if o.Policy != nil {
			pol.MinimumTier, pol.FS.WeakerNested = o.Policy.MinimumTier, o.Policy.FS.WeakerNested
		}
		pol.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
		pol.BestEffort = bestEffort
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return Run(ctx, Request{Policy: pol, Argv: []string{truePath()}, Env: []string{"PATH=/usr/bin:/bin"}, StateDir: o.StateDir})
	}
	res, err := trial(false)
	if err == nil && res.ExitCode == 0 {
		rep.Tier = res.Mode.String()
	} else {
		rep.Refusal = trialError(res, err)
	}
	res, err = trial(true)
	if err == nil && res.ExitCode == 0 {
		rep.BestEffortTier = res.Mode.String()
		for _, s := range res.Skipped {
			rep.BestEffortSkips = append(rep.BestEffortSkips, s.String())
		}
	} else {
		rep.BestEffortError = trialError(res, err)
	}
	return rep, nil
}

func trialError(res *Result, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("the trial command exited %d", res.ExitCode)
}

func truePath() string {
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join("/bin", "true")
}
