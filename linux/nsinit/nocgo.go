//go:build linux && !cgo

package nsinit

// Linked reports whether stage 2 is part of this binary: without cgo it is
// not, and moat cannot create a sandbox.
const Linked = false

func cConstants() map[string]int { return nil }

// StartNanos is 0: without cgo there is no constructor to record the start.
func StartNanos() int64 { return 0 }
