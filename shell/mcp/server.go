// Package mcp serves a sandboxed shell over the Model Context Protocol with
// the official Go SDK: a bash tool whose commands go through moat's
// decision pipeline first and then run in one session sandbox, and tools
// to read and kill the commands that run in the background. docs/MCP.md
// describes the tools, the decisions and the transports.
//
// New builds the *mcp.Server of the SDK; the caller runs it on a transport
// (stdio, or the SDK's streamable HTTP handler) and closes the shell when
// it is done.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/moat-sandbox/moat/permissions"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/sandbox"
)

// Limits of the tools' inputs.
const (
	// MaxTimeoutMS is the longest timeout the bash tool accepts (10 min).
	MaxTimeoutMS = 600000
	// MaxCommandBytes is the longest command the bash tool accepts.
	MaxCommandBytes = 1 << 20
	// DefaultProgressBytes is how much output is streamed in progress
	// notifications per command (Options.ProgressBytes).
	DefaultProgressBytes = 1 << 20
	// maxChunk caps the output in one progress notification.
	maxChunk = 16 << 10
	// killWait is how long bash_kill waits for a killed command's result.
	killWait = 10 * time.Second
)

// newestElicitingVersion is the newest protocol version in which a server
// may send a request (an elicitation) while it handles a tool call; later
// versions replace that with input-required results (SEP-2322), which this
// server does not implement, so it does not offer them.
const newestElicitingVersion = "2025-11-25"

// Options configure the server. The zero value is usable.
type Options struct {
	// Name and Version are the server's implementation info; if empty,
	// "moat" and "dev".
	Name, Version string
	// ProgressBytes caps the output sent in progress notifications, per
	// command (the whole output is still in the result). If 0,
	// DefaultProgressBytes; if negative, progress notifications carry no
	// output, only counts.
	ProgressBytes int64
	// Logger receives debug logs. If nil, nothing is logged.
	Logger *slog.Logger
}

// BashInput is the bash tool's arguments.
type BashInput struct {
	Command         string `json:"command" jsonschema:"the shell command to run (bash), in the session's working directory"`
	Timeout         int64  `json:"timeout,omitempty" jsonschema:"kill the command after this many milliseconds (at most 600000; default: the session's, see bashSchema)"`
	RunInBackground bool   `json:"run_in_background,omitempty" jsonschema:"start the command in the background and return at once with its id; read it with bash_output, end it with bash_kill"`
	Description     string `json:"description,omitempty" jsonschema:"what the command does, in a few words (shown when the user is asked)"`
	// DangerouslyDisableSandbox is Claude Code's request to run the
	// command outside the sandbox: it counts in the decision as the
	// settings say (sandbox.allowUnsandboxedCommands), and moat runs the
	// command in its sandbox all the same.
	DangerouslyDisableSandbox bool `json:"dangerouslyDisableSandbox,omitempty" jsonschema:"ask to run the command outside the sandbox (Claude Code's switch): the user's settings decide whether the request counts (it takes autoAllowBashIfSandboxed's allowance away), and moat still runs the command inside its sandbox"`
}

// IDInput is the bash_output and bash_kill tools' arguments.
type IDInput struct {
	ID string `json:"id" jsonschema:"the id of a command running in the background (bash returned it)"`
}

// Result is the bash tool's structured content: the shell's result, and
// the decision that let the command run or refused it.
type Result struct {
	shell.Result
	// Decision is the permission pipeline's decision.
	Decision *policy.Decision `json:"decision,omitempty"`
	// Approved is "user" when the decision was ask and the user accepted
	// through elicitation.
	Approved string `json:"approved,omitempty"`
	// SuggestedRule is an allow rule the user may add to the settings so
	// that such commands run without asking.
	SuggestedRule string `json:"suggested_rule,omitempty"`
	// Sandbox says whether the settings' sandbox switches (enabled,
	// excludedCommands, a dangerouslyDisableSandbox request that
	// allowUnsandboxedCommands permits) would run the command in the
	// sandbox; moat runs it there either way.
	Sandbox *permissions.SandboxInfo `json:"sandbox,omitempty"`
}

// OutputResult is the bash_output tool's structured content.
type OutputResult struct {
	shell.ReadResult
}

type server struct {
	sh       *sandbox.Shell
	log      *slog.Logger
	progress int64
}

