package darwin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/moat-sandbox/moat/internal/lazyre"
	"github.com/moat-sandbox/moat/internal/planted"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Options are what a profile needs besides the policy.
type Options struct {
	// Tag marks every denial of the profile in the system log, so that the
	// log reader attributes it to this run (see NewTag). Required.
	Tag string
	// HTTPProxyPort and SOCKSProxyPort are the ports of moat's proxy on
	// the host's loopback. If zero, the policy's external proxy ports
	// (network.httpProxyPort, socksProxyPort) are used. A policy that
	// allows any destination needs at least one.
	HTTPProxyPort, SOCKSProxyPort int
	// Resolve returns the real path of p, symlinks resolved (what Seatbelt
	// compares rules with). If nil, Canonical.
	Resolve func(p string) (string, error)
	// CaseSensitive reports whether the volume of the real path p compares
	// names case-sensitively. Where it does not (the default on macOS),
	// every deny (denyRead, denyWrite, a protection, a pin) is also written
	// as a regex matching its path in any case. If nil: pathconf
	// _PC_CASE_SENSITIVE on macOS (anything but a clear yes is no), false
	// elsewhere.
	CaseSensitive func(p string) bool
	// Readlink reads a symlink, for the paths resolved step by step (an
	// allowUnixSockets path: its symlinks are followed only outside the
	// writable trees). If nil, os.Readlink; a test that gives Resolve a
	// Mac's links gives them here too.
	Readlink func(p string) (string, error)
	// TmpDir is the run's private temporary directory (writable; the
	// runner points TMPDIR at it). Optional.
	TmpDir string
	// TTY is the run's own terminal (the pty the runner made, /dev/ttysN):
	// readable, writable and ioctl-able. No other terminal is.
	TTY string
	// Protect are more paths that are never writable, such as what Survey
	// finds (git control files, mandatory names) and moat's own files.
	Protect []Protection
}

// Protection is a path that is never writable, with the reason.
type Protection struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// Profile is a generated Seatbelt profile.
type Profile struct {
	// Text is the profile. Every string taken from the policy is a
	// parameter, (param "Pn"), defined by Params.
	Text   string
	Params []Param
	// Tag is the run's tag (Options.Tag).
	Tag string
	// Protected are the protections the profile keeps: paths inside the
	// writable trees that stay read-only.
	Protected []Protection
	// Notes say what the profile grants beyond the policy's wording, or
	// leaves out (moat policy prints them).
	Notes []string

	entries []entry
	j       judge
	http    int
	socks   int
	// writeRoots and denyRead are the resolved allowWrite and denyRead
	// rules (Footprint).
	writeRoots []rule
	denyRead   []rule
}

// Args are sandbox-exec's arguments before the command: -p PROFILE and
// one -D NAME=VALUE per parameter.
func (p *Profile) Args() []string {
	args := []string{"-p", p.Text}
	for _, pa := range p.Params {
		args = append(args, "-D", pa.Arg())
	}
	return args
}

// Inline is the profile with every parameter written in place as an
// escaped string literal: a self-contained profile to read, or to give
// sandbox-exec -p alone. (The runner uses Text and Params: a value then
// never goes through the profile's reader at all.)
func (p *Profile) Inline() string { return render(p.entries, p.Tag, nil) }

// tagPattern is what a tag may hold: it is written into the profile and
// into log stream's predicate as it is.
var tagPattern = lazyre.New(`^[A-Za-z0-9_]{8,64}$`)

// NewTag returns a fresh run tag.
func NewTag() string {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return "moat_" + hex.EncodeToString(b) + "_sbx"
}

// ErrUnexpressible is wrapped by errors for a policy a Seatbelt profile
// cannot express: moat refuses to run it rather than enforce less.
var ErrUnexpressible = errors.New("not expressible in a Seatbelt profile")

// Generate builds the Seatbelt profile for a policy. It reads nothing from
// the disk except through Options.Resolve, and the lstat of each
// component of an allowWrite path as written (a symlink on the way that
// lies inside another writable tree is refused: a *planted.Link).
func Generate(pol *policy.Policy, o Options) (*Profile, error) {
	if pol == nil {
		return nil, errors.New("darwin: nil policy")
	}
	if !tagPattern.MatchString(o.Tag) {
		return nil, fmt.Errorf("darwin: tag %q: want 8 to 64 letters, digits or _", o.Tag)
	}
	if pol.FS.Disabled {
		return nil, fmt.Errorf("%w: filesystem.disabled turns every filesystem protection off; moat does not run commands without one", ErrUnexpressible)
	}
	res := resolver{fn: o.Resolve}
	if res.fn == nil {
		res.fn = Canonical
	}
	g := &generator{pol: pol, o: o, res: res, p: &Profile{Tag: o.Tag}}
	if err := g.network(); err != nil {
		return nil, err
	}
	if err := g.files(); err != nil {
		return nil, err
	}
	g.p.entries = merge(g.entries())
	var params paramSet
	g.p.Text = render(g.p.entries, o.Tag, &params)
	g.p.Params = params.order
	return g.p, nil
}

