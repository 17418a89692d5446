//go:build linux

package linux

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/internal/lazyre"
	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/linux/seccomp"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/gitguard"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// observer serves the seccomp user-notification fd of one sandbox.
//
// Refused syscalls (ptrace, mount, a new user namespace, AF_UNIX sockets,
// TIOCSTI...) arrive here instead of failing in the kernel, so each one is
// recorded as a violation before the observer answers EPERM: the refusal
// never depends on the observer (without it the kernel answers ENOSYS).
//
// Filesystem writes arrive too. The observer reads the path, records a
// violation when the policy refuses writing there (unless the call only
// creates a name that already exists, such as mkdir -p on an existing
// directory: the kernel answers EEXIST either way), and lets the kernel run
// the syscall (SECCOMP_USER_NOTIF_FLAG_CONTINUE). That is a hint, never a
// decision: the mounts and Landlock decide. Reading the path races with the
// command's other threads, so a hostile command can make the report wrong,
// never the enforcement.
type observer struct {
	fd     int
	view   *view
	report func(policy.Violation)
	// unixAllow are the unix sockets the command may connect to (resolved
	// when the sandbox started); connect(2) comes here only when the
	// broker is on.
	unixAllow []allowedSock
	// connectInside has the sandbox's init connect an allowed unix socket
	// (unixconnect.go): the command's socket, the socket checked (O_PATH);
	// it returns the socket the answer comes on (awaitConnect).
	connectInside func(sock, target int) (*os.File, unix.Errno)
	// tcpPorts, if not nil, are the only ports a TCP socket may connect
	// to (the no-namespace tier without eBPF, where Landlock holds TCP to
	// the proxy's ports): a connect the broker makes for the command is
	// the supervisor's own, which the command's Landlock domain does not
	// govern, so the broker applies the same rule.
	tcpPorts map[uint16]bool
	// later counts the answers goroutines still owe (connects the broker
	// makes for the command); closed says serve has returned. The last of
	// them closes fd (an answer must never go to a reused descriptor).
	laterMu sync.Mutex
	later   int
	closed  bool
	// conns bounds the connects the broker makes (brokerconn.go).
	conns conns
	// writes counts the filesystem-writing syscalls notified (attempted,
	// refused or not): none at all means the command changed nothing on
	// disk, which the kernel, not the command, vouches for.
	writes *atomic.Int64
	// also counts them too (a session's total, beside a command's own).
	also *atomic.Int64
	// dirs resolves the directories of reported paths (this launch's).
	dirs *resolver
	// noMetadata: the filter refuses seccomp.MetadataSyscalls (root
	// without a mount namespace); they arrive here to be reported, and
	// are refused.
	noMetadata bool
	// nonsUser: the no-namespace tier as a user. A change of a mode,
	// owner, times, attributes or size (which Landlock does not govern)
	// is made by the observer itself, on the file it opened and found
	// inside the writable paths, or refused (metabroker.go).
	nonsUser bool
	linkBuf  [unix.PathMax]byte // readlink's (serve's one thread)
	// as is moatd's client (enforce.Launch.As), nil otherwise: what the
	// observer looks up on the host for a report (a parent's symlinks, a
	// last symlink, whether a name exists) it looks up with the client's
	// credentials, borrowed by serve's own thread for the look. As root, a
	// mkdir in a directory only root may search was reported when the
	// name was missing and not when it existed, and a write through a
	// symlink there was reported by where the link led (attack pass 58;
	// TestDaemonAttackObserverStatOracle).
	as *enforce.Identity
	// tainted: serve's thread could not get its own credentials back
	// after a look; it looks no more, and is never given back to Go.
	tainted bool
}

// look runs fn with the credentials of the user the sandbox is for, on
// serve's thread (locked to it). fn does not run when they cannot be had
// (its callers then report the path as the command wrote it).
//
// Each look first asks as serve's thread is (root, for moatd) and borrows
// the client's credentials only when the answer would change the report
// (a symlink on the way, a name that exists): an answer that changes
// nothing (no symlink, nothing there) is the answer of a client that may
// not look too, and most writes need no borrowing (a borrowed look costs
// a dozen system calls).
func (o *observer) look(fn func()) {
	if o.as == nil {
		fn()
		return
	}
	if o.tainted {
		return
	}
	if _, restored := ascred.Borrow(o.as.Uid, o.as.Gid, identityGroups(o.as), fn); !restored {
		o.tainted = true
	}
}

// seccomp_notif and seccomp_notif_resp.
type notif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

type notifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// errLater is handle's answer when a goroutine will send the answer.
const errLater = unix.Errno(^uintptr(0))

func (o *observer) serve() {
	// Each notification is a round trip the command waits on: keep this
	// loop on one thread, and ask the kernel (6.6+) to wake it
	// synchronously, on the notifying task's CPU.
	// The thread also borrows moatd's client's credentials for a look
	// (o.look): one that did not get its own back whole ends with serve.
	runtime.LockOSThread()
	if o.as != nil && ascred.OnMainThread() {
		// Never the main thread, whose credentials are the process's in
		// /proc/PID/status, what moatd compares each peer with: a borrow
		// there had it refuse every peer meanwhile (and for good, tainted).
		// It is held while another serves.
		done := make(chan struct{})
		go func() { defer close(done); o.serve() }()
		<-done
		runtime.UnlockOSThread()
		return
	}
	defer o.release()
	defer func() {
		if !o.tainted {
			runtime.UnlockOSThread()
		}
	}()
	_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(o.fd), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	for {
		fds := []unix.PollFd{{Fd: int32(o.fd), Events: unix.POLLIN}}
		if _, err := sys.RetryValue(func() (int, error) { return unix.Poll(fds, -1) }); err != nil {
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
				return // no process uses the filter any more
			}
			continue
		}
		var n notif
		if err := ioctlPtr(o.fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if err == unix.ENOENT {
				continue // the process went away before we received it
			}
			return
		}
		errno, cont := o.handle(&n)
		if errno == errLater {
			continue
		}
		resp := notifResp{id: n.id}
		if cont {
			resp.flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
		} else {
			resp.error = -int32(errno)
		}
		_ = ioctlPtr(o.fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
	}
}

// release closes the notification descriptor once serve has returned and
// no goroutine owes an answer on it.
func (o *observer) release() {
	o.laterMu.Lock()
	o.closed = true
	last := o.later == 0
	o.laterMu.Unlock()
	if last {
		unix.Close(o.fd)
	}
}

