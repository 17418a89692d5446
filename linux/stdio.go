//go:build linux

package linux

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/runtime/enforce"
)

// The caller's descriptors 0-2 reach the command as they are, but a
// regular file's (or a device's, a named pipe's) descriptor is reopened through
// /proc/self/fd/N against the host's mount, not the sandbox's view of it:
// a file handed in for reading was reopened for writing (`moat run ... <
// .mcp.json` let the command write a protected name, a denyWrite file,
// any file of the host it was given), one handed in for writing for
// reading (`>> ~/.netrc` read the whole file; found by an attack pass).
// So such a descriptor is never handed over: the command gets a pipe, and
// moat copies between the pipe and the caller's descriptor (the file's
// offset and append mode kept, since moat writes and reads through the
// caller's own descriptor). Anonymous pipes, sockets, terminals and
// sealed memfds are handed over as they are (handOver); a directory is
// refused (directoryStdio).

// stdioCopy is the copying a run's descriptors need.
type stdioCopy struct {
	wg       sync.WaitGroup
	child    []*os.File // the pipe ends given to the sandbox: closed here once it has them
	cancel   *os.File   // closed when the run ended: the input copying stops (cancelR: its other end)
	cancelR  *os.File
	progress atomic.Int64 // bytes the output copying wrote to the caller
}

// outputStall is how long the output copying may make no progress, once
// the run's processes are gone, before moat stops waiting for it: a
// caller that stops reading (a paused stream, a reader that waits for moat
// to exit first) kept moat, and moatd's shutdown, waiting past the
// command's timeout (found by an attack pass).
var outputStall = 5 * time.Second

// pipeStdio returns the descriptors to hand to the sandbox for the
// caller's stdio (and fd3, if not nil): a pipe for each descriptor
// handOver does not keep, whose copying starts at once.
//
// as is moatd's client, whose descriptors these are: the copying reads and
// writes them on a thread with the client's credentials and no capability
// (ascred). As root, the kernel judged what it read and wrote by root's:
// a /proc/PID/stat of root's process handed in as stdin gave the command
// the addresses the kernel hides from the user (its stack, code and
// arguments: ASLR), and a file handed in as stdout was written past the
// user's quota into root's reserved blocks of a full filesystem
// (CAP_SYS_RESOURCE; attack pass 105, TestDaemonAttackStdioCopiedAsRoot).
func pipeStdio(stdio [3]*os.File, fd3 *os.File, as *enforce.Identity) (out [3]*os.File, out3 *os.File, c *stdioCopy, err error) {
	c = &stdioCopy{}
	copying := func(fn func()) { fn() }
	if as != nil {
		groups := identityGroups(as)
		copying = func(fn func()) {
			// (Without the credentials nothing is copied: fail closed.)
			_ = ascred.Do(as.Uid, as.Gid, groups, func() error { fn(); return nil })
		}
	}
	out = stdio
	out3 = fd3
	done := map[[2]uint64]*os.File{} // one pipe for stdout and stderr that are one file
	for i, f := range append(stdio[:], fd3) {
		if f == nil {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			c.abort()
			return stdio, fd3, nil, fmt.Errorf("descriptor %d: %w", i, err)
		}
		if i < 3 && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			c.abort()
			return stdio, fd3, nil, directoryStdio(f, i)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFSOCK {
			if l, err := unix.GetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err == nil && l != 0 {
				c.abort()
				return stdio, fd3, nil, listeningStdio(i)
			}
		}
		if handOver(f, &st) {
			continue
		}
		input := i == 0
		if i == 3 {
			fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
			if err != nil || fl&unix.O_ACCMODE == unix.O_RDWR {
				c.abort()
				return stdio, fd3, nil, fmt.Errorf("descriptor 3 is a file open for reading and writing: moat hands the command a pipe for a file, one way")
			}
			input = fl&unix.O_ACCMODE == unix.O_RDONLY
		}
		key := [2]uint64{uint64(st.Dev), st.Ino}
		var p *os.File
		if input && st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == unix.Mkdev(1, 3) {
			// /dev/null to read: a pipe already at its end, nothing to copy.
			r, w, err := os.Pipe()
			if err != nil {
				c.abort()
				return stdio, fd3, nil, err
			}
			w.Close()
			c.child = append(c.child, r)
			if i == 3 {
				out3 = r
			} else {
				out[i] = r
			}
			continue
		}
		if input && c.cancel == nil {
			if c.cancelR, c.cancel, err = os.Pipe(); err != nil {
				c.abort()
				return stdio, fd3, nil, err
			}
		}
		if prev, ok := done[key]; ok && !input {
			p = prev // 2>&1 into a file: one pipe, the order of the lines kept
		} else {
			r, w, err := os.Pipe()
			if err != nil {
				c.abort()
				return stdio, fd3, nil, err
			}
			// The copying holds a descriptor of its own: a caller that
			// closes its copy once the command has it (a session's
			// runner, as exec.Cmd callers do) does not cut the stream.
			nfd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
			if err != nil {
				r.Close()
				w.Close()
				c.abort()
				return stdio, fd3, nil, fmt.Errorf("descriptor %d: %w", i, sys.Named("dup", err))
			}
			src := os.NewFile(uintptr(nfd), f.Name())
			c.wg.Add(1)
			if input {
				p = r
				c.child = append(c.child, r)
				go func() {
					defer c.wg.Done()
					copying(func() { copyIn(w, src, c.cancelR) }) // until the input's end, the command's (EPIPE), or the run's
					w.Close()
					src.Close()
				}()
			} else {
				p = w
				c.child = append(c.child, w)
				done[key] = w
				go func() {
					defer c.wg.Done()
					copying(func() { c.copyOut(src, r) }) // ends when every process of the run has let go of the pipe
					r.Close()
					src.Close()
				}()
			}
		}
		if i == 3 {
			out3 = p
		} else {
			out[i] = p
		}
	}
	return out, out3, c, nil
}

