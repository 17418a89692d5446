package permissions

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/validators"
)

// Request is one command to decide.
type Request struct {
	// Command is the shell command line as the agent wrote it.
	Command string
	// Cwd is the absolute working directory. If empty or relative, no
	// relative path can be checked, and commands that name one ask.
	Cwd string
	// Mode is the permission mode. If empty, the settings' default mode,
	// else "default".
	Mode string
	// AdditionalDirs are more directories commands may use, on top of the
	// settings' additionalDirectories. Relative ones are taken from Cwd.
	AdditionalDirs []string
	// DangerouslyDisableSandbox is the agent's request to run the command
	// outside the sandbox (Options.Sandbox decides whether it counts).
	DangerouslyDisableSandbox bool
}

// Result is the decision with what a host shows along with it.
type Result struct {
	Decision policy.Decision
	// ReadOnly: every part of the command only reads, searches or lists.
	ReadOnly bool
	// Warnings are notes for the prompt (destructive commands). Never nil.
	Warnings []string
	// Suggestion is a rule the host may offer ("Bash(npm run:*)"), or "".
	Suggestion string
	// SedEdit is set for "sed -i 's/old/new/' FILE".
	SedEdit *SedEdit
	// Kind is the display kind: search, read, list, silent or none.
	Kind string
	// Sandbox says whether the command would run in the sandbox, when
	// the engine has the sandbox switches (Options.Sandbox); else nil.
	Sandbox *SandboxInfo
}

// Options configure an Engine. The zero value works.
type Options struct {
	// Classifier is consulted when no rule decides. If nil, there is none.
	Classifier Classifier
	// Validate replaces the security validator chain (for tests). If nil,
	// validators.Analyze.
	Validate func(cmd string) policy.Decision
	// FollowSymlinks makes the path constraints follow symbolic links on
	// disk (ResolveOnDisk) and hold for both the path as written and the
	// path it leads to, so a link inside the working directory cannot lead
	// a read or a write outside it. If false, the checks are lexical only
	// (the sandbox still enforces the real paths).
	FollowSymlinks bool
	// Within, if set, runs each decision (its file-system lookups: the
	// symbolic links FollowSymlinks follows) with the credentials of the
	// user it is for: moatd decides for a client as the client, or a
	// client learnt where a link led in a place only root may look
	// (another user's /proc/PID/cwd, a root-only directory; found by an
	// attack pass). If nil, as this process.
	Within func(func()) error
	// Sandbox are Claude Code's sandbox switches (policy.Switches):
	// enabled, autoAllowBashIfSandboxed, excludedCommands,
	// allowUnsandboxedCommands. If nil, decisions ignore them.
	Sandbox *policy.Switches
}

// Engine decides commands against one set of rules. It is safe for
// concurrent use.
type Engine struct {
	rules    ruleSet
	mode     string
	noBypass bool // permissions.disableBypassPermissionsMode
	addDirs  []string
	opts     Options
	excluded []*Rule // sandbox.excludedCommands
}

// New compiles the permission rules. A malformed rule is an error naming
// it; rules for other tools are checked and otherwise ignored.
func New(perms policy.Permissions, opts Options) (*Engine, error) {
	e := &Engine{opts: opts}
	if err := e.add(perms); err != nil {
		return nil, err
	}
	if opts.Sandbox != nil {
		var err error
		if e.excluded, err = compileExcluded(opts.Sandbox.ExcludedCommands); err != nil {
			return nil, err
		}
	}
	e.noBypass = perms.DisableBypass
	if perms.DefaultMode != "" {
		if err := perms.CheckMode(perms.DefaultMode); err != nil {
			return nil, fmt.Errorf("permissions.defaultMode: %w", err)
		}
		e.mode = perms.DefaultMode
	}
	return e, nil
}

// CheckMode is the error for a mode a request asks for (unknown, or
// bypassPermissions where the settings disable it), nil if it may be used.
func (e *Engine) CheckMode(m string) error {
	return policy.Permissions{DisableBypass: e.noBypass}.CheckMode(m)
}

