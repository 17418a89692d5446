//go:build !linux

package runtime

import "time"

// SinceStart is 0: only Linux builds record the process's start.
func SinceStart() time.Duration { return 0 }

// ServerFallback is "": only Linux builds hand moat run to a server before
// the Go runtime starts.
func ServerFallback() (string, bool) { return "", false }

// StartRlimitNofile is unknown on this system.
func StartRlimitNofile() (cur, max uint64, ok bool) { return 0, 0, false }