// New returns an MCP server whose tools run commands in sh. sh must have
// been opened with sandbox.GateOff: the server decides each command itself
// (allow runs it, deny refuses it, ask asks the user through elicitation
// when the client can, and refuses otherwise). Every command runs in sh's
// sandbox whatever the decision.
func New(sh *sandbox.Shell, opts *Options) *sdk.Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "moat"
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.ProgressBytes == 0 {
		o.ProgressBytes = DefaultProgressBytes
	}
	s := &server{sh: sh, log: o.Logger, progress: o.ProgressBytes}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var versions []string
	for _, v := range sdk.SupportedProtocolVersions() {
		if v <= newestElicitingVersion {
			versions = append(versions, v)
		}
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: o.Name, Title: "moat sandboxed shell", Version: o.Version}, &sdk.ServerOptions{
		Instructions: "Run shell commands with the bash tool: each command is checked against the user's permission rules " +
			"(allowed ones run, denied ones are refused, others are asked about) and runs in moat's kernel sandbox, " +
			"which refuses writes, reads and network access outside the user's policy and reports them in <sandbox_violations>. " +
			"The working directory and exported variables carry over between commands.",
		Logger:                    o.Logger,
		Capabilities:              &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
		SupportedProtocolVersions: versions,
	})
	f, t := false, true
	sdk.AddTool(srv, &sdk.Tool{
		Name:  "bash",
		Title: "Run a shell command in moat's sandbox",
		Description: "Run a bash command in a persistent shell session inside moat's sandbox. The working directory and " +
			"exported variables carry over between calls. The command is first decided by the user's permission rules: " +
			"allowed commands run, denied ones are refused, and the others run only if the user approves them. " +
			"Whatever runs is confined by the sandbox: writes, reads and connections the policy forbids fail, and are " +
			"listed in a <sandbox_violations> block. Output longer than the inline limit is saved to a file whose path " +
			"is given. A command still running after a while moves to the background (sleep excepted); " +
			"run_in_background starts it there: read it with bash_output and end it with bash_kill.",
		InputSchema: bashSchema(sh.Session.Timeout()),
		Annotations: &sdk.ToolAnnotations{Title: "Sandboxed bash", DestructiveHint: &t, OpenWorldHint: &t},
	}, s.bash)
	sdk.AddTool(srv, &sdk.Tool{
		Name:        "bash_output",
		Title:       "Read a background command",
		Description: "Return the output a background command (started by bash) printed since the last read, whether it still runs, and its result once it has finished.",
		InputSchema: idSchema("bash_output"),
		Annotations: &sdk.ToolAnnotations{Title: "Read a background command", ReadOnlyHint: true, DestructiveHint: &f, OpenWorldHint: &f},
	}, s.output)
	sdk.AddTool(srv, &sdk.Tool{
		Name:        "bash_kill",
		Title:       "Kill a background command",
		Description: "Kill a background command (started by bash) and every process it started, and return its result.",
		InputSchema: idSchema("bash_kill"),
		Annotations: &sdk.ToolAnnotations{Title: "Kill a background command", DestructiveHint: &t, IdempotentHint: true, OpenWorldHint: &f},
	}, s.kill)
	return srv
}

// bashSchema is BashInput's schema with its bounds, and the session's
// default timeout in the description of "timeout": a fixed "default
// 120000" told the model two minutes where moat mcp --timeout 2s killed
// the command after two seconds (pass 77).
func bashSchema(def time.Duration) *jsonschema.Schema {
	sc, err := jsonschema.For[BashInput](nil)
	if err != nil {
		panic(err) // a fixed type: cannot fail
	}
	one, max := 1, float64(MaxTimeoutMS)
	zero := 0.0
	sc.Properties["command"].MinLength = &one
	sc.Properties["command"].MaxLength = ptr(MaxCommandBytes)
	sc.Properties["timeout"].Minimum = &zero
	sc.Properties["timeout"].Maximum = &max
	sc.Properties["timeout"].Description = fmt.Sprintf("kill the command after this many milliseconds (at most %d; default %d)", MaxTimeoutMS, def.Milliseconds())
	return sc
}

func idSchema(tool string) *jsonschema.Schema {
	sc, err := jsonschema.For[IDInput](nil)
	if err != nil {
		panic(err)
	}
	one := 1
	sc.Properties["id"].MinLength = &one
	sc.Properties["id"].MaxLength = ptr(256)
	return sc
}

func ptr[T any](v T) *T { return &v }

