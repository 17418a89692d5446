// Package enforce is the contract between moat's runtime and the platform
// packages that enforce a policy (linux/, darwin/): what the runtime asks
// for (a Launch), what it gets back (a Process, then an Exit), and the typed
// errors and skipped protections both sides reason about.
//
// It holds types only. The runtime owns the lifecycle around a launch (the
// proxy, live network updates, signals, the timeout, the terminal relay, the
// choice of tier, the git audit); an enforcer owns the kernel side: it turns
// the policy into mounts, filters and rules, starts the command under them,
// and reports what it refused.
//
// It imports only the standard library and runtime/policy.
package enforce

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Enforcer builds sandboxes on one platform.
type Enforcer interface {
	// Start builds the sandbox and starts the command in it. On success the
	// command runs (or is about to) and the caller must Wait for it and
	// Close the process; on failure nothing ran and everything the attempt
	// made is already cleaned up.
	Start(ctx context.Context, l *Launch) (Process, error)
	// Describe resolves a policy as Start would, without running anything,
	// and reports what this host enforces of it.
	Describe(p *policy.Policy, stateDir string) (*Description, error)
}

// ClientDescriber is an Enforcer that can describe a policy for another
// user (moatd's client): every look the plan takes is taken with that
// user's credentials.
type ClientDescriber interface {
	DescribeAs(p *policy.Policy, stateDir string, as *Identity) (*Description, error)
}

// SessionEnforcer keeps one sandbox for many commands: the namespaces,
// mounts and proxy are set up once, and each command is a new process tree
// in it, confined like a single command (capabilities, no_new_privs,
// Landlock, seccomp), with its own violations, exit and kill.
type SessionEnforcer interface {
	// StartSession builds the sandbox; Launch.Argv is not used (and
	// Launch.Terminal must be nil). On failure nothing is left.
	StartSession(ctx context.Context, l *Launch) (Session, error)
}

// Session is one long-lived sandbox.
type Session interface {
	// Exec starts a command in the sandbox. The returned process's Close
	// does nothing: the session owns what was made.
	Exec(c *Command) (Process, error)
	// Footprint is what commands of the session could write, and whether
	// any wrote.
	Footprint() Footprint
	// Done is closed when the sandbox has ended (Close, or it died).
	Done() <-chan struct{}
	// Close ends every command and the sandbox, and releases what the
	// session made on the host.
	Close() error
}

// Command is one command of a session.
type Command struct {
	// Argv is the command; Argv[0] is looked up in Env's PATH when it holds
	// no slash.
	Argv []string
	// Env is its environment before filtering (credentials removed, the
	// proxy's variables set, as for a single command).
	Env []string
	// Dir is its working directory (absolute, as the sandbox sees it).
	Dir string
	// Stdio are its descriptors 0, 1 and 2 (none nil); FD3, if set, is its
	// descriptor 3.
	Stdio [3]*os.File
	FD3   *os.File
	// Report receives this command's refusals (nil: the session's).
	Report func(policy.Violation)
}

// Mode is how much of the sandbox a launch builds. Anything but Full is
// only ever asked for with best effort, and reported.
type Mode uint8

const (
	// Full is every layer the platform has.
	Full Mode = iota
	// HostProc shows the host's /proc instead of a new one (a container
	// that refuses a new procfs: enableWeakerNestedSandbox).
	HostProc
	// NoNamespaces confines the command with what needs no namespace (a
	// system that refuses user namespaces).
	NoNamespaces
)

func (m Mode) String() string {
	switch m {
	case HostProc:
		return "host-proc"
	case NoNamespaces:
		return "no-namespace"
	}
	return "full"
}