type generator struct {
	pol *policy.Policy
	o   Options
	res resolver
	p   *Profile

	reads      []readRule
	writeRoots []rule // allowWrite, resolved
	tmp        []rule
	denyWrite  []rule
	protect    []rule
	pinsWrite  []expr // ancestors of write protections: no unlink, no create
	pinsRead   []expr // ancestors of read denies: no unlink (rename)
	tty        string
	unix       []expr
	sensitive  map[string]bool // CaseSensitive's answers
}

// fold gives r its case-insensitive regex unless r's volume is known to be
// case-sensitive.
func (g *generator) fold(r rule) (rule, error) {
	base := r.path
	if r.isGlob() {
		base = r.g.base
	}
	if g.caseSensitive(base) {
		return r, nil
	}
	return r.folded()
}

func (g *generator) caseSensitive(p string) bool {
	if v, ok := g.sensitive[p]; ok {
		return v
	}
	f := g.o.CaseSensitive
	if f == nil {
		f = volumeCaseSensitive
	}
	if g.sensitive == nil {
		g.sensitive = map[string]bool{}
	}
	v := f(p)
	g.sensitive[p] = v
	return v
}

// network checks the network part (unix socket paths are resolved by
// unixSockets, once the writable trees are known).
func (g *generator) network() error {
	n := g.pol.Net
	g.p.http, g.p.socks = g.o.HTTPProxyPort, g.o.SOCKSProxyPort
	if g.p.http == 0 && g.p.socks == 0 {
		g.p.http, g.p.socks = n.HTTPProxyPort, n.SOCKSProxyPort
	}
	for _, port := range []int{g.p.http, g.p.socks} {
		if port < 0 || port > 65535 {
			return fmt.Errorf("darwin: proxy port %d is outside 1-65535", port)
		}
	}
	if n.WantsNetwork() && g.p.http == 0 && g.p.socks == 0 {
		return errors.New("darwin: the policy allows network destinations but no proxy port was given: the command would have no route to them")
	}
	if n.AllowLocalBinding {
		if !g.pol.BestEffort {
			return fmt.Errorf("%w: allowLocalBinding: macOS has no network namespace, so letting the command serve on loopback also lets it connect to every loopback service of the host (a local proxy, a database, a debugger port), a route around moat's proxy; run with best effort to accept that", ErrUnexpressible)
		}
		g.p.Notes = append(g.p.Notes, "allowLocalBinding (best effort): the command may listen on loopback and connect to any loopback port of the host, not only its own servers")
	}
	if n.AllowAllUnixSockets {
		g.p.Notes = append(g.p.Notes, "allowAllUnixSockets: every unix socket of the host is reachable (the Docker socket, agents, mDNSResponder's DNS)")
	}
	return nil
}

