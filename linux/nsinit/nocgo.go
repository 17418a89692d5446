//go:build linux && !cgo

package nsinit

// Linked reports whether stage 2 is part of this binary: without cgo it is
// not, and moat cannot create a sandbox.
const Linked = false

func cConstants() map[string]int { return nil }

// StartNanos is 0: without cgo there is no constructor to record the start.
func StartNanos() int64 { return 0 }

// TakeHolder has no holder to give: there is no constructor to fork one.
func TakeHolder() (pid, sock int, ok bool) { return 0, -1, false }

// DropHolder has nothing to drop.
func DropHolder() {}

// TakeStage2 has no stage 2 to give: without cgo there is none.
func TakeStage2() (pid, plan, sync int, ok bool) { return 0, -1, -1, false }

// StartStage2 is never called without a stage 2.
func StartStage2(sync int, flags uint64, fds ...int) error { return nil }

// DropStage2 has nothing to drop.
func DropStage2() {}
