package settings

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// rank orders the sources for the rule that no weaker file undoes a
// stronger one's denyRead: managed, then the user's own (--settings, the
// user's files), then the repository's.
func rank(l Level) int {
	switch l {
	case LevelManaged:
		return 0
	case LevelLocalProject, LevelProject:
		return 2
	}
	return 1
}

func isProject(l Level) bool { return l == LevelProject || l == LevelLocalProject }

// ruleField is the field part of a rule's Source ("file: field").
func ruleField(r policy.PathRule) string {
	if i := strings.LastIndex(r.Source, ": "); i >= 0 {
		return r.Source[i+2:]
	}
	return r.Source
}

// denier names who hides a denyRead rule's path, for a message.
func denier(r policy.PathRule) string {
	if r.Source == policy.DefaultSecretsSource {
		return "moat's list of default secrets"
	}
	return "the deny rule " + r.Source
}

// readGuard checks the allowRead rules of the layers against the denyRead
// rules they might undo (found by an attack pass: a repository's
// .claude/settings.json with allowRead ["~/.ssh"], or
// Read(~/.ssh/**) in permissions.allow, made the private key readable,
// and a project's Read(~/secrets/**) undid a managed deny; the sandbox
// lets the more specific rule decide, and allowRead wins a tie).
type readGuard struct {
	*reach
	homes   []string // whose default secrets a weaker file may not re-allow
	runDirs []string // the user's runtime directories, likewise
	ls      []*layer
	dropped func(*layer) bool // allowRead the merge drops (allowManagedReadPathsOnly)

	denyForms map[*policy.PathRule][]pathForm
}

func (g *readGuard) formsOfDeny(r *policy.PathRule) []pathForm {
	if f, ok := g.denyForms[r]; ok {
		return f
	}
	f, _ := g.forms(*r, false) // (without expansion there is no error)
	g.denyForms[r] = f
	return f
}

// inside reports whether some form of the allow rule lies in (or is) what
// a form of the deny rule names, and returns the allow form.
func inside(allow, deny []pathForm) (pathForm, pathForm, bool) {
	for _, a := range allow {
		for _, d := range deny {
			if ancestorOrSelf(d.comps, a.comps) {
				return a, d, true
			}
		}
	}
	return pathForm{}, pathForm{}, false
}

// above reports whether some form of the allow rule holds the folder a
// form of the deny rule lies in (the deny's path, for a rule without a
// glob).
func above(allow, deny []pathForm) (pathForm, pathForm, bool) {
	for _, a := range allow {
		for _, d := range deny {
			if ancestorOrSelf(a.comps, literalRoot(d.comps)) {
				return a, d, true
			}
		}
	}
	return pathForm{}, pathForm{}, false
}

