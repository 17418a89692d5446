//go:build linux

package linux

import (
	"path/filepath"
	"time"

	"github.com/moat-sandbox/moat/runtime/gitguard"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// auditSince is the moment from which a change counts as the command's: a
// second before the start, rounded down, so that filesystems with
// one-second timestamps and the kernel's coarse clock (a tick behind the
// precise one) cannot make a change of the run look older.
func auditSince(start time.Time) time.Time {
	return start.Truncate(time.Second).Add(-time.Second)
}

// auditGit runs the git audit over the trees the command could write, once
// nothing in the sandbox runs any more, and turns its findings into
// violations.
func (l *launch) auditGit(since time.Time) (vs []policy.Violation, warnings []string) {
	if l.fp == nil {
		return nil, nil
	}
	v := l.fp.view
	var roots []string
	for _, r := range dedupe(append([]rule(nil), v.allowWrite...)) {
		if lstatKind(r.path) != 'd' || within(r.path, l.spec.StateDir) {
			continue
		}
		if v.privateTmp && within(r.path, "/tmp") {
			continue // the run's own /tmp: gone with it
		}
		if l.tmpDir != "" && within(r.path, l.tmpDir) {
			continue
		}
		roots = append(roots, r.path)
	}
	if len(roots) == 0 {
		return nil, nil
	}
	home := ""
	if l.spec.Policy.Home != "" {
		home, _, _ = canonical(l.spec.Policy.Home)
	}
	rep, err := gitguard.Audit(gitguard.Options{
		Roots:         roots,
		Since:         since,
		Home:          home,
		QuarantineDir: filepath.Join(l.spec.StateDir, "quarantine"),
		CacheDir:      filepath.Join(l.spec.StateDir, "cache"),
		Protected: func(p string) bool {
			ok, _ := v.writable(p)
			return !ok
		},
	})
	if err != nil {
		warnings = append(warnings, "git audit failed: "+err.Error())
	}
	if rep == nil {
		return nil, warnings
	}
	for _, f := range rep.Findings {
		rule := f.Reason + ": " + f.Action
		if f.MovedTo != "" {
			rule += "; original kept in " + f.MovedTo
		}
		vs = append(vs, policy.Violation{Kind: policy.FileViolation, Op: "plant", Target: f.Path, Rule: rule, Time: time.Now()})
	}
	for _, in := range rep.Incomplete {
		warnings = append(warnings, "git audit incomplete: "+in)
	}
	return vs, warnings
}
