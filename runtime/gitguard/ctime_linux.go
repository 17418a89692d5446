package gitguard

import (
	"syscall"
	"time"
	"unsafe"
)

func ctimeNS(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }

// clockRealtimeCoarse is Linux's CLOCK_REALTIME_COARSE.
const clockRealtimeCoarse = 5

// coarseTick is how far a file's change time may lag the moment of the
// change: Linux stamps inodes from its coarse clock (one scheduler tick:
// 1-10 ms, by CONFIG_HZ), except on filesystems with multigrain
// timestamps and only after a query. Unknown: 10 ms (HZ=100).
func coarseTick() time.Duration {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETRES, clockRealtimeCoarse, uintptr(unsafe.Pointer(&ts)), 0); e != 0 || ts.Nano() <= 0 {
		return 10 * time.Millisecond
	}
	return time.Duration(ts.Nano())
}
