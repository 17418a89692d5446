// Package runtime is moat's entry point for programs: it runs an agent's
// shell commands in a sandbox the kernel enforces, with the policy a
// program builds or reads from the user's settings (package
// runtime/settings), and says what the sandbox refused. `moat run`, `moat
// session`, `moat serve` and `moat mcp` are built on it.
//
// # Entry points
//
//   - [Run] runs one command in a new sandbox and waits for it. The
//     [Result] has its exit status, the violations (what the sandbox
//     refused, grouped as a report), the protections best effort left out
//     and warnings. An error means nothing ran: an [*enforce.SetupError], an
//     [*enforce.ExecError] (126 or 127), an [*enforce.UnsupportedFeatureError]
//     (errors.Is finds [ErrUnsupported], or [enforce.ErrNoUserNamespace] and
//     the other refusals of the host), or a policy that does not validate
//     ([policy.ErrInvalid]). Cancelling the context kills the process tree;
//     [Request.Updates] changes the network lists while it runs.
//   - [NewSession] sets a sandbox up once (tens of milliseconds) and
//     [Session.Run] runs each command in it as a new process tree (a few
//     milliseconds), with its own exit status and violations; [Session.Close]
//     ends it. Package shell/sandbox puts moat's decisions and the agent
//     shell's behaviours (cd and export carried over, output caps, exit code
//     interpretation, background commands) on top: shell/sandbox.Open.
//   - [Describe] resolves a policy as Run would, without running anything,
//     and says what this host enforces of it (`moat policy`); [Doctor] probes
//     the host (`moat doctor`); [Seatbelt] renders a policy as the macOS
//     profile, on any platform.
//   - [Reexec] must be the first thing in the main function of any program
//     that calls Run or NewSession (see below).
//
// # Reexec
//
// A program that starts sandboxes begins so:
//
//	func main() {
//		if code, ok := runtime.Reexec(os.Args); ok {
//			os.Exit(code)
//		}
//		...
//	}
//
// The sandbox is built by re-executing the program's own binary
// (/proc/self/exe) in new namespaces: stage 2 (package linux/nsinit) is a C
// constructor linked, on Linux, into every binary that imports this
// package, which takes over before the Go runtime starts when the binary is
// re-executed so, and never returns to Go. When a
// supervisor dies (SIGKILL), the sandbox's init re-executes the binary once
// more with a clean-up command line, which Reexec handles (it removes the
// mount points the dead supervisor made on the host) and which a program's
// own flag parsing would refuse.
//
// Settings, policies and decisions are plain data: a zero-value field means
// the documented default, a nil *slog.Logger means no logging, a nil
// callback means nobody is told.
//
// # cgo
//
// On Linux the sandbox needs cgo twice: stage 2 (package linux/nsinit,
// nsinit.c) and the seccomp filter, compiled with libseccomp
// (github.com/seccomp/libseccomp-golang, package linux/seccomp). Building a
// host program therefore needs a C compiler and libseccomp's headers and
// library (Debian: gcc, libc6-dev, pkg-config, libseccomp-dev), and a C
// cross-compiler to cross-compile. moat's own binary is linked statically
// (the Makefile's `make build`):
//
//	CGO_ENABLED=1 go build -tags 'netgo osusergo' \
//		-ldflags '-linkmode external -extldflags "-static" -s -w' ./cmd/moat
//
// netgo and osusergo keep the standard library's name and user look-ups in
// Go, so the static binary does not depend on the C library's NSS modules.
//
// With CGO_ENABLED=0 everything still compiles (CI builds it), but there is
// no stage 2: Run and NewSession return an [*enforce.UnsupportedFeatureError]
// ("a sandbox stage 2 unavailable: this moat was built without cgo: ...",
// errors.Is(err, ErrUnsupported)) and nothing runs; Describe reports the
// tier "unavailable". On macOS Run confines each command with Seatbelt
// (package darwin, untested on a Mac, see docs/MACOS.md) and NewSession
// returns an UnsupportedFeatureError; on other platforms Run and
// NewSession return one.
//
// These packages are pure Go, with no cgo of moat's own, and build
// anywhere: darwin, permissions, validators, netproxy, runtime/policy,
// runtime/settings, runtime/enforce, shell, shell/jsonl and
// shell/api/client (a host that only decides commands, reads settings or
// talks to `moat serve` needs no cgo). runtime, shell/sandbox, shell/api and
// shell/mcp link the Linux enforcer.
package runtime
