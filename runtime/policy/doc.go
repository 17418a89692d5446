// Package policy holds the plain data every part of moat shares: the
// sandbox Policy (filesystem, network, environment, limits and switches), the
// one Decision type of the command pipeline, and Violation.
//
// # What it owns
//
//   - Policy and its Validate method: the invariants enforcers rely on.
//   - Verdict and Decision: Passthrough (the zero value, "no opinion"), Allow,
//     Ask, Deny. No other package defines a second verdict type.
//   - Violation and the <sandbox_violations> annotation format.
//   - The mandatory protections: names that are never writable.
//
// # What it must not import
//
// Only the standard library. It never imports linux/, darwin/, bpf/ or
// golang.org/x/sys/unix (deps_test.go keeps it so): a Policy is computed the
// same way on every platform, and host-dependent choices are made when a
// platform package applies it.
package policy
