//go:build linux

// Command futex times a system call the seccomp filter checks by its
// arguments (futex: the requeue operations without FUTEX_PRIVATE_FLAG are
// refused) against one the kernel answers from its cache of always-allowed
// calls (getppid). Run it under moat and without (docs/PERFORMANCE.md,
// eleventh session):
//
//	go build -o /var/tmp/futex ./bench/futex && moat run -- /var/tmp/futex
package main

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

func main() {
	const n = 1000000
	const futexWakePrivate = 1 | 128
	var word uint32
	addr := uintptr(unsafe.Pointer(&word))
	per := func(call func()) float64 {
		best := time.Duration(1 << 62)
		for range 5 {
			start := time.Now()
			for range n {
				call()
			}
			best = min(best, time.Since(start))
		}
		return float64(best.Nanoseconds()) / n
	}
	futex := per(func() { syscall.RawSyscall6(syscall.SYS_FUTEX, addr, futexWakePrivate, 1, 0, 0, 0) }) // no waiter
	getppid := per(func() { syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0) })
	fmt.Printf("futex %.0f ns a call, getppid %.0f ns a call (best of 5 x %d)\n", futex, getppid, n)
}
