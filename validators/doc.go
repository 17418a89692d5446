// Package validators decides whether a shell command string is safe to
// analyse, on a real bash AST (mvdan.cc/sh/v3/syntax).
//
// # What it owns
//
//   - ParseForSecurity: a command becomes simple commands plus redirects, or
//     is TooComplex, or Unavailable. Only Simple commands can be allowed.
//   - The chain of security validators from the seeds; each answers with a
//     policy.Decision: Allow (early allow), Passthrough or Ask.
//
// # What it must not import
//
// Pure Go: never linux/, darwin/, bpf/ or golang.org/x/sys/unix.
package validators
