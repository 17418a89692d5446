// Package settings reads the two settings formats moat accepts, unchanged:
// the npm sandbox runtime's file (~/.srt-settings.json) and Claude Code's
// settings.json chain (managed, --settings, local project, project, user),
// and builds one policy.Policy from them.
//
// # What it owns
//
//   - Finding the files, their precedence, and the merge: lists merge across
//     sources, a scalar comes from the strongest source that sets it, and
//     managed-only switches (allowManagedDomainsOnly,
//     allowManagedReadPathsOnly, allowManagedPermissionRulesOnly) are
//     honoured only from managed settings (the managed file and its
//     managed-settings.d drop-ins).
//   - What a weaker file may not do: a project's file may not weaken the
//     sandbox for whoever runs moat in it (projectWidens) nor make readable
//     what a deny rule or a default secret hides, and no file re-allows
//     what a stronger one denies (guard.go, reach.go).
//   - The path forms of each format (srt: absolute, ~/, relative to the
//     working directory; Claude Code rules: //abs, ~/, /relative-to-the-file,
//     relative to the working directory).
//   - Errors that name the file, the field and the reason (*Error). Unknown
//     fields in the sections moat reads, wrong types, unsafe values and
//     features moat cannot provide are refused, never ignored.
//
// # What it must not import
//
// Only the standard library and runtime/policy: never linux/, darwin/, bpf/
// or golang.org/x/sys/unix.
package settings