// Launch is what the runtime asks an enforcer to start.
type Launch struct {
	// Policy is validated. Required.
	Policy *policy.Policy
	// Argv is the command; Argv[0] is looked up in the command's PATH when
	// it holds no slash.
	Argv []string
	// Env is the command's environment before filtering.
	Env []string
	// Stdio are the command's descriptors 0, 1 and 2 (none is nil). When
	// Terminal is set, some of them were the caller's terminal: the
	// enforcer gives the command a pseudo-terminal of its own in place of
	// each descriptor Terminal.Mask names (the runtime passes /dev/null
	// there, never the caller's terminal), and hands its master to
	// OnTerminal.
	Stdio    [3]*os.File
	Terminal *Terminal
	// OnTerminal receives the pty master (the runtime relays it).
	OnTerminal func(master *os.File)
	// StateDir is moat's state directory (journal, caches).
	StateDir string
	// Mode says how much to build.
	Mode Mode
	// Proxy serves the listeners the enforcer makes for the command's
	// route out. Required when the policy has no external proxy.
	Proxy Proxy
	// Report receives every refusal as it happens.
	Report func(policy.Violation)
	// Planned, if set, is called once the enforcer knows what the command
	// will be able to write, before the command can run; an error fails
	// the launch.
	Planned func(Footprint) error
	// Log receives debug logs (never nil).
	Log *slog.Logger
	// Trace, if set, is told each phase of the launch as it happens (where
	// start-up time goes: MOAT_TRACE=1).
	Trace func(phase string)
	// As, if set, is the user the sandbox runs as: a root supervisor
	// (moatd) builds the sandbox for an unprivileged client, and every
	// process of the sandbox has the client's credentials, never root's.
	// Only root may set it; nil runs as the calling process's user.
	As *Identity
}

// Identity is a user a root supervisor runs a sandbox as (Launch.As): the
// ids come from the kernel (the client socket's SO_PEERCRED and
// SO_PEERGROUPS: the client process's own gid and groups, never more than
// it has), the home and name from the password database, never from a
// request body.
type Identity struct {
	Uid, Gid int
	// Groups are the supplementary groups (the primary one may be among
	// them).
	Groups []int
	// Home is the user's home directory (the policy's ~).
	Home string
	// Name is the user name (logs, messages).
	Name string
	// Rlimits are the client process's resource limits, soft and hard,
	// indexed by resource (RLIMIT_CPU ...), or nil: the sandbox gets none
	// above them (moatd, whose own are root's).
	Rlimits [][2]uint64
	// Nice and OOMScoreAdj are the client process's nice value and
	// oom_score_adj, or nil: the sandbox's are never below them.
	Nice, OOMScoreAdj *int
	// Umask is the client process's file mode creation mask, or nil: the
	// sandbox's is the client's, not the daemon's.
	Umask *int
}

// Terminal describes the caller's terminal: which of the descriptors 0-2
// are terminals (bit i for descriptor i; at least one is set, not always
// stdin's) and its size.
type Terminal struct {
	Mask       uint32
	Rows, Cols uint16
}

// Proxy is moat's proxy for one run, served by the runtime. The enforcer
// decides where the command reaches it and gives it the listeners.
type Proxy interface {
	// Serve answers connections on l until the run ends (it takes l).
	// moat's own server answers HTTP and SOCKS5 on any listener; socks
	// says which one the command was told this is (an external proxy the
	// policy names has a port for each).
	Serve(l net.Listener, socks bool)
	// RequireCredential makes the proxy accept only clients that present
	// the returned credential ("user:password"): for listeners that other
	// processes of the host can reach (the host's loopback).
	RequireCredential() (string, error)
	// Env is what the command needs to find the proxy at these addresses
	// (and the credential, if one is required). moatPath is the moat
	// binary the command can run (ssh's ProxyCommand).
	Env(httpAddr, socksAddr, moatPath string) []string
	// Allowed are the loopback destinations the policy names as literal
	// addresses ("127.0.0.1:3000") and the proxy's own rules allow (deny
	// entries, denied addresses and managed-only applied), which the
	// command may reach directly when it shares the host's network.
	Allowed() []string
}

// Process is a started sandboxed command.
type Process interface {
	// Wait waits until the command and every process it started ended. An
	// error means the command never ran (a *SetupError, an *ExecError).
	Wait() (*Exit, error)
	// Signal delivers a signal to the command (terminal signals to its
	// process group).
	Signal(sig syscall.Signal) error
	// Kill ends the whole process tree now.
	Kill() error
	// Footprint is what the command could write, and whether it did.
	Footprint() Footprint
	// Close releases what the launch made on the host (mount points,
	// cgroups, temporary files). Call it once, after Wait.
	Close() error
}

// NetworkSyncer is a Process whose kernel filter holds part of the network
// lists: with moat.shareNetwork, the loopback destinations (host:port
// literals of the allowed domains) the command reaches directly, not
// through the proxy. SyncNetwork sets them to allowed before a live update
// reaches the proxy; on an error the update must not be applied (a
// destination withdrawn from the proxy stayed reachable in the kernel:
// found by an attack pass).
type NetworkSyncer interface {
	SyncNetwork(allowed []string) error
}

