package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// missingHidden lists the policy's denyRead paths (those without a glob)
// that do not exist when a session's sandbox is made. A sandbox on Linux
// hides a path by mounting over it, and there is nothing to mount over a
// path that does not exist: one the user makes later (a `gh auth login`,
// `aws configure` or `docker login` while an agent's session runs) shows
// in the session's read-only view of the host as it is, and a later
// command of the session read it (attack pass 96). The session checks
// them before each command (lateSecret). macOS hides by path, whatever
// exists.
func missingHidden(pol *policy.Policy) []string {
	if goruntime.GOOS != "linux" {
		return nil
	}
	var out []string
	for _, r := range pol.FS.DenyRead {
		if policy.HasGlob(r.Path) {
			continue // expanded when the sandbox starts (docs/SECURITY.md)
		}
		if _, err := os.Lstat(r.Path); errors.Is(err, fs.ErrNotExist) {
			out = append(out, r.Path)
		}
	}
	return out
}

// outsideRoots is paths less those in one of the writable roots: the
// command itself may make such a path (a denyRead .env a script copies
// from .env.example), and what it wrote it may read; ending the session
// for it would end every session whose build makes one. Not covered so:
// such a path that the user makes on the host while the session runs.
func outsideRoots(paths, roots []string) []string {
	var out []string
	for _, p := range paths {
		in := false
		for _, r := range roots {
			if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
				in = true
				break
			}
		}
		if !in {
			out = append(out, p)
		}
	}
	return out
}

// lateSecret is an error naming the first of paths that exists now, or
// nil: such a path was made after the session's sandbox, which cannot hide
// it, so the session runs no command any more (fail closed; a new session
// hides it).
func lateSecret(paths []string) error {
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s, which the policy hides, was made after this session's sandbox started, and a running sandbox cannot hide it: the session runs no more commands; start a new session", p)
		}
	}
	return nil
}

// watchLate ends the session when one of the paths missingHidden found is
// made: a command already running (a background one) could read it, and
// the next would be refused anyway. It looks once a second (an lstat of a
// missing name each, a few microseconds): the path stays readable to what
// runs for up to that long.
func (s *Session) watchLate() {
	if len(s.missing) == 0 {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := lateSecret(s.missing); err != nil {
				s.log.Warn("session ended", "why", err)
				s.mu.Lock()
				s.warnings = append(s.warnings, "the session was ended: "+err.Error())
				s.mu.Unlock()
				s.Close()
				return
			}
		}
	}
}
