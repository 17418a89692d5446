package shell

import (
	"bytes"
	"errors"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Limits on what the sandbox sends back on the side channel.
const (
	// maxReportBytes caps the side channel of one command: two copies of
	// the exported environment and a path.
	maxReportBytes = 1 << 20
	// maxEnvVars and maxEnvBytes cap the session's environment changes.
	maxEnvVars  = 512
	maxEnvBytes = 64 << 10
)

// capBuffer keeps the first max bytes written to it and counts the rest.
type capBuffer struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	over bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - len(c.buf)
	if room < len(p) {
		c.over = true
		if room > 0 {
			c.buf = append(c.buf, p[:room]...)
		}
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

func (c *capBuffer) bytes() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...), c.over
}

// report is what a command's shell said on the side channel, each record
// once. Its values are still untrusted; every use validates.
type report map[string]string

// reportOrder is the order of a command's records (cwd-moved aside); a
// record may be left out only where optional says so.
var reportOrder = []struct {
	key      string
	optional bool
	flag     bool // its value is empty
}{
	{recCwdMissing, true, true},
	{recSnapshotMissing, true, true},
	{recEnvBefore, false, false},
	{recCwd, false, false},
	{recEnvAfter, false, false},
	{recEnd, false, true},
}

// errReport is a report that is not exactly what the shell writes.
var errReport = errors.New("not the shell's report")

// parseCommandReport reads a command's side channel. It accepts only the
// records the shell writes, each once, in order, each ended by NUL, with
// nothing else: a forged record beside the shell's own (a duplicate), one
// out of place, an unknown one or stray bytes make the whole report
// errReport. A report may stop early (complete is false: the shell was
// killed, or replaced by exec, before its exit trap wrote the end record);
// what it has is then well formed but incomplete. "cwd-moved=" alone is
// complete.
func parseCommandReport(b []byte) (r report, complete bool, err error) {
	r = report{}
	if len(b) == 0 {
		return r, false, nil
	}
	if b[len(b)-1] != 0 {
		return nil, false, errReport // a record cut short, or bytes after the last
	}
	recs := bytes.Split(b[:len(b)-1], []byte{0})
	if len(recs) == 1 && string(recs[0]) == recCwdMoved+"=" {
		r[recCwdMoved] = ""
		return r, true, nil
	}
	next := 0
	for _, rec := range recs {
		k, v, ok := strings.Cut(string(rec), "=")
		if !ok {
			return nil, false, errReport
		}
		for next < len(reportOrder) && reportOrder[next].key != k && reportOrder[next].optional {
			next++
		}
		if next == len(reportOrder) || reportOrder[next].key != k || (reportOrder[next].flag && v != "") {
			return nil, false, errReport
		}
		r[k] = v
		next++
	}
	return r, next == len(reportOrder), nil
}

func (r report) has(k string) bool { _, ok := r[k]; return ok }

// cwd returns the directory "pwd -P" printed, if it is a valid path.
func (r report) cwd() (string, bool) {
	v, ok := r[recCwd]
	if !ok {
		return "", false
	}
	v = strings.TrimSuffix(v, "\n")
	if !validSandboxPath(v) {
		return "", false
	}
	return v, true
}