// unixSockets resolves allowUnixSockets, once the writable trees are
// known, and returns the protections its paths need. A socket path is
// resolved only outside the writable trees, as on Linux
// (internal/planted.ResolveOutsideWritable): a symlink the command made
// inside one is not followed. One that is there already is refused,
// naming where it leads (an earlier run could have planted dev.sock ->
// /var/run/docker.sock, and the profile allowed the Docker socket). And an
// allowed path inside a writable tree is read-only, its directories
// pinned, so that the command cannot put a symlink there during the run:
// Seatbelt may match the address the command gives (the path unresolved),
// not where it leads. (The command cannot serve on it anyway: binding a
// unix socket needs allowAllUnixSockets.) A glob whose base lies in a
// writable tree is a denyWrite for the same reason.
func (g *generator) unixSockets() ([]Protection, error) {
	n := g.pol.Net
	if n.AllowAllUnixSockets {
		return nil, nil
	}
	writable := func(p string) bool {
		_, ok := g.p.j.inRoot(p)
		return ok
	}
	seen := map[string]bool{}
	add := func(kind, v string) {
		if !seen[kind+v] {
			seen[kind+v] = true
			g.unix = append(g.unix, list("remote", "unix-socket", list(kind, user(v))))
		}
	}
	readlink := g.o.Readlink
	if readlink == nil {
		readlink = os.Readlink
	}
	var prot []Protection
	for _, pr := range n.AllowUnixSockets {
		if err := checkString("path", pr.Path); err != nil {
			return nil, err
		}
		if err := policy.CheckPath(pr.Path); err != nil {
			return nil, fmt.Errorf("%s: %w", pr.Source, err)
		}
		glob := pr.Glob && hasMeta(pr.Path)
		way := filepath.Clean(pr.Path)
		if glob {
			way = splitGlob(way).base
		}
		dir, rest, _ := planted.SplitOutsideWritable(way, func(d string) bool {
			f, err := g.res.full(d)
			return err == nil && writable(f)
		}, readlink)
		// What is left as written lies in a writable tree: a symlink there
		// now is refused (also one reached through a link outside the
		// trees, which the walk of the path as written would not see).
		if l := planted.FindLink(filepath.Join(append([]string{dir}, rest...)...), pr.Source, g.insideWritable, g.res.full); l != nil {
			l.Path, l.For = pr.Path, "allow that socket"
			return nil, l
		}
		if glob {
			rs, err := g.res.resolveRules([]policy.PathRule{pr}, false)
			if err != nil {
				return nil, err
			}
			for _, r := range rs {
				if r.isGlob() {
					m, _ := r.g.match()
					add("path-regex", m)
				} else {
					add("path-literal", r.path)
				}
				if g.p.j.intersectsWritable(r) {
					r = r.onlyMatches()
					r.source = pr.Source + " (an allowed socket path in a writable tree is read-only)"
					g.denyWrite = append(g.denyWrite, r)
				}
			}
			continue
		}
		d, err := g.res.full(dir) // no symlink in it: the Mac's root links, if this is not a Mac
		if err != nil {
			return nil, err
		}
		p := filepath.Join(append([]string{d}, rest...)...)
		if err := policy.CheckPath(p); err != nil {
			return nil, fmt.Errorf("%s: %w", pr.Source, err)
		}
		add("path-literal", p)
		if writable(p) {
			prot = append(prot, Protection{Path: p, Why: "allowUnixSockets: " + pr.Source + ": an allowed socket path in a writable tree is never writable (a symlink put there would lead the connection elsewhere)"})
		}
	}
	// The paths as written too: the check may see them unresolved.
	for _, pr := range n.AllowUnixSockets {
		if !pr.Glob || !hasMeta(pr.Path) {
			add("path-literal", pr.Path)
		}
	}
	return prot, nil
}

// insideWritable reports the allowWrite tree that holds n (a path with
// its directories' symlinks resolved) strictly below its top.
func (g *generator) insideWritable(n string) (string, bool) {
	for _, r := range g.writeRoots {
		if !r.isGlob() {
			if n != r.path && within(n, r.path) {
				return r.path, true
			}
			continue
		}
		if m, err := r.g.match(); err == nil && r.covers(n) && !regexp.MustCompile(m).MatchString(n) {
			return r.path, true
		}
	}
	return "", false
}

