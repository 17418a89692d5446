//go:build linux && cgo

package nsinit

/*
#cgo CFLAGS: -O2 -Wall -Wno-unused-parameter -fstack-protector-strong
#include "plan.h"
#include "fastrun.h"
#include <sys/resource.h>
extern long long moat_start_ns;
extern struct rlimit moat_start_nofile;
*/
import "C"

// StartNanos is CLOCK_MONOTONIC (ns) when the process's first user code
// ran, stage 2's constructor, before the Go runtime started.
func StartNanos() int64 { return int64(C.moat_start_ns) }

// ServerNote is why MOAT_SERVER was set but moat run stayed in this
// process (fastrun.c), "" if it was not set; quiet when the reason is not
// worth telling (a terminal).
func ServerNote() (note string, quiet bool) {
	return C.GoString(&C.moat_server_note[0]), C.moat_server_quiet != 0
}

// StartNofile is RLIMIT_NOFILE as the process was started with it, before
// the Go runtime raised the soft limit; ok is false if unknown.
func StartNofile() (cur, max uint64, ok bool) {
	l := C.moat_start_nofile
	return uint64(l.rlim_cur), uint64(l.rlim_max), l.rlim_max != 0
}

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
		"REQ_FD3": C.REQ_FD3, "REQ_CONNECT": C.REQ_CONNECT, "REQ_STDIO": C.REQ_STDIO, "MOAT_MAX_CONNECTORS": C.MOAT_MAX_CONNECTORS, "MOAT_CONNECT_TIMEOUT": C.MOAT_CONNECT_TIMEOUT, "sizeof(struct moat_req)": C.sizeof_struct_moat_req,
		"MSG_CMD_STARTED": C.MSG_CMD_STARTED, "MSG_CMD_EXIT": C.MSG_CMD_EXIT, "MSG_CMD_NOTIFY": C.MSG_CMD_NOTIFY,
		"MSG_CMD_EXECFAIL": C.MSG_CMD_EXECFAIL, "MSG_CMD_ERROR": C.MSG_CMD_ERROR, "MSG_WATCH": C.MSG_WATCH, "MSG_INOTIFY": C.MSG_INOTIFY, "MSG_USERNS": C.MSG_USERNS, "MSG_SPARE": C.MSG_SPARE, "REQ_STDIO_GO": C.REQ_STDIO_GO, "REQ_STDIO_LOCK": C.REQ_STDIO_LOCK, "MOAT_FD_LOCK": C.MOAT_FD_LOCK, "MOAT_MAX_GROUPS": C.MOAT_MAX_GROUPS, "MOAT_MAX_JOINS": C.MOAT_MAX_JOINS,
		"MC_RECURSIVE": C.MC_RECURSIVE, "MC_OPTIONAL": C.MC_OPTIONAL, "LLP_OPTIONAL": C.LLP_OPTIONAL, "MV_OPTIONAL": C.MV_OPTIONAL,
		"SC_LISTENER": C.SC_LISTENER, "EX_SEARCH": C.EX_SEARCH,
		"MSG_ERROR": C.MSG_ERROR, "MSG_EXECFAIL": C.MSG_EXECFAIL, "MSG_PTY": C.MSG_PTY, "MSG_NOTIFY": C.MSG_NOTIFY,
		"MSG_EXIT": C.MSG_EXIT, "MSG_LISTEN": C.MSG_LISTEN, "MSG_CHILD": C.MSG_CHILD, "MSG_MOUNTED": C.MSG_MOUNTED,
		"MOAT_MSG_TEXT": C.MOAT_MSG_TEXT, "sizeof(struct moat_msg)": C.sizeof_struct_moat_msg,
	}
}