func (e *Engine) add(perms policy.Permissions) error {
	for _, l := range []struct {
		name  string
		rules []policy.Rule
	}{{listDeny, perms.Deny}, {listAsk, perms.Ask}, {listAllow, perms.Allow}} {
		for _, r := range l.rules {
			if err := e.rules.add(l.name, r); err != nil {
				return err
			}
		}
	}
	for _, d := range perms.AdditionalDirectories {
		e.addDirs = append(e.addDirs, d.Path)
	}
	return nil
}

// With returns an engine with more rules on top of e's (for a request that
// brings its own). e is not changed.
func (e *Engine) With(extra policy.Permissions) (*Engine, error) {
	n := *e
	n.rules.allow = append([]*Rule(nil), e.rules.allow...)
	n.rules.ask = append([]*Rule(nil), e.rules.ask...)
	n.rules.deny = append([]*Rule(nil), e.rules.deny...)
	n.addDirs = append([]string(nil), e.addDirs...)
	if err := n.add(extra); err != nil {
		return nil, err
	}
	n.noBypass = n.noBypass || extra.DisableBypass
	if extra.DefaultMode != "" {
		if err := n.CheckMode(extra.DefaultMode); err != nil {
			return nil, fmt.Errorf("permissions.defaultMode: %w", err)
		}
		n.mode = extra.DefaultMode
	}
	return &n, nil
}

// Limits on what is analysed.
const (
	// MaxAnalysedBytes: longer command lines are never allowed by rules or
	// tables (deny rules are still checked). It is the validators' limit:
	// bash -c cannot receive a longer argument anyway.
	MaxAnalysedBytes = validators.MaxCommandBytes
	// MaxParsedBytes: longer command lines are not even parsed for deny
	// rules; they ask (in bypassPermissions too, when deny rules exist).
	MaxParsedBytes = 1 << 20
)

// Decide decides one command. See the package documentation for the order
// of the steps.
func (e *Engine) Decide(req Request) Result {
	return e.DecideContext(context.Background(), req)
}

// step is the state of one decision.
type step struct {
	e     *Engine
	req   Request
	mode  string
	cwd   string
	dirs  dirSet
	links *resolver // nil: lexical path checks only
	parts []part
	an    []analysis // per part, on the strictly stripped words
	pr    validators.ParseResult
	x     extraction
	res   Result

	sb     *SandboxInfo // sandbox(), once
	sbDone bool

	// Backing arrays, so that a decision does not allocate each slice on
	// its own: dirsBuf for the usual one or two directories, and the
	// arrays behind the parts, their argv and their analyses, which
	// unlike the rest of the step are kept when the step goes back to the
	// pool (nothing of a Result refers to them).
	dirsBuf  [2]string
	partsBuf []part
	argvBuf  []string
	anBuf    []analysis
}

// recycle empties s for the pool, keeping its arrays unless they grew
// large.
func (s *step) recycle() {
	parts, argv, an := s.partsBuf[:0], s.argvBuf[:0], s.anBuf[:0]
	*s = step{}
	if cap(parts) <= maxPooledParts && cap(an) <= maxPooledParts && cap(argv) <= maxPooledArgv {
		s.partsBuf, s.argvBuf, s.anBuf = parts, argv, an
	}
}

func ask(reason string) policy.Decision {
	return policy.Decision{Verdict: policy.Ask, Reason: reason}
}

// DecideContext is Decide with a context for the classifier.
func (e *Engine) DecideContext(ctx context.Context, req Request) Result {
	if e.opts.Within != nil {
		var res Result
		ran := false
		err := e.opts.Within(func() { res, ran = e.decideHere(ctx, req), true })
		if err != nil || !ran {
			return Result{Decision: ask(fmt.Sprintf("moat could not decide as the user the command is for: %v", err)), Warnings: []string{}}
		}
		return res
	}
	return e.decideHere(ctx, req)
}