// files resolves the filesystem rules and the protections.
func (g *generator) files() error {
	fs := g.pol.FS
	denyRead, err := g.res.resolveRules(macDenyRead(g.pol), true)
	if err != nil {
		return err
	}
	allowRead, err := g.res.resolveRules(fs.AllowRead, false)
	if err != nil {
		return err
	}
	for i, r := range denyRead {
		if denyRead[i], err = g.fold(r); err != nil {
			return err
		}
	}
	g.p.denyRead = denyRead
	for _, r := range denyRead {
		g.reads = append(g.reads, readRule{rule: r})
	}
	for _, r := range allowRead {
		g.reads = append(g.reads, readRule{rule: r, allow: true})
	}
	orderReads(g.reads)
	if err := carveTies(g.reads); err != nil {
		return err
	}
	if g.writeRoots, err = g.res.resolveRules(fs.AllowWrite, false); err != nil {
		return err
	}
	if err := g.plantedWriteLinks(); err != nil {
		return err
	}
	g.p.writeRoots = g.writeRoots
	if g.o.TmpDir != "" {
		if g.tmp, err = g.res.resolveRules([]policy.PathRule{{Path: g.o.TmpDir, Source: "the run's private TMPDIR"}}, false); err != nil {
			return err
		}
	}
	if g.o.TTY != "" {
		if err := policy.CheckPath(g.o.TTY); err != nil || !strings.HasPrefix(g.o.TTY, "/dev/") {
			return fmt.Errorf("darwin: terminal %q is not a device path", g.o.TTY)
		}
		g.tty = g.o.TTY
	}
	if g.denyWrite, err = g.res.resolveRules(fs.DenyWrite, true); err != nil {
		return err
	}

	// Protections: the caller's (Survey), moat's own files, the settings
	// files. Kept where the rules would let the command write.
	g.p.j = judge{reads: g.reads, roots: append(append([]rule(nil), g.writeRoots...), g.tmp...)}
	for _, r := range g.p.j.roots {
		if f, err := g.fold(r); err != nil {
			return err
		} else if f.ciRe != nil {
			g.p.j.ciRoots = append(g.p.j.ciRoots, f)
		}
	}
	var prot []Protection
	prot = append(prot, g.o.Protect...)
	sockets, err := g.unixSockets() // may add to denyWrite: the judge takes it after
	if err != nil {
		return err
	}
	prot = append(prot, sockets...)
	for _, p := range g.pol.Protect {
		prot = append(prot, Protection{Path: p, Why: "moat: its own files are never writable"})
	}
	for _, p := range g.pol.Sources {
		if filepath.IsAbs(p) {
			prot = append(prot, Protection{Path: p, Why: "moat: a settings file it read is never writable"})
		}
	}
	for i, r := range g.denyWrite {
		if g.denyWrite[i], err = g.fold(r); err != nil {
			return err
		}
	}
	g.p.j.denyWrite = g.denyWrite
	seen := map[string]bool{}
	for _, pr := range prot {
		if err := checkString("protected path", pr.Path); err != nil {
			return err
		}
		if err := policy.CheckPath(pr.Path); err != nil {
			return fmt.Errorf("darwin: protected path: %w", err)
		}
		sp, err := g.res.spellings(pr.Path, true)
		if err != nil {
			return err
		}
		astray, err := g.leadsAstray(pr.Path)
		if err != nil {
			return err
		}
		for _, p := range sp {
			if seen[p] || astray[p] {
				continue
			}
			seen[p] = true
			if ok, _ := g.p.j.writable(p); !ok && !g.p.j.inRootAnyCase(p) {
				continue // read-only anyway (in any case: a tree spelled in another case holds it too)
			}
			r, err := g.fold(rule{path: p, source: pr.Why})
			if err != nil {
				return err
			}
			g.protect = append(g.protect, r)
			g.p.Protected = append(g.p.Protected, Protection{Path: p, Why: pr.Why})
		}
	}
	sort.Slice(g.protect, func(i, k int) bool { return g.protect[i].path < g.protect[k].path })
	sort.Slice(g.p.Protected, func(i, k int) bool { return g.p.Protected[i].Path < g.p.Protected[k].Path })
	g.p.j.protect = g.protect

	// Pins: what lies above a protected path cannot be renamed or removed
	// (Seatbelt checks the path at the time of each operation: a renamed
	// parent takes the protected path out of its rule), nor made where it
	// is missing (a symlink there would redirect the path).
	writePins := map[string]bool{}
	regexPins := map[string]bool{}
	pinAbove := func(r rule) error {
		base := r.path
		if r.isGlob() {
			base = r.g.base
			if g.p.j.anyWritableBelow(base) {
				writePins[base] = true
			}
			rs, err := r.g.ancestorRegexes()
			if err != nil {
				return err
			}
			frs, err := r.foldedAncestorRegexes()
			if err != nil {
				return err
			}
			for _, x := range append(rs, frs...) {
				regexPins[x] = true
			}
		}
		for _, a := range ancestors(base) {
			if g.p.j.anyWritableBelow(a) {
				writePins[a] = true
			}
		}
		return nil
	}
	for _, r := range append(append([]rule(nil), g.denyWrite...), g.protect...) {
		if err := pinAbove(r); err != nil {
			return err
		}
	}
	// Each writable root that no other writable tree holds (an allowWrite
	// such as ~/out, the run's TMPDIR) is pinned itself: (subpath ROOT)
	// matches ROOT too. An allowWrite root that did not exist yet had no
	// protection inside it to pin it, and the command could make it a
	// symlink (~/out -> ~/Library/LaunchAgents): the next run's allowWrite
	// ~/out resolved there and made it writable (attack pass 76). An
	// existing root is pinned by the mandatory names Survey reserves in
	// it; this holds without them. On Linux the root is a mount point,
	// which cannot be removed or replaced from inside, and a missing one is
	// not made writable: neither is it here. A root inside another writable tree is left as Linux
	// leaves it: a symlink put there is refused by the next run
	// (plantedWriteLinks). A glob's matches are compared after resolution
	// on every access, so a symlink in a match's place leads nowhere new.
	for _, r := range g.p.j.roots {
		if r.isGlob() || r.path == "/" {
			continue
		}
		if _, inside := g.insideWritable(r.path); !inside {
			writePins[r.path] = true
		}
	}
	g.foldPins(writePins, regexPins)
	g.pinsWrite = pinExprs(writePins, regexPins)
	readPins := map[string]bool{}
	readRegexPins := map[string]bool{}
	for _, r := range g.reads {
		if r.allow {
			continue
		}
		base := r.path
		if r.isGlob() {
			base = r.g.base
			readPins[base] = g.p.j.anyWritableBelow(base)
			rs, err := r.g.ancestorRegexes()
			if err != nil {
				return err
			}
			frs, err := r.foldedAncestorRegexes()
			if err != nil {
				return err
			}
			for _, x := range append(rs, frs...) {
				readRegexPins[x] = true
			}
		}
		for _, a := range ancestors(base) {
			if g.p.j.anyWritableBelow(a) && !writePins[a] {
				readPins[a] = true
			}
		}
	}
	for a, ok := range readPins {
		if !ok || writePins[a] {
			delete(readPins, a)
		}
	}
	g.foldPins(readPins, readRegexPins)
	for x := range readRegexPins {
		if regexPins[x] {
			delete(readRegexPins, x)
		}
	}
	g.pinsRead = pinExprs(readPins, readRegexPins)
	return nil
}

