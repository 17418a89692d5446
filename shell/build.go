package shell

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/moat-sandbox/moat/validators"
)

// MaxScriptBytes is the longest command string a session hands to the
// shell: Linux refuses a single argv string of MAX_ARG_STRLEN (128 KiB)
// bytes or more, and the command string is one.
const MaxScriptBytes = 128<<10 - 1

// ErrTooLong is returned when the built command string is longer than
// MaxScriptBytes.
var ErrTooLong = errors.New("command too long")

// StdinRedirect says where a build put "< /dev/null".
type StdinRedirect string

const (
	// StdinNone: the command reads a here-document or here-string, or
	// redirects its own standard input; nothing is added.
	StdinNone StdinRedirect = "none"
	// StdinPipeline: the command is one pipeline; "< /dev/null" goes after
	// its first command, inside the eval string (the only command of a
	// pipeline that would read the shell's standard input).
	StdinPipeline StdinRedirect = "pipeline"
	// StdinEval: "< /dev/null" goes on the eval itself, so every command
	// of a list reads it.
	StdinEval StdinRedirect = "eval"
)

// EnvChange is one change to the session's environment, replayed before
// each command: an export, or an unset when Unset is true.
type EnvChange struct {
	Name  string
	Value string
	Unset bool
}

// BuildSpec is what a command string is built from.
type BuildSpec struct {
	// Shell is the shell the string is for. Required.
	Shell Provider
	// Command is the command as the agent wrote it. Required.
	Command string
	// Dir, if set, is the tracked working directory, a physical path (pwd
	// -P): the script changes to it first. When that fails (the directory
	// was deleted) the script says so on the side channel and the command
	// runs where the process started (the session's start directory). When
	// the directory the change lands in is not Dir (Dir or a directory
	// above it was replaced by a symbolic link since the command was
	// judged), the script says so and exits: the command does not run.
	Dir string
	// Snapshot is the path, inside the sandbox, the script sources the
	// snapshot from: the process's standard input (Proc.Stdin), named as a
	// path (/proc/self/fd/0 on Linux). If empty, none is sourced. The rest
	// of the script, the command with it, reads /dev/null.
	Snapshot string
	// Env are the session's environment changes, applied after the
	// snapshot, in name order. The values are not written into the command
	// string, which any user of the machine may read in /proc/PID/cmdline:
	// the process must get each in its environment as EnvCarrierPrefix+Name
	// (see CarryEnv); the script moves it to Name.
	Env []EnvChange
	// Prefix, if set, is a program the whole command string is handed to
	// (the seeds' CLAUDE_CODE_SHELL_PREFIX; see PrefixFromEnv).
	Prefix string
}

// Build is a command string in the seeds' stages. Each field holds the
// result of one stage, so each can be tested (and shown) on its own.
type Build struct {
	// Rewritten is stage 1: Windows null redirections (2>nul, >nul,
	// &>nul) rewritten to /dev/null.
	Rewritten string
	// Stdin is stage 2: whether and where "< /dev/null" is added.
	Stdin StdinRedirect
	// Quoted is stages 3 and 4: the argument of eval, single-quoted, with
	// "< /dev/null" moved into the first command of a pipeline.
	Quoted string
	// Script is stage 5: cd to the tracked directory, the report on exit,
	// source the snapshot, the session's environment, extglob off, eval.
	Script string
	// Final is stage 6: Script handed to Prefix, if any.
	Final string
}

// BuildCommand builds the command string for spec.Command.
func BuildCommand(spec BuildSpec) (Build, error) {
	var b Build
	if spec.Shell == nil {
		return b, errors.New("shell: BuildSpec.Shell is nil")
	}
	if strings.IndexByte(spec.Command, 0) >= 0 {
		return b, errors.New("shell: the command holds a NUL byte")
	}
	if strings.TrimSpace(spec.Command) == "" {
		return b, errors.New("shell: empty command")
	}
	v := spec.Shell.Variant()
	// 1. Windows null redirections.
	b.Rewritten = RewriteNullRedirects(spec.Command, v)
	// 2. The stdin decision, and 3-4. quoting with the redirect placed.
	var at int
	b.Stdin, at = stdinPlacement(b.Rewritten, v)
	switch b.Stdin {
	case StdinNone:
		b.Quoted = singleQuote(b.Rewritten)
	case StdinPipeline:
		b.Quoted = singleQuote(b.Rewritten[:at] + " < /dev/null" + b.Rewritten[at:])
	default:
		b.Quoted = singleQuote(b.Rewritten) + " < /dev/null"
	}
	// 5. Assembly.
	b.Script = assemble(spec, b.Quoted)
	// 6. The prefix.
	b.Final = b.Script
	if spec.Prefix != "" {
		b.Final = formatPrefix(spec.Prefix, b.Script)
	}
	if len(b.Final) > MaxScriptBytes {
		return b, fmt.Errorf("%w: the command string is %d bytes once built (at most %d)", ErrTooLong, len(b.Final), MaxScriptBytes)
	}
	return b, nil
}

