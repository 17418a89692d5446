package client

import (
	"encoding/json"
	"fmt"
	"time"
)

// The wire types of the local API (docs/openapi.yaml). They live here, not
// in package api, so that a client does not link the server and its
// sandbox.

// Health is GET /v1/health's answer.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

// Error is the body of every 4xx and 5xx answer, and the error the client
// returns for one.
type Error struct {
	// Status is the HTTP status; it is not part of the body.
	Status int `json:"-"`
	// Message says what is wrong.
	Message string `json:"error"`
	// Field names the request field at fault, or is empty.
	Field string `json:"field,omitempty"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("moat api: %d: %s (field %q)", e.Status, e.Message, e.Field)
	}
	return fmt.Sprintf("moat api: %d: %s", e.Status, e.Message)
}

// SessionRequest is the body of POST /v1/sessions. Every field is optional.
type SessionRequest struct {
	// Gate is strict, deny or off; it may not be looser than the
	// server's gate. Empty: the server's.
	Gate string `json:"gate,omitempty"`
	// Mode is the permission mode of the decisions (default, acceptEdits,
	// plan, bypassPermissions).
	Mode string `json:"mode,omitempty"`
	// TimeoutMS is a command's default timeout in milliseconds.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Write are existing paths the session's commands may also write
	// (absolute, or relative to the policy's working directory).
	Write []string `json:"write,omitempty"`
	// Cwd is the session's working directory (absolute), for the daemon
	// (moat daemon), whose policy for the user is resolved there; empty is
	// the user's home. moat serve accepts only its policy's directory.
	Cwd string `json:"cwd,omitempty"`
}

// Session describes an open session.
type Session struct {
	ID      string    `json:"id"`
	Gate    string    `json:"gate"`
	Mode    string    `json:"mode"`
	Cwd     string    `json:"cwd"`
	Created time.Time `json:"created"`
	// Commands are those the session holds: running, or finished in the
	// background and not read yet.
	Commands []Command `json:"commands"`
}

// SessionList is GET /v1/sessions's answer.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// Command describes a command a session holds.
type Command struct {
	ID           string `json:"id"`
	Command      string `json:"command"`
	Running      bool   `json:"running"`
	Backgrounded string `json:"backgrounded,omitempty"`
	ElapsedMS    int64  `json:"elapsed_ms"`
	OutputBytes  int64  `json:"output_bytes"`
}

// CommandRequest is the body of POST /v1/sessions/{id}/commands.
type CommandRequest struct {
	// ID names the command in the session; if empty the server picks one.
	// 1 to 64 of A-Z a-z 0-9 . _ -
	ID string `json:"id,omitempty"`
	// Command is the shell command line. Required.
	Command string `json:"command"`
	// TimeoutMS kills the command after this long (0: the session's).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Background returns at once; read the command with GET
	// /v1/sessions/{id}/commands/{cid}.
	Background bool `json:"background,omitempty"`
}

// CommandStatus is the answer for a background command: POST with
// background, GET and DELETE of /v1/sessions/{id}/commands/{cid}.
type CommandStatus struct {
	ID      string `json:"id"`
	Running bool   `json:"running"`
	// Output is the output since the last read.
	Output string `json:"output"`
	More   bool   `json:"more,omitempty"`
	// Result is the command's "finished" event once it has finished; the
	// session then forgets the command.
	Result *Event `json:"result,omitempty"`
}

// RawCommandStatus is CommandStatus with the result as the server wrote
// it (every field of the "finished" event, in its JSON form).
type RawCommandStatus struct {
	ID      string          `json:"id"`
	Running bool            `json:"running"`
	Output  string          `json:"output"`
	More    bool            `json:"more,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// Event is one line of a command's NDJSON stream: the events of
// docs/session.schema.json (started, output, progress, backgrounded,
// finished), with the command's id as a string.
type Event struct {
	ID    string `json:"id"`
	Event string `json:"event"`

	// started
	Command    string `json:"command,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Background bool   `json:"background,omitempty"`
	// output
	Data string `json:"data,omitempty"`
	// output, progress, finished
	Bytes           int64 `json:"bytes,omitempty"`
	Lines           int64 `json:"lines,omitempty"`
	ElapsedMS       int64 `json:"elapsed_ms,omitempty"`
	StreamTruncated bool  `json:"stream_truncated,omitempty"`
	// backgrounded
	Reason string `json:"reason,omitempty"`

	// finished (and Cwd for started)
	ExitCode     int             `json:"exit_code"`
	IsError      bool            `json:"is_error"`
	Message      string          `json:"message,omitempty"`
	Output       string          `json:"output"`
	OutputFile   string          `json:"output_file,omitempty"`
	Cwd          string          `json:"cwd"`
	Violations   json.RawMessage `json:"violations,omitempty"`
	Signal       int             `json:"signal,omitempty"`
	TimedOut     bool            `json:"timed_out,omitempty"`
	Interrupted  bool            `json:"interrupted,omitempty"`
	OutputBytes  int64           `json:"output_bytes,omitempty"`
	OutputLines  int64           `json:"output_lines,omitempty"`
	Truncated    bool            `json:"truncated,omitempty"`
	Binary       bool            `json:"binary,omitempty"`
	Notes        []string        `json:"notes,omitempty"`
	Backgrounded string          `json:"backgrounded,omitempty"`
	Refused      *Refused        `json:"refused,omitempty"`
	Error        string          `json:"error,omitempty"`
	DurationMS   int64           `json:"duration_ms,omitempty"`
}

// Refused is the gate's decision on a command it did not run.
type Refused struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	Rule     string `json:"rule,omitempty"`
}

// DecideRequest is the body of POST /v1/decide.
type DecideRequest struct {
	Command string `json:"command"`
	// Cwd is the command's working directory (absolute); empty: the
	// policy's.
	Cwd string `json:"cwd,omitempty"`
	// Mode is the permission mode; empty: default.
	Mode string `json:"mode,omitempty"`
}

// Decision is POST /v1/decide's answer: what moat check --json prints.
type Decision struct {
	Decision   string          `json:"decision"`
	Reason     string          `json:"reason"`
	Rule       *string         `json:"rule"`
	ReadOnly   bool            `json:"readonly"`
	Warnings   []string        `json:"warnings"`
	Suggestion *string         `json:"suggestion"`
	SedEdit    json.RawMessage `json:"sed_edit"`
	Kind       string          `json:"kind"`
}

// RunRequest is the body of POST /v1/run: one command in a sandbox of its
// own, with the caller's descriptors as its stdio (moat run through moatd).
type RunRequest struct {
	// Argv is the command (Argv[0] looked up in the PATH of Env when it
	// holds no slash). Required.
	Argv []string `json:"argv"`
	// Env is the command's environment before moat filters credentials out
	// of it (the caller's own). Required: the server never gives its own.
	Env []string `json:"env"`
	// Cwd is the working directory (absolute); the daemon resolves its
	// policy for the user there. Empty: the user's home (daemon), the
	// policy's (moat serve).
	Cwd string `json:"cwd,omitempty"`
	// Write are existing paths the command may also write.
	Write []string `json:"write,omitempty"`
	// TimeoutMS, if set, ends the process tree after that long (it can
	// only shorten the policy's timeout).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// RunTerminal is the Event of the line that hands the client the command's
// pty master.
const RunTerminal = "terminal"

// RunEnd is the last line the server sends on a POST /v1/run connection:
// how the command ended, or why it never ran.
type RunEnd struct {
	// Event is "exit" or "error" on the line that ends the run. A line
	// with Event "terminal" (RunTerminal) comes before it when the command
	// has a terminal: it carries the command's pty master (SCM_RIGHTS),
	// which the client relays to its own terminal (RunAttached does).
	Event string `json:"event"`
	// ExitCode is the command's status (128+N for signal N, 124 for the
	// timeout); for an error, moat's own exit code for it (125 for moat's
	// errors, 126/127 when the command cannot be executed / is not found).
	ExitCode int  `json:"exit_code"`
	TimedOut bool `json:"timed_out,omitempty"`
	// TimeoutMS is the timeout that ended it, when TimedOut.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Violations are the run's refusals as its report shows them (a JSON
	// array of the runtime's policy.Violation).
	Violations json.RawMessage `json:"violations,omitempty"`
	// Skipped, Warnings and Notes are lines for the user (best effort,
	// warnings of the run, notes on the policy).
	Skipped  []string `json:"skipped,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	// Error says why the command never ran (Event "error").
	Error string `json:"error,omitempty"`
}

// CLIRunRequest is the body of POST /v1/cli/run: a whole `moat run`
// command line, which the server (moat serve, never moatd) resolves and
// runs as `moat run` would in the caller's process. moat's own C client
// sends it before its Go runtime starts (MOAT_SERVER, docs/API.md). The
// server takes it only when it shares every process-wide input of moat
// with the caller; otherwise it answers 409 and the caller runs moat
// itself.
type CLIRunRequest struct {
	// Args are the arguments after "run" (flags and the command).
	Args []string `json:"args"`
	// Cwd is the caller's working directory (absolute). Required.
	Cwd string `json:"cwd"`
	// Env is the caller's whole environment. Required.
	Env []string `json:"env"`
	// Umask is the caller's umask. Required.
	Umask *int `json:"umask"`
	// Rlimits are the caller's resource limits, [soft, hard] for each
	// resource in the kernel's order (RLIMIT_CPU = 0 ...). Required.
	Rlimits [][2]uint64 `json:"rlimits"`
	// Gid and Groups are the caller's group and supplementary groups.
	Gid    *int  `json:"gid"`
	Groups []int `json:"groups"`
}

// ProofHeader carries the server's proof, which every request of moat
// serve but GET /v1/health and POST /v1/cli/hello must show, and every
// request on moat mcp's unix socket: the token in the name of a memfd the
// server's process holds open ("/memfd:moat-serve-proof-TOKEN" in
// /proc/PID/fd). Only a process that may inspect the server's process
// (ptrace read access: the same user, not confined by Landlock or the
// like) can read it. A Client made by New sends it by itself (Proof
// reads it).
const ProofHeader = "X-Moat-Proof"

// CLIProofHeader is ProofHeader (POST /v1/cli/run asked for it first).
const CLIProofHeader = ProofHeader

// ProofMemfdPrefix begins the name of the server's memfd, after "/memfd:":
// the token follows.
const ProofMemfdPrefix = "moat-serve-proof-"

// CLIRunUpgrade is the protocol POST /v1/cli/run switches its connection
// to: the client sends its descriptors 0-2 (one SCM_RIGHTS message, one
// byte of data), then signal lines ({"signal":N}); the server writes
// moat's messages to the client's descriptors itself and sends one
// CLIRunEnd line when the run has ended.
const CLIRunUpgrade = "moat-cli-run"

// CLIRunEnd is the last line of POST /v1/cli/run: moat run's exit status,
// and an error the server could not write to the client's stderr (its
// descriptors never came).
type CLIRunEnd struct {
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error,omitempty"`
}