// decideHere is DecideContext with this thread's credentials.
func (e *Engine) decideHere(ctx context.Context, req Request) Result {
	s := stepPool.Get().(*step) // zero but for its arrays: new, or recycled
	s.e, s.req = e, req
	s.res.Kind, s.res.Warnings = KindNone, []string{}
	s.res.Decision = s.decide(ctx)
	if s.res.Decision.Verdict != policy.Ask {
		s.res.Suggestion = ""
	}
	s.res.Sandbox = s.sandbox()
	res := s.res
	// Nothing in res points into s (its slices and their arrays stay
	// with the step), so s can serve the next decision.
	s.recycle()
	stepPool.Put(s)
	return res
}

// Bounds of the arrays a pooled step keeps.
const (
	maxPooledArgv  = 1 << 10
	maxPooledParts = 64
)

// stepPool holds the decisions' state between decisions: a step and its
// arrays are one sizeable object.
var stepPool = sync.Pool{New: func() any { return new(step) }}

func (s *step) decide(ctx context.Context) policy.Decision {
	e, req := s.e, s.req
	s.mode = req.Mode
	if s.mode == "" {
		s.mode = e.mode
	}
	if s.mode == "" {
		s.mode = "default"
	}
	if err := e.CheckMode(s.mode); err != nil {
		return ask(err.Error()) // a caller that did not check the mode first
	}
	s.setDirs()
	cmd := req.Command
	if len(cmd) > MaxParsedBytes {
		if len(e.rules.deny) > 0 || s.mode != "bypassPermissions" {
			return ask(fmt.Sprintf("the command is too long to check (%d bytes)", len(cmd)))
		}
		return policy.Decision{Verdict: policy.Allow, Reason: "bypassPermissions mode"}
	}
	analysed := len(cmd) <= MaxAnalysedBytes
	needX := len(e.rules.deny) > 0 || len(e.rules.ask) > 0
	var verdict policy.Decision // the validators' answer
	if analysed {
		// One parse and one run of the validator chain.
		s.pr, verdict = validators.CheckParse(cmd)
		if e.opts.Validate != nil {
			verdict = e.opts.Validate(cmd)
		}
		if s.pr.Kind == validators.Simple {
			cmds := s.pr.Commands
			if cap(s.partsBuf) < len(cmds) {
				s.partsBuf = make([]part, len(cmds), max(len(cmds), 4))
			}
			s.parts = s.partsBuf[:len(cmds)] // each is overwritten below
			// The parts' argv share one allocation.
			n := 0
			for i := range cmds {
				n += len(cmds[i].Args)
			}
			if cap(s.argvBuf) < n {
				s.argvBuf = make([]string, n)
			}
			argvs := s.argvBuf[:n]
			for i := range cmds {
				k := len(cmds[i].Args)
				s.parts[i] = fromSimple(&cmds[i], argvs[:k:k])
				argvs = argvs[k:]
			}
		}
	}
	// 0. What can the command run? (deny and ask rules, warnings)
	switch {
	case s.pr.Kind == validators.Simple && s.allPlain():
		s.x.extractParts(s.parts)
	case analysed && s.pr.Kind == validators.Unavailable:
		// The parser and bash may not read this alike: what it finds is
		// no proof of what bash would run.
		s.x.fail("the command cannot be read the way bash reads it (" + s.pr.Reason + ")")
		if needX {
			s.x.extractSource(cmd, 0) // still deny what can be seen
		}
	case needX || analysed:
		s.x.extractSource(cmd, 0)
	}
	s.x.checkAliases(cmd)
	s.res.Warnings = warnings(s.x.cands, cmd)
	s.analyzeParts()

	// 1. Deny rules: any candidate of any part.
	if d, ok := s.matchRules(e.rules.deny, policy.Deny); ok {
		return d
	}
	// 2. Modes.
	switch s.mode {
	case "plan":
		if !s.res.ReadOnly {
			why := s.notReadOnlyReason()
			return policy.Decision{Verdict: policy.Deny, Reason: "plan mode allows only read-only commands: " + why}
		}
	case "bypassPermissions":
		if len(e.rules.deny) > 0 && s.x.incomplete != "" {
			return ask("bypassPermissions mode, but the deny rules cannot be checked: " + s.x.incomplete)
		}
		return policy.Decision{Verdict: policy.Allow, Reason: "bypassPermissions mode"}
	}
	// 3. Ask rules.
	if d, ok := s.matchRules(e.rules.ask, policy.Ask); ok {
		return d
	}
	if s.x.incomplete != "" && needX {
		return ask("the deny and ask rules cannot be checked: " + s.x.incomplete)
	}
	// 3b. autoAllowBashIfSandboxed: no rule denied or asked, and the
	// command runs in the sandbox.
	if d, ok := s.autoAllowed(); ok {
		return d
	}
	if !analysed {
		return ask(fmt.Sprintf("the command is too long to analyse (%d bytes)", len(cmd)))
	}
	// 4. Security validators: an Ask here asks whatever the allow rules say.
	// An Allow from the validators is an early "no objection" (a literal
	// git commit message), never a permission: the rules still decide.
	if v := verdict; v.Verdict == policy.Ask || v.Verdict == policy.Deny {
		if v.Reason == "" {
			v.Reason = "a security check objects to the command"
		}
		return v
	}
	if s.pr.Kind != validators.Simple {
		return ask("the command is too complex to analyse: " + s.pr.Reason)
	}
	if len(s.parts) == 0 {
		return policy.Decision{Verdict: policy.Allow, Reason: "the command runs nothing"}
	}
	// 5. Path constraints and 6. sed constraints.
	if d, ok := s.constraints(); ok {
		return d
	}
	// 7-9. Allow rules, read-only allow, acceptEdits allow: every part.
	if d, ok := s.allowEveryPart(); ok {
		return d
	}
	// 10. Classifier.
	if e.opts.Classifier != nil {
		if d, ok := s.classify(ctx); ok {
			return d
		}
	}
	s.res.Suggestion = s.suggest()
	for _, a := range s.an {
		if a.readOnly && a.unchecked != "" {
			return ask(a.unchecked)
		}
	}
	return policy.Decision{}.Final()
}