// inputError is a tool error naming the field at fault.
func inputError(field, format string, a ...any) *sdk.CallToolResult {
	var r sdk.CallToolResult
	r.SetError(fmt.Errorf("invalid %q: %s", field, fmt.Sprintf(format, a...)))
	return &r
}

func (s *server) bash(ctx context.Context, req *sdk.CallToolRequest, in BashInput) (*sdk.CallToolResult, any, error) {
	// The schema already holds these; they are checked again so that the
	// handler never depends on the schema's validation.
	switch {
	case strings.TrimSpace(in.Command) == "":
		return inputError("command", "the command is empty"), nil, nil
	case len(in.Command) > MaxCommandBytes:
		return inputError("command", "longer than %d bytes", MaxCommandBytes), nil, nil
	case strings.ContainsRune(in.Command, 0):
		return inputError("command", "contains a NUL byte"), nil, nil
	case in.Timeout < 0 || in.Timeout > MaxTimeoutMS:
		return inputError("timeout", "%d ms is out of range (0 to %d)", in.Timeout, MaxTimeoutMS), nil, nil
	}
	cwd := s.sh.Session.Cwd()
	dec := s.sh.DecideRequest(ctx, permissions.Request{Command: in.Command, Cwd: cwd, DangerouslyDisableSandbox: in.DangerouslyDisableSandbox})
	d := dec.Decision.Final()
	s.log.Debug("mcp bash", "cmd", in.Command, "decision", d.Verdict.String(), "reason", d.Reason)
	res := Result{Decision: &d, SuggestedRule: dec.Suggestion, Sandbox: dec.Sandbox}
	switch d.Verdict {
	case policy.Allow:
	case policy.Deny:
		return s.refuse(in.Command, dec, res, "moat's permission rules deny this command: "+reasonOf(d)+".")
	default: // ask
		caps := req.ClientCapabilities()
		if caps == nil || caps.Elicitation == nil {
			msg := "moat's permission rules do not allow this command without asking the user (" + reasonOf(d) +
				"), and this MCP client cannot ask (it does not support elicitation)."
			return s.refuse(in.Command, dec, res, msg)
		}
		er, err := req.Session.Elicit(ctx, &sdk.ElicitParams{
			Message:         askMessage(in, cwd, dec),
			RequestedSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}},
		})
		switch {
		case err != nil:
			return s.refuse(in.Command, dec, res, "the user could not be asked about this command ("+err.Error()+").")
		case er.Action != "accept":
			return s.refuse(in.Command, dec, res, "the user did not approve it ("+er.Action+").")
		}
		res.Approved = "user"
	}

	// Run where it was judged: a concurrent call's cd while the user was
	// asked moved the session, and the approved command ran elsewhere
	// (through a symlink there, outside what the user saw; found by an
	// attack pass).
	sreq := shell.Request{Command: in.Command, Timeout: time.Duration(in.Timeout) * time.Millisecond, Background: in.RunInBackground, DecidedIn: cwd}
	if tok := req.Params.GetProgressToken(); tok != nil && !in.RunInBackground {
		sreq.Progress = s.progressFunc(ctx, req.Session, tok)
	}
	r, err := s.sh.Session.Run(ctx, sreq)
	if err != nil && r.ID == "" {
		if errors.Is(err, shell.ErrClosed) {
			err = errors.New("the session sandbox has ended")
		}
		var out sdk.CallToolResult
		out.SetError(fmt.Errorf("moat could not run the command: %w", err))
		return &out, nil, nil
	}
	res.Result = r
	return &sdk.CallToolResult{Content: content(r, Format(r)+outsideNote(dec.Sandbox)), StructuredContent: res, IsError: r.IsError}, nil, nil
}

// outsideNote is the line a result gets when the settings would have run
// the command outside the sandbox, or "".
func outsideNote(sb *permissions.SandboxInfo) string {
	if sb == nil || sb.Sandboxed {
		return ""
	}
	return "[note: the settings would run this command outside the sandbox (" + sb.Reason + "); moat ran it inside]\n"
}

func reasonOf(d policy.Decision) string {
	s := d.Reason
	if s == "" {
		s = d.Verdict.String()
	}
	if d.Rule != "" && !strings.Contains(s, d.Rule) {
		s += " [" + d.Rule + "]"
	}
	return s
}