// handOver reports a descriptor the command may have as it is: a
// connected unix stream socket, a terminal, a sealed memfd. A pipe is not:
// the command reopened /proc/self/fd/0 for writing and put lines into the
// host shell's script it was reading (cat script | bash, a job loop), and
// read what another host process wrote into its stdout pipe (found by an
// attack pass); it gets a pipe of moat's, whose other end moat alone holds.
// Anything else names an inode of the host's (a file, a named pipe, a
// device: /dev/null, whose mode root inside changed for the whole host
// through /proc/self/fd/2, found by an attack pass) or reaches past the
// sandbox's network (a datagram or unconnected socket is the host
// network's: sendto reached the host's loopback and its unix datagram
// sockets, found by an attack pass), and is copied through a pipe.
func handOver(f *os.File, st *unix.Stat_t) bool {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK:
		// A connected unix stream speaks to its peer and no other (connect
		// again is EISCONN). A TCP socket does not: connect(AF_UNSPEC)
		// disconnects it, and it connected anew to the host's loopback
		// past the sandbox's network (found by an attack pass).
		dom, err := unix.GetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_DOMAIN)
		if err != nil || dom != unix.AF_UNIX {
			return false
		}
		typ, err := unix.GetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_TYPE)
		if err != nil || typ != unix.SOCK_STREAM {
			return false
		}
		if _, err = unix.Getpeername(int(f.Fd())); err != nil {
			return false
		}
		// Bound, it can name nothing else: an unnamed one would take an
		// abstract name in the host's network namespace with bind(2) (a
		// name a host service then cannot have: found by an attack pass).
		// Autobind gives it a name of the kernel's choosing; a socket
		// already bound keeps its own.
		if sa, err := unix.Getsockname(int(f.Fd())); err == nil {
			if u, ok := sa.(*unix.SockaddrUnix); ok && (u.Name == "" || u.Name == "@") {
				unix.Bind(int(f.Fd()), &unix.SockaddrUnix{}) // (x/sys: an empty name autobinds)
			}
		}
		sa, err := unix.Getsockname(int(f.Fd()))
		u, ok := sa.(*unix.SockaddrUnix)
		return err == nil && ok && u.Name != "" && u.Name != "@"
	case unix.S_IFREG:
		// A memfd sealed against writing, growing, shrinking and new
		// seals (a session's shell snapshot): no path of the host's, and
		// no descriptor of it, reopened through /proc or not, can change
		// it. A pipe in its place could be reopened for writing.
		seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
		const want = unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL
		return err == nil && seals&want == want
	case unix.S_IFCHR:
		_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
		return err == nil
	}
	return false
}

// started closes this process's copies of the pipe ends the sandbox now
// holds: the copying then ends with the sandbox's last holder.
func (c *stdioCopy) started() {
	if c == nil {
		return
	}
	for _, f := range c.child {
		f.Close()
	}
	c.child = nil
}

// wait waits for the copying to finish (after the run's processes ended):
// the output to its last byte; the input stops (a named pipe or a device
// that never ends, which an io.Copy read from forever: moat hung at the
// end of the run).
func (c *stdioCopy) wait() {
	if c == nil {
		return
	}
	c.started()
	if c.cancel != nil {
		c.cancel.Close()
	}
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	last := c.progress.Load()
	for t := time.NewTimer(outputStall); ; t.Reset(outputStall) {
		select {
		case <-done:
			t.Stop()
			if c.cancelR != nil {
				c.cancelR.Close()
			}
			return
		case <-t.C:
			if p := c.progress.Load(); p != last {
				last = p
				continue
			}
			// No byte taken for outputStall: the rest is dropped (the
			// copying ends when its write fails or the caller reads).
			return
		}
	}
}

