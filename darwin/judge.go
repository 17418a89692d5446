package darwin

import "strings"

// judge answers, in Go, what the profile's file rules decide: which
// protections are worth a rule, and why a reported denial happened. The
// tests check the profile text itself with an independent SBPL reader.
type judge struct {
	reads     []readRule // ordered
	roots     []rule     // allowWrite and the private TMPDIR
	denyWrite []rule
	protect   []rule
	// ciRoots are the roots' case-insensitive regexes, on a volume not
	// known to be case-sensitive (see inRootAnyCase).
	ciRoots []rule
}

// inRootAnyCase reports whether a writable tree holds p in any case: on a
// case-insensitive volume /users/ME is the home /Users/me, and a path the
// policy spells one way is written through the other (found by attack
// pass 54). Only for keeping protections and pins, where keeping one too
// many costs a rule.
func (j judge) inRootAnyCase(p string) bool {
	if _, ok := j.inRoot(p); ok {
		return true
	}
	for _, r := range j.ciRoots {
		if r.ciRe.MatchString(p) {
			return true
		}
	}
	return false
}

func (j judge) readable(p string) (bool, string) {
	ok, r := decideRead(j.reads, p)
	if r == nil {
		return true, ""
	}
	what := "denyRead "
	if r.allow {
		what = "allowRead "
	}
	return ok, what + r.source
}

// inRoot reports whether p lies in a writable tree.
func (j judge) inRoot(p string) (rule, bool) {
	for _, r := range j.roots {
		if r.covers(p) {
			return r, true
		}
	}
	return rule{}, false
}

// writable reports whether p may be written, and if not, why.
func (j judge) writable(p string) (bool, string) {
	if ok, why := j.readable(p); !ok {
		return false, "hidden by " + why
	}
	for _, r := range j.protect {
		if r.covers(p) {
			return false, r.source
		}
	}
	for _, r := range j.denyWrite {
		if r.covers(p) {
			return false, "denyWrite " + r.source
		}
	}
	if _, ok := j.inRoot(p); ok {
		return true, ""
	}
	return false, "read-only: not in allowWrite"
}

// anyWritableBelow reports whether p itself lies in a writable tree: only
// then can it be renamed, removed or created, so only then is a pin on it
// worth a rule.
func (j judge) anyWritableBelow(p string) bool {
	return j.inRootAnyCase(p)
}

// intersectsWritable reports whether a read rule's region and a writable
// tree overlap (one inside the other), conservatively for globs.
func (j judge) intersectsWritable(r rule) bool {
	base := r.path
	if r.isGlob() {
		base = r.g.base
	}
	for _, w := range j.roots {
		wb := w.path
		if w.isGlob() {
			wb = w.g.base
		}
		if within(base, wb) || within(wb, base) {
			return true
		}
	}
	return false
}

// Explain says which rule of the profile refuses an operation, in the
// words of the policy, for a violation's Rule field. op is a Seatbelt
// operation ("file-write-create", "network-outbound", "mach-lookup"...),
// target its object as the log names it.
func (p *Profile) Explain(op, target string) string {
	switch {
	case strings.HasPrefix(op, "file-read"):
		if strings.HasPrefix(target, "/dev/") {
			return "a device the sandbox does not open"
		}
		if ok, why := p.j.readable(target); !ok {
			return why
		}
	case op == "file-write-unlink" || op == "file-write-create":
		if ok, why := p.j.writable(target); !ok {
			return why
		}
		return "above a protected path: it cannot be renamed, removed or created"
	case strings.HasPrefix(op, "file-write"):
		if ok, why := p.j.writable(target); !ok {
			return why
		}
	case op == "network-outbound" && strings.HasPrefix(target, "/"):
		return "not in network.allowUnixSockets"
	case strings.HasPrefix(op, "network"):
		return "only moat's proxy is reachable"
	case op == "mach-lookup":
		return "a system service the sandbox does not reach"
	case strings.HasPrefix(op, "sysctl"):
		return "a system value the sandbox does not read"
	case op == "process-info" || strings.HasPrefix(op, "process-info") || op == "signal":
		return "a process outside the sandbox"
	}
	return "not allowed by the sandbox profile"
}
