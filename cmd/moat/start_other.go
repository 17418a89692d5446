//go:build !linux

package main

import "time"

// sinceStart is 0: only Linux builds record the process's start.
func sinceStart() time.Duration { return 0 }
