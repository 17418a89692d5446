// Package shell runs an agent's shell commands the way the seeds' Bash tool
// does, in one sandbox session: it builds the command string, snapshots the
// user's shell, tracks the working directory and the exported environment,
// caps and persists output, interprets exit codes, extracts hints, and runs
// commands in the background.
//
// # What it owns
//
//   - The Runner interface (runner.go): the only way the package starts a
//     process. The session sandbox implements it; shell never runs anything
//     itself. stdout and stderr share one descriptor; descriptor 3 is a side
//     channel for the working directory, the environment and the snapshot's
//     state, and is treated as untrusted.
//   - Shell detection (Detector) and the Provider interface (bash, zsh).
//   - The snapshot (snapshot.go): taken once per session through the Runner,
//     inside the sandbox; aliases, functions without the completion ones,
//     options, PATH and an rg shim; checked on every command and taken again
//     when it vanished; a login shell when it cannot be taken.
//   - Building the command string (build.go), in the seeds' stages: the
//     Windows 2>nul rewrite, the stdin < /dev/null decision and its place in
//     a pipeline, single quoting for eval, the snapshot, the session's
//     environment, extglob off, eval, the optional prefix.
//   - Session (session.go, task.go): Run, the working directory (pwd -P
//     after each command, recovered to the start directory when deleted),
//     environment changes made by export, output limits (output.go), exit
//     code semantics (semantics.go), hints (hints.go), display kinds from
//     permissions, progress, background commands (requested, by the user,
//     automatic), Read, Wait, Kill.
//   - sed -i 's/old/new/' FILE previewed as a file edit with a diff, computed
//     inside the sandbox (sededit.go, diff.go).
//
// The JSON-lines protocol over a Session is package shell/jsonl
// (docs/SESSION.md).
//
// # Trust
//
// Everything a process returns is untrusted: the merged output is capped in
// memory and on disk, the side channel is capped and parsed as data (the
// exported environment is parsed with the shell parser, never evaluated on
// the host), and paths from it are only ever used inside later scripts,
// quoted, after validation; a report is used only whole, exactly as the
// shell writes it, from a shell that exited (parseCommandReport). The host
// opens no file the sandbox can write: the snapshot is the host's copy of
// what the snapshot script wrote, handed to each command on a descriptor
// nothing can write (Proc.Stdin); long output is written by the host, with
// O_EXCL, into a directory the sandbox must not be able to write
// (Config.OutputDir).
//
// # What it must not import
//
// The platform packages (linux/, darwin/, bpf/) and golang.org/x/sys/unix:
// the sandbox is reached through Runner only (deps_test.go). Its tests run
// real bash on the host through shell/internal/hostrun, which no non-test
// package imports.
package shell
