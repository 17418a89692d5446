package gitguard

import (
	"syscall"
	"time"
)

func ctimeNS(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }

// coarseTick is how far a file's change time may lag the moment of the
// change. APFS stamps with the kernel's nanosecond clock; the margin
// covers a filesystem that stamps from a coarser one.
func coarseTick() time.Duration { return 10 * time.Millisecond }

// kernelFS: no kernel filesystem to skip here.
func kernelFS(string) bool { return false }

// birthNS is when the inode at p (not followed) was made (APFS and HFS+
// keep it). Callers look p up through birthTime (autofs.go).
func birthNS(p string) (int64, bool) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return 0, false
	}
	return st.Birthtimespec.Nano(), true
}
