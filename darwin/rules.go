package darwin

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// rule is one resolved filesystem rule: a literal path (with everything
// below it) or a glob (as a regex over real paths).
type rule struct {
	path   string // literal: the real path; glob: the pattern as resolved
	g      *glob  // nil for a literal
	source string
	// re matches what the rule covers (the tree below each match), for the
	// generator's own judgement (Explain, which protections matter).
	re *regexp.Regexp
	// exact: a glob rule that covers its matches only, not what lies
	// below them (an allowUnixSockets glob made read-only; see onlyMatches).
	exact bool
	// ci is, for a deny on a case-insensitive volume (folded), the same
	// rule as a regex that matches its path in any case; "" otherwise.
	ci   string
	ciRe *regexp.Regexp
}

// folded is the rule with its case-insensitive regex (ci), for a volume
// that is not known to be case-sensitive. A path without a letter to fold
// is left as it is.
func (r rule) folded() (rule, error) {
	var ci, plain string
	var err error
	switch {
	case r.g == nil:
		if r.path == "/" {
			return r, nil
		}
		ci, plain = "^"+ciEscape(r.path)+"(/.*)?$", "^"+escapeRegex(r.path)+"(/.*)?$"
	default:
		fg := *r.g
		fg.fold = true
		if r.exact {
			ci, err = fg.match()
			plain, _ = r.g.match()
		} else {
			ci, err = fg.tree()
			plain, _ = r.g.tree()
		}
		if err != nil {
			return r, err
		}
	}
	if ci == plain {
		return r, nil
	}
	re, err := regexp.Compile(ci)
	if err != nil {
		return r, fmt.Errorf("%s: %w: %v", r.path, errGlob, err)
	}
	r.ci, r.ciRe = ci, re
	return r, nil
}

// foldedAncestorRegexes are a folded glob rule's ancestorRegexes in any
// case (nil for a rule that is not folded, or not a glob).
func (r rule) foldedAncestorRegexes() ([]string, error) {
	if r.ci == "" || r.g == nil {
		return nil, nil
	}
	fg := *r.g
	fg.fold = true
	return fg.ancestorRegexes()
}

// onlyMatches is the glob rule r narrowed to its matches themselves.
func (r rule) onlyMatches() rule {
	if r.g == nil {
		return r
	}
	m, _ := r.g.match() // checked when the rule was made
	r.re, r.exact = regexp.MustCompile(m), true
	return r
}

func (r rule) isGlob() bool { return r.g != nil }

// covers reports whether p (a real path) is the rule's path or below it.
func (r rule) covers(p string) bool {
	if r.ciRe != nil && r.ciRe.MatchString(p) {
		return true
	}
	if r.g == nil {
		return within(p, r.path)
	}
	return r.re.MatchString(p)
}

// depth is how specific the rule is: the components of what it matches
// (the fewest, with **), and whether ** makes that vary.
func (r rule) depth() (int, bool) {
	if r.g == nil {
		return components(r.path), false
	}
	return r.g.depth()
}

// filter is the rule as a Seatbelt filter: subpath, or the tree regex;
// for a folded rule, either that or its case-insensitive regex.
func (r rule) filter() expr {
	f := r.plainFilter()
	if r.ci != "" {
		return list("require-any", f, list("regex", user(r.ci)))
	}
	return f
}

func (r rule) plainFilter() expr {
	if r.g == nil {
		return list("subpath", user(r.path))
	}
	if r.exact {
		m, _ := r.g.match()
		return list("regex", user(m))
	}
	t, _ := r.g.tree() // checked when the rule was made
	return list("regex", user(t))
}

// within reports whether p is base or below it.
func within(p, base string) bool {
	return base == "/" || p == base || strings.HasPrefix(p, base+"/")
}

// resolver turns the paths of a policy into the real paths Seatbelt
// compares with: it sees every path with its symlinks resolved.
type resolver struct {
	fn func(string) (string, error)
}

// full resolves p entirely.
func (r resolver) full(p string) (string, error) {
	q, err := r.fn(p)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", p, err)
	}
	if err := policy.CheckPath(q); err != nil {
		return "", fmt.Errorf("resolving %s: %w", p, err)
	}
	return q, nil
}

// node resolves p's directory and keeps its last component: the path of a
// symlink itself, which operations that do not follow it (unlink, rename,
// lstat) are checked against.
func (r resolver) node(p string) (string, error) {
	if p == "/" {
		return p, nil
	}
	d, err := r.full(filepath.Dir(p))
	if err != nil {
		return "", err
	}
	return filepath.Join(d, filepath.Base(p)), nil
}