// leadsAstray lists the spellings of where protected path p leads through
// a symlink when that must not be protected, as on Linux (linux/plan.go):
// a target that holds a writable root or lies in a git directory. A
// command could plant sub/.vscode -> .. (or sub/.claude -> .git) in one
// run, and the survey of every later run found the name and the profile
// made the whole tree (or git's working state) read-only (found by attack
// pass 54). The symlink itself stays protected. A name the command could
// plant is one it could have made as a directory too: following it gains
// nothing there.
func (g *generator) leadsAstray(p string) (map[string]bool, error) {
	f, err := g.res.full(p)
	if err != nil {
		return nil, err
	}
	n, err := g.res.node(p)
	if err != nil {
		return nil, err
	}
	if f == n {
		return nil, nil
	}
	holds := strings.Contains(f+"/", "/.git/") && !strings.Contains(n+"/", "/.git/")
	for _, r := range append(append([]rule(nil), g.writeRoots...), g.tmp...) {
		base := r.path
		if r.isGlob() {
			base = r.g.base
		}
		holds = holds || within(base, f)
	}
	if !holds {
		return nil, nil
	}
	out := map[string]bool{f: true}
	if a, ok := firmlinkSpelling(f); ok {
		out[a] = true
	}
	return out, nil
}

// foldPins adds to regexes, for each pinned directory in lits on a volume
// not known to be case-sensitive, the regex of that directory in any case:
// renaming .GIT moves .git as well there.
func (g *generator) foldPins(lits, regexes map[string]bool) {
	for a, ok := range lits {
		if !ok || g.caseSensitive(a) {
			continue
		}
		if x := "^" + ciEscape(a) + "$"; x != "^"+escapeRegex(a)+"$" {
			regexes[x] = true
		}
	}
}

// plantedWriteLinks refuses a writable path, as written, that goes
// through a symlink lying inside another writable tree: a command of an
// earlier run could have planted it (work/out -> $HOME), and the next run
// given --write out (or an allowWrite naming it) made wherever it leads
// writable (found by an attack pass). As on Linux (linux/plan.go, the same
// walk: internal/planted), moat refuses it and names where it leads.
func (g *generator) plantedWriteLinks() error {
	for _, r := range g.pol.FS.AllowWrite {
		if r.Glob && hasMeta(r.Path) {
			continue
		}
		if l := planted.FindLink(r.Path, r.Source, g.insideWritable, g.res.full); l != nil {
			return l
		}
	}
	return nil
}