// shorten cuts s to at most n bytes for a message.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (s *step) setDirs() {
	s.dirs = s.dirsBuf[:0]
	if c := s.req.Cwd; c != "" && filepath.IsAbs(c) {
		s.cwd = filepath.Clean(c)
		s.dirs = append(s.dirs, s.cwd)
	}
	add := func(d string) {
		if !filepath.IsAbs(d) {
			if s.cwd == "" {
				return
			}
			d = filepath.Join(s.cwd, d)
		}
		s.dirs = append(s.dirs, filepath.Clean(d))
	}
	for _, d := range s.e.addDirs {
		add(d)
	}
	for _, d := range s.req.AdditionalDirs {
		add(d)
	}
	if s.e.opts.FollowSymlinks {
		s.links = newResolver(s.dirs)
	}
}

func (s *step) allPlain() bool {
	for i := range s.parts {
		if !s.parts[i].plain {
			return false
		}
	}
	return true
}

// matchRules looks for a rule matching any candidate.
func (s *step) matchRules(rules []*Rule, v policy.Verdict) (policy.Decision, bool) {
	if len(rules) == 0 {
		return policy.Decision{}, false
	}
	for _, argv := range s.x.cands {
		c := cand{argv: argv}
		for _, r := range rules {
			if r.matchCand(&c, true) {
				verb := "denied"
				if v == policy.Ask {
					verb = "needs approval"
				}
				return policy.Decision{Verdict: v, Reason: fmt.Sprintf("%s by rule %s (matches %s)", verb, r.Text, shorten(c.canonical(), 200)), Rule: r.Text}, true
			}
		}
	}
	return policy.Decision{}, false
}

