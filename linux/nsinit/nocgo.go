//go:build linux && !cgo

package nsinit

// Linked reports whether stage 2 is part of this binary: without cgo it is
// not, and moat cannot create a sandbox.
const Linked = false

func cConstants() map[string]int { return nil }

// StartNanos is 0: without cgo there is no constructor to record the start.
func StartNanos() int64 { return 0 }

// ServerNote is "": without cgo there is no constructor, and MOAT_SERVER
// is not read before the Go runtime starts.
func ServerNote() (string, bool) { return "", false }

// StartNofile is unknown without the constructor.
func StartNofile() (cur, max uint64, ok bool) { return 0, 0, false }