// parseExports reads the output of "export -p" (bash: declare -x N="v";
// zsh: export N=v) into a map. It is parsed as shell, not evaluated: only
// assignments whose values are literal text (quoted or not) are kept;
// anything else (an expansion, an array, a name that is not a variable
// name) is skipped. ok is false when the text does not parse.
func parseExports(text string, v syntax.LangVariant) (vars map[string]string, ok bool) {
	f, err := syntax.NewParser(syntax.Variant(v)).Parse(strings.NewReader(text), "")
	if err != nil {
		return nil, false
	}
	vars = map[string]string{}
	for _, st := range f.Stmts {
		d, isDecl := st.Cmd.(*syntax.DeclClause)
		if !isDecl || st.Negated || st.Background || len(st.Redirs) > 0 || d.Variant == nil {
			continue
		}
		switch d.Variant.Value {
		case "declare", "export", "typeset":
		default:
			continue
		}
		tied := "" // zsh: export -T PATH path=( ... ) ties a scalar to an array
		for _, a := range d.Args {
			if a.Naked && a.Value != nil {
				if f := a.Value.Lit(); strings.HasPrefix(f, "-") && strings.Contains(f, "T") {
					tied = "?"
				}
				continue
			}
			if a.Naked && a.Name != nil && tied == "?" && validName(a.Name.Value) {
				tied = a.Name.Value
				continue
			}
			if tied != "" && tied != "?" && a.Array != nil && a.Name != nil && !a.Append && a.Index == nil {
				if val, ok := joinArray(a.Array, ":"); ok {
					vars[tied] = val
				}
				tied = ""
				continue
			}
			if a.Naked || a.Append || a.Name == nil || a.Index != nil || a.Array != nil || !validName(a.Name.Value) {
				continue
			}
			if a.Value == nil {
				vars[a.Name.Value] = ""
				continue
			}
			if val, ok := wordValue(a.Value); ok {
				vars[a.Name.Value] = val
			}
		}
	}
	return vars, true
}

// joinArray joins the literal elements of an array with sep.
func joinArray(arr *syntax.ArrayExpr, sep string) (string, bool) {
	vals := make([]string, 0, len(arr.Elems))
	for _, e := range arr.Elems {
		if e.Index != nil {
			return "", false
		}
		v, ok := wordValue(e.Value)
		if !ok {
			return "", false
		}
		vals = append(vals, v)
	}
	return strings.Join(vals, sep), true
}

// wordValue returns the text a literal word stands for, quotes removed
// as the shell removes them; ok is false when the word is not literal.
func wordValue(w *syntax.Word) (string, bool) {
	if w == nil || !literalWord(w) {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			unescape(&b, p.Value, false)
		case *syntax.SglQuoted:
			if !p.Dollar {
				b.WriteString(p.Value)
				continue
			}
			v, _, err := expand.Format(nil, p.Value, nil) // $'...'
			if err != nil {
				return "", false
			}
			v, _, _ = strings.Cut(v, "\x00")
			b.WriteString(v)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				unescape(&b, q.(*syntax.Lit).Value, true)
			}
		}
	}
	return b.String(), true
}

// unescape removes backslashes the way the shell does outside quotes
// (every \X is X) or inside double quotes (only before $ ` " \ and a
// newline); a backslash-newline disappears.
func unescape(b *strings.Builder, s string, dbl bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		n := s[i+1]
		switch {
		case n == '\n':
			i++
		case !dbl, n == '$', n == '`', n == '"', n == '\\':
			b.WriteByte(n)
			i++
		default:
			b.WriteByte(c)
		}
	}
}

// literalWord reports whether w is only literal text and quotes: nothing
// that expansion could change, no tilde.
func literalWord(w *syntax.Word) bool {
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				return false
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// persisted reports whether a change to the variable carries over to the
// next command. The shell maintains some itself; others change how the
// next command's shell starts or reads the command string, or what every
// program it runs loads, and are refused (the next command's permission
// check cannot see them).
func persisted(name string) bool {
	switch name {
	case "PWD", "OLDPWD", "SHLVL", "_",
		"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "CDPATH", "PROMPT_COMMAND",
		"BASH_XTRACEFD", "ZDOTDIR", "LD_PRELOAD", "LD_AUDIT":
		return false
	}
	return !strings.HasPrefix(name, "BASH_FUNC_") && !strings.HasPrefix(name, "DYLD_") &&
		!strings.HasPrefix(name, "__moat_") && !strings.HasPrefix(name, EnvCarrierPrefix)
}

// envDelta is what a command changed: variables set or changed, and
// variables removed.
func envDelta(before, after map[string]string) []EnvChange {
	var out []EnvChange
	for k, v := range after {
		if old, ok := before[k]; (!ok || old != v) && persisted(k) {
			out = append(out, EnvChange{Name: k, Value: v})
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok && persisted(k) {
			out = append(out, EnvChange{Name: k, Unset: true})
		}
	}
	return out
}
