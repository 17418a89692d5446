// Package darwin enforces a Policy on macOS with Seatbelt, the kernel
// sandbox behind sandbox-exec: it generates a profile from the same Policy
// the Linux enforcer reads, runs the command under it, and reads the
// sandbox's denials from the system log.
//
// # What it owns
//
//   - Generate: Policy (+ Options: the proxy's ports, the run's tag, the
//     paths resolved as the Mac sees them, the protections Survey found)
//     -> a Profile: SBPL text in which every string taken from the policy
//     is a parameter, and the -D definitions of those parameters. Deny by
//     default; reads everywhere but denyRead, the most specific rule
//     deciding as on Linux; writes only in allowWrite and the run's private
//     TMPDIR, minus denyWrite, minus what is unreadable, minus the
//     protections, minus renaming, removing or creating anything above a
//     protected path; no file flags or set-id bits anywhere; every deny
//     also in any case on a volume not known to be case-sensitive, and in
//     its spelling across a firmlink (/System/Volumes/Data/...); a
//     writable or socket path through a symlink planted in a writable
//     tree refused (internal/planted); network only to moat's proxy on the
//     host's loopback (inbound only with allowLocalBinding, unix sockets
//     only by path, resolved outside the writable trees); the
//     few system services, sysctl values and devices that git, node, python
//     and Go programs need; the run's own terminal and no other. Untagged:
//     it is built and tested on every platform.
//   - Survey: the disk search for what must stay read-only (mandatory
//     names, git control files), as the Linux enforcer's search finds it,
//     names matched with case folded (.GIT is .git on a Mac's volume).
//   - LogReader, ParseDenial, LogStreamArgs: the sandbox's log events
//     (log stream --style ndjson, the kernel's reports only) ->
//     policy.Violation. Untagged, tested with fixture lines.
//   - ShowProfile and Profile.Document: the profile of a policy as this
//     machine's disk and the Mac's path rules make it (for moat policy
//     --seatbelt on any platform).
//   - Describe and Limits: what macOS enforces of a policy and what it
//     cannot, with reasons (moat policy, moat doctor); Unenforced: what a
//     policy asks that macOS cannot give (a set memory, process or CPU
//     rate limit is refused unless best effort).
//   - Start (run_darwin.go, macOS only): the command under sandbox-exec
//     with the profile, the filtered environment, a private TMPDIR, the
//     proxy, the file size and CPU time rlimits (set by moat's binary
//     re-executed: Reexec), a new session and process group killed as a
//     whole, and a `log stream` reader attributing denials to the run by
//     its tag, then a sweep of what left the group. The timeout and
//     signals are the runtime's: darwin has no lifecycle of its own.
//     Elsewhere Start returns an error wrapping enforce.ErrUnsupported.
//
// # The runner's API
//
//	p, err := darwin.Start(ctx, darwin.Spec{
//		Policy: pol,                // validated
//		Argv:   []string{"npm", "test"},
//		Env:    os.Environ(),        // filtered: credentials removed
//		Stdio:  [3]*os.File{os.Stdin, os.Stdout, os.Stderr},
//		Proxy:  proxy,               // an enforce.Proxy: moat's proxy, served on loopback listeners the run makes
//		Report: report,              // each denial, as the log reader reads it
//	})
//	exit, err := p.Wait()          // an *enforce.Exit: Code, Signal, Skipped
//
// Spec mirrors enforce.Launch (Policy, Argv, Env, Stdio, Terminal and
// OnTerminal, Proxy, Report, Planned, StateDir, Log) and Process is an
// enforce.Process (Wait, Signal, Kill, Footprint, Close), so that the
// runtime's enforce.Enforcer for macOS (runtime/seatbelt.go) is a thin
// adapter of the Launch alone; the runtime owns the lifecycle (the
// timeout, signals, the terminal relay). The git audit after a run
// (runtime/gitguard) is the runtime's, as on Linux.
//
// Nothing in this package has ever run on a Mac: the generator is checked
// on Linux by an independent SBPL reader in the tests (sbpl_reader_test.go)
// against the cases every platform is held to (internal/policycases); the
// runner compiles for darwin and has never executed. docs/MACOS.md says
// what that leaves open and what to check on a first run.
//
// # What it must not import
//
// linux/, bpf/, netproxy/, validators/, permissions/, runtime/settings or
// the runtime package above it (deps_test.go): it enforces a Policy, it
// does not decide one. It imports runtime/policy, runtime/enforce (types),
// runtime/gitguard (the git config parser), internal/planted (the walk
// for planted symlinks, shared with linux/), internal/lazyre and the
// standard library (golang.org/x/sys/unix in the macOS-only files).
package darwin