// copyOut copies the command's output to the caller, counting progress.
func (c *stdioCopy) copyOut(dst, src *os.File) {
	if c.spliceOut(dst, src) {
		return
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			for off := 0; off < n; {
				m, werr := dst.Write(buf[off:n])
				off += m
				c.progress.Add(int64(m))
				if werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// spliceOut moves the command's output from moat's pipe src to the
// caller's dst inside the kernel (splice: pages move, no copy), counting
// progress. It returns false, having moved nothing, where dst takes no
// splice (a file open for appending): copyOut then copies.
func (c *stdioCopy) spliceOut(dst, src *os.File) bool {
	rc, err := src.SyscallConn()
	if err != nil {
		return false
	}
	dc, err := dst.SyscallConn()
	if err != nil {
		return false
	}
	// (dst is this copier's own descriptor, closed after copyOut: its
	// number stays valid. Fd would put the caller's shared file in
	// blocking mode.)
	dfd := -1
	if dc.Control(func(fd uintptr) { dfd = int(fd) }) != nil || dfd < 0 {
		return false
	}
	moved := false
	for {
		var n int64
		var serr error
		eof, again := false, false
		rerr := rc.Read(func(sfd uintptr) bool {
			n, serr = sys.RetryValue(func() (int64, error) {
				return unix.Splice(int(sfd), nil, dfd, nil, 1<<20, unix.SPLICE_F_NONBLOCK)
			})
			if serr != unix.EAGAIN {
				return true
			}
			// The pipe empty, or dst (non-blocking) full; the kernel
			// says EAGAIN for a full dst even when the pipe is at its
			// end. Waiting for the pipe then would wait for an event
			// that has come and gone.
			avail, err := unix.IoctlGetInt(int(sfd), unix.TIOCINQ) // FIONREAD
			if err != nil || avail > 0 {
				return true // dst full: wait for it below
			}
			fds := []unix.PollFd{{Fd: int32(sfd), Events: unix.POLLIN}}
			if _, err := sys.RetryValue(func() (int, error) { return unix.Poll(fds, 0) }); err == nil && fds[0].Revents&unix.POLLIN == 0 && fds[0].Revents&unix.POLLHUP != 0 {
				eof = true // empty, and every writer gone
				return true
			}
			if fds[0].Revents&unix.POLLIN != 0 {
				again = true // data came meanwhile
				return true
			}
			return false // empty: wait for the pipe
		})
		switch {
		case rerr != nil || eof:
			return true
		case again:
		case serr == unix.EAGAIN:
			fds := []unix.PollFd{{Fd: int32(dfd), Events: unix.POLLOUT}}
			sys.RetryValue(func() (int, error) { return unix.Poll(fds, 1000) })
		case serr != nil:
			return moved || serr != unix.EINVAL // EINVAL first: no splice to dst
		case n == 0:
			return true // every writer of the pipe is gone
		default:
			moved = true
			c.progress.Add(n)
		}
	}
}

// copyIn copies src to w until src ends, w refuses (the command stopped
// reading), or cancel becomes readable (closed: the run ended). src is
// polled before each read, so that a source with nothing to give (a named
// pipe, a terminal-less device) never keeps it.
func copyIn(w, src, cancel *os.File) {
	buf := make([]byte, 64<<10)
	sfd, cfd := int(src.Fd()), int(cancel.Fd())
	for {
		fds := []unix.PollFd{{Fd: int32(sfd), Events: unix.POLLIN}, {Fd: int32(cfd), Events: unix.POLLIN}}
		if _, err := sys.RetryValue(func() (int, error) { return unix.Poll(fds, -1) }); err != nil {
			return
		}
		if fds[1].Revents != 0 || fds[0].Revents&unix.POLLNVAL != 0 {
			return
		}
		n, err := sys.RetryValue(func() (int, error) { return unix.Read(sfd, buf) })
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err == unix.EAGAIN {
			continue // a source in non-blocking mode, polled again
		}
		if n <= 0 || err != nil {
			return
		}
	}
}

// abort ends the copying of a run that did not start.
func (c *stdioCopy) abort() { c.wait() }

// listeningStdio is the error for a listening socket as the command's
// descriptor i: it would accept connections from the host's network (an
// inetd-style caller's), past the sandbox's own.
func listeningStdio(i int) error {
	name := [...]string{"standard input", "standard output", "standard error", "descriptor 3"}[i]
	return fmt.Errorf("the command's %s (descriptor %d) is a listening socket: moat does not hand one to a sandboxed command (it would serve on the host's network, past the sandbox's); accept the connection and give it that", name, i)
}

// directoryStdio is the error for a directory as the command's descriptor i:
// through /proc/self/fd/N a command reaches the host's tree below it, on
// the host's mount, where the sandbox's hidden paths are not (a `moat run
// ... < ~` read ~/.ssh; found by an attack pass).
func directoryStdio(f *os.File, i int) error {
	name := [...]string{"standard input", "standard output", "standard error"}[i]
	where, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	return fmt.Errorf("the command's %s (descriptor %d) is a directory, %s: moat does not hand a directory to a sandboxed command (through /proc/self/fd/%d it would read the host's tree below it, past the sandbox's hidden paths); give it a file, a pipe or /dev/null", name, i, where, i)
}