// spellings are the real paths a rule about p must name: p resolved, and
// for a deny also the symlink p itself may be (both, when they differ).
func (r resolver) spellings(p string, deny bool) ([]string, error) {
	f, err := r.full(p)
	if err != nil {
		return nil, err
	}
	out := []string{f}
	if deny {
		n, err := r.node(p)
		if err != nil {
			return nil, err
		}
		if n != f {
			out = append(out, n)
		}
		// Each also as the other side of a firmlink names it.
		for _, q := range out {
			if a, ok := firmlinkSpelling(q); ok && !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// resolveRules resolves a list of policy rules. A glob is compiled to a
// regex rooted at its resolved base directory; it also stands for the
// literal path of the same spelling (a file named "a[1]" is what the rule
// names too, as Linux's expansion finds).
func (r resolver) resolveRules(rs []policy.PathRule, deny bool) ([]rule, error) {
	var out []rule
	for _, pr := range rs {
		if err := checkString("path", pr.Path); err != nil {
			return nil, err
		}
		if err := policy.CheckPath(pr.Path); err != nil {
			return nil, fmt.Errorf("%s: %w", pr.Source, err)
		}
		src := pr.Source
		if src == "" {
			src = pr.Path
		}
		spelled := false
		if pr.Glob && hasMeta(pr.Path) {
			spelled = true
			g := splitGlob(pr.Path)
			bases, err := r.spellings(g.base, deny)
			if err != nil {
				return nil, err
			}
			for _, b := range bases {
				rg := &glob{base: b, segs: g.segs}
				t, err := rg.tree()
				if err != nil {
					return nil, fmt.Errorf("%s (%s): %w", pr.Path, src, err)
				}
				re, err := regexp.Compile(t)
				if err != nil {
					return nil, fmt.Errorf("%s (%s): %w: %v", pr.Path, src, errGlob, err)
				}
				out = append(out, rule{path: filepath.Join(b, strings.Join(g.segs, "/")), g: rg, source: src, re: re})
			}
		}
		ps, err := r.spellings(pr.Path, deny)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if spelled && coveredByGlob(out, p) {
				continue // the pattern matches its own spelling already
			}
			out = append(out, rule{path: p, source: src})
		}
	}
	return dedupe(out), nil
}

func coveredByGlob(rs []rule, p string) bool {
	for _, r := range rs {
		if r.isGlob() && r.covers(p) {
			return true
		}
	}
	return false
}

// dedupe drops repeated rules (the same filter twice), keeping the first.
func dedupe(rs []rule) []rule {
	seen := map[string]bool{}
	out := rs[:0]
	for _, r := range rs {
		k := fmt.Sprint(r.g != nil, r.exact, r.path)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, r)
	}
	return out
}

// readRule is one read rule in the order the profile lists them.
type readRule struct {
	rule
	allow bool
	// A deny with ** goes last (see orderReads). Where an allowRead names
	// the very node it matches, Linux lets the allow win the tie: those
	// nodes are carved out of it (exact is the node's own regex).
	carve []carveOut
}

type carveOut struct {
	f     expr // (require-not (require-all (regex MATCH) EXACT))
	match *regexp.Regexp
	exact *regexp.Regexp
}

// covers is the rule's reach, carve-outs removed.
func (r readRule) covers(p string) bool {
	if !r.rule.covers(p) {
		return false
	}
	for _, c := range r.carve {
		if c.match.MatchString(p) && c.exact.MatchString(p) {
			return false
		}
	}
	return true
}

// filter is the rule's Seatbelt filter, carve-outs included.
func (r readRule) filter() expr {
	if len(r.carve) == 0 {
		return r.rule.filter()
	}
	items := []any{"require-all", r.rule.filter()}
	for _, c := range r.carve {
		items = append(items, c.f)
	}
	return list(items...)
}

// carveTies gives each deny with ** the carve-outs of the allows that can
// name the same node: a literal allow its match covers exactly, a glob
// allow whose base overlaps its own. Only the node both match exactly is
// carved out, so the deny never loses more than Linux's tie-break gives
// the allow (below that node it still wins: stricter than Linux there).
func carveTies(rs []readRule) error {
	for i := range rs {
		d := &rs[i]
		if d.allow || !d.isGlob() {
			continue
		}
		if _, star := d.depth(); !star {
			continue
		}
		m, _ := d.g.match()
		dm, err := regexp.Compile(m)
		if err != nil {
			return err
		}
		for _, a := range rs {
			if !a.allow {
				continue
			}
			var exact expr
			var ex string
			switch {
			case !a.isGlob():
				if !dm.MatchString(a.path) {
					continue
				}
				exact, ex = list("literal", user(a.path)), "^"+escapeRegex(a.path)+"$"
			case within(a.g.base, d.g.base) || within(d.g.base, a.g.base):
				am, _ := a.g.match()
				exact, ex = list("regex", user(am)), am
			default:
				continue
			}
			exRe, err := regexp.Compile(ex)
			if err != nil {
				return err
			}
			d.carve = append(d.carve, carveOut{
				f:     list("require-not", list("require-all", list("regex", user(m)), exact)),
				match: dm, exact: exRe,
			})
		}
	}
	return nil
}

// orderReads sorts read rules so that, under Seatbelt's last-match-wins,
// the most specific rule decides and allowRead wins a tie, as on Linux:
// by depth, a deny before an allow of the same depth. A rule with ** has
// no fixed depth; a deny with ** goes last (it beats every allow: stricter
// than Linux when an allow is more specific than the match), an allow with
// ** at its least depth (a deny deeper than that beats it).
func orderReads(rs []readRule) []readRule {
	key := func(r readRule) int {
		d, star := r.depth()
		if star && !r.allow {
			return 1 << 20
		}
		return d
	}
	sort.SliceStable(rs, func(i, j int) bool {
		ki, kj := key(rs[i]), key(rs[j])
		if ki != kj {
			return ki < kj
		}
		return !rs[i].allow && rs[j].allow
	})
	return rs
}

// decideRead is the Go-side reading of the ordered rules: the last that
// covers p decides.
func decideRead(rs []readRule, p string) (bool, *readRule) {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].covers(p) {
			return rs[i].allow, &rs[i]
		}
	}
	return true, nil
}