// macDenyRead is the policy's denyRead, with macOS's own credential stores
// (policy.MacSecretPaths) wherever it denies the default secrets.
func macDenyRead(pol *policy.Policy) []policy.PathRule {
	out := pol.FS.DenyRead
	if !filepath.IsAbs(pol.Home) || !slices.ContainsFunc(out, func(r policy.PathRule) bool { return r.Source == policy.DefaultSecretsSource }) {
		return out
	}
	out = slices.Clone(out)
	for _, p := range policy.MacSecretPaths {
		out = append(out, policy.PathRule{Path: filepath.Join(pol.Home, p), Source: policy.DefaultSecretsSource + " (macOS)"})
	}
	return out
}

func pinExprs(lits, regexes map[string]bool) []expr {
	var ls, rs []string
	for p := range lits {
		ls = append(ls, p)
	}
	for r := range regexes {
		rs = append(rs, r)
	}
	sort.Strings(ls)
	sort.Strings(rs)
	var out []expr
	for _, p := range ls {
		out = append(out, list("literal", user(p)))
	}
	for _, r := range rs {
		out = append(out, list("regex", user(r)))
	}
	return out
}

// entry is one rule of the profile: (ACTION OPS... FILTERS...), with a
// comment above it and a note after each filter.
type entry struct {
	section string // a heading comment before the rule
	comment string
	action  string // "allow" or "deny"; "" for (version 1)
	ops     []string
	filters []expr
	notes   []string
}

