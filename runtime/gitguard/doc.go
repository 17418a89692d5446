// Package gitguard keeps a sandboxed command from leaving git state behind
// that makes the user's own git run a program later, on the host, outside
// the sandbox: a core.fsmonitor or core.hooksPath in a config, a hook, a
// filter driver, a .git file or commondir pointing at a planted repository,
// a bare repository planted where git looks for one. It also keeps the
// command from writing the settings files moat itself reads.
//
// moat's mounts keep the control files of the repositories that exist when
// a command starts read-only. What they cannot express (a repository the
// command creates, a directory it turns into a bare repository, a HEAD it
// corrupts so that git looks elsewhere) is found after the command ends by
// Audit, which walks the writable trees and takes out what was changed
// during the run and would run a program: risky config entries are removed
// (the rest of the file kept), hooks and redirections moved to a quarantine
// directory, each reported as a finding.
//
// # What "changed during the run" means
//
// A file's inode change time (ctime) cannot be set by a program, only by
// the kernel when the inode changes (a write, a rename, a new link). So a
// file whose ctime is at or after the run's start was changed during the
// run, or by the host meanwhile; a file older than that is the user's.
//
// # Reading git the way git does
//
// ParseConfig follows git's own config parser (config.c), and is checked
// against the installed git on generated and fuzzed input: a file git reads
// as core.fsmonitor is read as core.fsmonitor here, or refused (and then
// treated as hostile). Risk is an allow-list: a config section moat does
// not know is a risk.
//
// The package imports only the standard library.
package gitguard
