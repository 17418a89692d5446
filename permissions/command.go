package permissions

import (
	"strings"

	"github.com/moat-sandbox/moat/validators"
)

// part is one simple command of a parsed command line, in the form the
// decision steps use.
type part struct {
	argv    []string // word values; for non-static words, the raw text
	assigns []assign
	redirs  []redir
	op      string // operator after this part: ; && || | & or ""
	source  string
	// static: every word is static or a safe glob, every redirect target is
	// static and every here-document is literal. Only static parts can be
	// allowed.
	static bool
	// plain: no word can hide a command or change the argument count
	// (no $, `, ( or { in a non-static word), so the words are all there is
	// to see for deny and ask rules.
	plain bool
	// literal: every word of argv is static, with no glob, tilde or
	// expansion (echo's words must be, for its output to be known)
	literal bool
	why     string // why the part is not static
	// riskyGlob: a glob pattern starts with a metacharacter and may expand
	// to an option; only commands whose every flag is harmless may take it.
	riskyGlob bool
}

type assign struct {
	name, value string
	static      bool
}

type redir struct {
	op     string // as written: > >> < <> >| &> &>> >& <& << <<- <<<
	fd     string
	target string
	// heredoc: what a here-document or here-string feeds to stdin
	heredoc string
}

// isHeredoc reports whether the redirect is a here-document or here-string.
func (r redir) isHeredoc() bool { return strings.HasPrefix(r.op, "<<") }

// fromSimple converts a validators.SimpleCommand. argv is where the
// argument values go: len(sc.Args) strings, or nil to allocate them.
func fromSimple(sc *validators.SimpleCommand, argv []string) part {
	p := part{op: sc.Op, source: sc.Source, static: true, plain: true, literal: true}
	for _, a := range sc.Assigns {
		p.assigns = append(p.assigns, assign{name: a.Name, value: a.Value.Value, static: a.Value.Static})
		if !a.Value.Static {
			p.notStatic("assignment " + a.Name + " is not a literal value")
			p.notPlain(a.Value.Raw)
		}
	}
	if len(argv) == len(sc.Args) {
		p.argv = argv
	} else {
		p.argv = make([]string, len(sc.Args))
	}
	for i, w := range sc.Args {
		p.argv[i] = w.Value
		if zshFlagged(w.Raw) {
			p.plain = false // the syntax tree's walk judges $~X (hiddenInNode)
		}
		if w.Static {
			continue
		}
		p.literal = false
		if w.Raw == "[" || w.Raw == "]" || w.Raw == "]]" {
			p.argv[i] = w.Raw // test's brackets: no pattern to match
			continue
		}
		switch globKind(w.Raw) {
		case globSafe, globRisky:
			if globKind(w.Raw) == globRisky {
				p.riskyGlob = true
			}
			continue
		}
		if literalBraces(w.Raw) {
			p.argv[i] = w.Raw // HEAD@{1}: braces that do not expand
			continue
		}
		p.notStatic("word " + quoteWord(w.Raw) + " is not a literal")
		p.notPlain(w.Raw)
	}
	for _, r := range sc.Redirects {
		rd := redir{op: r.Op, fd: r.Fd, target: r.Target.Value, heredoc: r.Body.Value}
		if zshFlagged(r.Target.Raw) {
			p.plain = false
		}
		switch {
		case r.Op == "<<" || r.Op == "<<-" || r.Op == "<<<":
			if !r.Body.Static || !r.Target.Static {
				p.notStatic("here-document or here-string expands $ or `")
				p.plain = false
			}
		case !r.Target.Static:
			p.notStatic("redirect target " + quoteWord(r.Target.Raw) + " is not a literal")
			p.notPlain(r.Target.Raw)
		}
		p.redirs = append(p.redirs, rd)
	}
	return p
}

func (p *part) notStatic(why string) {
	if p.static {
		p.static, p.why = false, why
	}
}

// zshFlagged reports a word whose source may hold $~, $= or $^, which
// zsh expands (zshLiteralDollar) where bash reads text; the walk of the
// syntax tree tells quoted text from a word zsh expands.
func zshFlagged(raw string) bool {
	return strings.Contains(raw, "$~") || strings.Contains(raw, "$=") || strings.Contains(raw, "$^")
}