// check returns the first allowRead rule that undoes a denyRead rule it
// may not, as an *Error naming both.
//
// A project's file (.claude/settings.json, settings.local.json) may not
// name a path that lies inside, is, or holds a path that any denyRead
// hides (a default secret, or any other file's rule; of its own, one it
// lies inside or is): a repository has no business with them.
// Read(src/**) of a project that meets no deny stays accepted.
//
// Across the other files, a weaker one may not re-allow what a stronger
// one denies (managed > --settings and the user's files > the project's):
// an allowRead that lies inside (or is) a stronger file's denyRead is
// refused. The user's own files may re-allow a default secret.
func (g *readGuard) check() error {
	g.denyForms = map[*policy.PathRule][]pathForm{}
	defaults := policy.DefaultDenyReadWith(g.homes, g.runDirs)
	for _, w := range g.ls {
		if g.dropped(w) {
			continue
		}
		for _, a := range w.allowRead {
			var af []pathForm
			allowForms := func() ([]pathForm, error) {
				if af != nil {
					return af, nil
				}
				var err error
				af, err = g.forms(a, true)
				if err != nil {
					return nil, &Error{File: w.file, Field: ruleField(a), Reason: fmt.Sprintf("moat cannot tell whether %s re-allows a path a deny rule hides: %v", a.Path, err)}
				}
				return af, nil
			}
			if isProject(w.level) {
				type deny struct {
					r   *policy.PathRule
					own bool // the file's own
				}
				var denies []deny
				for i := range defaults {
					denies = append(denies, deny{r: &defaults[i]})
				}
				for _, l := range g.ls {
					for i := range l.denyRead {
						denies = append(denies, deny{r: &l.denyRead[i], own: l == w})
					}
				}
				for _, dn := range denies {
					d := dn.r
					af, err := allowForms()
					if err != nil {
						return err
					}
					df := g.formsOfDeny(d)
					how := ""
					if fa, fd, ok := inside(af, df); ok {
						how = fmt.Sprintf("%s is within %s, which %s hides%s%s", a.Path, d.Path, denier(*d), viaNote(fa), viaNote(fd))
					} else if fa, fd, ok := above(af, df); ok && !dn.own {
						// (A deny of the file's own below its allow is
						// the more specific rule: it decides.)
						how = fmt.Sprintf("%s holds %s, which %s hides%s%s", a.Path, d.Path, denier(*d), viaNote(fa), viaNote(fd))
					}
					if how == "" {
						continue
					}
					fix := "remove the entry, or set it in your own settings (~/.claude/settings.json) or pass --settings"
					if managedRule(g.ls, d) {
						fix = "remove the entry (no other settings file undoes a managed deny)"
					}
					return &Error{File: w.file, Field: ruleField(a), Reason: fmt.Sprintf("a project's settings may not make readable what a deny rule or a default secret hides: %s; %s", how, fix)}
				}
			}
			for _, s := range g.ls {
				if rank(s.level) >= rank(w.level) {
					continue
				}
				for i := range s.denyRead {
					d := &s.denyRead[i]
					af, err := allowForms()
					if err != nil {
						return err
					}
					if fa, fd, ok := inside(af, g.formsOfDeny(d)); ok {
						return &Error{File: w.file, Field: ruleField(a), Reason: fmt.Sprintf("re-allows reading %s, which the %s settings deny (%s, by %s)%s%s: a weaker settings file may not undo a stronger one's deny rule; remove the entry", a.Path, s.level, d.Path, d.Source, viaNote(fa), viaNote(fd))}
					}
				}
			}
		}
	}
	return nil
}

// managedRule reports whether r is one of the managed layers' denyRead.
func managedRule(ls []*layer, r *policy.PathRule) bool {
	for _, l := range ls {
		for i := range l.denyRead {
			if l.level == LevelManaged && &l.denyRead[i] == r {
				return true
			}
		}
	}
	return false
}

// externalProxyWhy is what httpProxyPort / socksProxyPort do to moat's
// filtering (runtime/proxy.go relays to the external proxy as is).
const externalProxyWhy = "moat then relays every connection to that port of the host's loopback as is, and its own domain filtering stops: the command reaches whatever listens there"

func networkField(l *layer, key string) string {
	if l.format == FormatSRT {
		return "network." + key
	}
	return "sandbox.network." + key
}

// checkExternalProxy refuses an external proxy named below managed
// settings that filter the network themselves (network lists, or
// allowManagedDomainsOnly): it would turn their filtering off (found by an
// attack pass: a project's httpProxyPort reached a service on the host's
// 127.0.0.1 under managed allowManagedDomainsOnly, allowedDomains and
// deniedDomains).
func checkExternalProxy(ls []*layer) error {
	why, file := "", ""
	for _, l := range ls { // strongest first: the one that decides
		if l.level == LevelManaged && l.managedDomainsOnly != nil {
			if *l.managedDomainsOnly {
				why, file = "set allowManagedDomainsOnly", l.file
			}
			break
		}
	}
	for _, l := range ls {
		if why == "" && l.level == LevelManaged && (len(l.allowedDomains) > 0 || len(l.deniedDomains) > 0) {
			why, file = "set network lists (allowedDomains, deniedDomains or WebFetch(domain:...) rules)", l.file
		}
	}
	if why == "" {
		return nil
	}
	for _, l := range ls {
		if l.level == LevelManaged {
			continue
		}
		for _, port := range []struct {
			key string
			v   *int
		}{{"httpProxyPort", l.httpPort}, {"socksProxyPort", l.socksPort}} {
			if port.v != nil {
				return &Error{File: l.file, Field: networkField(l, port.key), Reason: fmt.Sprintf("the managed settings (%s) %s, and an external proxy would turn that filtering off: moat relays every connection to 127.0.0.1:%d as is, and the command reaches whatever listens there; only managed settings may name one here", file, why, *port.v)}
			}
		}
	}
	return nil
}

