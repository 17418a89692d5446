package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/permissions"
	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/runtime/settings"
)

func init() { subcommands = append(subcommands, newCheckCmd) }

type checkFlags struct {
	settings          string
	mode              string
	cwd               string
	addDirs           []string
	json              bool
	jsonl             bool
	classifier        string
	classifierTimeout time.Duration
	noSandbox         bool
}

func newCheckCmd() *cobra.Command {
	var f checkFlags
	c := &cobra.Command{
		Use:   "check [flags] (-- 'COMMAND' | COMMAND WORDS... | --jsonl)",
		Short: "Decide whether a command may run: allow, ask or deny",
		Long: `Decide whether an agent's shell command may run, with the permission
rules of the settings (Bash(git status), Bash(npm run:*), Bash(git * --force)
in permissions.allow, ask and deny), the permission mode and the working
directory. Nothing is run.

  moat check -- 'git status && npm run build'
  moat check --json --mode plan -- 'rm -rf build'
  moat check --jsonl < requests.jsonl

The command is one argument after --, or the words after moat's flags:
moat's flags end at the first word that is not one of them (or at --), and
every word from there on is the command's, flags included: moat check ls
-la --json decides "ls -la --json" and prints text; write moat check --json
ls -la for JSON. The words are quoted back into one command as a person
would quote them (moat check git log --format='%H <%ae>' decides what moat
check -- "git log --format='%H <%ae>'" does); a command with shell syntax
of its own (pipes, &&, redirections, $variables) must be one quoted
argument, or your shell acts on it first.

With --json, one object: decision (allow, ask or deny), reason, rule (the
rule that decided, or null), readonly, warnings (a list), suggestion (a rule
to offer, or null), sed_edit (or null) and kind (search, read, list, silent
or none).

With --jsonl, one request per line on standard input: {"cmd": "...", "id":
any, "cwd": "...", "mode": "...", "rules": ["Bash(x)", "deny: Bash(y)",
"ask: Bash(z)"]} (only cmd is required; rules add to the settings'), and one
result per line on standard output, in order, with the id echoed. A line that
is not a valid request gets {"id": ..., "error": "..."} and the stream goes on.

Exit status: 0 whenever a decision was printed, whatever it is; 125 for a
usage or settings error. From a working directory moat run refuses (a
system directory, with Claude Code's settings), the command is decided all
the same, with a note on standard error that moat run would refuse.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheck(cmd, f, args)
		},
	}
	fl := c.Flags()
	fl.SetInterspersed(false) // moat check ls -la: -la is the command's
	fl.StringVar(&f.settings, "settings", "", "settings `FILE` (Claude Code settings.json or srt format)")
	fl.StringVar(&f.mode, "mode", "", "permission `MODE`: default, acceptEdits, plan or bypassPermissions")
	fl.StringVar(&f.cwd, "cwd", "", "working `DIR` of the command (default: the current directory)")
	fl.StringArrayVar(&f.addDirs, "add-dir", nil, "an additional working `DIR` (repeatable)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object")
	fl.BoolVar(&f.jsonl, "jsonl", false, "read JSON requests from stdin, one per line; write one result per line")
	fl.StringVar(&f.classifier, "classifier", "", "`PROGRAM` to consult when no rule decides (JSON on stdin, {behavior, confidence} on stdout)")
	fl.DurationVar(&f.classifierTimeout, "classifier-timeout", 10*time.Second, "bound on one classifier call")
	fl.BoolVar(&f.noSandbox, "dangerously-disable-sandbox", false, "decide as for an agent's request to run the command outside the sandbox (sandbox.allowUnsandboxedCommands decides whether it counts)")
	return c
}

// checkOutput is the JSON shape of one decision: permissions.Summary
// (what the local API's /v1/decide answers too), after the request's id.
type checkOutput struct {
	ID json.RawMessage `json:"id,omitempty"`
	permissions.Summary
}

// checkError is the JSON shape of a request that could not be decided.
type checkError struct {
	ID    json.RawMessage `json:"id"`
	Error string          `json:"error"`
}

func toOutput(r permissions.Result) checkOutput {
	return checkOutput{Summary: permissions.Summarize(r)}
}

// checkEnv is what every request shares.
type checkEnv struct {
	engine  *permissions.Engine
	cwd     string
	mode    string
	addDirs []string
	// cache of engines with request rules, keyed by the rules
	cache map[string]*permissions.Engine
}

func runCheck(cmd *cobra.Command, f checkFlags, args []string) error {
	switch {
	case f.jsonl && len(args) > 0:
		return usageError("--jsonl reads commands from stdin; give no COMMAND")
	case !f.jsonl && len(args) == 0:
		return usageError("missing COMMAND: moat check -- 'git status'")
	case f.mode != "" && !policy.ValidMode(f.mode):
		return usageError("unknown --mode %q (want one of %s)", f.mode, strings.Join(policy.Modes, ", "))
	}
	cwd := f.cwd
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return &exitError{code: exitMoatError, err: fmt.Errorf("working directory: %w", err)}
		}
		cwd = wd
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return usageError("--cwd %q: %v", f.cwd, err)
	}
	pol, _, err := settings.Load(settings.Options{File: f.settings, Cwd: cwd, Check: runtime.SettingsCheck(""), RunsNothing: true})
	if err != nil {
		return &exitError{code: exitMoatError, err: err}
	}
	// moat check runs nothing: a working directory moat run would refuse
	// is said, and the command decided all the same.
	for _, n := range pol.Notes {
		if strings.HasPrefix(n, settings.RunRefusalNote) {
			fmt.Fprintf(cmd.ErrOrStderr(), "moat: note: %s\n", n)
		}
	}
	// Path constraints follow symbolic links on this machine.
	opts := permissions.Options{FollowSymlinks: true, Sandbox: &pol.Sandbox}
	if f.classifier != "" {
		opts.Classifier = &permissions.CommandClassifier{Path: f.classifier, Timeout: f.classifierTimeout}
	}
	eng, err := permissions.New(pol.Permissions, opts)
	if err != nil {
		return &exitError{code: exitMoatError, err: fmt.Errorf("settings: %w", err)}
	}
	if err := eng.CheckMode(f.mode); err != nil {
		return usageError("--mode: %v", err)
	}
	env := &checkEnv{engine: eng, cwd: cwd, mode: f.mode, addDirs: f.addDirs, cache: map[string]*permissions.Engine{}}
	out := cmd.OutOrStdout()
	if f.jsonl {
		return env.stream(cmd.InOrStdin(), out)
	}
	command := args[0]
	if len(args) > 1 {
		// `moat check ls -la`: the words the shell split, quoted back
		// into the one command they were.
		command = quoteWords(args)
	}
	res := eng.DecideContext(cmd.Context(), permissions.Request{Command: command, Cwd: cwd, Mode: f.mode, AdditionalDirs: f.addDirs, DangerouslyDisableSandbox: f.noSandbox})
	if f.json {
		return writeErr(newJSONEncoder(out, false).Encode(toOutput(res)))
	}
	return writeErr(printText(out, res))
}

func writeErr(err error) error {
	if err != nil {
		return &exitError{code: exitMoatError, err: fmt.Errorf("writing the result: %w", err)}
	}
	return nil
}

func printText(w io.Writer, r permissions.Result) error {
	d := r.Decision.Final()
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", d.Verdict, d.Reason)
	if d.Rule != "" {
		fmt.Fprintf(&b, "  rule: %s\n", d.Rule)
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", wn)
	}
	if r.Suggestion != "" {
		fmt.Fprintf(&b, "  suggestion: %s\n", r.Suggestion)
	}
	if r.SedEdit != nil {
		fmt.Fprintf(&b, "  sed edit: %s: %q -> %q\n", r.SedEdit.File, r.SedEdit.Pattern, r.SedEdit.Replacement)
	}
	fmt.Fprintf(&b, "  readonly: %v, kind: %s\n", r.ReadOnly, r.Kind)
	if sb := r.Sandbox; sb != nil {
		where := "in the sandbox"
		if !sb.Sandboxed {
			where = "outside the sandbox, as the settings have it (moat itself runs every command in its sandbox)"
		}
		if sb.Reason != "" {
			where += ": " + sb.Reason
		}
		fmt.Fprintf(&b, "  runs: %s\n", where)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// checkRequest is one --jsonl request.
type checkRequest struct {
	Cmd   *string         `json:"cmd"`
	ID    json.RawMessage `json:"id"`
	Cwd   string          `json:"cwd"`
	Mode  string          `json:"mode"`
	Rules []string        `json:"rules"`
	// DangerouslyDisableSandbox is the agent's request to run outside.
	DangerouslyDisableSandbox bool `json:"dangerouslyDisableSandbox"`
}

// maxRequestLine bounds one --jsonl line.
const maxRequestLine = 4 << 20

// stream answers --jsonl requests, one result line per request line, in
// order. Output is flushed whenever no more input is waiting, so an agent
// host talking to it line by line gets each answer at once.
func (env *checkEnv) stream(in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	enc := newJSONEncoder(w, false)
	for {
		line, tooLong, err := readLine(r, maxRequestLine)
		if err == io.EOF && line == nil {
			break
		}
		if err != nil && err != io.EOF {
			w.Flush()
			return &exitError{code: exitMoatError, err: fmt.Errorf("reading requests: %w", err)}
		}
		var v any
		if tooLong {
			v = checkError{ID: json.RawMessage("null"), Error: fmt.Sprintf("request longer than %d bytes", maxRequestLine)}
		} else {
			v = env.answer(line)
		}
		if err := enc.Encode(v); err != nil {
			return writeErr(err)
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return writeErr(err)
			}
		}
		if err == io.EOF {
			break
		}
	}
	return writeErr(w.Flush())
}

// readLine reads one line without its newline. Lines longer than max are
// consumed and reported as tooLong.
func readLine(r *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > max+1 {
			tooLong = true
		} else {
			buf = append(buf, chunk...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if len(buf) == 0 && !tooLong {
				return nil, false, io.EOF
			}
			return trimEOL(buf), tooLong, io.EOF
		case err != nil:
			return nil, false, err
		}
		return trimEOL(buf), tooLong, nil
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// answer decides one request line, or explains why it cannot.
func (env *checkEnv) answer(line []byte) any {
	null := json.RawMessage("null")
	var req checkRequest
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		id := null
		// echo the id when the line is an object with one, so a host can
		// match the error to its request
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &probe) == nil && probe.ID != nil {
			id = probe.ID
		}
		if len(bytes.TrimSpace(line)) == 0 {
			return checkError{ID: id, Error: "empty request line"}
		}
		return checkError{ID: id, Error: "request is not a valid JSON object: " + jsonErrText(err)}
	}
	if dec.More() {
		return checkError{ID: idOr(req.ID), Error: "more than one JSON value on the line"}
	}
	id := idOr(req.ID)
	if req.Cmd == nil {
		return checkError{ID: id, Error: `missing "cmd"`}
	}
	mode := env.mode
	if req.Mode != "" {
		if err := env.engine.CheckMode(req.Mode); err != nil {
			return checkError{ID: id, Error: err.Error()}
		}
		mode = req.Mode
	}
	cwd := env.cwd
	if req.Cwd != "" {
		if filepath.IsAbs(req.Cwd) {
			cwd = filepath.Clean(req.Cwd)
		} else {
			cwd = filepath.Join(env.cwd, req.Cwd)
		}
	}
	eng, err := env.engineFor(req.Rules)
	if err != nil {
		return checkError{ID: id, Error: err.Error()}
	}
	res := eng.Decide(permissions.Request{Command: *req.Cmd, Cwd: cwd, Mode: mode, AdditionalDirs: env.addDirs, DangerouslyDisableSandbox: req.DangerouslyDisableSandbox})
	o := toOutput(res)
	o.ID = req.ID
	return o
}

func idOr(id json.RawMessage) json.RawMessage {
	if id == nil {
		return json.RawMessage("null")
	}
	return id
}

func jsonErrText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	return err.Error()
}

// maxCachedEngines bounds the engines kept for request rule sets.
const maxCachedEngines = 256

// engineFor returns the engine for a request's extra rules.
func (env *checkEnv) engineFor(rules []string) (*permissions.Engine, error) {
	if len(rules) == 0 {
		return env.engine, nil
	}
	key := strings.Join(rules, "\x00")
	if e, ok := env.cache[key]; ok {
		return e, nil
	}
	var extra policy.Permissions
	for i, line := range rules {
		list, rule := permissions.ParseRuleLine(line)
		pr := policy.Rule{Rule: rule, Source: fmt.Sprintf("request rules[%d]", i)}
		switch list {
		case "deny":
			extra.Deny = append(extra.Deny, pr)
		case "ask":
			extra.Ask = append(extra.Ask, pr)
		default:
			extra.Allow = append(extra.Allow, pr)
		}
	}
	e, err := env.engine.With(extra)
	if err != nil {
		return nil, err
	}
	if len(env.cache) >= maxCachedEngines {
		clear(env.cache)
	}
	env.cache[key] = e
	return e, nil
}

// quoteWords joins words into one shell command that splits back into
// them, quoted as a person would write them, so that the validators read
// the same command as the quoted form (moat check ls -la is moat check --
// 'ls -la'): a word of plain characters stays bare; a flag keeps its name
// bare and quotes its value (--format='%H <%ae>': a quoted dash reads as
// an obfuscated flag); a value is single-quoted, double-quoted when it
// holds a single quote and nothing double quotes expand, else single-quoted
// pieces joined by "'" (never a backslash-escaped quote, which the
// validators read as a malformed token).
func quoteWords(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = quoteWord(w)
	}
	return strings.Join(out, " ")
}

func bareChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./=:,+@%", c) >= 0
}

func quoteWord(w string) string {
	n := 0
	for n < len(w) && bareChar(w[n]) {
		n++
	}
	if w != "" && n == len(w) {
		return w
	}
	prefix := ""
	if strings.HasPrefix(w, "-") {
		// The flag's name, through its "=", stays bare.
		if eq := strings.IndexByte(w[:n], '='); eq >= 0 {
			n = eq + 1
		}
		prefix, w = w[:n], w[n:]
	}
	return prefix + quoteValue(w)
}

func quoteValue(v string) string {
	if !strings.Contains(v, "'") {
		return "'" + v + "'"
	}
	if !strings.ContainsAny(v, "\"$`\\!") {
		return `"` + v + `"`
	}
	var b strings.Builder
	for i, piece := range strings.Split(v, "'") {
		if i > 0 {
			b.WriteString(`"'"`)
		}
		if piece != "" {
			b.WriteString("'" + piece + "'")
		}
	}
	return b.String()
}
