package runtime

import (
	"strconv"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// maxViolations bounds a run's report: the first this many distinct
// refusals are listed, and what comes after is counted.
const maxViolations = 1000

// maxSeen bounds the refusals remembered to tell repeats apart: past it,
// every refusal is counted (and handed to OnViolation) as new.
const maxSeen = 16 * maxViolations

// violationSet is a command's refusals. Not safe for concurrent use: its
// owner holds a lock.
type violationSet struct {
	seen map[string]bool
	list []policy.Violation
	over int // refusals after the list was full
}

// add records v, and reports whether it is new (the owner then hands it
// to OnViolation, listed or not: a host that wants each refusal as it
// happens gets it even after the report is full).
func (s *violationSet) add(v *policy.Violation) bool {
	if v.Time.IsZero() {
		v.Time = time.Now()
	}
	key := string(v.Kind) + "\x00" + v.Op + "\x00" + v.Target
	if s.seen[key] {
		return false
	}
	if len(s.seen) < maxSeen {
		if s.seen == nil {
			s.seen = map[string]bool{}
		}
		s.seen[key] = true
	}
	if len(s.list) < maxViolations {
		s.list = append(s.list, *v)
	} else {
		s.over++
	}
	return true
}

// report is the refusals as a report (policy.Summarize), with a last line
// saying how many were not listed: a command that made more than the
// report keeps (a flood of refused connections before the one that
// mattered) hid its later refusals, unsaid (found by an attack pass).
func (s *violationSet) report(succeeded bool) []policy.Violation {
	out := policy.Summarize(s.list, succeeded)
	if s.over > 0 {
		out = append(out, policy.Violation{Kind: policy.SyscallViolation, Op: "unreported",
			Target: strconv.Itoa(s.over) + " more refusals not listed",
			Rule:   "the report lists the first " + strconv.Itoa(maxViolations) + " distinct refusals of a command; each was refused all the same", Time: time.Now()})
	}
	return out
}
