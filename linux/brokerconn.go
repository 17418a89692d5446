//go:build linux

package linux

import (
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
)

// The connects the broker makes for a command (connectOther) run in
// goroutines: a blocking connect holds an OS thread until the peer answers
// or the kernel gives up (minutes, with TCP_SYNCNT raised). Unbounded, a
// command that started a blocking connect to a listener that never
// accepts, killed its own process and started again, left a thread behind
// each time, and `moat serve` died of thread exhaustion with every
// sandbox it served (found by an attack pass). So: at most connThreads
// connects of a sandbox block at once (the others wait, as goroutines,
// with no thread), and a connect whose caller is gone (its thread exited:
// killed, or the whole command ended) is ended at once, by a shutdown of
// the socket, which ends a connect in progress.
const connThreads = 32

// processConnThreads bounds the blocking connects of every sandbox of the
// process together: a daemon serving many users counts a thread for each
// of their sessions' commands in the slots it gives them
// (netproxy.TakeSlots), and keeps a quarter of the threads it may have
// for the rest, which holds these; 32 a sandbox was unbounded across a
// daemon's sandboxes. A connect waits for one as a goroutine.
var processConnThreads = make(chan struct{}, 128)

// connWatch is how often the callers of connects in progress are looked
// at.
const connWatch = 100 * time.Millisecond

// brokerConn is one connect the broker makes for a command.
type brokerConn struct {
	pidfd int // the calling thread (readable once it has exited)
	fd    int // this process's copy of the command's socket
	gone  chan struct{}
	ended bool // the caller is gone: gone is closed, the socket shut down
}

// conns are a sandbox's brokered connects: the waiters for a thread, and
// those in progress.
type conns struct {
	mu       sync.Mutex
	slots    chan struct{}
	live     map[*brokerConn]bool
	watching bool
}

// connect connects fd (the broker's copy; connect closes it) to addr for
// the thread pidfd names (connect closes it too), within the bounds above.
func (c *conns) connect(pidfd, fd int, addr []byte) unix.Errno {
	bc := &brokerConn{pidfd: pidfd, fd: fd, gone: make(chan struct{})}
	c.mu.Lock()
	if c.slots == nil {
		c.slots = make(chan struct{}, connThreads)
		c.live = map[*brokerConn]bool{}
	}
	c.live[bc] = true
	if !c.watching {
		c.watching = true
		go c.watch()
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.live, bc)
		unix.Close(bc.fd)
		unix.Close(bc.pidfd)
		c.mu.Unlock()
	}()
	select {
	case c.slots <- struct{}{}:
	case <-bc.gone:
		return unix.ECANCELED // (the caller is gone: no one reads it)
	}
	defer func() { <-c.slots }()
	select {
	case processConnThreads <- struct{}{}:
	case <-bc.gone:
		return unix.ECANCELED
	}
	defer func() { <-processConnThreads }()
	select {
	case <-bc.gone:
		return unix.ECANCELED
	default:
	}
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&addr[0])), uintptr(len(addr)))
	return e
}

// watch ends the connects whose callers are gone, every connWatch, for as
// long as there are connects.
func (c *conns) watch() {
	t := time.NewTicker(connWatch)
	defer t.Stop()
	for range t.C {
		c.mu.Lock()
		if len(c.live) == 0 {
			c.watching = false
			c.mu.Unlock()
			return
		}
		var fds []unix.PollFd
		var which []*brokerConn
		for bc := range c.live {
			if !bc.ended {
				fds = append(fds, unix.PollFd{Fd: int32(bc.pidfd), Events: unix.POLLIN})
				which = append(which, bc)
			}
		}
		if len(fds) > 0 {
			if _, err := sys.RetryValue(func() (int, error) { return unix.Poll(fds, 0) }); err == nil {
				for i, p := range fds {
					if p.Revents == 0 {
						continue
					}
					bc := which[i]
					bc.ended = true
					close(bc.gone)
					unix.Shutdown(bc.fd, unix.SHUT_RDWR) // ends a connect in progress
				}
			}
		}
		c.mu.Unlock()
	}
}
