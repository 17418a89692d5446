package darwin

import (
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Spec is one command to run under Seatbelt. Its fields follow
// enforce.Launch, so that an enforce.Enforcer for macOS adapts one to the
// other field by field. Like Launch, it has no timeout and no signals:
// the runtime, the caller, owns both (darwin has no lifecycle of its own).
type Spec struct {
	// Policy is validated. Required.
	Policy *policy.Policy
	// Argv is the command; Argv[0] is looked up in the command's PATH
	// (after the environment filter) when it holds no slash.
	Argv []string
	// Env is the command's environment before filtering: credentials are
	// removed (policy.FilterEnv), the proxy's variables and TMPDIR set.
	Env []string
	// Stdio are descriptors 0, 1 and 2; a nil one is /dev/null.
	Stdio [3]*os.File
	// Terminal, when set, gives the command a pseudo-terminal of its own
	// in place of each descriptor Terminal.Mask names; OnTerminal receives
	// its master (the caller relays it). The command never holds a
	// descriptor of the caller's terminal.
	Terminal   *enforce.Terminal
	OnTerminal func(master *os.File)
	// Proxy serves the loopback listeners the run makes for the command's
	// route out. Required when the policy allows any destination.
	Proxy enforce.Proxy
	// MoatPath is the moat binary the command may run (ssh's
	// ProxyCommand); it is protected from writes. If "", os.Executable.
	MoatPath string
	// Report receives each refusal as the log reader sees it. If nil,
	// refusals are not reported (they are refused all the same).
	Report func(policy.Violation)
	// Planned, if set, is called with what the command will be able to
	// write (Process.Footprint) once the profile exists, before the
	// command starts; an error fails the start.
	Planned func(enforce.Footprint) error
	// StateDir is moat's state directory: never one of the writable roots
	// a Footprint names. Optional.
	StateDir string
	// Log receives debug logs. If nil, nothing is logged.
	Log *slog.Logger
	// SandboxExec and LogCommand are the tools run (if "",
	// /usr/bin/sandbox-exec and /usr/bin/log).
	SandboxExec, LogCommand string
	// TmpRoot is where the run's private TMPDIR is made (if "",
	// os.TempDir()).
	TmpRoot string
}

// Process is a started run: an enforce.Process (the runtime uses it as
// it is).
type Process struct {
	spec     Spec
	cmd      *exec.Cmd
	profile  *Profile
	marker   string
	tmpDir   string
	moatPath string         // the moat binary the command may run (Spec.MoatPath)
	skipped  []enforce.Skip // Unenforced

	// cleanup undoes what Start's steps made, last first: on a failed
	// Start, or once the command ended.
	cleanup []func()
	logDone chan struct{}
	stopLog func()
	lastLog atomic.Int64 // when the log reader last read a line (UnixNano)
	logSkip *enforce.Skip

	done chan struct{}
	exit *enforce.Exit
}

var _ enforce.Process = (*Process)(nil)

// Close does nothing: Wait already removed the TMPDIR, closed the
// listeners and stopped the log reader.
func (p *Process) Close() error { return nil }

// Profile is the profile the run uses.
func (p *Process) Profile() *Profile { return p.profile }

func (s *Spec) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}