// Readier is a Process that can tell when its sandbox is in place: Ready
// waits until the command's filesystem is built (or the launch failed, or
// the process ended) and returns the setup error if there was one. The
// runtime uses it to fall back with best effort on a failure that stage 2
// only finds after Start returned (a container that refuses a new /proc).
type Readier interface {
	Ready() error
}

// Exit is how the command ended.
type Exit struct {
	// Code is the exit status, or 128+N when signal N ended it.
	Code int
	// Signal ended the command, if not 0.
	Signal syscall.Signal
	// Skipped are protections this launch did not provide (its Mode, a
	// host that lacks a feature) with the reason.
	Skipped []Skip
}

// Footprint is what a command could do to the host's files.
type Footprint struct {
	// WritableRoots are the host directories the command could write
	// (not its private /tmp).
	WritableRoots []string
	// ReadOnly reports whether a path inside a writable root was read-only
	// to the command (a protection, a denyWrite), or nil if none was.
	ReadOnly func(path string) bool
	// ReadOnlyPaths lists them (for the runtime's announcement).
	ReadOnlyPaths []string
	// Hidden reports whether a path was hidden from the command
	// (denyRead, the default secrets), or is nil if none was.
	Hidden func(path string) bool
	// Placeholder reports whether path is one of the placeholders the
	// enforcer made on the host for the run (still the same inode), or
	// is nil if it made none.
	Placeholder func(path string) bool
	// Observed is true when every filesystem write of the command was
	// reported to the enforcer, and Wrote whether there was any (a command
	// that wrote nothing changed nothing).
	Observed, Wrote bool
}

// Skip is one protection that a launch did not provide.
type Skip struct {
	// Protection names it: one of the Protection constants.
	Protection Protection `json:"protection"`
	// Reason says why, and what that leaves open.
	Reason string `json:"reason"`
}

func (s Skip) String() string { return string(s.Protection) + ": " + s.Reason }

// Protection names a part of the sandbox a launch can leave out (a Skip).
// The names are stable (JSON, moat's messages): every Skip uses one of the
// constants below, never a literal (a test reads the sources).
type Protection string

// The protections an enforcer or the runtime may report as skipped.
const (
	// ProtectionNamespaces: the command shares the host's namespaces (the
	// no-namespace tier; macOS).
	ProtectionNamespaces Protection = "namespaces"
	// ProtectionPrivateTmp: no private /tmp (a TMPDIR of its own instead).
	ProtectionPrivateTmp Protection = "private-tmp"
	// ProtectionProcessIsolation: the host's processes are visible.
	ProtectionProcessIsolation Protection = "process-isolation"
	// ProtectionMandatory: the mandatory protections and denyWrite inside
	// writable paths.
	ProtectionMandatory Protection = "mandatory-protections"
	// ProtectionProc: the host's /proc instead of a new one (host-proc).
	ProtectionProc Protection = "proc"
	// ProtectionNetwork: the network is not confined, or only by a layer
	// other processes share (macOS).
	ProtectionNetwork Protection = "network"
	// ProtectionNetworkUDP: UDP and other non-TCP protocols go unconfined.
	ProtectionNetworkUDP Protection = "network-udp"
	// ProtectionNetworkLoopback: every loopback port of the host is open
	// to the command (allowLocalBinding without a namespace).
	ProtectionNetworkLoopback Protection = "network-loopback"
	// ProtectionLandlockScoping: signals and abstract sockets of host
	// processes (Landlock ABI < 6).
	ProtectionLandlockScoping Protection = "landlock-scoping"
	// ProtectionFileMetadata: modes, times and extended attributes of the
	// user's own files outside the writable paths (the no-namespace tier:
	// Landlock does not govern chmod, utimes, setxattr).
	ProtectionFileMetadata Protection = "file-metadata"
	// ProtectionHiddenListing: hidden directories can be listed.
	ProtectionHiddenListing Protection = "hidden-listing"
	// ProtectionUsernsSysctl: user.max_user_namespaces=0 inside (seccomp
	// alone refuses new user namespaces).
	ProtectionUsernsSysctl Protection = "userns-sysctl"
	// ProtectionViolations: refusals are enforced, not reported.
	ProtectionViolations Protection = "violations"
	// ProtectionSyscallFilter: no seccomp filter (macOS).
	ProtectionSyscallFilter Protection = "syscall-filter"
	// ProtectionProcessTree: no kernel object holds every process the
	// command started (macOS).
	ProtectionProcessTree Protection = "process-tree"
	// ProtectionResourceLimits: no memory or process-count limit (macOS).
	ProtectionResourceLimits Protection = "resource-limits"
	// ProtectionSandboxExec: the mechanism itself is deprecated (macOS's
	// sandbox-exec).
	ProtectionSandboxExec Protection = "sandbox-exec"
	// ProtectionLimitMemory, ProtectionLimitPids, ProtectionLimitCPU: a
	// limit the policy sets that this host cannot hold (best effort).
	ProtectionLimitMemory Protection = "limit-memory"
	ProtectionLimitPids   Protection = "limit-pids"
	ProtectionLimitCPU    Protection = "limit-cpu"
	// ProtectionLimitsDefault: moat's default limits (macOS).
	ProtectionLimitsDefault Protection = "limits-default"
)