// EnvCarrierPrefix prefixes the environment variables that carry the
// values of the session's environment changes into a process (see
// BuildSpec.Env). A login shell's profile, or the snapshot, may set the
// variables themselves (PATH); the carriers reach the script untouched.
const EnvCarrierPrefix = "__MOAT_ENV_"

// CarryEnv returns env with a carrier for each change that sets a
// variable (changes that unset one need none).
func CarryEnv(env []string, changes []EnvChange) []string {
	out := append([]string(nil), env...)
	for _, e := range changes {
		if !e.Unset && validName(e.Name) {
			out = append(out, EnvCarrierPrefix+e.Name+"="+e.Value)
		}
	}
	return out
}

// Side-channel records (descriptor 3), each "key=value" ended by NUL. A
// command's report is, in this order and nothing else: cwd-missing=
// (optional), snapshot-missing= (optional), env0=..., then from the exit
// trap cwd=..., env=..., end=; or cwd-moved= alone (see parseCommandReport).
const (
	recCwdMoved        = "cwd-moved"        // the tracked directory leads elsewhere: not run
	recCwdMissing      = "cwd-missing"      // the tracked directory is gone
	recSnapshotMissing = "snapshot-missing" // the snapshot could not be read
	recEnvBefore       = "env0"             // export -p before the command
	recCwd             = "cwd"              // pwd -P after the command
	recEnvAfter        = "env"              // export -p after it
	recEnd             = "end"              // the exit trap wrote all of it
	recSnapshotText    = "snapshot"         // the snapshot script's text
	recSnapshotEnd     = "snapshot-end"     // ... and its end
)

// assemble is stage 5. Every word that a user's alias or function could
// shadow is called through builtin: the snapshot defines the user's
// functions before some of these lines run.
func assemble(spec BuildSpec, quoted string) string {
	var lines []string
	if spec.Dir != "" {
		// cd -P sets PWD to the physical directory it reached: another
		// than Dir means a link now stands where the directory was judged
		// (a command swapped one in between the decision and this cd), and
		// the command is not run there.
		d := quoteWord(spec.Dir)
		lines = append(lines, fmt.Sprintf(`if builtin cd -P -- %s 2>/dev/null; then builtin test "$PWD" = %s || { builtin printf '%s=\0' >&3; builtin exit 126; }; else builtin printf '%s=\0' >&3; fi`,
			d, d, recCwdMoved, recCwdMissing))
	}
	lines = append(lines, "builtin trap "+singleQuote(reportScript())+" EXIT")
	if spec.Snapshot != "" {
		snap := quoteWord(spec.Snapshot)
		lines = append(lines, fmt.Sprintf(`if builtin test -r %s; then builtin source %s 2>/dev/null || true; else builtin printf '%s=\0' >&3; fi`,
			snap, snap, recSnapshotMissing))
		// The rest reads /dev/null, not the snapshot on standard input.
		lines = append(lines, "{")
	}
	env := append([]EnvChange(nil), spec.Env...)
	sort.SliceStable(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	for _, e := range env {
		if !validName(e.Name) {
			continue
		}
		if e.Unset {
			lines = append(lines, "builtin unset "+e.Name)
			continue
		}
		c := EnvCarrierPrefix + e.Name
		lines = append(lines, fmt.Sprintf(`builtin test -n "${%s+set}" && builtin export %s="$%s"; builtin unset %s`, c, e.Name, c, c))
	}
	if spec.Prefix != "" {
		// The shell under the prefix is not known: try both.
		lines = append(lines, "{ builtin shopt -u extglob || builtin setopt NO_EXTENDED_GLOB; } >/dev/null 2>&1 || true")
	} else {
		lines = append(lines, spec.Shell.DisableExtglob())
	}
	lines = append(lines, fmt.Sprintf(`{ builtin printf '%s=' && builtin export -p && builtin printf '\0'; } >&3 2>/dev/null`, recEnvBefore))
	lines = append(lines, "builtin eval "+quoted+" 3>&-")
	if spec.Snapshot != "" {
		lines = append(lines, "} </dev/null")
	}
	return strings.Join(lines, "\n")
}

// reportScript is the EXIT trap: the working directory and the exported
// environment, on descriptor 3, and the end record only when export -p
// succeeded (a report cut short is not believed).
func reportScript() string {
	return fmt.Sprintf(`{ builtin printf '%s='; builtin pwd -P; builtin printf '\0%s=' && builtin export -p && builtin printf '\0%s=\0'; } >&3 2>/dev/null`, recCwd, recEnvAfter, recEnd)
}

// formatPrefix hands script to prefix as the seeds do: when the prefix
// holds " -", what comes before the last " -" is the program (quoted as
// one word) and the rest are its arguments, left as written.
func formatPrefix(prefix, script string) string {
	if i := strings.LastIndex(prefix, " -"); i > 0 {
		return quoteWord(prefix[:i]) + " " + prefix[i+1:] + " " + singleQuote(script)
	}
	return quoteWord(prefix) + " " + singleQuote(script)
}

// PrefixFromEnv reads the shell prefix from getenv: MOAT_SHELL_PREFIX, or
// the seeds' CLAUDE_CODE_SHELL_PREFIX.
func PrefixFromEnv(getenv func(string) string) string {
	if p := getenv("MOAT_SHELL_PREFIX"); p != "" {
		return p
	}
	return getenv("CLAUDE_CODE_SHELL_PREFIX")
}

func parseCommand(cmd string, v syntax.LangVariant) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(v)).Parse(strings.NewReader(cmd), "")
}