func (p *part) notPlain(raw string) {
	if strings.ContainsAny(raw, "$`({") {
		p.plain = false
	}
}

type globClass uint8

const (
	globNone  globClass = iota // not a plain glob pattern
	globSafe                   // src/*.go: cannot expand to an option
	globRisky                  // *.go: may expand to "-rf" or "--pre=sh"
)

// globKind classifies a non-static word: a plain glob pattern has only
// literal characters and * ? [ ], no quotes or expansions. It is safe when
// its first character is a literal other than '-', so that no file name
// can turn it into an option ("*" could expand to a file named "-rf").
func globKind(raw string) globClass {
	if raw == "" {
		return globNone
	}
	if raw[0] == '-' {
		// --include=*.ts: whatever it expands to starts with "--include=",
		// so it stays that flag; only its value is a pattern.
		name, val, ok := strings.Cut(raw, "=")
		if !ok || strings.ContainsAny(name, "*?[]") || val == "" {
			return globNone
		}
		for i := 0; i < len(raw); i++ {
			if c := raw[i]; !safeUnquoted(c) && c != '*' && c != '?' && c != '[' && c != ']' {
				return globNone
			}
		}
		return globSafe
	}
	glob := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '*' || c == '?' || c == '[' || c == ']':
			glob = true
		case !safeUnquoted(c):
			return globNone
		}
	}
	switch {
	case !glob:
		return globNone
	case safeUnquoted(raw[0]):
		return globSafe
	}
	return globRisky
}

// literalBraces reports whether a word is literal but for braces that
// bash does not expand (HEAD@{1}, stash@{0}: no comma and no "..").
func literalBraces(raw string) bool {
	if !strings.Contains(raw, "{") {
		return false
	}
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '{' && c != '}' && !safeUnquoted(c) {
			return false
		}
	}
	return !strings.Contains(raw, ",") && !strings.Contains(raw, "..")
}

// strictArgv is the argument vector allow rules and the read-only tables
// see: safe assignments and safe wrappers stripped. When an assignment is
// not safe, it stays in front as a NAME=value word.
func (p *part) strictArgv() []string {
	rest, clean := stripStrict(p.assigns, p.argv)
	if !clean {
		return p.fullArgv()
	}
	return rest
}

// fullArgv is the command as written, assignments first.
func (p *part) fullArgv() []string {
	if len(p.assigns) == 0 {
		return p.argv
	}
	out := make([]string, 0, len(p.assigns)+len(p.argv))
	for _, a := range p.assigns {
		out = append(out, a.name+"="+a.value)
	}
	return append(out, p.argv...)
}

// optionLikeMatch returns why a command's glob patterns that may expand
// to an option (a first character that is not a literal) do so on disk:
// a match whose name starts with "-" is an option to the command, not the
// path the checks took it for. globOK's commands take such globs because
// their options neither write nor run, but grep x * with a file named -R
// in the working directory was grep -R, which follows the links it meets
// (a link below a directory there read a directory outside it: attack
// pass 67). Only with the disk consulted (FollowSymlinks); after "--" a
// match is an operand. A glob after cd is not expanded here: it asks.
func optionLikeMatch(argv []string, cwd string, afterCd bool) string {
	for _, w := range argv[1:] {
		if w == "--" {
			return ""
		}
		if globKind(w) != globRisky {
			continue
		}
		if afterCd || cwd == "" {
			return "glob pattern " + quoteWord(w) + " after cd may expand to an option"
		}
		matches, ok := globMatches(cwd + "/" + w)
		if !ok {
			return "glob pattern " + quoteWord(w) + " matches too many files to check"
		}
		for _, m := range matches {
			if rel := strings.TrimPrefix(m, strings.TrimSuffix(cwd, "/")+"/"); strings.HasPrefix(rel, "-") {
				return "glob pattern " + quoteWord(w) + " matches " + quoteWord(rel) + ", which " + argv[0] + " takes for an option"
			}
		}
	}
	return ""
}
