//go:build linux

package privtests

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	// unix-fdswap PATH TRIES: connect a unix socket to PATH. First plainly;
	// then, TRIES times, connect(2) descriptor 100 holding an inet socket
	// while another thread swaps a fresh unix socket onto 100 and back
	// (dup2): a broker that checks the descriptor and lets the kernel carry
	// on has the kernel look 100 up again, and connect the unix socket to
	// PATH unchecked (found by an attack pass).
	attacks["unix-fdswap"] = func(a []string) (string, error) {
		target := a[0]
		tries, _ := strconv.Atoi(a[1])
		if said, err := dialUnix(target); err == nil {
			return said + " (a plain connect)", nil
		}
		const slot = 100
		var u, in atomic.Int32
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer close(done)
			for !stop.Load() {
				if uf, inf := u.Load(), in.Load(); uf > 0 && inf > 0 {
					unix.Dup3(int(uf), slot, unix.O_CLOEXEC)
					unix.Dup3(int(inf), slot, unix.O_CLOEXEC)
				}
			}
		}()
		defer func() { stop.Store(true); <-done }()
		runtime.LockOSThread()
		sa := &unix.SockaddrUnix{Name: target}
		for i := 1; i <= tries; i++ {
			uf, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return "", fmt.Errorf("socket(AF_UNIX): %w", err)
			}
			inf, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				unix.Close(uf)
				return "", fmt.Errorf("socket(AF_INET): %w", err)
			}
			unix.Dup3(inf, slot, unix.O_CLOEXEC)
			in.Store(int32(inf))
			u.Store(int32(uf))
			unix.Connect(slot, sa)
			u.Store(0)
			in.Store(0)
			if _, err := unix.Getpeername(uf); err == nil {
				unix.SetsockoptTimeval(uf, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
				buf := make([]byte, 16)
				n, _ := unix.Read(uf, buf)
				unix.Close(uf)
				unix.Close(inf)
				if n > 0 {
					return fmt.Sprintf("unix socket said %s (the swap won after %d tries)", buf[:n], i), nil
				}
				return fmt.Sprintf("connected to %s (the swap won after %d tries)", target, i), nil
			}
			unix.Close(uf)
			unix.Close(inf)
		}
		return "", fmt.Errorf("neither a plain connect nor %d swaps reached %s", tries, target)
	}
}

func init() {
	// tcp-fastopen ADDR sendto|sendmsg: a TCP connection made by a Fast
	// Open send (MSG_FASTOPEN), not by connect(2); escapes when the
	// listener at ADDR answers.
	attacks["tcp-fastopen"] = func(a []string) (string, error) {
		ap, err := netip.ParseAddrPort(a[0])
		if err != nil {
			return "", err
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("socket: %w", err)
		}
		defer unix.Close(fd)
		sa := &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}
		req := []byte("GET / HTTP/1.0\r\n\r\n")
		if len(a) > 1 && a[1] == "sendmsg" {
			err = unix.Sendmsg(fd, req, nil, sa, unix.MSG_FASTOPEN)
		} else {
			err = unix.Sendto(fd, req, unix.MSG_FASTOPEN, sa)
		}
		if err != nil {
			return "", fmt.Errorf("%s(MSG_FASTOPEN): %w", a[len(a)-1], err)
		}
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 3})
		buf := make([]byte, 64)
		n, err := unix.Read(fd, buf)
		if n <= 0 {
			return "", fmt.Errorf("no answer: %v", err)
		}
		return fmt.Sprintf("reached %s: %q", a[0], buf[:n]), nil
	}
}

func init() {
	// connect-leak N: N times, a child process starts a blocking TCP
	// connect to a listener that never accepts (backlog full, SYNs retried
	// for ever) and is killed 5 ms later. Under the unix-socket broker each
	// such connect is the supervisor's: unbounded, each left a thread in
	// it behind. Escapes when all N ran (the supervisor is looked at by
	// the test).
	attacks["connect-leak"] = func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[0])
		l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(l)
		if err := unix.Bind(l, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			if err := unix.Listen(l, 0); err != nil { // (Landlock may refuse a bind; listen binds)
				return "", fmt.Errorf("listen: %w", err)
			}
		} else if err := unix.Listen(l, 0); err != nil {
			return "", fmt.Errorf("listen: %w", err)
		}
		sa, err := unix.Getsockname(l)
		if err != nil {
			return "", err
		}
		port := sa.(*unix.SockaddrInet4).Port
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		for i := 0; i < n; i++ {
			cmd := exec.Command(exe, "connect-block", strconv.Itoa(port))
			if err := cmd.Start(); err != nil {
				return "", fmt.Errorf("child %d: %w", i, err)
			}
			time.Sleep(5 * time.Millisecond)
			cmd.Process.Kill()
			cmd.Wait()
		}
		return fmt.Sprintf("%d blocking connects started and abandoned", n), nil
	}
	attacks["connect-block"] = func(a []string) (string, error) {
		port, _ := strconv.Atoi(a[0])
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", err
		}
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_SYNCNT, 127)
		err = unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port})
		return "", fmt.Errorf("connect returned: %v", err)
	}
}

func init() {
	// netlink-connect: connect a NETLINK_ROUTE socket to the kernel's
	// address (under the unix-socket broker the connect would be the
	// supervisor's, with its capabilities).
	attacks["netlink-connect"] = func(a []string) (string, error) {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		if err != nil {
			return "", fmt.Errorf("socket: %w", err)
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return "", fmt.Errorf("connect: %w", err)
		}
		return "connected a netlink socket", nil
	}
}