// RewriteNullRedirects is stage 1: an output redirection to the Windows
// null device (2>nul, >nul, &>nul, >>NUL) becomes one to /dev/null, so a
// command written for Windows does not create a file named "nul". Only
// unquoted redirection targets are rewritten, as found on the syntax tree;
// a command that does not parse is left alone.
func RewriteNullRedirects(cmd string, v syntax.LangVariant) string {
	if !strings.Contains(strings.ToLower(cmd), "nul") {
		return cmd
	}
	f, err := parseCommand(cmd, v)
	if err != nil {
		return cmd
	}
	type span struct{ from, to int }
	var spans []span
	syntax.Walk(f, func(n syntax.Node) bool {
		r, ok := n.(*syntax.Redirect)
		if !ok {
			return true
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob:
		default:
			return true
		}
		if r.Word == nil || len(r.Word.Parts) != 1 {
			return true
		}
		if lit, ok := r.Word.Parts[0].(*syntax.Lit); !ok || !strings.EqualFold(lit.Value, "nul") {
			return true
		}
		from, to := int(r.Word.Pos().Offset()), int(r.Word.End().Offset())
		if from < 0 || to > len(cmd) || from >= to || !strings.EqualFold(cmd[from:to], "nul") {
			return true
		}
		spans = append(spans, span{from, to})
		return true
	})
	sort.Slice(spans, func(i, j int) bool { return spans[i].from > spans[j].from })
	for _, s := range spans {
		cmd = cmd[:s.from] + "/dev/null" + cmd[s.to:]
	}
	return cmd
}

// stdinPlacement is stage 2: no redirect for a command that reads a
// here-document or redirects its standard input itself; after the first
// command of a lone pipeline; otherwise on the eval. A pipeline is only
// rearranged when the validators' parser reads the command as plain simple
// commands (it then agrees with bash on where each word ends, so the text
// is inserted where bash will see it); anything else gets the redirect on
// the eval, which is just as good: every command that would read the
// shell's input reads /dev/null instead.
func stdinPlacement(cmd string, v syntax.LangVariant) (StdinRedirect, int) {
	f, err := parseCommand(cmd, v)
	if err != nil {
		return StdinEval, 0
	}
	ownStdin := false
	syntax.Walk(f, func(n syntax.Node) bool {
		r, ok := n.(*syntax.Redirect)
		if !ok {
			return !ownStdin
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			ownStdin = true
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn:
			if r.N == nil || r.N.Value == "0" {
				ownStdin = true
			}
		}
		return !ownStdin
	})
	if ownStdin {
		return StdinNone, 0
	}
	if len(f.Stmts) != 1 || v != syntax.LangBash {
		return StdinEval, 0
	}
	st := f.Stmts[0]
	bin, ok := st.Cmd.(*syntax.BinaryCmd)
	if !ok || st.Background || st.Coprocess || (bin.Op != syntax.Pipe && bin.Op != syntax.PipeAll) {
		return StdinEval, 0
	}
	for {
		x, ok := bin.X.Cmd.(*syntax.BinaryCmd)
		if !ok || (x.Op != syntax.Pipe && x.Op != syntax.PipeAll) {
			break
		}
		bin = x
	}
	if validators.ParseForSecurity(cmd).Kind != validators.Simple {
		return StdinEval, 0
	}
	at := int(bin.X.End().Offset())
	if at <= 0 || at > len(cmd) {
		return StdinEval, 0
	}
	return StdinPipeline, at
}
