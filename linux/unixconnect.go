//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/linux/nsinit"
)

// connectInside has the sandbox's init connect sock (this process's copy of
// the command's unix socket) to target (an O_PATH descriptor of the socket
// the broker allowed), and returns the socket its answer comes on
// (awaitConnect).
//
// The broker used to connect the socket itself: the kernel records the
// connecting task as the connection's peer (SO_PEERCRED, SO_PEERPIDFD), so a
// server that judges its peer by its process saw moat's supervisor,
// unconfined, outside the sandbox's namespaces, and not the command (found by
// an attack pass: moat serve, which refuses a sandboxed peer, opened a
// session for the command that wrote the user's home directory). A child of
// init connects it now: in the sandbox's user, pid and network namespaces
// (in the no-namespace tier, on the host as the command is), without
// capabilities, under no_new_privs and a seccomp filter of its own
// (linux/nsinit/nsinit.c, connect_for_command), so the peer a server sees is
// confined, as the command would be had it connected itself.
//
// Nothing waits here: the request is sent at once or refused (EAGAIN), and
// the descriptors it carries are the kernel's once sent, so the caller
// closes its own.
func (ln *launcher) connectInside(sock, target int) (*os.File, unix.Errno) {
	// A socketpair, not a pipe: init answers with send(MSG_NOSIGNAL), so an
	// end closed here (the wait given up) raises no SIGPIPE in init, which
	// passes the signals it gets on to the command.
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, unix.EAGAIN
	}
	answer := os.NewFile(uintptr(p[0]), "moat-connect-answer") // non-blocking: in Go's poller
	defer unix.Close(p[1])
	var serr error
	err = ln.syncConn.Write(func(fd uintptr) bool {
		// Never waits: a queue init does not empty is answered EAGAIN.
		serr = unix.Sendmsg(int(fd), nsinit.ConnectRequest(), unix.UnixRights(sock, target, p[1]), nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		return true
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		answer.Close()
		if err == unix.EAGAIN || err == unix.ENOBUFS || err == unix.ETOOMANYREFS {
			return nil, unix.EAGAIN
		}
		return nil, unix.ECONNREFUSED // init is gone: so is the sandbox
	}
	return answer, 0
}

// connectDeadline bounds the wait for init's answer: its connector gives up
// after nsinit.ConnectTimeout seconds; this covers an init that never
// answers.
const connectDeadline = (nsinit.ConnectTimeout + 5) * time.Second

// awaitConnect reads the errno init's connector answered on answer (and
// closes it): ECONNREFUSED if it ended without answering, ETIMEDOUT if no
// answer came in time.
func awaitConnect(answer *os.File) unix.Errno {
	defer answer.Close()
	_ = answer.SetReadDeadline(time.Now().Add(connectDeadline))
	var b [4]byte
	if _, err := io.ReadFull(answer, b[:]); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return unix.ETIMEDOUT
		}
		return unix.ECONNREFUSED
	}
	e := int32(binary.NativeEndian.Uint32(b[:]))
	if e < 0 || e > 4095 {
		return unix.ECONNREFUSED
	}
	return unix.Errno(e)
}