// analyzeParts classifies every part and computes ReadOnly and Kind.
func (s *step) analyzeParts() {
	if s.pr.Kind != validators.Simple {
		return
	}
	if cap(s.anBuf) < len(s.parts) {
		s.anBuf = make([]analysis, len(s.parts), max(len(s.parts), 4))
	}
	s.an = s.anBuf[:len(s.parts)]
	clear(s.an) // analyzeInto wants zero analyses
	ro := true
	sawCd := false
	var cwds cwdSet // the directories cd named (unresolved), for partDanger
	for i := range s.parts {
		p := &s.parts[i]
		argv, clean := stripStrict(p.assigns, p.argv)
		a := &s.an[i] // zero
		switch {
		case !clean:
			a.setWhy("assignment of " + firstUnsafe(p.assigns) + " can change what runs")
			a.kind = displayKind(nameOf(argv))
		case len(argv) > 0:
			analyzeInto(a, argv)
		default:
			a.readOnly, a.kind = true, kindNeutral
		}
		if !p.static {
			a.notReadOnly(p.why)
		}
		// Paths that always ask (another process's environment or
		// arguments, bash's network files), wherever they appear: as for
		// env and ps, a command that reads them is not read-only.
		a.danger = s.partDanger(p, a, cwds)
		if a.danger != "" {
			a.notReadOnly("the command uses " + a.danger)
		}
		if why := validators.EvaluatedCode(p.argv); why != "" {
			a.notReadOnly(why)
		}
		for _, as := range p.assigns {
			if why := validators.EvaluatedAssignment(as.name, validators.Word{Raw: as.value, Value: as.value, Static: as.static}); why != "" {
				a.notReadOnly(why)
			}
		}
		if p.riskyGlob && !globOK.get()[a.name] {
			a.notReadOnly("a glob pattern may expand to an option of " + a.name)
		} else if p.riskyGlob && s.links != nil {
			if why := optionLikeMatch(p.argv, s.cwd, sawCd); why != "" {
				a.notReadOnly(why)
			}
		}
		if a.git && sawCd {
			a.notReadOnly("git after cd may run code from another repository's configuration")
		}
		if a.cd {
			sawCd = true
			if a.cdTarget != "" && p.static {
				cwds = cwds.with(a.cdTarget)
			}
		}
		a.roButRedirect = a.readOnly
		for _, r := range p.redirs {
			w, rd := redirPath(r)
			if w != "" && !specialOK.get()[w] {
				a.notReadOnly("output redirected to " + w)
			}
			if netDevice(w) || netDevice(rd) {
				a.notReadOnly("a redirection opens a network connection")
				a.roButRedirect = false
			}
		}
		if !a.readOnly {
			ro = false
		}
	}
	s.res.ReadOnly = ro
	s.res.Kind = overallKind(s.an)
	if len(s.parts) == 1 && s.an[0].sed != nil {
		s.res.SedEdit = s.an[0].sed
	}
}

// partDanger is why a part uses a path that always asks (dangerousPath): a
// word, an assignment's value or a redirection's target, or a relative
// path it reads that leads to one from the working directory or from a
// directory named by a cd before it (cd /proc/self && cat environ).
func (s *step) partDanger(p *part, a *analysis, cds cwdSet) string {
	for _, w := range p.argv {
		if why := dangerousPath(w); why != "" {
			return why
		}
	}
	for _, as := range p.assigns {
		if why := dangerousPath(as.value); why != "" {
			return why
		}
	}
	for _, r := range p.redirs {
		if !r.isHeredoc() {
			if why := dangerousPath(r.target); why != "" {
				return why
			}
		}
	}
	inProc := strings.Contains(s.cwd, "/proc")
	for _, d := range cds {
		inProc = inProc || strings.Contains(d, "proc")
	}
	relative := func(r string) string {
		if r == "" || r[0] == '/' || r[0] == '~' || !inProc && !strings.Contains(r, "proc") {
			return ""
		}
		for _, d := range append(cwdSet{s.cwd}, cds...) {
			if !filepath.IsAbs(d) {
				d = filepath.Join(s.cwd, d)
			}
			if why := dangerousPath(filepath.Join(d, r)); why != "" {
				return why
			}
		}
		return ""
	}
	for _, r := range a.reads {
		if why := relative(r); why != "" {
			return why
		}
	}
	for _, r := range p.redirs {
		if _, rd := redirPath(r); rd != "" {
			if why := relative(rd); why != "" {
				return why
			}
		}
	}
	return ""
}