func (g *generator) entries() []entry {
	var es []entry
	add := func(e entry) { es = append(es, e) }
	one := func(section, comment, action string, ops []string, filters ...expr) {
		add(entry{section: section, comment: comment, action: action, ops: ops, filters: filters})
	}
	many := func(section, comment, action string, ops []string, filters []expr, notes []string) {
		if len(filters) == 0 {
			return // a rule without a filter would match everything
		}
		add(entry{section: section, comment: comment, action: action, ops: ops, filters: filters, notes: notes})
	}
	pol := g.pol

	one("processes", "", "allow", []string{"process-exec"})
	one("", "", "allow", []string{"process-fork"})
	one("", "only the sandbox's own processes", "allow", []string{"process-info*"}, list("target", "same-sandbox"))
	one("", "", "allow", []string{"signal"}, list("target", "same-sandbox"))

	var sys []expr
	for _, n := range sysctlNames {
		sys = append(sys, list("sysctl-name", lit(n)))
	}
	for _, n := range sysctlPrefixes {
		sys = append(sys, list("sysctl-name-prefix", lit(n)))
	}
	many("system information and services", "", "allow", []string{"sysctl-read"}, sys, nil)
	sys = nil
	for _, n := range sysctlWrites {
		sys = append(sys, list("sysctl-name", lit(n)))
	}
	many("", "V8 sets it on Apple silicon", "allow", []string{"sysctl-write"}, sys, nil)
	sys = nil
	var why []string
	for _, s := range machServices {
		sys = append(sys, list("global-name", lit(s.name)))
		why = append(why, s.why)
	}
	many("", "", "allow", []string{"mach-lookup"}, sys, why)
	one("", "POSIX semaphores and shared memory (python's multiprocessing, notify(3))", "allow", []string{"ipc-posix-sem"})
	one("", "", "allow", []string{"ipc-posix-shm"})
	one("", "Security.framework and CoreFoundation read their preference domains", "allow", []string{"user-preference-read"})
	one("", "socket(AF_UNIX) and socketpair: connect and bind are checked by path below", "allow", []string{"system-socket"}, list("socket-domain", "AF_UNIX"))

	// Reads.
	one("reading: everywhere but denyRead, the most specific rule deciding (allowRead wins a tie)", "", "allow", []string{"file-read*", "file-map-executable"})
	for _, r := range g.reads {
		act := "deny"
		what := "denyRead"
		if r.allow {
			act, what = "allow", "allowRead"
		}
		one("", what+": "+r.source, act, []string{"file-read*"}, r.filter())
	}
	one("", "/dev: only the harmless devices (not the host's terminals)", "deny", []string{"file-read*"}, list("subpath", lit("/dev")))
	var dev []expr
	for _, d := range devRead {
		dev = append(dev, list("literal", lit(d)))
	}
	dev = append(dev, list("subpath", lit(devFD)))
	if g.tty != "" {
		dev = append(dev, list("literal", lit("/dev/tty")), list("literal", user(g.tty)))
	}
	many("", "", "allow", []string{"file-read*"}, dev, nil)
	if len(g.reads) > 0 {
		one("", "stat(2) on directories, so realpath(3) can walk through a denied one (listing it stays denied)", "allow", []string{"file-read-metadata"}, list("vnode-type", "DIRECTORY"))
	}

	// Writes.
	var roots []expr
	var rootNotes []string
	for _, r := range g.writeRoots {
		roots = append(roots, r.filter())
		rootNotes = append(rootNotes, "allowWrite: "+r.source)
	}
	for _, r := range g.tmp {
		roots = append(roots, r.filter())
		rootNotes = append(rootNotes, r.source)
	}
	many("writing: only the writable trees, minus denyWrite, the protections and what is unreadable", "", "allow", []string{"file-write*"}, roots, rootNotes)
	dev = nil
	for _, d := range devWrite {
		dev = append(dev, list("literal", lit(d)))
	}
	dev = append(dev, list("subpath", lit(devFD)))
	if g.tty != "" {
		dev = append(dev, list("literal", lit("/dev/tty")), list("literal", user(g.tty)))
	}
	many("", "", "allow", []string{"file-write*"}, dev, nil)
	allowed := append(append([]expr(nil), roots...), dev...)
	// What is unreadable is unwritable: the read rules again, in the same
	// order, for writes (an allowRead re-allows writing only where a
	// writable tree does).
	for _, r := range g.reads {
		if !g.p.j.intersectsWritable(r.rule) {
			continue
		}
		if r.allow {
			one("", "allowRead: "+r.source, "allow", []string{"file-write*"}, list("require-all", r.filter(), list(append([]any{"require-any"}, exprsAny(allowed)...)...)))
			continue
		}
		one("", "denyRead: "+r.source, "deny", []string{"file-write*"}, r.filter())
	}
	var dw []expr
	var dwNotes []string
	for _, r := range g.denyWrite {
		dw = append(dw, r.filter())
		dwNotes = append(dwNotes, "denyWrite: "+r.source)
	}
	many("", "", "deny", []string{"file-write*"}, dw, dwNotes)
	var pr []expr
	var prNotes []string
	for _, r := range g.protect {
		pr = append(pr, r.filter())
		prNotes = append(prNotes, r.source)
	}
	many("", "protections: files that would let a command run code outside the sandbox later", "deny", []string{"file-write*"}, pr, prNotes)
	many("", "above a protected or denyWrite path, and each outermost writable root itself: no rename, no removal, no creation", "deny", []string{"file-write-unlink", "file-write-create"}, g.pinsWrite, nil)
	many("", "above a denyRead path: no rename (it would carry the path out of its rule)", "deny", []string{"file-write-unlink"}, g.pinsRead, nil)
	// Last among the write rules, so that both readings of precedence
	// agree: no file flags anywhere (a command that set UF_IMMUTABLE or
	// UF_APPEND, chflags uchg, which any owner may, on what it planted in a
	// writable tree kept the git audit from moving it out after the run);
	// no set-user-ID or set-group-ID bit anywhere (a set-id file left in a
	// writable tree runs as its owner for whoever runs it; Linux refuses
	// those modes too).
	one("", "no file flags (chflags uchg would keep the git audit from taking a plant out), no set-id bits", "deny", []string{"file-write-flags", "file-write-setugid"})

	dev = nil
	for _, d := range devIoctl {
		dev = append(dev, list("literal", lit(d)))
	}
	if g.tty != "" {
		dev = append(dev, list("literal", lit("/dev/tty")), list("literal", user(g.tty)))
	}
	many("devices", "", "allow", []string{"file-ioctl"}, dev, nil)

	// Network.
	var out []expr
	var outNotes []string
	for _, pp := range []struct {
		port int
		what string
	}{{g.p.http, "HTTP"}, {g.p.socks, "SOCKS5"}} {
		if pp.port != 0 {
			// TCP over IPv4 alone: the proxy listens on 127.0.0.1 (moat's
			// listeners, and the external proxy's address the command is
			// given). (remote ip ...) also let UDP through to that port
			// number, and TCP to [::1]: whatever else of the host listens
			// there, a route around the proxy.
			out = append(out, list("remote", "tcp4", lit("localhost:"+strconv.Itoa(pp.port))))
			outNotes = append(outNotes, "moat's proxy ("+pp.what+")")
		}
	}
	many("network: only moat's proxy on the host's loopback; no DNS", "", "allow", []string{"network-outbound"}, out, outNotes)
	if pol.Net.AllowLocalBinding {
		one("", "allowLocalBinding: servers on loopback", "allow", []string{"network-bind", "network-inbound"}, list("local", "ip", lit("localhost:*")))
		one("", "", "allow", []string{"network-outbound"}, list("remote", "ip", lit("localhost:*")))
	}
	if pol.Net.AllowAllUnixSockets {
		one("", "allowAllUnixSockets", "allow", []string{"network-bind"}, list("local", "unix-socket", list("path-regex", lit("^/.*$"))))
		one("", "", "allow", []string{"network-outbound"}, list("remote", "unix-socket", list("path-regex", lit("^/.*$"))))
	} else {
		many("", "allowUnixSockets", "allow", []string{"network-outbound"}, g.unix, nil)
	}
	return es
}

