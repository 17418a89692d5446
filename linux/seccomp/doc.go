// Package seccomp compiles moat's seccomp filter with libseccomp and exports
// it as a raw BPF program (an array of struct sock_filter). Stage 2 loads
// it as the last step before exec, on the command's own thread (no TSYNC:
// nothing else in the sandbox shares that thread).
//
// # What it owns
//
//   - Build: the filter for a set of Options (unix sockets refused, brokered
//     or allowed; refusals answered EPERM or sent to the supervisor as user
//     notifications; filesystem writes notified for violation reports; a
//     mode with S_ISUID or S_ISGID always answered EPERM, openat2 ENOSYS,
//     and every syscall number above LastReviewed ENOSYS: the filter is a
//     deny list, and a call a newer kernel adds has not been reviewed).
//   - The lists: Denied syscalls, WriteSyscalls, and Number (a syscall's
//     native number, for the supervisor's observer).
//
// Without cgo (no libseccomp) the package is empty and moat has no stage 2.
//
// # What it must not import
//
// linux/nsinit or anything that launches processes: it only compiles.
package seccomp
