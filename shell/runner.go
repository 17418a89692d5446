package shell

import (
	"context"
	"io"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Runner starts processes inside one sandbox session. It is the only way
// this package runs anything: Session never starts a process itself, so
// nothing runs unsandboxed unless the Runner does so.
//
// A Runner must be safe for concurrent use: a session may run several
// commands at once (background commands, a snapshot retaken while another
// command runs).
type Runner interface {
	// Start starts p and returns at once. ctx bounds the start only: the
	// process lives until it exits or Kill is called.
	Start(ctx context.Context, p Proc) (Process, error)
}

// Proc is one process to start inside the sandbox.
type Proc struct {
	// Argv is the program and its arguments, e.g. {"/bin/bash", "-c",
	// script}. Argv[0] is an absolute path inside the sandbox.
	Argv []string
	// Env is the complete environment of the process (as exec.Cmd.Env).
	// The runner may remove variables its policy forbids and add the ones
	// the sandbox needs (proxy settings, TMPDIR).
	Env []string
	// Dir is the working directory inside the sandbox.
	Dir string
	// Stdin, if set, is what the process reads on its standard input: the
	// session hands each command the shell snapshot this way. The runner
	// must give it on a descriptor that nothing can write, however it is
	// reached (a pipe reopened through /proc/PID/fd/0 is writable; on Linux
	// a sealed memfd is not: shell/internal/sealed). If nil, standard
	// input is empty.
	Stdin []byte
	// Output receives what the process writes to its standard output and
	// standard error. The runner gives descriptors 1 and 2 the same pipe,
	// so the order of the two streams is kept at the descriptor level, as
	// a terminal shows it. Calls to Output.Write never overlap.
	Output io.Writer
	// Report receives what the process writes to descriptor 3: the side
	// channel the session's scripts use for the working directory, the
	// exported environment and the snapshot's state. The runner must give
	// descriptor 3 as something no other process can reopen through
	// /proc/PID/fd (a socket, not a pipe: a program the command ran forged
	// a report through a pipe's saved copy; shell/internal/reportfd). The
	// session still treats it as untrusted (whole or refused, capped,
	// validated). Calls to Report.Write never overlap each other (they may
	// overlap calls to Output.Write).
	Report io.Writer
}

// The standard input of every process is Proc.Stdin, or empty (/dev/null
// or a closed pipe): commands never wait for input that will not come.

// Process is a started process.
type Process interface {
	// Wait waits for the process to exit. It returns once the process has
	// exited and everything written to descriptors 1, 2 and 3 before that
	// has been delivered to Output and Report; processes the command left
	// behind must not keep Wait from returning (the runner kills them, or
	// stops reading from them). The error is the runner's own failure, not
	// a non-zero exit status. Wait is called once.
	Wait() (Exit, error)
	// Kill kills the process and every process it started. It may be
	// called at any time, concurrently with Wait, more than once; after
	// the process exited it does nothing.
	Kill() error
}

// Exit is how a process ended.
type Exit struct {
	// Code is the exit status, or 128+N when signal N ended the process
	// (as a shell reports it).
	Code int
	// Signal is the signal that ended the process, 0 if none.
	Signal int
	// TimedOut is set when a limit of the runner's own ended the process
	// (the session's timeout is reported separately).
	TimedOut bool
	// Violations are what the sandbox refused while the process ran.
	Violations []policy.Violation
}
