//go:build !linux

package netproxy

// cgroupPidsMax is 0: no cgroups here.
func cgroupPidsMax() int { return 0 }