func nameOf(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	return filepath.Base(argv[0])
}

func firstUnsafe(as []assign) string {
	for _, a := range as {
		if !safeAssign(a) {
			return a.name
		}
	}
	return ""
}

func (s *step) notReadOnlyReason() string {
	if s.pr.Kind != validators.Simple {
		if s.pr.Reason != "" {
			return "the command is too complex to analyse (" + s.pr.Reason + ")"
		}
		return "the command is too complex to analyse"
	}
	for _, a := range s.an {
		if !a.readOnly {
			return a.reason()
		}
	}
	return "not read-only"
}

// redirPath returns the file a redirect writes (write) or reads (read).
func redirPath(r redir) (write, read string) {
	switch r.op {
	case ">", ">>", ">|", "&>", "&>>", "<>":
		return r.target, ""
	case ">&":
		if isDigits(r.target) || r.target == "-" {
			return "", ""
		}
		return r.target, ""
	case "<":
		return "", r.target
	case "<&":
		if isDigits(r.target) || r.target == "-" {
			return "", ""
		}
		return "", r.target
	}
	return "", ""
}

// overallKind folds the parts' kinds: all search/read/list -> the most
// specific of them; all silent -> silent; anything else -> none.
func overallKind(an []analysis) string {
	var search, read, list, silent, other bool
	for _, a := range an {
		switch a.kind {
		case kindNeutral:
		case KindSearch:
			search = true
		case KindRead:
			read = true
		case KindList:
			list = true
		case KindSilent:
			silent = true
		default:
			other = true
		}
	}
	switch {
	case other:
		return KindNone
	case silent && !search && !read && !list:
		return KindSilent
	case silent:
		return KindNone
	case search:
		return KindSearch
	case read:
		return KindRead
	case list:
		return KindList
	}
	return KindNone
}

// constraints runs the path and sed constraints over every part.
func (s *step) constraints() (policy.Decision, bool) {
	cwds := cwdSet{s.cwd}
	cds := 0
	var remade []string // absolute destinations of earlier mv, cp and ln
	for i := range s.parts {
		p, a := &s.parts[i], &s.an[i]
		if why := remadePath(p, a, cwds, remade); why != "" {
			return ask(why), true
		}
		if a.cd {
			if cds++; cds > 1 {
				// As the seed: which directory each later command runs in
				// is hard to see in a prompt.
				return ask("several cd in one command"), true
			}
		}
		// Dangerous paths anywhere in the words (analyzeParts found them).
		if a.danger != "" {
			return ask("the command uses " + a.danger), true
		}
		for _, r := range p.redirs {
			if r.isHeredoc() {
				continue
			}
			if strings.HasPrefix(r.target, "!") || strings.HasPrefix(r.target, "=") || strings.HasPrefix(r.target, "|") {
				return ask("redirect target " + quoteWord(r.target) + " means something else in zsh"), true
			}
			w, rd := redirPath(r)
			if w != "" {
				if why := checkPath(w, true, cwds, s.dirs, s.links); why != "" {
					return ask("redirect: " + why), true
				}
			}
			if rd != "" {
				if why := checkPath(rd, false, cwds, s.dirs, s.links); why != "" {
					return ask("redirect: " + why), true
				}
			}
		}
		if a.ask != "" {
			return ask(a.ask), true
		}
		if a.walksLinks != "" && s.links != nil {
			// The checks below follow the links of the paths named; not
			// those the command meets below them, which it follows too.
			return ask(a.walksLinks + " follows symbolic links as it walks the tree: one there may lead outside the working directory"), true
		}
		if p.static {
			for _, r := range a.reads {
				if why := checkPath(r, false, cwds, s.dirs, s.links); why != "" {
					return ask(why), true
				}
			}
			for _, w := range a.writes {
				if why := checkPath(w, true, cwds, s.dirs, s.links); why != "" {
					return ask(why), true
				}
			}
		}
		dests := linkDests(p.argv)
		switch {
		case a.edit:
			if !noLinks(a.remadeFrom, cwds) {
				dests = append(dests, a.remade...)
			}
		case !a.readOnly && !a.roButRedirect:
			// A command that changes files in ways not modelled here (git
			// mv, tar x -C DIR, cp -s, an unknown flag): what it names may
			// be remade.
			dests = append(dests, operands(p.argv)...)
		}
		for _, d := range dests {
			abs, ok := cwds.resolve(d)
			if !ok {
				return ask("the destination " + quoteWord(d) + " cannot be checked"), true
			}
			remade = append(remade, abs...)
		}
		if a.cd {
			if a.cdTarget == "" || !p.static {
				return ask("cd to a directory that cannot be checked"), true
			}
			abs, ok := cwds.resolve(a.cdTarget)
			if !ok {
				return ask("cd to a directory that cannot be checked"), true
			}
			for _, d := range abs {
				cwds = cwds.with(d)
			}
			if len(cwds) > 8 {
				return ask("too many cd commands to follow"), true
			}
		}
	}
	return policy.Decision{}, false
}

