// Package nsinit is stage 2 of moat's Linux launch path: C code that runs in
// a constructor, before the Go runtime starts, when the supervisor re-execs
// its own binary inside new namespaces (the runc nsexec pattern), plus the Go
// encoder of the plan that code follows.
//
// # What it owns
//
//   - nsinit.c: pid 1 of the sandbox (init: lo up, listeners, reaping,
//     signal forwarding, clean-up when the supervisor dies) and the command's
//     process (mount namespace, mounts, pty, capabilities, no_new_privs,
//     Landlock, seccomp, exec). It decides nothing: it performs the plan's
//     operations in order and reports the first failure.
//   - plan.h / plan.go: the record format, mirrored in C and Go.
//
// Any binary that launches sandboxes must link this package (the linux
// package imports it), because the supervisor re-execs /proc/self/exe.
//
// # What it must not import
//
// Only the standard library: it is linked into every process that starts.
package nsinit