// externalProxyNote says, where the policy relays to an external proxy
// and has network lists too, that the lists are that proxy's to enforce
// (moat does not apply them); "" otherwise.
func externalProxyNote(ls []*layer, p *policy.Policy) string {
	n := p.Net
	if n.HTTPProxyPort == 0 && n.SOCKSProxyPort == 0 {
		return ""
	}
	var lists []string
	for _, x := range []struct {
		name string
		n    int
	}{{"allowedDomains", len(n.AllowedDomains)}, {"deniedDomains", len(n.DeniedDomains)}, {"deniedResolvedAddresses", len(n.DeniedResolvedAddresses)}} {
		if x.n > 0 {
			lists = append(lists, fmt.Sprintf("%s (%d)", x.name, x.n))
		}
	}
	if len(lists) == 0 {
		return ""
	}
	var by []string
	for _, l := range ls {
		for _, port := range []struct {
			key string
			v   *int
		}{{"httpProxyPort", l.httpPort}, {"socksProxyPort", l.socksPort}} {
			if port.v != nil {
				by = append(by, fmt.Sprintf("%s: %s %d", l.file, networkField(l, port.key), *port.v))
			}
		}
	}
	var to []string
	for _, port := range []int{n.HTTPProxyPort, n.SOCKSProxyPort} {
		if a := fmt.Sprintf("127.0.0.1:%d", port); port != 0 && !slices.Contains(to, a) {
			to = append(to, a)
		}
	}
	return fmt.Sprintf("network: an external proxy is set (%s): moat relays every connection to %s as is, so the lists %s are that proxy's to enforce, not moat's", strings.Join(by, "; "), strings.Join(to, " and "), strings.Join(lists, ", "))
}

// checkProjectWrites refuses what a project's file makes writable outside
// the project, the directory that holds its .claude (found by an attack
// pass: a repository's Edit(//etc/profile.d/**) allow made /etc/profile.d
// writable; the implicit rule's check of system directories,
// checkImplicitCwd, never saw explicit rules). allowWrite entries, Edit
// (Write, MultiEdit, NotebookEdit) allow rules and additionalDirectories
// are judged as the sandbox will resolve them: as written, through the
// repository's symbolic links (out -> /etc) and as a glob's matches.
func (x *reach) checkProjectWrites(l *layer) error {
	if len(l.allowWrite) == 0 && len(l.addDirs) == 0 {
		return nil
	}
	proj := filepath.Dir(filepath.Dir(l.file))
	cproj := canonicalPath(proj)
	for _, list := range [][]policy.PathRule{l.allowWrite, l.addDirs} {
		for _, r := range list {
			fs, err := x.forms(r, true)
			if err != nil {
				return &Error{File: l.file, Field: ruleField(r), Reason: fmt.Sprintf("moat cannot tell whether %s lies in the project: %v", r.Path, err)}
			}
			for _, f := range fs {
				base := proj
				if f.via != "" {
					base = cproj
				}
				if !within(joinComps(literalRoot(f.comps)), base) {
					return &Error{File: l.file, Field: ruleField(r), Reason: fmt.Sprintf("a project's settings may not make writable what lies outside the project %s: %s%s; set it in your own settings (~/.claude/settings.json) or pass --settings", proj, r.Path, viaNote(f))}
				}
			}
		}
	}
	return nil
}
