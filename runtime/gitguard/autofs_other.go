//go:build !linux

package gitguard

// autofsMounts: the mount table is read on Linux only (not covered here:
// macOS's /net is an automounter's -hosts map too).
func autofsMounts() *autofsTable { return nil }

// PinMounts does nothing off Linux.
func PinMounts() (unpin func()) { return func() {} }
