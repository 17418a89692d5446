//go:build linux

package linux

import (
	"sync"

	"golang.org/x/sys/unix"
)

// Landlock access rights (uapi/linux/landlock.h).
const (
	llExecute    = 1 << 0
	llWriteFile  = 1 << 1
	llReadFile   = 1 << 2
	llReadDir    = 1 << 3
	llRemoveDir  = 1 << 4
	llRemoveFile = 1 << 5
	llMakeChar   = 1 << 6
	llMakeDir    = 1 << 7
	llMakeReg    = 1 << 8
	llMakeSock   = 1 << 9
	llMakeFifo   = 1 << 10
	llMakeBlock  = 1 << 11
	llMakeSym    = 1 << 12
	llRefer      = 1 << 13 // ABI 2
	llTruncate   = 1 << 14 // ABI 3

	llBindTCP    = 1 << 0 // net, ABI 4
	llConnectTCP = 1 << 1 // net, ABI 4

	llScopeAbstractUnix = 1 << 0 // ABI 6
	llScopeSignal       = 1 << 1 // ABI 6
)

var landlockABI = sync.OnceValue(func() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
})

// landlockWriteRights are all the write rights an ABI knows: moat handles
// writes with Landlock (reads and hiding are the mounts' job).
func landlockWriteRights(abi int) uint64 {
	m := uint64(llWriteFile | llRemoveDir | llRemoveFile | llMakeChar | llMakeDir | llMakeReg |
		llMakeSock | llMakeFifo | llMakeBlock | llMakeSym)
	if abi >= 2 {
		m |= llRefer
	}
	if abi >= 3 {
		m |= llTruncate
	}
	return m
}