// answerLater runs f in a goroutine and sends the errno it returns as the
// answer to notification id.
func (o *observer) answerLater(id uint64, f func() unix.Errno) unix.Errno {
	o.laterMu.Lock()
	o.later++
	o.laterMu.Unlock()
	go func() {
		errno := f()
		o.laterMu.Lock()
		defer o.laterMu.Unlock()
		resp := notifResp{id: id, error: -int32(errno)}
		_ = ioctlPtr(o.fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)) // (ENOENT: the caller is gone)
		o.later--
		if o.later == 0 && o.closed {
			unix.Close(o.fd)
		}
	}()
	return errLater
}

func ioctlPtr(fd int, req uint, p unsafe.Pointer) error {
	return sys.Retry(func() error {
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p)); e != 0 {
			return e
		}
		return nil
	})
}

// idValid reports whether the notification is still pending (the process
// did not die and its pid was not reused while we read its memory).
func (o *observer) idValid(id uint64) bool {
	return ioctlPtr(o.fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

// handle decides the answer: (errno, false) refuses, (0, true) continues.
func (o *observer) handle(n *notif) (unix.Errno, bool) {
	name := syscallName(int(n.nr))
	switch name {
	case "connect":
		return o.brokerConnect(n)
	case "listen":
		return o.listen(n)
	case "socketpair":
		o.report(policy.Violation{Kind: policy.NetworkViolation, Op: "unix-socket", Target: "socketpair(AF_UNIX) of a datagram type",
			Rule: "a datagram socket sends to any unix socket path (network.allowAllUnixSockets)", Pid: int(n.pid)})
		return unix.EPERM, false
	case "socket":
		if fam := n.args[0]; fam != unix.AF_UNIX {
			o.report(policy.Violation{Kind: policy.NetworkViolation, Op: "socket", Target: familyName(fam, n.args[2]),
				Rule: "only inet, inet6, unix and netlink-route sockets exist in the sandbox", Pid: int(n.pid)})
			return unix.EPERM, false
		}
		o.report(policy.Violation{Kind: policy.NetworkViolation, Op: "unix-socket", Target: "socket(AF_UNIX)",
			Rule: "unix sockets are blocked (network.allowUnixSockets / allowAllUnixSockets)", Pid: int(n.pid)})
		return unix.EPERM, false
	case "personality":
		o.report(policy.Violation{Kind: policy.SyscallViolation, Op: "personality", Target: fmt.Sprintf("%#x", uint32(n.args[0])),
			Rule: "only the Linux personas, with address randomisation kept", Pid: int(n.pid)})
		return unix.EPERM, false
	case "clone", "unshare":
		o.report(policy.Violation{Kind: policy.SyscallViolation, Op: name, Target: nsFlagNames(n.args[0]),
			Rule: "no new namespaces inside the sandbox", Pid: int(n.pid)})
		return unix.EPERM, false
	case "futex":
		o.report(policy.Violation{Kind: policy.SyscallViolation, Op: "futex", Target: fmt.Sprintf("requeue of a shared futex (%#x)", uint32(n.args[1])),
			Rule: "no requeue of a futex shared between processes: it moves other processes' waiters where no wake reaches them", Pid: int(n.pid)})
		return unix.EPERM, false
	case "prlimit64", "setpriority", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr", "ioprio_set":
		o.report(policy.Violation{Kind: policy.SyscallViolation, Op: name, Target: "pid 1, every process of a user, or (in a session, or without namespaces) another process",
			Rule: "the sandbox's init, the session's server and reapers, the supervisor and the host's processes keep their limits, priority and CPUs", Pid: int(n.pid)})
		return unix.EPERM, false
	case "shmget", "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl":
		o.report(policy.Violation{Kind: policy.SyscallViolation, Op: name, Target: "System V IPC",
			Rule: "without an IPC namespace System V shared memory, message queues and semaphores are the host's processes'", Pid: int(n.pid)})
		return unix.EPERM, false
	case "setsockopt":
		o.report(policy.Violation{Kind: policy.NetworkViolation, Op: "setsockopt", Target: sockoptName(n.args[1], n.args[2]),
			Rule: "no source routes or IPv6 routing headers where the host's network is shared: they send packets past the filter, to another host than the one connected to", Pid: int(n.pid)})
		return unix.EPERM, false
	case "fcntl":
		o.report(policy.Violation{Kind: policy.SyscallViolation, Op: "fcntl", Target: "F_SETLEASE",
			Rule: "no file leases: a lease holds other processes' opens of the file", Pid: int(n.pid)})
		return unix.EPERM, false
	case "ioctl":
		if o.nonsUser && seccomp.IsInodeFlagIoctl(n.args[1]) {
			return o.brokerInodeFlags(n) // metabroker.go
		}
		rule := "terminal input injection is blocked"
		switch {
		case seccomp.IsBtrfsIoctl(n.args[1]):
			rule = "no btrfs subvolumes or snapshots: they are made, and read, past the mounts and Landlock"
		case seccomp.IsFscryptIoctl(n.args[1]):
			rule = "no encryption keys or policies, no fs-verity: a filesystem's keys outlive the sandbox, charged to the user's key quota; verity makes a file read-only for good"
		}
		o.report(policy.Violation{Kind: policy.SyscallViolation, Op: "ioctl", Target: ioctlName(n.args[1]),
			Rule: rule, Pid: int(n.pid)})
		return unix.EPERM, false
	}
	if o.noMetadata && isMetadata(name) {
		target := ""
		if fdCalls[name] {
			// By the path the descriptor was opened at, as the
			// namespaced tier reports it (it named no file).
			target = fdPath(int(n.pid), int(int32(n.args[0])))
		} else if pa := pathArgs[name]; len(pa) > 0 {
			if raw, ok := readString(int(n.pid), n.args[pa[0][1]]); ok {
				dirfd := unix.AT_FDCWD
				if pa[0][0] >= 0 {
					dirfd = int(int32(n.args[pa[0][0]]))
				}
				target = o.resolve(int(n.pid), dirfd, raw)
			}
		}
		o.report(policy.Violation{Kind: policy.FileViolation, Op: name, Target: target,
			Rule: "as root without a mount namespace, no file's mode, owner, times or attributes may change (Landlock does not govern these calls)", Pid: int(n.pid)})
		return unix.EPERM, false
	}
	if o.nonsUser && isMetadata(name) {
		return o.brokerMetadata(n, name) // metabroker.go
	}
	if _, write := pathArgs[name]; !write {
		// Every other notified syscall is one the filter refuses (and one
		// the observer does not know by name fails closed too).
		rule := "blocked by moat's seccomp filter"
		if !isDenied(name) {
			rule = "refused: a syscall moat's filter reports and the observer does not know"
		}
		o.report(policy.Violation{Kind: policy.SyscallViolation, Op: name, Rule: rule, Pid: int(n.pid)})
		return unix.EPERM, false
	}
	if o.writes != nil {
		o.writes.Add(1)
	}
	if o.also != nil {
		o.also.Add(1)
	}
	o.observeWrite(n, name)
	return 0, true
}

func isMetadata(name string) bool {
	for _, m := range seccomp.MetadataSyscalls {
		if m == name {
			return true
		}
	}
	return name == "setxattrat" || name == "removexattrat" || name == "file_setattr"
}

// familyName names a socket family (and the netlink protocol).
func familyName(fam, proto uint64) string {
	names := map[uint64]string{
		unix.AF_UNSPEC: "AF_UNSPEC", unix.AF_PACKET: "AF_PACKET", unix.AF_VSOCK: "AF_VSOCK", unix.AF_ALG: "AF_ALG",
		unix.AF_KEY: "AF_KEY", unix.AF_XDP: "AF_XDP", unix.AF_BLUETOOTH: "AF_BLUETOOTH", unix.AF_CAN: "AF_CAN",
		unix.AF_TIPC: "AF_TIPC", unix.AF_RDS: "AF_RDS", unix.AF_NETLINK: "AF_NETLINK", unix.AF_APPLETALK: "AF_APPLETALK",
		unix.AF_X25: "AF_X25", unix.AF_AX25: "AF_AX25", unix.AF_LLC: "AF_LLC", unix.AF_IB: "AF_IB", unix.AF_MPLS: "AF_MPLS",
	}
	n, ok := names[fam]
	if !ok {
		n = fmt.Sprintf("family %d", fam)
	}
	if fam == unix.AF_NETLINK {
		n += fmt.Sprintf(" protocol %d", int32(proto))
	}
	return "socket(" + n + ")"
}

// sockoptName names a socket option NoSourceRoute refuses.
func sockoptName(level, name uint64) string {
	switch [2]uint64{uint64(uint32(level)), uint64(uint32(name))} {
	case [2]uint64{unix.IPPROTO_IP, unix.IP_OPTIONS}:
		return "IP_OPTIONS"
	case [2]uint64{unix.IPPROTO_IPV6, unix.IPV6_RTHDR}:
		return "IPV6_RTHDR"
	case [2]uint64{unix.IPPROTO_IPV6, unix.IPV6_2292RTHDR}:
		return "IPV6_2292RTHDR"
	case [2]uint64{unix.IPPROTO_IPV6, unix.IPV6_2292PKTOPTIONS}:
		return "IPV6_2292PKTOPTIONS"
	}
	return fmt.Sprintf("level %d option %d", int32(level), int32(name))
}

func isDenied(name string) bool {
	for _, d := range seccomp.Denied {
		if d == name {
			return true
		}
	}
	return name == "open_tree_attr"
}

// pathArgs says where the paths of a filesystem syscall are: pairs of
// (dirfd argument, path argument); a dirfd of -1 means AT_FDCWD.
var pathArgs = map[string][][2]int{
	"open": {{-1, 0}}, "creat": {{-1, 0}}, "openat": {{0, 1}}, "openat2": {{0, 1}},
	"truncate": {{-1, 0}},
	"mkdir":    {{-1, 0}}, "mkdirat": {{0, 1}}, "mknod": {{-1, 0}}, "mknodat": {{0, 1}},
	"rmdir": {{-1, 0}}, "unlink": {{-1, 0}}, "unlinkat": {{0, 1}},
	"rename": {{-1, 0}, {-1, 1}}, "renameat": {{0, 1}, {2, 3}}, "renameat2": {{0, 1}, {2, 3}},
	"link": {{-1, 1}}, "linkat": {{2, 3}}, "symlink": {{-1, 1}}, "symlinkat": {{1, 2}},
	"chmod": {{-1, 0}}, "fchmodat": {{0, 1}}, "fchmodat2": {{0, 1}},
	"chown": {{-1, 0}}, "lchown": {{-1, 0}}, "fchownat": {{0, 1}},
	"utime": {{-1, 0}}, "utimes": {{-1, 0}}, "futimesat": {{0, 1}},
	"setxattr": {{-1, 0}}, "lsetxattr": {{-1, 0}}, "removexattr": {{-1, 0}}, "lremovexattr": {{-1, 0}},
	"setxattrat": {{0, 1}}, "removexattrat": {{0, 1}}, "file_setattr": {{0, 1}},
	// Through a descriptor (fdCalls): reported by the path it was opened at.
	"fchmod": {}, "fchown": {}, "fsetxattr": {}, "fremovexattr": {},
}

// fdCalls change the file a descriptor (their first argument) is open on.
// They were counted and not reported: fchmod or fchown of a read-only file
// (Python's os.chmod(fd), install, cp -p) failed with EROFS and the report
// said nothing (attack pass 79, TestDescriptorMetadataReported).
var fdCalls = map[string]bool{"fchmod": true, "fchown": true, "fsetxattr": true, "fremovexattr": true}

// procFd is a path through one of a process's magic links in /proc: a
// descriptor's (/dev/fd/N and /dev/stdout are symlinks to such links in
// the sandbox's /dev), its working directory's or its root's, of the
// process or of one of its threads (/proc/PID/task/TID/...), and the path
// below the link.
var procFd = lazyre.New(`^/proc/(self|thread-self|[0-9]+)(?:/task/[0-9]+)?/(fd/[0-9]+|cwd|root)(/.*)?$`)

// procFdTarget is the file that p, a descriptor's link in the sandbox's
// /proc, reopens, by its path as the sandbox sees it; "" when p is no such
// link or leads to nothing with a path. A write reopening a read-only
// file's descriptor (echo x > /dev/fd/3, /proc/self/fd/3, /proc/$$/fd/3)
// failed with EROFS and was not reported: /proc and /dev are not looked at
// (attack pass 79, TestReopenedDescriptorWriteReported).
func (o *observer) procFdTarget(pid int, p string) string {
	if !strings.HasPrefix(p, "/proc/") && !strings.HasPrefix(p, "/dev/") {
		return ""
	}
	p = filepath.Clean(p)
	switch {
	case strings.HasPrefix(p, "/dev/fd/"):
		p = "/proc/self/fd/" + strings.TrimPrefix(p, "/dev/fd/")
	case p == "/dev/stdin":
		p = "/proc/self/fd/0"
	case p == "/dev/stdout":
		p = "/proc/self/fd/1"
	case p == "/dev/stderr":
		p = "/proc/self/fd/2"
	}
	m := procFd.FindStringSubmatch(p)
	if m == nil {
		return ""
	}
	link, below := m[2], m[3]
	var t string
	switch {
	case link == "root":
		// The sandbox's root, as it sees it: /proc/self/root/etc/x is
		// /etc/x (a process of the sandbox cannot chroot).
		t = "/"
	case m[1] == "self" || m[1] == "thread-self" || m[1] == nsPid(pid):
		// The command's own (a thread shares its process's descriptors
		// and directory): its link, read here. /proc/self/cwd/x, a
		// thread's /proc/self/task/TID/fd/N and /proc/PID/root/x were
		// not looked at, or /proc/self/cwd was taken for moat's own
		// (attack pass 81, TestReopenedDescriptorWriteReported).
		var err error
		if t, err = os.Readlink("/proc/" + strconv.Itoa(pid) + "/" + link); err != nil {
			return ""
		}
	default:
		// Another process, named by its pid in the command's /proc: its
		// link, read there, with the command's credentials where moat
		// serves another user (o.look), so that the report names no file
		// of a process the command may not look at (the no-namespace tier
		// shares the host's).
		var err error
		read := func() { t, err = os.Readlink("/proc/" + strconv.Itoa(pid) + "/root" + strings.TrimSuffix(p, below)) }
		if o.as != nil {
			o.look(read)
		} else {
			read()
		}
		if err != nil {
			return ""
		}
	}
	if !filepath.IsAbs(t) || strings.HasSuffix(t, " (deleted)") {
		return ""
	}
	if below == "" {
		return filepath.Clean(t)
	}
	// A path below the link: its directories resolved as any other path's.
	return o.resolve(pid, unix.AT_FDCWD, filepath.Join(t, below))
}

// nsPid is pid's number in its own (innermost) pid namespace, "" if
// unknown.
func nsPid(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "NSpid:" {
			return f[len(f)-1]
		}
	}
	return ""
}

// fdPath is the path, as the sandbox sees it, of the file descriptor fd of
// pid is open on; "" for what has none the policy speaks of: a pipe, a
// socket, an anonymous inode, a memfd or a deleted file (" (deleted)").
func fdPath(pid, fd int) string {
	p, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(p) || strings.HasSuffix(p, " (deleted)") {
		return ""
	}
	return filepath.Clean(p)
}

func (o *observer) observeWrite(n *notif, name string) {
	if fdCalls[name] {
		p := fdPath(int(n.pid), int(int32(n.args[0])))
		if p == "" || within(p, "/proc") || within(p, "/dev") || !o.idValid(n.id) {
			return
		}
		if ok, why := o.view.writableMade(p); !ok {
			o.report(policy.Violation{Kind: policy.FileViolation, Op: "write", Target: p, Rule: why, Pid: int(n.pid)})
		}
		return
	}
	for _, pa := range pathArgs[name] {
		raw, ok := readString(int(n.pid), n.args[pa[1]])
		if !ok || raw == "" {
			continue
		}
		dirfd := unix.AT_FDCWD
		if pa[0] >= 0 {
			dirfd = int(int32(n.args[pa[0]]))
		}
		// A descriptor's link is read by the path the command gave: the
		// host's /dev/fd and /proc/self, which resolve would follow, are
		// this process's.
		p := o.procFdTarget(int(n.pid), raw)
		if p == "" {
			p = o.resolve(int(n.pid), dirfd, raw)
			if p != "" && followsLast(name, n.args) {
				p = o.followLast(int(n.pid), p)
			}
			if within(p, "/proc") {
				// Relative to a working directory in /proc
				// (cd /proc/self/fd; echo x > 3): the sandbox's /proc as
				// its cwd link names it, by the command's pid there.
				if q := o.procFdTarget(int(n.pid), p); q != "" {
					p = q
				}
			}
		}
		if !o.idValid(n.id) {
			return // the process moved on; what we read may be stale
		}
		if p == "" || within(p, "/proc") || within(p, "/dev") {
			continue
		}
		if ok, why := o.view.writableMade(p); !ok {
			if createCalls[name] && !o.protectedName(p) && o.existsIn(int(n.pid), p) {
				// mkdir -p walks every ancestor: the kernel answers
				// EEXIST whatever the policy, so the refusal says
				// nothing a user can act on.
				continue
			}
			if fl, open := openFlags(name, n.args); open && !o.protectedName(p) && !o.openRefused(int(n.pid), p, fl) {
				continue
			}
			o.report(policy.Violation{Kind: policy.FileViolation, Op: "write", Target: p, Rule: why, Pid: int(n.pid)})
		}
	}
}

// protectedName reports whether p itself is a mandatory protection (.vscode,
// .git/hooks, ...): such a name may exist only because moat put a
// placeholder there, so creating it is reported even when the kernel
// answers EEXIST: the line says why the name is there and never writable.
func (o *observer) protectedName(p string) bool {
	r, ok := closest(p, o.view.protect)
	return ok && r.path == p
}

// createCalls are the syscalls that make a new name and fail with EEXIST
// when it exists (their only path argument in pathArgs is the new name).
var createCalls = map[string]bool{
	"mkdir": true, "mkdirat": true, "mknod": true, "mknodat": true,
	"symlink": true, "symlinkat": true, "link": true, "linkat": true,
}

// openFlags are the flags of an open call, and whether name is one.
func openFlags(name string, args [6]uint64) (uint64, bool) {
	switch name {
	case "open":
		return args[1], true
	case "openat":
		return args[2], true
	case "creat":
		return unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, true
	}
	return 0, false
}

// openRefused reports whether an open with flags fl of p, a path outside
// the writable paths, fails because of it, by what p is in the filesystem
// pid sees. An open for reading with O_CREAT or O_APPEND of a file that
// exists is no write and succeeds (flock FILE, a lock file opened
// O_RDONLY|O_CREAT), and was reported as a refused write (attack pass 79,
// TestReadOpenWithWriteFlagNotReported); so were the kernel's own answers,
// which no policy changes: ENOENT for a name that is not there, EISDIR,
// EEXIST for O_EXCL. A FIFO or a device is refused only opened for writing
// (Landlock; O_TRUNC is ignored for them). What cannot be looked at is
// reported, as before.
func (o *observer) openRefused(pid int, p string, fl uint64) bool {
	if fl&unix.O_TMPFILE == unix.O_TMPFILE {
		return true // a new file in the directory p
	}
	mode, err := o.modeIn(pid, p)
	switch {
	case err == unix.ENOENT:
		return fl&unix.O_CREAT != 0
	case err != nil:
		return true
	case fl&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL:
		return false // EEXIST
	}
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR, unix.S_IFLNK:
		return false // EISDIR or a read; ELOOP (O_NOFOLLOW)
	case unix.S_IFREG:
		return fl&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC) != 0
	}
	return fl&(unix.O_WRONLY|unix.O_RDWR) != 0
}

