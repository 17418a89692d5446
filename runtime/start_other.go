//go:build !linux

package runtime

import "time"

// SinceStart is 0: only Linux builds record the process's start.
func SinceStart() time.Duration { return 0 }
