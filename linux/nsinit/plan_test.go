//go:build linux

package nsinit

import "testing"

func TestConstantsMatchHeader(t *testing.T) {
	c := cConstants()
	if c == nil {
		t.Skip("built without cgo")
	}
	goSide := map[string]int{
		"MOAT_PLAN_VERSION": Version,
		"MOAT_FD_PLAN":      FdPlan, "MOAT_FD_SYNC": FdSync, "MOAT_FD_GO": FdGo,
		"R_HOSTNAME": rHostname, "R_LO_UP": rLoUp, "R_MOUNT": rMount, "R_LL_RULESET": rLLRuleset,
		"R_LL_PATH": rLLPath, "R_SECCOMP": rSeccomp, "R_EXEC": rExec, "R_PTY": rPTY,
		"R_SYSCTL": rSysctl, "R_CWD": rCwd, "R_KEYRING": rKeyring, "R_RLIMIT": rRlimit,
		"R_CLEANUP": rCleanup, "R_LL_STDIO": rLLStdio, "R_LISTEN": rListen, "R_WAIT_GO": rWaitGo, "R_MODE": rMode, "R_LL_PORT": rLLPort, "R_WATCH": rWatch, "MODE_NONS": ModeNoNS,
		"M_PRIVATE": mPrivate, "M_CLONE": mClone, "M_ATTACH_ROOT": mAttachRoot, "M_ATTACH": mAttach,
		"M_TMPFS": mTmpfs, "M_PROC": mProc, "M_DEVPTS": mDevpts, "M_MKDIR": mMkdir,
		"M_MKFILE": mMkfile, "M_SYMLINK": mSymlink, "M_SETATTR": mSetattr, "M_BIND": mBind,
		"MOAT_FD_SESSION": FdSession, "MODE_SESSION": ModeSession, "REQ_RUN": ReqRun, "REQ_SIGNAL": ReqSignal,
		"REQ_FD3": ReqFD3, "REQ_CONNECT": ReqConnect, "REQ_STDIO": ReqStdio, "MOAT_MAX_CONNECTORS": MaxConnectors, "MOAT_CONNECT_TIMEOUT": ConnectTimeout, "sizeof(struct moat_req)": ReqSize,
		"MSG_CMD_STARTED": MsgCmdStarted, "MSG_CMD_EXIT": MsgCmdExit, "MSG_CMD_NOTIFY": MsgCmdNotify,
		"MSG_CMD_EXECFAIL": MsgCmdExecFail, "MSG_CMD_ERROR": MsgCmdError, "MSG_WATCH": MsgWatch, "MSG_INOTIFY": MsgInotify, "MSG_USERNS": MsgUserns, "MSG_SPARE": MsgSpare, "REQ_STDIO_GO": ReqStdioGo, "REQ_STDIO_LOCK": ReqStdioLock, "MOAT_FD_LOCK": FdLock, "MOAT_MAX_GROUPS": MaxGroups, "MOAT_MAX_JOINS": MaxJoins,
		"MC_RECURSIVE": CloneRecursive, "MC_OPTIONAL": CloneOptional, "LLP_OPTIONAL": LLOptional, "MV_OPTIONAL": mvOptional,
		"SC_LISTENER": SeccompListen, "EX_SEARCH": ExecSearch,
		"MSG_ERROR": MsgError, "MSG_EXECFAIL": MsgExecFail, "MSG_PTY": MsgPTY, "MSG_NOTIFY": MsgNotify,
		"MSG_EXIT": MsgExit, "MSG_LISTEN": MsgListen, "MSG_CHILD": MsgChild, "MSG_MOUNTED": MsgMounted,
		"MOAT_MSG_TEXT": MsgTextSize, "sizeof(struct moat_msg)": MsgSize,
	}
	for k, v := range c {
		g, ok := goSide[k]
		if !ok {
			t.Errorf("%s has no Go mirror", k)
			continue
		}
		if g != v {
			t.Errorf("%s: C %d, Go %d", k, v, g)
		}
	}
	if len(goSide) != len(c) {
		t.Errorf("Go has %d constants, C %d", len(goSide), len(c))
	}
}
