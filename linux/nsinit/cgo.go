//go:build linux && cgo

package nsinit

/*
#cgo CFLAGS: -O2 -Wall -Wno-unused-parameter -fstack-protector-strong
#include "plan.h"
extern long long moat_start_ns;
extern int moat_holder_pid, moat_holder_sock;
extern int moat_stage2_pid, moat_stage2_plan, moat_stage2_sync;
*/
import "C"

import (
	"encoding/binary"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

var holderTaken atomic.Bool

// TakeHolder hands over, once, the inotify holder the C constructor forked
// for `moat run` before the Go runtime started: its pid (a child of this
// process) and the socket to send it the instance on (SCM_RIGHTS, one
// descriptor; the holder leaves if the socket closes without one).
func TakeHolder() (pid, sock int, ok bool) {
	if C.moat_holder_pid <= 0 || !holderTaken.CompareAndSwap(false, true) {
		return 0, -1, false
	}
	return int(C.moat_holder_pid), int(C.moat_holder_sock), true
}

// StartNanos is CLOCK_MONOTONIC (ns) when the process's first user code
// ran, stage 2's constructor, before the Go runtime started.
func StartNanos() int64 { return int64(C.moat_start_ns) }

// Linked reports whether stage 2 is part of this binary.
const Linked = true

// cConstants exposes plan.h to plan_test.go.
func cConstants() map[string]int {
	return map[string]int{
		"MOAT_PLAN_VERSION": C.MOAT_PLAN_VERSION,
		"MOAT_FD_PLAN":      C.MOAT_FD_PLAN, "MOAT_FD_SYNC": C.MOAT_FD_SYNC, "MOAT_FD_GO": C.MOAT_FD_GO,
		"R_HOSTNAME": C.R_HOSTNAME, "R_LO_UP": C.R_LO_UP, "R_MOUNT": C.R_MOUNT, "R_LL_RULESET": C.R_LL_RULESET,
		"R_LL_PATH": C.R_LL_PATH, "R_SECCOMP": C.R_SECCOMP, "R_EXEC": C.R_EXEC, "R_PTY": C.R_PTY,
		"R_SYSCTL": C.R_SYSCTL, "R_CWD": C.R_CWD, "R_KEYRING": C.R_KEYRING, "R_RLIMIT": C.R_RLIMIT,
		"R_CLEANUP": C.R_CLEANUP, "R_LL_STDIO": C.R_LL_STDIO, "R_LISTEN": C.R_LISTEN, "R_WAIT_GO": C.R_WAIT_GO, "R_MODE": C.R_MODE, "R_LL_PORT": C.R_LL_PORT, "R_WATCH": C.R_WATCH, "MODE_NONS": C.MODE_NONS,
		"M_PRIVATE": C.M_PRIVATE, "M_CLONE": C.M_CLONE, "M_ATTACH_ROOT": C.M_ATTACH_ROOT, "M_ATTACH": C.M_ATTACH,
		"M_TMPFS": C.M_TMPFS, "M_PROC": C.M_PROC, "M_DEVPTS": C.M_DEVPTS, "M_MKDIR": C.M_MKDIR,
		"M_MKFILE": C.M_MKFILE, "M_SYMLINK": C.M_SYMLINK, "M_SETATTR": C.M_SETATTR, "M_BIND": C.M_BIND,
		"MOAT_FD_SESSION": C.MOAT_FD_SESSION, "MODE_SESSION": C.MODE_SESSION, "REQ_RUN": C.REQ_RUN, "REQ_SIGNAL": C.REQ_SIGNAL,
		"REQ_FD3": C.REQ_FD3, "sizeof(struct moat_req)": C.sizeof_struct_moat_req,
		"MSG_CMD_STARTED": C.MSG_CMD_STARTED, "MSG_CMD_EXIT": C.MSG_CMD_EXIT, "MSG_CMD_NOTIFY": C.MSG_CMD_NOTIFY,
		"MSG_CMD_EXECFAIL": C.MSG_CMD_EXECFAIL, "MSG_CMD_ERROR": C.MSG_CMD_ERROR, "MSG_WATCH": C.MSG_WATCH, "MSG_INOTIFY": C.MSG_INOTIFY, "MSG_USERNS": C.MSG_USERNS, "MOAT_MAX_GROUPS": C.MOAT_MAX_GROUPS,
		"MC_RECURSIVE": C.MC_RECURSIVE, "MC_OPTIONAL": C.MC_OPTIONAL, "LLP_OPTIONAL": C.LLP_OPTIONAL,
		"SC_LISTENER": C.SC_LISTENER, "EX_SEARCH": C.EX_SEARCH,
		"MSG_ERROR": C.MSG_ERROR, "MSG_EXECFAIL": C.MSG_EXECFAIL, "MSG_PTY": C.MSG_PTY, "MSG_NOTIFY": C.MSG_NOTIFY,
		"MSG_EXIT": C.MSG_EXIT, "MSG_LISTEN": C.MSG_LISTEN, "MSG_CHILD": C.MSG_CHILD, "MSG_MOUNTED": C.MSG_MOUNTED,
		"MOAT_MSG_TEXT": C.MOAT_MSG_TEXT, "sizeof(struct moat_msg)": C.sizeof_struct_moat_msg,
	}
}

// DropHolder ends the forked holder if nothing took it (a run with nothing
// to watch): its socket closes, it leaves, and it is reaped.
func DropHolder() {
	if C.moat_holder_pid <= 0 || !holderTaken.CompareAndSwap(false, true) {
		return
	}
	unix.Close(int(C.moat_holder_sock))
	pid := int(C.moat_holder_pid)
	go func() {
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
	}()
}

var stage2Taken atomic.Bool

// TakeStage2 hands over, once, the stage 2 the C constructor forked for
// `moat run` before the Go runtime started: its pid (a child of
// this process), the plan pipe's write end and this side of the sync
// socket. It waits for StartStage2.
func TakeStage2() (pid, plan, sync int, ok bool) {
	if C.moat_stage2_pid <= 0 || !stage2Taken.CompareAndSwap(false, true) {
		return 0, -1, -1, false
	}
	return int(C.moat_stage2_pid), int(C.moat_stage2_plan), int(C.moat_stage2_sync), true
}

// StartStage2 tells a forked stage 2 which namespaces to make (0: none)
// and gives it the descriptors the exec'd stage 2 gets as 5 and 6, in
// order (the eBPF wait pipe, the cgroup's lock), if any.
func StartStage2(sync int, flags uint64, fds ...int) error {
	var b [C.sizeof_struct_moat_start]byte
	binary.NativeEndian.PutUint32(b[0:], C.MOAT_START_MAGIC)
	binary.NativeEndian.PutUint64(b[8:], flags)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	return unix.Sendmsg(sync, b[:], oob, nil, 0)
}

// DropStage2 ends the forked stage 2 if nothing took it (the run went to
// moatd, or needs the exec'd one): its socket closes, it leaves, and it is
// reaped.
func DropStage2() {
	if C.moat_stage2_pid <= 0 || !stage2Taken.CompareAndSwap(false, true) {
		return
	}
	unix.Close(int(C.moat_stage2_plan))
	unix.Close(int(C.moat_stage2_sync))
	pid := int(C.moat_stage2_pid)
	go func() {
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
	}()
}
