//go:build linux

package linux

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"time"

	"github.com/moat-sandbox/moat/linux/journal"
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
	if l.observed.Load() && l.writes.Load() == 0 {
		// Every filesystem write would have been notified, and none was:
		// the command changed nothing (and so planted nothing).
		return nil, nil
	}
	v := l.fp.view
	roots := l.hostWritableRoots()
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

// hostWritableRoots are the host directories the command can write (not
// the run's own /tmp, not moat's state).
func (l *launch) hostWritableRoots() []string {
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
	return roots
}

// announce records what this run can write, so that another moat does not
// load a settings file the command may have written.
func (l *launch) announce(since time.Time) {
	roots := l.hostWritableRoots()
	if len(roots) == 0 {
		return
	}
	ro := append([]string(nil), l.fp.protected...)
	for _, list := range [][]rule{l.fp.view.denyWrite, l.fp.view.denyRead, l.fp.view.protect} {
		for _, r := range list {
			ro = append(ro, r.path)
		}
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	f, err := journal.Announce(filepath.Join(l.spec.StateDir, "journal"), hex.EncodeToString(b[:]), journal.Writer{Since: since, Roots: roots, ReadOnly: ro})
	if err != nil {
		l.log.Debug("announce", "err", err)
		return
	}
	l.announced = f
}
