//go:build linux

package bpf

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the program the tests put into a cgroup:
// with MOAT_BPF_HELPER set it runs the socket operations named by its
// arguments, prints "<op> <addr> <result>" for each (result "ok" or an
// errno name such as EPERM) and exits. With MOAT_BPF_ATTACH=<cgroup dir>
// it attaches a filter allowing its arguments and exits without closing
// it, like a moat that dies.
func TestMain(m *testing.M) {
	switch {
	case os.Getenv("MOAT_BPF_HELPER") != "":
		os.Exit(helperMain(os.Args[1:]))
	case os.Getenv("MOAT_BPF_ATTACH") != "":
		os.Exit(attachMain(os.Getenv("MOAT_BPF_ATTACH"), os.Args[1:]))
	}
	os.Exit(m.Run())
}

func attachMain(dir string, args []string) int {
	var allow []netip.AddrPort
	for _, a := range args {
		allow = append(allow, netip.MustParseAddrPort(a))
	}
	if _, err := Attach(dir, allow, Options{}); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("attached")
	return 0 // exit with the filter open: nothing detaches it
}

// op is one socket operation for the helper: its name, and an address
// for those that take one.
type op struct {
	name string
	addr string
}

func (o op) String() string { return o.name + " " + o.addr }

func helperMain(args []string) int {
	fmt.Printf("pid %d\n", os.Getpid())
	for i := 0; i+1 < len(args); i += 2 {
		o := op{args[i], args[i+1]}
		err := o.run()
		res := "ok"
		if err != nil {
			var en syscall.Errno
			if errors.As(err, &en) {
				res = unix.ErrnoName(en)
			} else {
				res = "error:" + strings.ReplaceAll(err.Error(), " ", "_")
			}
		}
		fmt.Printf("%s %s %s\n", o.name, o.addr, res)
	}
	return 0
}

// sockaddr builds the socket address for family from "addr:port": an
// AF_INET6 socket keeps an IPv4-mapped address as it is written.
func sockaddr(family int, s string) (unix.Sockaddr, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return nil, err
	}
	if family == unix.AF_INET {
		if !ap.Addr().Is4() {
			return nil, fmt.Errorf("%s is not IPv4", s)
		}
		return &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}, nil
	}
	return &unix.SockaddrInet6{Addr: ap.Addr().As16(), Port: int(ap.Port())}, nil
}

func (o op) family() int {
	if strings.HasSuffix(o.name, "6") {
		return unix.AF_INET6
	}
	return unix.AF_INET
}

func (o op) run() error {
	fam := o.family()
	switch strings.TrimRight(o.name, "46") {
	case "tcp": // connect
		return withSocket(fam, unix.SOCK_STREAM, 0, func(fd int) error { return connect(fd, fam, o.addr) })
	case "mptcp": // create an MPTCP socket and connect
		return withSocket(fam, unix.SOCK_STREAM, unix.IPPROTO_MPTCP, func(fd int) error { return connect(fd, fam, o.addr) })
	case "udp": // unconnected sendto
		return withSocket(fam, unix.SOCK_DGRAM, 0, func(fd int) error {
			sa, err := sockaddr(fam, o.addr)
			if err != nil {
				return err
			}
			return unix.Sendto(fd, []byte("moat"), 0, sa)
		})
	case "udpconn": // connected UDP: connect, then send
		return withSocket(fam, unix.SOCK_DGRAM, 0, func(fd int) error {
			if err := connect(fd, fam, o.addr); err != nil {
				return err
			}
			_, err := unix.Write(fd, []byte("moat"))
			return err
		})
	case "tfo": // TCP Fast Open: the connect happens inside sendto
		return withSocket(fam, unix.SOCK_STREAM, 0, func(fd int) error {
			sa, err := sockaddr(fam, o.addr)
			if err != nil {
				return err
			}
			err = unix.Sendto(fd, []byte("GET / HTTP/1.0\r\n\r\n"), unix.MSG_FASTOPEN, sa)
			if err == unix.EINPROGRESS {
				return nil
			}
			return err
		})
	case "bind":
		return withSocket(fam, unix.SOCK_STREAM, 0, func(fd int) error {
			sa, err := sockaddr(fam, o.addr)
			if err != nil {
				return err
			}
			return unix.Bind(fd, sa)
		})
	case "tcpfd": // connect the inherited socket at fd 3
		return connect(3, fam, o.addr)
	case "listen": // listen() on a socket that was never bound
		return withSocket(fam, unix.SOCK_STREAM, 0, func(fd int) error { return unix.Listen(fd, 1) })
	case "raw":
		return withSocket(fam, unix.SOCK_RAW, unix.IPPROTO_ICMP, func(int) error { return nil })
	case "ping": // an ICMP echo socket; needs ping_group_range, set in a private netns
		if o.addr == "ownnet" {
			if err := os.WriteFile("/proc/sys/net/ipv4/ping_group_range", []byte("0 2147483647"), 0); err != nil {
				return err
			}
		}
		return withSocket(fam, unix.SOCK_DGRAM, unix.IPPROTO_ICMP, func(int) error { return nil })
	case "repeat": // addr is "N:tcp4:addr:port": N refused connects, result of the last
		n, rest, _ := strings.Cut(o.addr, ":")
		name, target, _ := strings.Cut(rest, ":")
		count, _ := strconv.Atoi(n)
		var err error
		for range count {
			err = op{name, target}.run()
		}
		return err
	}
	return fmt.Errorf("unknown op %q", o.name)
}

func withSocket(family, typ, proto int, f func(fd int) error) error {
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return f(fd)
}

// connect connects with a 2 s timeout (SO_SNDTIMEO bounds a blocking
// connect).
func connect(fd, family int, addr string) error {
	sa, err := sockaddr(family, addr)
	if err != nil {
		return err
	}
	tv := unix.NsecToTimeval((2 * time.Second).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return err
	}
	for {
		err = unix.Connect(fd, sa)
		if err != unix.EINTR {
			return err
		}
	}
}

// helperRun is one run of the helper: its pid and each op's result.
type helperRun struct {
	pid     int               // as the host sees it
	selfPid int               // as the helper saw it (1 in a new pid namespace)
	results map[string]string // op.String() -> result
}

// runHelper runs ops in a fresh helper process. cgroupFD >= 0 starts it
// inside that cgroup (CLONE_INTO_CGROUP); cloneflags add namespaces (with
// CLONE_NEWUSER, host root is mapped to uid 0 inside).
func runHelper(t *testing.T, cgroupFD int, cloneflags uintptr, ops []op, extra ...*os.File) helperRun {
	t.Helper()
	var args []string
	for _, o := range ops {
		args = append(args, o.name, o.addr)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "MOAT_BPF_HELPER=1")
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: cloneflags}
	if cloneflags&syscall.CLONE_NEWUSER != 0 {
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 65534, Size: 1}}
		cmd.SysProcAttr.GidMappingsEnableSetgroups = false
	}
	if cgroupFD >= 0 {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = cgroupFD
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper %v: %v\n%s", args, err, out)
	}
	run := helperRun{pid: cmd.Process.Pid, results: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "pid":
			run.selfPid, _ = strconv.Atoi(f[1])
		case len(f) == 3:
			run.results[f[0]+" "+f[1]] = f[2]
		default:
			t.Fatalf("helper said %q", sc.Text())
		}
	}
	if run.selfPid == 0 || len(run.results) != len(ops) {
		t.Fatalf("helper output incomplete:\n%s", out)
	}
	return run
}