func exprsAny(es []expr) []any {
	out := make([]any, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// merge joins adjacent rules with the same action and operations (their
// order among themselves does not matter), each comment kept as the note
// of its filters.
func merge(es []entry) []entry {
	var out []entry
	for _, e := range es {
		if len(e.filters) > 0 && len(e.notes) == 0 && e.comment != "" {
			e.notes = make([]string, len(e.filters))
			for i := range e.notes {
				e.notes[i] = e.comment
			}
			e.comment = ""
		}
		if n := len(out); n > 0 && e.section == "" && len(e.filters) > 0 && len(out[n-1].filters) > 0 &&
			out[n-1].action == e.action && strings.Join(out[n-1].ops, " ") == strings.Join(e.ops, " ") {
			last := &out[n-1]
			for len(last.notes) < len(last.filters) {
				last.notes = append(last.notes, "")
			}
			last.filters = append(last.filters, e.filters...)
			for len(e.notes) < len(e.filters) {
				e.notes = append(e.notes, "")
			}
			last.notes = append(last.notes, e.notes...)
			continue
		}
		out = append(out, e)
	}
	return out
}

// render writes the profile. With params nil, user strings are inline.
// A filter that holds a parameter gets its value in a comment.
func render(es []entry, tag string, params *paramSet) string {
	var body strings.Builder
	body.WriteString("(version 1)\n")
	body.WriteString(`(deny default (with message ` + quote(tag) + "))\n")
	for _, e := range es {
		if e.section != "" {
			body.WriteString("\n;; " + comment(e.section) + "\n")
		}
		if e.comment != "" {
			body.WriteString("; " + comment(e.comment) + "\n")
		}
		body.WriteString("(" + e.action + " " + strings.Join(e.ops, " "))
		var lines, notes []string
		for i, f := range e.filters {
			var b strings.Builder
			f.render(&b, params)
			lines = append(lines, b.String())
			var note []string
			if params != nil {
				for _, v := range userStrings(f) {
					note = append(note, displayValue(v))
				}
			}
			if i < len(e.notes) && e.notes[i] != "" {
				note = append(note, e.notes[i])
			}
			notes = append(notes, strings.Join(note, "  "))
		}
		if e.action == "deny" {
			lines = append(lines, `(with message `+quote(tag)+`)`)
			notes = append(notes, "")
		}
		multi := len(e.filters) > 1
		for _, n := range notes {
			multi = multi || n != ""
		}
		if !multi {
			for _, l := range lines {
				body.WriteString(" " + l)
			}
			body.WriteString(")\n")
			continue
		}
		for i, l := range lines {
			body.WriteString("\n  " + l)
			if notes[i] != "" {
				body.WriteString(" ; " + comment(notes[i]))
			}
		}
		if notes[len(notes)-1] != "" {
			body.WriteString("\n")
		}
		body.WriteString(")\n")
	}
	var head strings.Builder
	head.WriteString(";; moat Seatbelt profile (generated from the policy; do not edit)\n")
	head.WriteString(";; run tag: " + tag + " (every denial carries it; the log reader matches it)\n")
	if params != nil && len(params.order) > 0 {
		head.WriteString(";; " + strconv.Itoa(len(params.order)) + " parameters, given as sandbox-exec -D NAME=VALUE (each value is shown where it is used)\n")
	}
	return head.String() + body.String()
}

// userStrings lists the policy strings in e.
func userStrings(e expr) []string {
	if e.isStr && e.user {
		return []string{e.str}
	}
	var out []string
	for _, x := range e.list {
		out = append(out, userStrings(x)...)
	}
	return out
}

// displayValue shows a parameter in a comment: as it is when that is
// unambiguous, quoted otherwise.
func displayValue(v string) string {
	for _, r := range v {
		if r < 0x20 || r == 0x7f || r == ' ' || r > 0x7e {
			return strconv.Quote(v)
		}
	}
	if v == "" {
		return `""`
	}
	return v
}
