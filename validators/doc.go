// Package validators decides whether a shell command string is safe to
// analyse, on a real bash AST (mvdan.cc/sh/v3/syntax), and runs the seed's
// chain of security validators over it.
//
// # What it owns
//
//   - ParseForSecurity: a command becomes simple commands plus redirects, or
//     is TooComplex, or Unavailable. Only Simple commands can be allowed.
//     Input that mvdan.cc/sh and bash read differently is refused before or
//     after parsing (see "Agreement with bash"). Words are evaluated by
//     internal/shellword (mvdan.cc/sh/v3/expand with every dynamic
//     expansion refused), which permissions uses too.
//   - Check and Analyze: one parse, the five views (Views) computed once,
//     then the validator chain (Chain), in the seed's order. Each validator
//     answers with a policy.Decision: Passthrough (no objection), Ask with a
//     reason, or (git_commit only) an early Allow. Check never denies; a
//     non-Simple parse always asks.
//   - Result.Overridable tells the permission layer whether an objection is
//     about what the command visibly does (a plain redirection, a jq file
//     argument), which an explicit allow rule may answer, or about how the
//     command is read, which no rule should override.
//
// An Allow from git_commit means the security checks vouch for the command
// ("git commit -m <literal>"); the permission mode and rules still apply.
//
// # Agreement with bash
//
// The usual way validators are bypassed is a difference between what the
// validator parsed and what bash runs. The differential tests run every
// Simple parse whose words can be predicted through bash -c, with a PATH of
// argv-recording stubs, and compare the argv (and here-document stdin) bash
// produces with the parse; a grammar-driven fuzzer (FuzzBashAgreementGrammar)
// and a byte fuzzer (FuzzBashAgreement) drive it. The disagreements they
// found are refused: carriage returns, NUL, invalid UTF-8, comments ending
// in a backslash-newline or starting right after a quote, backslash-newline
// in unquoted here-documents, here-document lines inside $(...) that start
// with the delimiter and hold ')', and extended globs.
//
// # Limits
//
// Commands longer than MaxCommandBytes (the kernel's single-argument limit),
// brackets nested deeper than MaxNesting, and more than MaxSubcommands
// commands are TooComplex (the last keeps its commands so deny rules still
// apply). The cost of a decision is linear in the command's length.
//
// # What it must not import
//
// Pure Go: never linux/, darwin/, bpf/ or golang.org/x/sys/unix, and no cgo
// (deps_test.go checks it). It depends on runtime/policy for the Decision
// type, on mvdan.cc/sh/v3/syntax, and on internal/shellword, the one word
// evaluator it shares with the permission rules.
package validators