// askMessage is what the user is shown when asked about a command.
func askMessage(in BashInput, cwd string, dec permissions.Result) string {
	var b strings.Builder
	b.WriteString("Run this command in moat's sandbox?\n\n")
	// The command as a block of its own, its control characters shown
	// (escape sequences, carriage returns), its lines numbered past the
	// first: a command drew a fake "Why you are asked" and hid its real
	// tail behind ESC[8m (found by an attack pass).
	lines := strings.Split(visible(in.Command), "\n")
	for i, l := range lines {
		if len(lines) > 1 {
			fmt.Fprintf(&b, "%3d| ", i+1)
		}
		b.WriteString(l)
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nIn: %s\n", visible(oneLine(cwd)))
	if in.Description != "" {
		fmt.Fprintf(&b, "\n(the agent says: %s)\n", visible(oneLine(in.Description)))
	}
	// The reason, the warnings and the suggested rule quote the command's
	// words: shown on one line each, the same way.
	fmt.Fprintf(&b, "\nWhy you are asked: %s\n", visible(oneLine(reasonOf(dec.Decision.Final()))))
	if sb := dec.Sandbox; sb != nil && !sb.Sandboxed {
		fmt.Fprintf(&b, "The settings would run it outside the sandbox (%s); moat runs it inside.\n", visible(oneLine(sb.Reason)))
	}
	for _, w := range dec.Warnings {
		fmt.Fprintf(&b, "Warning: %s\n", visible(oneLine(w)))
	}
	if dec.Suggestion != "" {
		fmt.Fprintf(&b, "To allow such commands from now on, add %s to the allow rules of moat's settings.\n", visible(oneLine(dec.Suggestion)))
	}
	b.WriteString("Accept runs it (still inside the sandbox); decline refuses it.")
	return b.String()
}

// visible shows the characters of s that policy.Invisible names (controls,
// format characters, the line and paragraph separators), newlines and
// tabs aside, as escapes.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case policy.Invisible(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}

// refuse is the result of a command that did not run.
func (s *server) refuse(command string, dec permissions.Result, res Result, why string) (*sdk.CallToolResult, any, error) {
	d := dec.Decision.Final()
	text := "Command not run: " + why
	if dec.Suggestion != "" && d.Verdict != policy.Deny {
		text += "\nThe user can allow such commands by adding the rule " + dec.Suggestion + " to the allow list of moat's settings (permissions.allow)."
	}
	res.Result = shell.Result{Command: command, ExitCode: -1, IsError: true, Message: text, Cwd: s.sh.Session.Cwd(),
		Kind: dec.Kind, Violations: []policy.Violation{}, Refused: &d}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, StructuredContent: res, IsError: true}, nil, nil
}

// progressFunc sends a command's output as progress notifications: each
// chunk of output (in pieces of at most maxChunk bytes, up to
// Options.ProgressBytes in all), and a line with the counts when no output
// came for a while.
func (s *server) progressFunc(ctx context.Context, ss *sdk.ServerSession, token any) func(shell.Progress) {
	var n float64
	var sent int64
	send := func(msg string) {
		n++
		if err := ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: msg}); err != nil {
			s.log.Debug("mcp progress", "err", err)
		}
	}
	return func(p shell.Progress) {
		room := s.progress - sent
		switch {
		case p.Chunk == "":
			send(fmt.Sprintf("[running for %s, %d bytes of output]", p.Elapsed.Round(time.Second), p.Bytes))
			return
		case s.progress < 0:
			send(fmt.Sprintf("[%d bytes of output]", p.Bytes))
			return
		case room <= 0:
			send(fmt.Sprintf("[%d bytes of output so far; the rest comes with the result]", p.Bytes))
			return
		}
		chunk := truncUTF8(p.Chunk, int(min(room, int64(len(p.Chunk)))))
		for chunk != "" {
			part := truncUTF8(chunk, maxChunk)
			if part == "" {
				break
			}
			chunk = chunk[len(part):]
			sent += int64(len(part))
			send(part)
		}
	}
}

// truncUTF8 returns the longest prefix of s of at most n bytes that does
// not end inside a UTF-8 sequence.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// content is a result's content: the text, and the image if the output was
// one.
func content(r shell.Result, text string) []sdk.Content {
	c := []sdk.Content{&sdk.TextContent{Text: text}}
	if r.Image != nil && len(r.Image.Data) > 0 {
		c = append(c, &sdk.ImageContent{Data: r.Image.Data, MIMEType: r.Image.MediaType})
	}
	return c
}

