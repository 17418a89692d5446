//go:build linux

package client

import (
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Proof is the proof the process at the other end of c (a unix socket
// connection) shows to whoever may inspect it: the token in the name of
// its memfd "/memfd:moat-serve-proof-TOKEN", read from /proc/PID/fd of the
// socket's peer (SO_PEERCRED), as moat serve and moat mcp's unix socket
// ask for it (ProofHeader). "" when it shows none: a server of another
// user (moatd, which asks for none), a process this one may not inspect
// (this one is confined by Landlock, say: then the server refuses it), or
// one that ended while it was read (its pidfd, SO_PEERPIDFD, says so:
// another process that took its pid is not asked).
//
// The cost is a read of the server's descriptor table up to the memfd,
// which the server opens early (one of its first descriptors).
func Proof(c net.Conn) string {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ""
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ""
	}
	var cred *unix.Ucred
	pidfd := -1
	_ = raw.Control(func(fd uintptr) {
		cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if cred != nil && int(cred.Uid) == os.Geteuid() {
			if v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
				pidfd = v
			}
		}
	})
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	if cred == nil || cred.Pid <= 0 || int(cred.Uid) != os.Geteuid() {
		return ""
	}
	tok := procProof(int(cred.Pid))
	if tok != "" && pidfd >= 0 && unix.PidfdSendSignal(pidfd, 0, nil, 0) != nil {
		return "" // the peer ended: the pid may name another process now
	}
	return tok
}

// procProof is the token of the memfd moat-serve-proof-TOKEN among the
// descriptors of process pid, or "".
func procProof(pid int) string {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return "" // not ours to inspect
	}
	defer d.Close()
	buf := make([]byte, 128)
	for {
		names, err := d.Readdirnames(32)
		for _, n := range names {
			k, err := unix.Readlink(dir+n, buf)
			if err != nil || k == len(buf) {
				continue
			}
			if tok, ok := strings.CutPrefix(string(buf[:k]), "/memfd:"+ProofMemfdPrefix); ok {
				tok, _, _ = strings.Cut(tok, " ") // " (deleted)"
				return tok
			}
		}
		if err != nil {
			return ""
		}
	}
}