// remadePath returns why a path of a part lies at or below what an earlier
// part of the line moves, copies or links there (mv a b && cat b/link/x):
// the paths are checked before the line runs, against a tree the earlier
// part replaces (a symbolic link in it leads anywhere), or "".
func remadePath(p *part, a *analysis, cwds cwdSet, remade []string) string {
	if len(remade) == 0 {
		return ""
	}
	var buf [4]string
	under := func(q string) string {
		abs, ok := cwds.appendResolved(buf[:0], q)
		if !ok {
			return "the path " + quoteWord(q) + " cannot be checked"
		}
		for _, x := range abs {
			for _, r := range remade {
				if x == r || strings.HasPrefix(x, r+"/") || r == "/" {
					return "the path " + quoteWord(q) + " lies in " + quoteWord(r) + ", which an earlier part of the line moves, copies or links there: run them one at a time"
				}
			}
		}
		return ""
	}
	paths := make([]string, 0, len(a.reads)+len(a.writes)+len(p.redirs)+1)
	paths = append(append(paths, a.reads...), a.writes...)
	for _, r := range p.redirs {
		if r.isHeredoc() {
			continue
		}
		w, rd := redirPath(r)
		paths = append(paths, w, rd)
	}
	if a.cd {
		paths = append(paths, a.cdTarget)
	}
	for _, q := range paths {
		if q == "" {
			continue
		}
		if why := under(q); why != "" {
			return why
		}
	}
	return ""
}

// noLinks reports sources that are regular files or trees without a
// symbolic link now (what mv or cp makes of them has none either); a
// source that does not exist, or a tree too large to look through, is
// not.
func noLinks(srcs []string, cwds cwdSet) bool {
	if len(srcs) == 0 {
		return false
	}
	budget := 2000
	for _, src := range srcs {
		abs, ok := cwds.resolve(src)
		if !ok {
			return false
		}
		for _, x := range abs {
			if !treeWithoutLinks(x, &budget) {
				return false
			}
		}
	}
	return true
}

func treeWithoutLinks(p string, budget *int) bool {
	fi, err := os.Lstat(p)
	switch {
	case err != nil || fi.Mode()&os.ModeSymlink != 0:
		return false
	case fi.Mode().IsRegular():
		return true
	case !fi.IsDir():
		return false
	}
	es, err := os.ReadDir(p)
	if err != nil {
		return false
	}
	if *budget -= len(es) + 1; *budget < 0 {
		return false
	}
	for _, e := range es {
		if !treeWithoutLinks(filepath.Join(p, e.Name()), budget) {
			return false
		}
	}
	return true
}

