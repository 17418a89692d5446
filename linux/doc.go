// Package linux runs a command inside a sandbox the Linux kernel enforces:
// new user, mount, pid, network, ipc and uts namespaces; the host read-only
// with the policy's writable paths bound back, hidden paths masked, moat's
// own /tmp, /dev and /proc; no capabilities, no_new_privs, Landlock as a
// second layer for writes, and seccomp last.
//
// # What it owns
//
//   - Run: the supervisor. It resolves the Policy into a filesystem plan
//     (plan.go, fsview.go, glob.go, scan.go), creates the placeholders the
//     plan needs (package journal), compiles the seccomp filter (package
//     seccomp), hands everything to stage 2 (package nsinit) in one plan,
//     relays the terminal, forwards signals, records violations (the seccomp
//     notification observer) and reports how the command ended.
//
// The setup order is in docs/ARCHITECTURE.md.
//
// # What it must not import
//
// validators/, permissions/ or darwin/: it enforces a Policy, it does not
// decide one.
package linux