// Description is what `moat policy` shows of a policy on this host.
type Description struct {
	Tier       string      `json:"tier"`
	Mechanisms []Mechanism `json:"mechanisms"`
	// Protected are the paths made read-only inside writable trees.
	Protected []string `json:"protected"`
	// Placeholders are mount points a run would create (and remove).
	Placeholders []string `json:"placeholders"`
	Notes        []string `json:"notes,omitempty"`
}

// Mechanism is one part of the sandbox and what enforces it here.
type Mechanism struct {
	Part     string `json:"part"`
	Enforced bool   `json:"enforced"`
	By       string `json:"by"`
	Note     string `json:"note,omitempty"`
}

// ---- errors ---------------------------------------------------------------

// ErrUnsupported is wrapped by every error that says this host or build
// cannot provide something.
var ErrUnsupported = errors.New("unsupported")

// UnsupportedFeatureError names a feature this host or build lacks and what
// would provide it.
type UnsupportedFeatureError struct {
	Feature string // "user namespaces", "a new procfs", "cgo (stage 2)"
	Need    string // how to get it, or what moat does instead
	Err     error  // the underlying failure, if any
}

func (e *UnsupportedFeatureError) Error() string {
	s := e.Feature + " unavailable"
	if e.Err != nil {
		s += " (" + e.Err.Error() + ")"
	}
	if e.Need != "" {
		s += ": " + e.Need
	}
	return s
}

func (e *UnsupportedFeatureError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrUnsupported}
	}
	return []error{ErrUnsupported, e.Err}
}

// Features the runtime reacts to (with best effort, by asking for another
// Mode): errors.Is finds them in an UnsupportedFeatureError's chain.
var (
	ErrNoUserNamespace = errors.New("this system refuses to create a user namespace")
	ErrNoProcfs        = errors.New("this system refuses a new procfs")
	ErrNoMounts        = errors.New("this system refuses mounts in a user namespace")
)

// SetupError is a failure to build the sandbox: nothing ran.
type SetupError struct {
	Step string // what was being done ("procfs on /proc", "mount over /x")
	Err  error  // the cause (a syscall.Errno, a wrapped error)
}

func (e *SetupError) Error() string {
	s := "sandbox setup failed"
	if e.Step != "" {
		s += ": " + e.Step
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *SetupError) Unwrap() error { return e.Err }

// ExecError is a command that could not be executed inside the sandbox.
type ExecError struct {
	Path string
	Err  syscall.Errno
}

func (e *ExecError) Error() string {
	if e.Err == syscall.ENOENT {
		return e.Path + ": command not found"
	}
	return e.Path + ": cannot execute: " + e.Err.Error()
}

func (e *ExecError) Unwrap() error { return e.Err }

// ExitCode is 127 for not found, 126 otherwise (as shells do).
func (e *ExecError) ExitCode() int {
	if e.Err == syscall.ENOENT {
		return 127
	}
	return 126
}

// Since is when a run began for the purpose of "changed during the run": a
// second before start, rounded down, so that filesystems with one-second
// timestamps and the kernel's coarse clock cannot make a change of the run
// look older.
func Since(start time.Time) time.Time {
	return start.Truncate(time.Second).Add(-time.Second)
}

// Check is one fact moat doctor reports about this host: a kernel or
// container feature a layer of the sandbox needs.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Fix says what would provide it, when it is missing.
	Fix string `json:"fix,omitempty"`
}

// Prober is an enforcer that can list the host facts it depends on.
type Prober interface {
	Probe(stateDir string) []Check
}