// modeIn is the type and mode of p (not following a last symlink) in the
// filesystem pid sees, as existsIn looks: ENOENT when p or its parent is
// not there.
func (o *observer) modeIn(pid int, p string) (uint32, error) {
	root, err := sys.RetryValue(func() (int, error) {
		return unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return 0, err
	}
	defer unix.Close(root)
	var mode uint32
	look := func() {
		d, base, e := parentIn(root, p)
		if e != nil {
			err = e
			return
		}
		defer unix.Close(d)
		var st unix.Stat_t
		err = sys.Retry(func() error { return unix.Fstatat(d, base, &st, unix.AT_SYMLINK_NOFOLLOW) })
		mode = st.Mode
	}
	if o.as != nil {
		o.look(look)
	} else {
		look()
	}
	if errno, ok := err.(unix.Errno); ok {
		return mode, errno
	}
	return mode, err
}

// existsIn reports whether p exists (not following a last symlink, as
// mkdir(2) does not) in the filesystem pid sees: its parent is opened
// through /proc/pid/root with RESOLVE_IN_ROOT (an absolute symlink on the
// way stays in the sandbox's tree), the name is looked up with fstatat,
// which no inotify watch on a hidden path sees. It races with the command
// like every other read here; a name that exists when looked up cannot be
// made by the syscall the command is waiting on, unless the command
// removes it in between, which takes writing the same directory.
func (o *observer) existsIn(pid int, p string) bool {
	if p == "/" {
		return true
	}
	root, err := sys.RetryValue(func() (int, error) {
		return unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return false
	}
	defer unix.Close(root)
	// The sandbox's root is opened here (the command's process may be one
	// its user cannot inspect); the name is looked up in it as that user
	// (o.look): when it is there for this thread too.
	exists := func() bool {
		d, base, err := parentIn(root, p)
		if err != nil {
			return false
		}
		defer unix.Close(d)
		var st unix.Stat_t
		return sys.Retry(func() error { return unix.Fstatat(d, base, &st, unix.AT_SYMLINK_NOFOLLOW) }) == nil
	}
	found := exists()
	if found && o.as != nil {
		found = false
		o.look(func() { found = exists() })
	}
	return found
}

// parentIn opens the directory holding p (O_PATH) in the filesystem root,
// a process's /proc/pid/root, with RESOLVE_IN_ROOT, so that an absolute
// symlink on the way stays in the sandbox's tree. It returns the last
// component of p beside it.
func parentIn(root int, p string) (int, string, error) {
	dir, base := filepath.Split(p)
	dir = strings.TrimPrefix(filepath.Clean(dir), "/")
	if dir == "" {
		dir = "."
	}
	d, err := sys.RetryValue(func() (int, error) {
		return unix.Openat2(root, dir, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
	})
	return d, base, err
}

// followsLast reports whether the syscall follows a symlink that is the
// last component of its path (open without O_NOFOLLOW or O_CREAT|O_EXCL,
// chmod, truncate, setxattr, ...), so that what it changes is where the
// link leads. mkdir, unlink, rename, link's new name, lchown and the
// calls given AT_SYMLINK_NOFOLLOW change the name itself.
func followsLast(name string, args [6]uint64) bool {
	open := func(fl uint64) bool {
		return fl&unix.O_NOFOLLOW == 0 && fl&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
	}
	switch name {
	case "open":
		return open(args[1])
	case "openat":
		return open(args[2])
	case "creat", "truncate", "chmod", "fchmodat", "chown", "utime", "utimes", "futimesat", "setxattr", "removexattr":
		return true
	case "fchmodat2":
		return args[3]&unix.AT_SYMLINK_NOFOLLOW == 0
	case "fchownat", "file_setattr":
		return args[4]&unix.AT_SYMLINK_NOFOLLOW == 0
	case "setxattrat", "removexattrat":
		return args[2]&unix.AT_SYMLINK_NOFOLLOW == 0
	}
	return false
}

// readlink reads the symlink p in the filesystem pid sees, by the host's
// path, which the sandbox mirrors (one system call: this runs for every
// open for writing; the report is what it serves). Not in the sandbox's
// own /tmp.
func (o *observer) readlink(p string) (string, bool) {
	buf := o.linkBuf[:] // (serve's one thread)
	var n int
	var err error
	if within(p, "/tmp") {
		// The sandbox's own /tmp: writes there are its own, and a symlink
		// there is not followed for the report (a readlink through the
		// sandbox's root cost a tenth of a loop of file creations there).
		return "", false
	}
	if askedOnHost(p, false) {
		return "", false
	}
	n, err = sys.RetryValue(func() (int, error) { return unix.Readlink(p, buf) })
	if err != nil || n <= 0 || n >= len(buf) {
		return "", false
	}
	return string(buf[:n]), true
}

// followLast resolves p's last component while it is a symlink, in the
// filesystem pid sees, as the kernel will for a call that follows it: a
// write through `out.txt -> /elsewhere/file` is a write of
// /elsewhere/file, allowed or refused by where that is (the report named
// the link, and was wrong both ways). At most 40 links, as the kernel.
func (o *observer) followLast(pid int, p string) string {
	if o.as != nil {
		if _, link := o.readlink(p); !link {
			return p // no symlink for this thread either (see look)
		}
	}
	root, err := sandboxRoot(pid)
	if err != nil {
		return p // what the sandbox sees cannot be checked: as written
	}
	defer unix.Close(root)
	o.look(func() { p = o.followLastAs(root, p) })
	return p
}

// followLastAs is followLast, with the caller's credentials (o.look); root
// is the sandbox's root (sandboxRoot).
func (o *observer) followLastAs(root int, p string) string {
	for range 40 {
		if within(p, "/proc") {
			return p // /dev/stdout -> /proc/self/fd/1: magic links, read from here, would be this process's
		}
		t, ok := o.readlink(p)
		if !ok {
			return p // not a symlink (EINVAL), or gone
		}
		if !linkSeen(root, p, t) {
			return p // a link the sandbox does not see (hidden): not read for it
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = filepath.Clean(t)
		if !within(p, "/tmp") && !askedOnHost(filepath.Dir(p), true) {
			if dir, err := o.dirs.evalDirNow(filepath.Dir(p)); err == nil && (dir == filepath.Dir(p) || sameDirSeen(root, filepath.Dir(p), dir)) { // (followLastAs runs in o.look)
				p = filepath.Join(dir, filepath.Base(p))
			}
		}
	}
	return p
}

// The observer resolves symlinks by the host's paths (the sandbox's tree
// mirrors them; one call), outside the sandbox. A symlink the sandbox
// does not see, in a denyRead directory that it sees empty, was read all
// the same, and its target, which a command may not readlink, came back
// in the run's violation report, to the agent that chose the command (a
// write to secretdir/link, to secretdir/dlink/x, or through a symlink of
// its own that leads there: attack pass 111,
// TestObserverHiddenSymlinkNotRead).
// So a resolution that followed a symlink is used only where the sandbox
// sees the same: linkSeen and sameDirSeen, through the sandbox's root.

// sandboxRoot opens pid's root directory (O_PATH): the sandbox's tree.
func sandboxRoot(pid int) (int, error) {
	return sys.RetryValue(func() (int, error) {
		return unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
}

// linkSeen reports whether p is, in the sandbox's tree root, a symlink to
// t, as it is here.
func linkSeen(root int, p, t string) bool {
	d, base, err := parentIn(root, p)
	if err != nil {
		return false
	}
	defer unix.Close(d)
	buf := make([]byte, len(t)+1)
	n, err := sys.RetryValue(func() (int, error) { return unix.Readlinkat(d, base, buf) })
	return err == nil && string(buf[:n]) == t
}

// sameDirSeen reports whether the directory written (a path the command
// named) leads, in the sandbox's tree root, to the directory resolved here.
func sameDirSeen(root int, written, resolved string) bool {
	rel := strings.TrimPrefix(written, "/")
	if rel == "" {
		rel = "."
	}
	fd, err := sys.RetryValue(func() (int, error) {
		return unix.Openat2(root, rel, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
	})
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var in, here unix.Stat_t
	if unix.Fstat(fd, &in) != nil || sys.Retry(func() error { return unix.Stat(resolved, &here) }) != nil {
		return false
	}
	return in.Dev == here.Dev && in.Ino == here.Ino
}

// askedOnHost reports whether looking p up here, outside the sandbox,
// would ask the host's automounter for a name below an autofs mount that
// nothing covers (follow: p itself opened as a directory). The sandbox
// shows such a mount as an empty directory, but the observer resolves the
// paths the command names as the host sees them, as the supervisor: a
// refused write to /net/DATA/x had it ask the automounter for DATA (a DNS
// query, RPC to that host), past the run's network (attack pass 111,
// TestAutomountNotTriggeredByObserver). Such a path is reported as the
// command wrote it. One poll of the mount table where none is mounted.
func askedOnHost(p string, follow bool) bool {
	return gitguard.AutofsOnWay(p, follow)
}

// resolve makes a syscall's path absolute as the sandbox sees it.
func (o *observer) resolve(pid, dirfd int, p string) string {
	if !filepath.IsAbs(p) {
		var base string
		var err error
		if dirfd == unix.AT_FDCWD {
			base, err = os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		} else {
			base, err = os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, dirfd))
		}
		if err != nil || !filepath.IsAbs(base) {
			return ""
		}
		p = filepath.Join(base, p)
	}
	p = filepath.Clean(p)
	// Resolve symlinks in the parent as the host sees it (the sandbox's
	// tree mirrors the host's paths), as the sandbox's user (o.look); keep
	// the last component as written.
	if !within(p, "/tmp") && !askedOnHost(filepath.Dir(p), true) {
		if d, err := o.dirs.evalDirAs(filepath.Dir(p), o.look, o.as != nil); err == nil && (d == filepath.Dir(p) || o.dirSeen(pid, filepath.Dir(p), d)) {
			p = filepath.Join(d, filepath.Base(p))
		}
	}
	return p
}

// dirSeen is sameDirSeen in pid's sandbox.
func (o *observer) dirSeen(pid int, written, resolved string) bool {
	root, err := sandboxRoot(pid)
	if err != nil {
		return false
	}
	defer unix.Close(root)
	return sameDirSeen(root, written, resolved)
}

// readString reads a NUL-terminated string from another process.
func readString(pid int, addr uint64) (string, bool) {
	if addr == 0 {
		return "", false
	}
	buf := make([]byte, 4096)
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil || n <= 0 {
		// Fall back to /proc/pid/mem (a read that crosses into an unmapped
		// page fails as a whole with process_vm_readv).
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
		if err != nil {
			return "", false
		}
		defer f.Close()
		n, _ = f.ReadAt(buf, int64(addr))
		if n <= 0 {
			return "", false
		}
	}
	if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
		return string(buf[:i]), true
	}
	return "", false
}

// syscallNames names the calls a refusal may report, made when the first
// one is (libseccomp resolves each name: work no run without a refusal
// needs before its main).
var syscallNames = sync.OnceValue(func() map[int]string {
	m := map[int]string{}
	add := func(name string) {
		if nr, ok := seccomp.Number(name); ok {
			m[nr] = name
		}
	}
	for _, w := range seccomp.WriteSyscalls {
		add(w.Name)
	}
	for _, d := range seccomp.Denied {
		add(d)
	}
	for _, d := range seccomp.MetadataSyscalls {
		add(d)
	}
	m[452], m[463], m[466], m[469] = "fchmodat2", "setxattrat", "removexattrat", "file_setattr"
	for _, s := range []string{"socket", "socketpair", "setsockopt", "clone", "unshare", "ioctl", "fcntl", "connect", "listen", "personality", "futex",
		"prlimit64", "setpriority", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr", "ioprio_set"} {
		add(s)
	}
	for _, s := range seccomp.SysVIPCSyscalls {
		add(s)
	}
	m[467] = "open_tree_attr"
	return m
})

func syscallName(nr int) string {
	if s, ok := syscallNames()[nr]; ok {
		return s
	}
	return "syscall " + strconv.Itoa(nr)
}

func nsFlagNames(flags uint64) string {
	names := []struct {
		f uint64
		n string
	}{
		{unix.CLONE_NEWUSER, "CLONE_NEWUSER"}, {unix.CLONE_NEWNS, "CLONE_NEWNS"}, {unix.CLONE_NEWPID, "CLONE_NEWPID"},
		{unix.CLONE_NEWNET, "CLONE_NEWNET"}, {unix.CLONE_NEWUTS, "CLONE_NEWUTS"}, {unix.CLONE_NEWIPC, "CLONE_NEWIPC"},
		{unix.CLONE_NEWCGROUP, "CLONE_NEWCGROUP"}, {unix.CLONE_NEWTIME, "CLONE_NEWTIME"},
	}
	var out []string
	for _, x := range names {
		if flags&x.f != 0 {
			out = append(out, x.n)
		}
	}
	return strings.Join(out, "|")
}

func ioctlName(req uint64) string {
	switch uint32(req) {
	case unix.TIOCSTI:
		return "TIOCSTI"
	case unix.TIOCLINUX:
		return "TIOCLINUX"
	}
	if seccomp.IsBtrfsIoctl(req) {
		return fmt.Sprintf("btrfs %#x", uint32(req))
	}
	if req&0xffff == 0x6685 {
		return "FS_IOC_ENABLE_VERITY"
	}
	if seccomp.IsFscryptIoctl(req) {
		return fmt.Sprintf("fscrypt %#x", uint32(req))
	}
	return fmt.Sprintf("%#x", uint32(req))
}

// brokerConnect handles connect(2) when unix sockets are allowed by path.
// The decision rests on the socket the command holds (fetched with
// pidfd_getfd) and on a path the supervisor read once: an allowed
// connection is made on that socket, to the socket found at that path (by
// its descriptor), so the command cannot change the address after the
// check. It is made inside the sandbox, by a child of its init
// (unixconnect.go), not by the supervisor: the kernel takes the connecting
// process for the peer, and a server that judges its peer by its process
// took moat, unconfined, for the command (found by an attack pass).
//
// Sockets of other families are connected by the supervisor itself, to the
// address it read once, never let continue in the kernel: the kernel would
// look the descriptor and the address up again, and another thread of the
// command, which swapped a unix socket onto the descriptor in between
// (dup2), had that socket connected to any path it named, past the
// allow-list (found by an attack pass: the user's bus, docker.sock). The
// socket is the command's, so its network namespace, its cgroup's eBPF
// programs (which judge a socket the supervisor connects by the cgroup that
// made it) and its O_NONBLOCK hold as they would have.
func (o *observer) brokerConnect(n *notif) (unix.Errno, bool) {
	pidfd, err := pidfdOf(int(n.pid))
	if err != nil {
		return unix.EPERM, false
	}
	defer unix.Close(pidfd)
	sock, err := unix.PidfdGetfd(pidfd, int(int32(n.args[0])), 0)
	if err != nil {
		if err == unix.EBADF {
			return unix.EBADF, false
		}
		return unix.EPERM, false
	}
	defer unix.Close(sock)
	dom, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return unix.ENOTSOCK, false
	}
	if dom != unix.AF_UNIX {
		return o.connectOther(n, sock)
	}
	path, abstract, ok := readSockaddrUnix(int(n.pid), n.args[1], n.args[2])
	if !ok {
		return unix.EINVAL, false
	}
	if abstract {
		o.report(policy.Violation{Kind: policy.NetworkViolation, Op: "unix-connect", Target: "@" + path,
			Rule: "abstract unix sockets are not allowed", Pid: int(n.pid)})
		return unix.ECONNREFUSED, false
	}
	abs := path
	if !filepath.IsAbs(path) {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", n.pid))
		if err != nil || !filepath.IsAbs(cwd) {
			return unix.EPERM, false
		}
		// Not cleaned: ".." after a symlink is the kernel's to resolve.
		abs = cwd + "/" + path
	}
	fd, errno, allowed := o.allowedSocket(int(n.pid), abs)
	if fd >= 0 {
		defer unix.Close(fd)
	}
	if !o.idValid(n.id) {
		return unix.EPERM, false
	}
	if !allowed {
		if errno != 0 {
			return errno, false // nothing there in the sandbox: connect would fail anyway
		}
		o.report(policy.Violation{Kind: policy.NetworkViolation, Op: "unix-connect", Target: filepath.Clean(abs),
			Rule: "not in network.allowUnixSockets", Pid: int(n.pid)})
		return unix.EACCES, false
	}
	if errno != 0 {
		return errno, false
	}
	// The socket checked, by its descriptor: nothing the command does to
	// the path after the check (a symlink swapped in) changes where this
	// connects. Init's child connects it, inside the sandbox; the answer
	// comes later (a connect may wait for a full backlog).
	if o.connectInside == nil {
		return unix.ECONNREFUSED, false
	}
	answer, errno := o.connectInside(sock, fd)
	if errno != 0 {
		return errno, false
	}
	return o.answerLater(n.id, func() unix.Errno { return awaitConnect(answer) }), false
}

// connectOther connects the command's socket sock (not a unix one; this
// process's copy of it) to the address the command named, as read once, in
// a goroutine (a blocking connect waits for the peer).
func (o *observer) connectOther(n *notif, sock int) (unix.Errno, bool) {
	// Only inet sockets: a netlink socket's connect is judged by the
	// connecting process's capabilities (sending to multicast groups), and
	// here that process would be the supervisor (as root, every one). No
	// common program connects a netlink socket (they bind and send).
	if dom, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil || (dom != unix.AF_INET && dom != unix.AF_INET6) {
		o.report(policy.Violation{Kind: policy.NetworkViolation, Op: "connect", Target: familyName(uint64(dom), 0),
			Rule: "with network.allowUnixSockets moat connects sockets for the command, inet and unix ones only", Pid: int(n.pid)})
		return unix.EOPNOTSUPP, false
	}
	addr, errno := readSockaddr(int(n.pid), n.args[1], n.args[2])
	if errno != 0 {
		return errno, false
	}
	if errno := o.tcpAllowed(n, sock, addr); errno != 0 {
		return errno, false
	}
	mine, err := unix.FcntlInt(uintptr(sock), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return unix.ENOMEM, false
	}
	pidfd, err := pidfdOf(int(n.pid))
	if err != nil {
		unix.Close(mine)
		return unix.EPERM, false
	}
	if !o.idValid(n.id) {
		unix.Close(mine)
		unix.Close(pidfd)
		return unix.EPERM, false
	}
	return o.answerLater(n.id, func() unix.Errno { return o.conns.connect(pidfd, mine, addr) }), false
}

// tcpAllowed applies tcpPorts to a TCP socket's connect to addr.
func (o *observer) tcpAllowed(n *notif, sock int, addr []byte) unix.Errno {
	if o.tcpPorts == nil || len(addr) < 4 {
		return 0
	}
	fam := int(addr[0]) | int(addr[1])<<8
	if fam != unix.AF_INET && fam != unix.AF_INET6 {
		return 0 // AF_UNSPEC disconnects; other families fail in the kernel
	}
	if proto, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_PROTOCOL); err != nil || proto != unix.IPPROTO_TCP {
		return 0 // (Landlock confines TCP alone)
	}
	port := uint16(addr[2])<<8 | uint16(addr[3])
	if o.tcpPorts[port] {
		return 0
	}
	o.report(policy.Violation{Kind: policy.NetworkViolation, Op: "network-connect-tcp", Target: "port " + strconv.Itoa(int(port)),
		Rule: "TCP only to moat's proxy (no network namespace here)", Pid: int(n.pid)})
	return unix.EACCES
}

// readSockaddr reads the address a connect(2) names (at most a
// sockaddr_storage, as the kernel takes).
func readSockaddr(pid int, addr, addrlen uint64) ([]byte, unix.Errno) {
	const sizeofSockaddrStorage = 128 // what the kernel takes (x/sys's RawSockaddrAny is 112)
	if int64(int32(addrlen)) < 0 || addrlen > sizeofSockaddrStorage {
		return nil, unix.EINVAL
	}
	if addrlen == 0 {
		return nil, unix.EINVAL
	}
	buf := make([]byte, addrlen)
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	if n, err := unix.ProcessVMReadv(pid, local, remote, 0); err != nil || n != len(buf) {
		return nil, unix.EFAULT
	}
	return buf, 0
}

// allowedSocket decides a connect(2) to the unix socket path abs (absolute,
// as the command named it) and opens what it may connect to (O_PATH).
//
// Allowed are: the path of an allowUnixSockets entry, by its letters (the
// entry's socket is then opened as moat resolved it when the sandbox
// started, with no symlink on the way: a socket in the host's /tmp, which
// the sandbox's private /tmp hides, stays reachable); or a path that leads,
// in the sandbox's own view of the filesystem (through /proc/pid/root, its
// hidden paths hidden), to the same socket as an entry. A symlink the
// command planted at an allowed path in a writable tree led the supervisor,
// which resolved paths as the host sees them, to any socket of the host,
// hidden ones included (found by two attack passes).
//
// errno is what the command gets when the path leads nowhere in its view
// (ENOENT, ...), or when the entry's socket cannot be opened.
func (o *observer) allowedSocket(pid int, abs string) (fd int, errno unix.Errno, allowed bool) {
	literal := filepath.Clean(abs)
	for _, a := range o.unixAllow {
		if literal == a.path {
			fd, err := openSocketPath(unix.AT_FDCWD, a.path, unix.RESOLVE_NO_SYMLINKS)
			if err != nil {
				return -1, errnoOf(err), true
			}
			var st unix.Stat_t
			if unix.Fstat(fd, &st) != nil || !a.matches(&st) {
				// Another socket put at the entry's path during the run
				// (renamed or hard-linked over it): found by an attack pass.
				unix.Close(fd)
				return -1, 0, false
			}
			return fd, 0, true
		}
	}
	root, err := sys.RetryValue(func() (int, error) {
		return unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, unix.EPERM, false
	}
	defer unix.Close(root)
	fd, err = openSocketPath(root, abs, unix.RESOLVE_IN_ROOT|unix.RESOLVE_NO_MAGICLINKS)
	if err != nil {
		return -1, errnoOf(err), false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		unix.Close(fd)
		return -1, unix.EPERM, false
	}
	for _, a := range o.unixAllow {
		afd, err := openSocketPath(unix.AT_FDCWD, a.path, unix.RESOLVE_NO_SYMLINKS)
		if err != nil {
			continue
		}
		var ast unix.Stat_t
		same := unix.Fstat(afd, &ast) == nil && ast.Dev == st.Dev && ast.Ino == st.Ino && a.matches(&st)
		unix.Close(afd)
		if same {
			return fd, 0, true
		}
	}
	unix.Close(fd)
	return -1, 0, false
}

// openSocketPath opens p (O_PATH) from dirfd with the resolve flags.
func openSocketPath(dirfd int, p string, resolve uint64) (int, error) {
	return sys.RetryValue(func() (int, error) {
		return unix.Openat2(dirfd, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolve})
	})
}

func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EPERM
}

// listen reports a refused listen(2) (seccomp's NoListen).
func (o *observer) listen(n *notif) (unix.Errno, bool) {
	o.report(policy.Violation{Kind: policy.NetworkViolation, Op: "listen", Target: "socket " + strconv.Itoa(int(int32(n.args[0]))),
		Rule: "no servers without network.allowLocalBinding (listen on a TCP socket never bound binds every address; sharing the host's network, unix servers too)", Pid: int(n.pid)})
	return unix.EPERM, false
}

// pidfdOf opens a pidfd for the thread that made a notified syscall. The
// notification names the thread, and pidfd_open takes a thread-group
// leader unless it is given PIDFD_THREAD (Linux 6.9): a call from any
// other thread of a multi-threaded program (a Go program's connect or
// listen: docker, moat serve) was refused EPERM. Before 6.9 the thread's
// group leader is opened (the descriptors are the group's).
func pidfdOf(tid int) (int, error) {
	fd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != unix.EINVAL {
		return fd, err
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return -1, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Tgid:"); ok {
			tgid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return -1, err
			}
			return unix.PidfdOpen(tgid, 0)
		}
	}
	return -1, unix.ESRCH
}

// readSockaddrUnix reads a struct sockaddr_un of length addrlen from the
// command's memory.
func readSockaddrUnix(pid int, addr, addrlen uint64) (path string, abstract, ok bool) {
	if addr == 0 || addrlen < 2 || addrlen > 110 {
		return "", false, false
	}
	buf := make([]byte, addrlen)
	local := []unix.Iovec{{Base: &buf[0], Len: uint64(len(buf))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	if n, err := unix.ProcessVMReadv(pid, local, remote, 0); err != nil || n != len(buf) {
		return "", false, false
	}
	if int(buf[0])|int(buf[1])<<8 != unix.AF_UNIX {
		return "", false, false
	}
	p := buf[2:]
	if len(p) > 0 && p[0] == 0 {
		return string(bytes.TrimRight(p[1:], "\x00")), true, true
	}
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	return string(p), false, len(p) > 0
}
