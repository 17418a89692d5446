package runtime

import (
	"io"

	"github.com/moat-sandbox/moat/runtime/enforce"
)

// Enforcer is the platform's enforcer kept by a long-lived supervisor
// (moatd) for every run and session it starts: what the platform can share
// between them stays loaded until Close (on Linux, as root, the eBPF
// network filter's programs: the kernel verifies them once, and each run's
// and session's cgroup gets that one set attached). Pass it in
// Request.Enforcer and SessionRequest.Enforcer. Without one, each run and
// session gets an enforcer of its own, which keeps nothing.
type Enforcer struct {
	enf enforce.Enforcer
}

// NewEnforcer returns an enforcer to keep; it loads nothing until a run
// needs it. The caller closes it.
func NewEnforcer() *Enforcer { return &Enforcer{enf: platformShared()} }

// Close releases what the enforcer keeps, once the runs and sessions still
// using it have ended; a run that would need it after Close fails.
// Idempotent.
func (e *Enforcer) Close() error {
	if c, ok := e.enf.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// enforcer is e's platform enforcer, or a new one for one run when e is
// nil.
func (e *Enforcer) enforcer() enforce.Enforcer {
	if e == nil {
		return platform()
	}
	return e.enf
}
