package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/gitguard"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// auditGit runs the git audit over the trees the command could write, once
// nothing in the sandbox runs any more, and records its findings as
// violations; it returns warnings (an audit that could not cover
// everything).
func (r *run) auditGit(fp enforce.Footprint) []string {
	return auditGit(fp, r.since, unsettledSince(r.req.StateDir, fp.WritableRoots, r.announce), r.pol.Home, r.req.StateDir, r.req.As, userEnv(r.req.Env, r.req.As), r.violation)
}

// auditGit audits the trees the command could write. With as (moatd), the
// audit runs with that user's credentials on a thread of its own, and its
// quarantine and record of the trees are the user's
// (~/.local/state/moat/quarantine and cache, read-only in the user's
// sandboxes): the user can change its own tree while root would read,
// copy, write and rename in it by path, and so make root write or move any
// file (a symlink swapped in between a check and a use); as the user, a
// swap reaches only what the user could reach without moat. The record is
// what lets an audit tell a directory moved into place during the run
// (with what an earlier run made where no audit looked) from one that was
// there.
//
// start is when the run began (the precise time; "changed during the run"
// is taken from enforce.Since(start), a second or two earlier, except for
// files that were read-only to the command).
//
// unsettled is when the earliest other sandbox still running that can write
// these trees began (zero: none): see gitguard.Options.Unsettled.
func auditGit(fp enforce.Footprint, start, unsettled time.Time, home, stateDir string, as *enforce.Identity, userEnv func(string) string, report func(policy.Violation)) []string {
	if fp.Observed && !fp.Wrote {
		// Every filesystem write would have been reported, and none was:
		// the command changed nothing (and so planted nothing).
		return nil
	}
	if len(fp.WritableRoots) == 0 {
		return nil
	}
	if userEnv == nil {
		userEnv = func(string) string { return "" }
	}
	readOnly := fp.ReadOnly
	if readOnly == nil {
		readOnly = func(string) bool { return false }
	}
	opts := gitguard.Options{
		Roots:         fp.WritableRoots,
		Since:         enforce.Since(start),
		Start:         start,
		QuarantineDir: filepath.Join(stateDir, "quarantine"),
		CacheDir:      filepath.Join(stateDir, "cache"),
		Protected:     readOnly,
		Hidden:        fp.Hidden,
		Placeholder:   fp.Placeholder,
		XDGConfigHome: userEnv("XDG_CONFIG_HOME"),
		HGRCPath:      userEnv("HGRCPATH"),
		// The user's git reads these from the same environment.
		GitConfigGlobal: userEnv("GIT_CONFIG_GLOBAL"),
		GitConfigSystem: userEnv("GIT_CONFIG_SYSTEM"),
		GitTemplateDir:  userEnv("GIT_TEMPLATE_DIR"),
		Unsettled:       unsettled,
	}
	var (
		rep *gitguard.Report
		err error
	)
	if as == nil {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			home = h
		}
		opts.Home = home
		// Every thread of this process has its credentials.
		opts.Parallel = func(fn func()) error { fn(); return nil }
		rep, err = gitguard.Audit(opts)
	} else {
		opts.QuarantineDir = filepath.Join(as.Home, ".local", "state", "moat", "quarantine")
		opts.CacheDir = filepath.Join(as.Home, ".local", "state", "moat", "cache")
		// What the audit does on threads of its own is done with the
		// client's credentials too: root's lstat ahead of the walk, of
		// paths the client's record names, told the client what exists
		// where only root may look (found by an attack pass).
		opts.Parallel = func(fn func()) error {
			return ascred.Do(as.Uid, as.Gid, as.Groups, func() error { fn(); return nil })
		}
		err = ascred.Do(as.Uid, as.Gid, as.Groups, func() error {
			if h, err := filepath.EvalSymlinks(home); err == nil {
				home = h
			}
			opts.Home = home
			var aerr error
			rep, aerr = gitguard.Audit(opts)
			return aerr
		})
	}
	var warnings []string
	if err != nil {
		warnings = append(warnings, policy.Sanitize("git audit failed: "+err.Error()))
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
		if strings.HasPrefix(f.Action, "failed") {
			// What it planted is still there, where the user's git reads
			// it: the run says so, not only a violation line among others.
			// The path is the command's choice: quoted, and the line
			// sanitized, so that a name cannot forge another line.
			warnings = append(warnings, policy.Sanitize("git audit could not take out "+strconv.Quote(f.Path)+" ("+f.Reason+"): "+f.Action+"; remove it before running git there"))
		}
	}
	for _, in := range rep.Incomplete {
		// It names the tree's directories, whose names the tree (or the
		// command) chose: a name with terminal escapes or a line break
		// reached the user's terminal raw in moat's own warning (a
		// directory below which the path outgrew PATH_MAX, or one the
		// user cannot read: attack pass 82, TestAuditWarningsSanitized).
		warnings = append(warnings, policy.Sanitize("git audit incomplete: "+in))
	}
	return warnings
}

// userEnv looks variables up in the command's environment, the user's
// (XDG_CONFIG_HOME, GIT_CONFIG_GLOBAL, GIT_TEMPLATE_DIR: where the user's
// git finds its configuration): env's, or this process's when the command
// inherits it (no env, not a client's).
func userEnv(env []string, as *enforce.Identity) func(string) string {
	if env == nil && as == nil {
		return os.Getenv
	}
	return envLookup(env)
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
