package darwin

import (
	"os"

	"github.com/moat-sandbox/moat/runtime/enforce"
)

// Footprint is what a command under this profile can write, for the git
// audit after the run (runtime/gitguard) and the live journal: the
// writable trees that exist as directories on this disk (a glob's as the
// directory it starts from), minus those within any of skip (moat's state
// directory, the run's TMPDIR); what is read-only inside them, as the
// profile decides it. Seatbelt does not tell moat which writes happened,
// so Observed is false: the audit always runs.
func (p *Profile) Footprint(skip ...string) enforce.Footprint {
	var fp enforce.Footprint
	seen := map[string]bool{}
roots:
	for _, r := range p.writeRoots {
		root := r.path
		if r.isGlob() {
			root = r.g.base
		}
		if seen[root] {
			continue
		}
		seen[root] = true
		for _, s := range skip {
			if s != "" && within(root, s) {
				continue roots
			}
		}
		if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
			continue
		}
		fp.WritableRoots = append(fp.WritableRoots, root)
	}
	j := p.j
	fp.ReadOnly = func(path string) bool { ok, _ := j.writable(path); return !ok }
	for _, pr := range p.Protected {
		fp.ReadOnlyPaths = append(fp.ReadOnlyPaths, pr.Path)
	}
	for _, list := range [][]rule{j.denyWrite, p.denyRead} {
		for _, r := range list {
			fp.ReadOnlyPaths = append(fp.ReadOnlyPaths, r.path)
		}
	}
	return fp
}

// Footprint is what the command can write (Profile.Footprint, without the
// run's private TMPDIR and Spec.StateDir); empty before the profile exists.
func (p *Process) Footprint() enforce.Footprint {
	if p.profile == nil {
		return enforce.Footprint{}
	}
	return p.profile.Footprint(p.tmpDir, p.spec.StateDir)
}
