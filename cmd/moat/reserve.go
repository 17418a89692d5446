package main

import (
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/runtime/settings"
)

// The sandbox's words when it cannot reserve a protected name (create its
// placeholder) in a folder this user cannot write to.
const (
	reservePrefix = "moat must reserve "
	reserveName   = " (a protected name:"
	reserveAdvice = "make that folder writable by you, or leave it out of allowWrite"
)

// explainReserveError rewords that error when the folder is writable in
// the sandbox only as the working directory, through Claude Code's
// implicit rule: there is no allowWrite entry to leave out. Any other error
// is returned as it is.
func explainReserveError(pol *policy.Policy, err error) error {
	if err == nil || pol == nil {
		return err
	}
	msg := err.Error()
	i := strings.Index(msg, reservePrefix)
	if i < 0 || !strings.Contains(msg, reserveAdvice) {
		return err
	}
	rest := msg[i+len(reservePrefix):]
	j := strings.Index(rest, reserveName)
	if j < 0 {
		return err
	}
	dir := filepath.Dir(rest[:j])
	implicitOnly := false
	for _, r := range pol.FS.AllowWrite {
		if r.Glob || !(dir == r.Path || r.Path == "/" || strings.HasPrefix(dir, r.Path+"/")) {
			continue
		}
		if r.Source != settings.ImplicitCwdSource {
			return err // an allowWrite entry of the user's: the advice applies
		}
		implicitOnly = true
	}
	if !implicitOnly {
		return err
	}
	advice := "it is writable in the sandbox only because it is the working directory, which Claude Code's settings make writable (no allowWrite entry names it): run moat from a folder you can write to, or make " + pol.Cwd + " writable by you"
	return &rewordedError{msg: strings.Replace(msg, reserveAdvice, advice, 1), err: err}
}

// rewordedError is an error with other words, and the same chain.
type rewordedError struct {
	msg string
	err error
}

func (e *rewordedError) Error() string { return e.msg }
func (e *rewordedError) Unwrap() error { return e.err }
