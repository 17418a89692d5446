package runtime

import (
	"github.com/moat-sandbox/moat/darwin"
	"github.com/moat-sandbox/moat/runtime/enforce"
)

// On macOS the enforcer is Seatbelt (seatbelt.go).
func platform() enforce.Enforcer { return seatbelt{} }

// Seatbelt keeps nothing between runs.
func platformShared() enforce.Enforcer { return seatbelt{} }

// platformReexec handles moat's binary re-executed by a Seatbelt run to
// set the command's rlimits before it becomes sandbox-exec.
func platformReexec(args []string) (bool, error) { return darwin.Reexec(args) }

func platformSweep(string) error { return nil }

func platformPrewarm() {}