func (s *server) output(ctx context.Context, req *sdk.CallToolRequest, in IDInput) (*sdk.CallToolResult, any, error) {
	if strings.TrimSpace(in.ID) == "" {
		return inputError("id", "the id is empty"), nil, nil
	}
	rr, err := s.sh.Session.Read(in.ID)
	if err != nil {
		return inputError("id", "%v", unknown(err)), nil, nil
	}
	var b strings.Builder
	b.WriteString(rr.Output)
	if rr.Output != "" && !strings.HasSuffix(rr.Output, "\n") {
		b.WriteString("\n")
	}
	isErr := false
	switch {
	case rr.More:
		fmt.Fprintf(&b, "[more output is waiting: call bash_output again with id %s]\n", rr.ID)
	case rr.Running:
		fmt.Fprintf(&b, "[still running in the background with id %s]\n", rr.ID)
	case rr.Result != nil:
		// Finished and read whole: collect it, so that the session forgets it.
		s.sh.Session.Wait(ctx, rr.ID)
		r := *rr.Result
		b.WriteString(policy.Annotate(r.Violations))
		if r.OutputFile != "" {
			fmt.Fprintf(&b, "[output: %d bytes, %d lines; the whole of it is in %s]\n", r.OutputBytes, r.OutputLines, r.OutputFile)
		}
		b.WriteString(status(r))
		isErr = r.IsError
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: b.String()}}, StructuredContent: OutputResult{rr}, IsError: isErr}, nil, nil
}

func (s *server) kill(ctx context.Context, req *sdk.CallToolRequest, in IDInput) (*sdk.CallToolResult, any, error) {
	if strings.TrimSpace(in.ID) == "" {
		return inputError("id", "the id is empty"), nil, nil
	}
	if err := s.sh.Session.Kill(in.ID); err != nil {
		if errors.Is(err, shell.ErrUnknownID) {
			return inputError("id", "%v", unknown(err)), nil, nil
		}
		var out sdk.CallToolResult
		out.SetError(fmt.Errorf("kill %s: %w", in.ID, err))
		return &out, nil, nil
	}
	wctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	r, err := s.sh.Session.Wait(wctx, in.ID)
	if err != nil {
		var out sdk.CallToolResult
		out.SetError(fmt.Errorf("%s was killed, but its end was not seen within %v: %w", in.ID, killWait, err))
		return &out, nil, nil
	}
	// Its output and status line, as bash_output gives a finished
	// command's. Format takes a result with a background id for the
	// answer of a command just started in the background: the caller got
	// "Command was interrupted" and the advice to read and kill an id
	// the session has now forgotten, and neither the output nor the
	// exit status (pass 77).
	fin := r
	fin.BackgroundID = ""
	text := "Killed " + in.ID + ".\n" + Format(fin)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, StructuredContent: Result{Result: r}}, nil, nil
}

func unknown(err error) string {
	if errors.Is(err, shell.ErrUnknownID) {
		return "no background command has this id (it never existed, or its result was already returned)"
	}
	return err.Error()
}

// Format renders a result as the model receives it: the output (its
// <sandbox_violations> block included), where long output was saved, and a
// status line with the exit code, the verdict of the exit-code semantics
// and the working directory.
func Format(r shell.Result) string {
	var b strings.Builder
	if r.BackgroundID != "" {
		fmt.Fprintf(&b, "%s\nRead its output with bash_output {\"id\":%q}; end it with bash_kill {\"id\":%q}.\n", r.Message, r.BackgroundID, r.BackgroundID)
		return b.String()
	}
	out := r.Output
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	b.WriteString(out)
	if r.OutputFile != "" {
		fmt.Fprintf(&b, "[output: %d bytes, %d lines; the whole of it is in %s]\n", r.OutputBytes, r.OutputLines, r.OutputFile)
	}
	if r.Image != nil {
		fmt.Fprintf(&b, "[an image: %s]\n", r.Image.MediaType)
	}
	b.WriteString(status(r))
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "[note: %s]\n", n)
	}
	return b.String()
}

func status(r shell.Result) string {
	st := fmt.Sprintf("exit code %d", r.ExitCode)
	switch {
	case r.TimedOut:
		st += ", timed out"
	case r.Interrupted:
		st += ", interrupted"
	}
	if r.IsError {
		st += ", an error"
	}
	if r.Message != "" {
		st += ": " + r.Message
	}
	return fmt.Sprintf("[%s; cwd %s]\n", st, r.Cwd)
}