// operands are a command's words that may name what it writes: those not
// starting with "-", and the values of -C, -t, --directory and
// --target-directory (attached or not).
func operands(argv []string) []string {
	var out []string
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		switch {
		case w == "-C" || w == "-t" || w == "--directory" || w == "--target-directory":
			if i+1 < len(argv) {
				i++
				out = append(out, argv[i])
			}
		case strings.HasPrefix(w, "--directory=") || strings.HasPrefix(w, "--target-directory="):
			_, v, _ := strings.Cut(w, "=")
			out = append(out, v)
		case len(w) > 2 && (strings.HasPrefix(w, "-C") || strings.HasPrefix(w, "-t")) && w[1] != '-':
			out = append(out, w[2:])
		case !strings.HasPrefix(w, "-") && w != "":
			out = append(out, w)
		}
	}
	return out
}

// linkDests returns where ln (or link) makes a link: its last operand, or
// -t's directory; one operand makes the link in the working directory.
func linkDests(argv []string) []string {
	if len(argv) == 0 || (argv[0] != "ln" && argv[0] != "link") {
		return nil
	}
	var ops []string
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		switch {
		case w == "--":
			ops = append(ops, argv[i+1:]...)
			i = len(argv)
		case w == "-t" || w == "--target-directory" || w == "-S" || w == "--suffix":
			if i+1 < len(argv) {
				if w == "-t" || w == "--target-directory" {
					return []string{argv[i+1]}
				}
				i++
			}
		case strings.HasPrefix(w, "--target-directory="):
			return []string{strings.TrimPrefix(w, "--target-directory=")}
		case strings.HasPrefix(w, "-t") && len(w) > 2:
			return []string{w[2:]}
		case strings.HasPrefix(w, "-") && len(w) > 1:
		default:
			ops = append(ops, w)
		}
	}
	switch len(ops) {
	case 0:
		return nil
	case 1:
		return []string{path.Base(ops[0])}
	}
	return ops[len(ops)-1:]
}

// allowEveryPart allows the command when every part is allowed by an allow
// rule, by the read-only tables, or (acceptEdits) as a file edit.
func (s *step) allowEveryPart() (policy.Decision, bool) {
	var rule, reason string
	for i := range s.parts {
		p, a := &s.parts[i], &s.an[i]
		if !p.static {
			return policy.Decision{}, false
		}
		if r := s.allowRule(p); r != nil && !p.riskyGlob {
			if rule == "" {
				rule = r.Text
			}
			continue
		}
		switch {
		case a.readOnly && a.unchecked != "":
			return policy.Decision{}, false
		case a.readOnly:
			if reason == "" {
				reason = "read-only"
			}
		case s.mode == "acceptEdits" && (a.edit || a.roButRedirect):
			reason = "acceptEdits mode: file edits inside the working directories"
		default:
			return policy.Decision{}, false
		}
	}
	switch {
	case rule != "" && reason == "":
		return policy.Decision{Verdict: policy.Allow, Reason: "allowed by rule " + rule, Rule: rule}, true
	case rule != "":
		return policy.Decision{Verdict: policy.Allow, Reason: "allowed by rule " + rule + " and " + reason, Rule: rule}, true
	case reason == "read-only":
		return policy.Decision{Verdict: policy.Allow, Reason: "read-only command"}, true
	}
	return policy.Decision{Verdict: policy.Allow, Reason: reason}, true
}

// allowRule returns the allow rule matching a part, if any.
func (s *step) allowRule(p *part) *Rule {
	if len(s.e.rules.allow) == 0 {
		return nil
	}
	stripped := p.strictArgv()
	a, b := cand{argv: stripped}, cand{argv: p.fullArgv()}
	for _, r := range s.e.rules.allow {
		if r.matchCand(&a, false) || r.matchCand(&b, false) {
			return r
		}
	}
	return nil
}
