package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"time"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/gitguard"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// auditGit runs the git audit over the trees the command could write, once
// nothing in the sandbox runs any more, and records its findings as
// violations; it returns warnings (an audit that could not cover
// everything).
func (r *run) auditGit(fp enforce.Footprint) []string {
	return auditGit(fp, r.since, r.pol.Home, r.req.StateDir, r.violation)
}

func auditGit(fp enforce.Footprint, since time.Time, home, stateDir string, report func(policy.Violation)) []string {
	if fp.Observed && !fp.Wrote {
		// Every filesystem write would have been reported, and none was:
		// the command changed nothing (and so planted nothing).
		return nil
	}
	if len(fp.WritableRoots) == 0 {
		return nil
	}
	if h, err := filepath.EvalSymlinks(home); err == nil {
		home = h
	}
	readOnly := fp.ReadOnly
	if readOnly == nil {
		readOnly = func(string) bool { return false }
	}
	rep, err := gitguard.Audit(gitguard.Options{
		Roots:         fp.WritableRoots,
		Since:         since,
		Home:          home,
		QuarantineDir: filepath.Join(stateDir, "quarantine"),
		CacheDir:      filepath.Join(stateDir, "cache"),
		Protected:     readOnly,
	})
	var warnings []string
	if err != nil {
		warnings = append(warnings, "git audit failed: "+err.Error())
	}
	if rep == nil {
		return warnings
	}
	for _, f := range rep.Findings {
		rule := f.Reason + ": " + f.Action
		if f.MovedTo != "" {
			rule += "; original kept in " + f.MovedTo
		}
		report(policy.Violation{Kind: policy.FileViolation, Op: "plant", Target: f.Path, Rule: rule, Time: time.Now()})
	}
	for _, in := range rep.Incomplete {
		warnings = append(warnings, "git audit incomplete: "+in)
	}
	return warnings
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
