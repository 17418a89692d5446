//go:build linux && cgo

package seccomp

import (
	"encoding/binary"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Seccomp return values.
const (
	retKill   = 0x80000000
	retErrno  = 0x00050000
	retNotify = 0x7fc00000
	retAllow  = 0x7fff0000
	auditArch = 0xc000003e // AUDIT_ARCH_X86_64
)

// vm runs a filter on a seccomp_data in the x/net/bpf VM. The VM loads
// words big-endian, so each 32-bit word is written big-endian at the offset
// the native (little-endian) layout gives it.
type vm struct{ m *bpf.VM }

func newVM(t *testing.T, o Options) vm {
	t.Helper()
	prog, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]bpf.RawInstruction, len(prog)/8)
	for i := range raw {
		b := prog[i*8:]
		raw[i] = bpf.RawInstruction{
			Op: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:]),
		}
	}
	ins, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("cannot disassemble the filter")
	}
	m, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	return vm{m}
}

func (v vm) run(t *testing.T, arch uint32, nr int, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(nr))
	binary.BigEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[16+8*i+4:], uint32(a>>32))
	}
	out, err := v.m.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(out)
}

func TestFilterVerdicts(t *testing.T) {
	if unix.SYS_OPENAT != 257 {
		t.Skip("table written for amd64")
	}
	eperm := uint32(retErrno | unix.EPERM)
	enosys := uint32(retErrno | unix.ENOSYS)
	cases := []struct {
		name string
		o    Options
		nr   int
		args []uint64
		want uint32
	}{
		{"read allowed", Options{}, unix.SYS_READ, nil, retAllow},
		{"ptrace", Options{}, unix.SYS_PTRACE, nil, eperm},
		{"process_vm_readv", Options{}, unix.SYS_PROCESS_VM_READV, nil, eperm},
		{"keyctl", Options{}, unix.SYS_KEYCTL, nil, eperm},
		{"bpf", Options{}, unix.SYS_BPF, nil, eperm},
		{"io_uring_setup", Options{}, unix.SYS_IO_URING_SETUP, nil, eperm},
		{"mount", Options{}, unix.SYS_MOUNT, nil, eperm},
		{"open_tree", Options{}, unix.SYS_OPEN_TREE, nil, eperm},
		{"fsopen", Options{}, unix.SYS_FSOPEN, nil, eperm},
		{"mount_setattr", Options{}, unix.SYS_MOUNT_SETATTR, nil, eperm},
		{"open_tree_attr", Options{}, 467, nil, eperm},
		{"setns", Options{}, unix.SYS_SETNS, nil, eperm},
		{"clone3", Options{}, unix.SYS_CLONE3, nil, enosys},
		{"io_setup", Options{}, unix.SYS_IO_SETUP, []uint64{1}, enosys},
		{"mmap MAP_HUGETLB", Options{}, unix.SYS_MMAP, []uint64{0, 2 << 20, 3, unix.MAP_SHARED | unix.MAP_ANONYMOUS | unix.MAP_HUGETLB}, uint32(retErrno | unix.ENOMEM)},
		{"mmap MAP_HUGETLB, growsdown refused", Options{NoGrowsDown: true}, unix.SYS_MMAP, []uint64{0, 2 << 20, 3, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_HUGETLB}, uint32(retErrno | unix.ENOMEM)},
		{"mmap MAP_GROWSDOWN with the hugetlb rule", Options{NoGrowsDown: true}, unix.SYS_MMAP, []uint64{0, 4096, 3, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_GROWSDOWN}, uint32(retErrno | unix.ENOMEM)},
		{"mmap plain, growsdown refused", Options{NoGrowsDown: true}, unix.SYS_MMAP, []uint64{0, 4096, 3, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS}, retAllow},
		{"mmap plain", Options{}, unix.SYS_MMAP, []uint64{0, 2 << 20, 3, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS}, retAllow},
		{"memfd_create MFD_HUGETLB", Options{}, unix.SYS_MEMFD_CREATE, []uint64{0, unix.MFD_HUGETLB | unix.MFD_CLOEXEC}, uint32(retErrno | unix.EINVAL)},
		{"memfd_create plain", Options{}, unix.SYS_MEMFD_CREATE, []uint64{0, unix.MFD_CLOEXEC}, retAllow},
		{"shmget SHM_HUGETLB", Options{}, unix.SYS_SHMGET, []uint64{0, 2 << 20, 0o4000 | 0o600}, uint32(retErrno | unix.ENOMEM)},
		{"shmget plain", Options{}, unix.SYS_SHMGET, []uint64{0, 4096, 0o600}, retAllow},
		{"io_setup notified", Options{Notify: true, NoNamespaces: true}, unix.SYS_IO_SETUP, []uint64{1}, enosys},
		{"clone plain fork", Options{}, unix.SYS_CLONE, []uint64{uint64(unix.SIGCHLD)}, retAllow},
		{"clone thread", Options{}, unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, retAllow},
		{"clone newuser", Options{}, unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
		{"unshare newuser high bits", Options{}, unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWUSER | 1<<40}, eperm},
		{"unshare newns", Options{}, unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWNS}, eperm},
		{"unshare files", Options{}, unix.SYS_UNSHARE, []uint64{unix.CLONE_FILES}, retAllow},
		{"TIOCSTI", Options{}, unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI}, eperm},
		{"TIOCSTI high bits", Options{}, unix.SYS_IOCTL, []uint64{0, 1<<32 | unix.TIOCSTI}, eperm},
		{"TIOCLINUX", Options{}, unix.SYS_IOCTL, []uint64{0, unix.TIOCLINUX}, eperm},
		{"TIOCSETD", Options{}, unix.SYS_IOCTL, []uint64{0, unix.TIOCSETD}, eperm},
		{"modify_ldt", Options{}, unix.SYS_MODIFY_LDT, []uint64{1, 0, 16}, eperm},
		{"fanotify_init", Options{}, unix.SYS_FANOTIFY_INIT, []uint64{0x200, 0}, eperm},
		{"fanotify_init no namespaces", Options{NoNamespaces: true, Notify: true}, unix.SYS_FANOTIFY_INIT, []uint64{0x200, 0}, retNotify},
		{"inotify_init1", Options{}, unix.SYS_INOTIFY_INIT1, []uint64{0}, retAllow},
		{"TIOCGETD", Options{}, unix.SYS_IOCTL, []uint64{0, unix.TIOCGETD}, retAllow},
		{"TCGETS", Options{}, unix.SYS_IOCTL, []uint64{0, unix.TCGETS}, retAllow},
		// btrfs's subvolumes and snapshots (attack pass 80), every tier;
		// the VFS's clone requests of the same type stay.
		{"BTRFS_IOC_SUBVOL_CREATE", Options{}, unix.SYS_IOCTL, []uint64{0, 0x5000940e}, eperm},
		{"BTRFS_IOC_SNAP_CREATE", Options{}, unix.SYS_IOCTL, []uint64{0, 0x50009401}, eperm},
		{"BTRFS_IOC_SNAP_CREATE_V2 high bits", Options{}, unix.SYS_IOCTL, []uint64{0, 1<<32 | 0x50009417}, eperm},
		{"BTRFS_IOC_SUBVOL_CREATE_V2 no namespaces", Options{NoNamespaces: true, Notify: true}, unix.SYS_IOCTL, []uint64{0, 0x50009418}, retNotify},
		{"BTRFS_IOC_SUBVOL_SETFLAGS", Options{}, unix.SYS_IOCTL, []uint64{0, 0x4008941a}, eperm},
		{"BTRFS_IOC_SNAP_DESTROY_V2", Options{}, unix.SYS_IOCTL, []uint64{0, 0x5000943f}, eperm},
		{"btrfs number 0xff", Options{}, unix.SYS_IOCTL, []uint64{0, 0x94ff}, eperm},
		// Requeues of shared futexes (attack pass 80); private ones stay.
		{"futex CMP_REQUEUE shared", Options{}, unix.SYS_FUTEX, []uint64{0, futexCmpRequeue}, eperm},
		{"futex REQUEUE shared realtime", Options{}, unix.SYS_FUTEX, []uint64{0, futexRequeue | 256}, eperm},
		{"futex CMP_REQUEUE_PI shared", Options{}, unix.SYS_FUTEX, []uint64{0, futexCmpRequeuePI}, eperm},
		{"notify: futex CMP_REQUEUE shared", Options{Notify: true}, unix.SYS_FUTEX, []uint64{0, futexCmpRequeue}, retNotify},
		{"futex CMP_REQUEUE private", Options{}, unix.SYS_FUTEX, []uint64{0, futexCmpRequeue | futexPrivateFlag}, retAllow},
		{"futex WAIT shared", Options{}, unix.SYS_FUTEX, []uint64{0, futexWait}, retAllow},
		{"futex WAKE shared", Options{}, unix.SYS_FUTEX, []uint64{0, futexWake}, retAllow},
		{"futex WAIT_BITSET private", Options{}, unix.SYS_FUTEX, []uint64{0, futexWaitBitset | futexPrivateFlag}, retAllow},
		{"futex_requeue", Options{}, 456, nil, enosys},
		{"futex_waitv", Options{}, 449, nil, retAllow},
		// fscrypt's keys and policies (attack pass 80); reading stays.
		{"FS_IOC_ADD_ENCRYPTION_KEY", Options{}, unix.SYS_IOCTL, []uint64{0, 0xc0506617}, eperm},
		{"FS_IOC_REMOVE_ENCRYPTION_KEY", Options{}, unix.SYS_IOCTL, []uint64{0, 0xc0406618}, eperm},
		{"FS_IOC_SET_ENCRYPTION_POLICY", Options{}, unix.SYS_IOCTL, []uint64{0, 0x800c6613}, eperm},
		{"FS_IOC_SET_ENCRYPTION_POLICY other size", Options{}, unix.SYS_IOCTL, []uint64{0, 0x80186613}, eperm},
		{"FS_IOC_GET_ENCRYPTION_PWSALT", Options{}, unix.SYS_IOCTL, []uint64{0, 0x40106614}, eperm},
		{"notify: FS_IOC_ADD_ENCRYPTION_KEY", Options{Notify: true}, unix.SYS_IOCTL, []uint64{0, 0xc0506617}, retNotify},
		{"FS_IOC_ENABLE_VERITY", Options{}, unix.SYS_IOCTL, []uint64{0, 0x40806685}, eperm},
		{"FS_IOC_MEASURE_VERITY", Options{}, unix.SYS_IOCTL, []uint64{0, 0xc0046686}, retAllow},
		{"FS_IOC_GET_ENCRYPTION_POLICY_EX", Options{}, unix.SYS_IOCTL, []uint64{0, 0xc0096616}, retAllow},
		{"FS_IOC_GET_ENCRYPTION_KEY_STATUS", Options{}, unix.SYS_IOCTL, []uint64{0, 0xc080661a}, retAllow},
		{"FICLONE", Options{}, unix.SYS_IOCTL, []uint64{0, unix.FICLONE}, retAllow},
		{"FICLONERANGE", Options{}, unix.SYS_IOCTL, []uint64{0, unix.FICLONERANGE}, retAllow},
		{"FIDEDUPERANGE", Options{}, unix.SYS_IOCTL, []uint64{0, unix.FIDEDUPERANGE}, retAllow},
		{"FS_IOC_GETFLAGS", Options{}, unix.SYS_IOCTL, []uint64{0, unix.FS_IOC_GETFLAGS}, retAllow},
		{"socket unix", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, eperm},
		{"socket unix allowed", Options{AllowUnix: true}, unix.SYS_SOCKET, []uint64{unix.AF_UNIX}, retAllow},
		{"socket inet", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM}, retAllow},
		{"socketpair unix", Options{}, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX}, retAllow},
		{"socketpair unix dgram", Options{}, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM | unix.SOCK_CLOEXEC}, eperm},
		{"socketpair unix seqpacket", Options{}, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_SEQPACKET}, retAllow},
		{"socketpair unix raw", Options{}, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_RAW}, eperm},
		{"broker: socketpair unix dgram", Options{UnixBroker: true}, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, eperm},
		{"allowed: socketpair unix dgram", Options{AllowUnix: true}, unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, retAllow},
		// socketpair(2) makes its sockets with the family's own create
		// code (and loads the family's or protocol's module) before it
		// finds that the family has no pairs: only AF_UNIX gets there.
		{"socketpair inet sctp", Options{}, unix.SYS_SOCKETPAIR, []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP}, uint32(retErrno | unix.EOPNOTSUPP)},
		{"socketpair inet6", Options{AllowUnix: true}, unix.SYS_SOCKETPAIR, []uint64{unix.AF_INET6, unix.SOCK_STREAM}, uint32(retErrno | unix.EOPNOTSUPP)},
		{"socketpair tipc", Options{}, unix.SYS_SOCKETPAIR, []uint64{unix.AF_TIPC, unix.SOCK_STREAM}, uint32(retErrno | unix.EOPNOTSUPP)},
		{"socketpair vsock", Options{Notify: true}, unix.SYS_SOCKETPAIR, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, uint32(retErrno | unix.EOPNOTSUPP)},
		{"socketpair netlink", Options{}, unix.SYS_SOCKETPAIR, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, 15}, uint32(retErrno | unix.EOPNOTSUPP)},
		{"prlimit of init", Options{}, unix.SYS_PRLIMIT64, []uint64{1, unix.RLIMIT_NOFILE, 0x1000}, eperm},
		{"prlimit of init, read", Options{}, unix.SYS_PRLIMIT64, []uint64{1, unix.RLIMIT_NOFILE, 0, 0x1000}, retAllow},
		{"prlimit of itself", Options{}, unix.SYS_PRLIMIT64, []uint64{0, unix.RLIMIT_NOFILE, 0x1000}, retAllow},
		{"renice init", Options{}, unix.SYS_SETPRIORITY, []uint64{unix.PRIO_PROCESS, 1, 19}, eperm},
		{"renice a user", Options{}, unix.SYS_SETPRIORITY, []uint64{unix.PRIO_USER, 0, 19}, eperm},
		{"renice itself", Options{}, unix.SYS_SETPRIORITY, []uint64{unix.PRIO_PROCESS, 0, 19}, retAllow},
		{"taskset init", Options{}, unix.SYS_SCHED_SETAFFINITY, []uint64{1, 8, 0x1000}, eperm},
		{"socket mptcp", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, uint32(retErrno | unix.EPROTONOSUPPORT)},
		{"socket tcp", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP}, retAllow},
		// Protocols and types only a module serves (denyInetProtocols).
		{"socket sctp stream", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP}, uint32(retErrno | unix.EPROTONOSUPPORT)},
		{"socket sctp seqpacket v6", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_SEQPACKET | unix.SOCK_CLOEXEC, 0}, uint32(retErrno | unix.ESOCKTNOSUPPORT)},
		{"socket dccp", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_DCCP, 0}, uint32(retErrno | unix.ESOCKTNOSUPPORT)},
		{"socket l2tp", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_L2TP}, uint32(retErrno | unix.EPROTONOSUPPORT)},
		{"socket smc", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_STREAM, 256}, uint32(retErrno | unix.EPROTONOSUPPORT)},
		{"socket protocol high bits", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM, 1<<32 | unix.IPPROTO_TCP}, uint32(retErrno | unix.EPROTONOSUPPORT)},
		{"socket udp", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, unix.IPPROTO_UDP}, retAllow},
		{"socket udplite", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDPLITE}, retAllow},
		{"socket ping", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP}, retAllow},
		{"socket ping6", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_ICMPV6}, retAllow},
		{"socket raw icmp", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP}, retAllow},
		{"socket sctp no namespaces", Options{NoNamespaces: true, Notify: true}, unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP}, uint32(retErrno | unix.EPROTONOSUPPORT)},
		{"broker: unix stream", Options{UnixBroker: true}, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC}, retAllow},
		{"broker: unix dgram", Options{UnixBroker: true}, unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, eperm},
		{"broker: connect", Options{UnixBroker: true}, unix.SYS_CONNECT, nil, retNotify},
		{"notify: ptrace", Options{Notify: true}, unix.SYS_PTRACE, nil, retNotify},
		{"notify: openat read", Options{Notify: true}, unix.SYS_OPENAT, []uint64{0, 0, unix.O_RDONLY | unix.O_CLOEXEC}, retAllow},
		{"notify: openat write", Options{Notify: true}, unix.SYS_OPENAT, []uint64{0, 0, unix.O_WRONLY}, retNotify},
		{"notify: openat creat", Options{Notify: true}, unix.SYS_OPENAT, []uint64{0, 0, unix.O_CREAT | unix.O_RDONLY}, retNotify},
		{"notify: openat trunc", Options{Notify: true}, unix.SYS_OPENAT, []uint64{0, 0, unix.O_TRUNC}, retNotify},
		{"notify: unlinkat", Options{Notify: true}, unix.SYS_UNLINKAT, nil, retNotify},
		{"notify: clone3 still ENOSYS", Options{Notify: true}, unix.SYS_CLONE3, nil, enosys},
		{"memfd_create", Options{}, unix.SYS_MEMFD_CREATE, nil, retAllow},
		{"sendto fast open", Options{}, unix.SYS_SENDTO, []uint64{3, 0, 10, unix.MSG_FASTOPEN}, retAllow},
		{"no fast open: sendto fast open", Options{NoFastOpen: true}, unix.SYS_SENDTO, []uint64{3, 0, 10, unix.MSG_FASTOPEN | unix.MSG_NOSIGNAL}, eperm},
		{"no fast open: sendmsg fast open", Options{NoFastOpen: true}, unix.SYS_SENDMSG, []uint64{3, 0, unix.MSG_FASTOPEN}, eperm},
		{"no fast open: sendmmsg fast open", Options{NoFastOpen: true}, unix.SYS_SENDMMSG, []uint64{3, 0, 1, unix.MSG_FASTOPEN}, eperm},
		{"no fast open: sendto", Options{NoFastOpen: true}, unix.SYS_SENDTO, []uint64{3, 0, 10, unix.MSG_NOSIGNAL}, retAllow},
		{"no source route: IP_OPTIONS", Options{NoSourceRoute: true}, unix.SYS_SETSOCKOPT, []uint64{3, unix.IPPROTO_IP, unix.IP_OPTIONS}, eperm},
		{"no source route: IPV6_RTHDR", Options{NoSourceRoute: true}, unix.SYS_SETSOCKOPT, []uint64{3, unix.IPPROTO_IPV6, unix.IPV6_RTHDR}, eperm},
		{"no source route: IPV6_RTHDR, high bits", Options{NoSourceRoute: true}, unix.SYS_SETSOCKOPT, []uint64{3, 1<<32 | unix.IPPROTO_IPV6, 1<<32 | unix.IPV6_RTHDR}, eperm},
		{"no source route: IPV6_2292RTHDR", Options{NoSourceRoute: true}, unix.SYS_SETSOCKOPT, []uint64{3, unix.IPPROTO_IPV6, unix.IPV6_2292RTHDR}, eperm},
		{"no source route: IPV6_2292PKTOPTIONS", Options{NoSourceRoute: true}, unix.SYS_SETSOCKOPT, []uint64{3, unix.IPPROTO_IPV6, unix.IPV6_2292PKTOPTIONS}, eperm},
		{"notify: no source route", Options{NoSourceRoute: true, Notify: true}, unix.SYS_SETSOCKOPT, []uint64{3, unix.IPPROTO_IPV6, unix.IPV6_RTHDR}, retNotify},
		{"no source route: IP_TOS", Options{NoSourceRoute: true}, unix.SYS_SETSOCKOPT, []uint64{3, unix.IPPROTO_IP, unix.IP_TOS}, retAllow},
		{"no source route: IPV6_V6ONLY", Options{NoSourceRoute: true}, unix.SYS_SETSOCKOPT, []uint64{3, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY}, retAllow},
		{"no source route: SO_REUSEADDR", Options{NoSourceRoute: true}, unix.SYS_SETSOCKOPT, []uint64{3, unix.SOL_SOCKET, unix.SO_REUSEADDR}, retAllow},
		{"source route without the option", Options{}, unix.SYS_SETSOCKOPT, []uint64{3, unix.IPPROTO_IPV6, unix.IPV6_RTHDR}, retAllow},
		{"mmap grows down", Options{}, unix.SYS_MMAP, []uint64{0, 4096, 3, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_GROWSDOWN}, retAllow},
		{"no grows down: mmap grows down", Options{NoGrowsDown: true}, unix.SYS_MMAP, []uint64{0, 4096, 3, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_GROWSDOWN}, uint32(retErrno | unix.ENOMEM)},
		{"no grows down: mmap", Options{NoGrowsDown: true}, unix.SYS_MMAP, []uint64{0, 4096, 3, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS}, retAllow},
		{"prlimit of pid 2", Options{}, unix.SYS_PRLIMIT64, []uint64{2, unix.RLIMIT_NOFILE, 0x1000}, retAllow},
		{"session: prlimit of the server", Options{Session: true}, unix.SYS_PRLIMIT64, []uint64{2, unix.RLIMIT_NOFILE, 0x1000}, eperm},
		{"session: prlimit of the server, read", Options{Session: true}, unix.SYS_PRLIMIT64, []uint64{2, unix.RLIMIT_NOFILE, 0, 0x1000}, retAllow},
		{"session: renice the server", Options{Session: true}, unix.SYS_SETPRIORITY, []uint64{unix.PRIO_PROCESS, 2, 19}, eperm},
		{"session: renice another", Options{Session: true}, unix.SYS_SETPRIORITY, []uint64{unix.PRIO_PROCESS, 3, 19}, retAllow},
		{"shmget large", Options{}, unix.SYS_SHMGET, []uint64{0, 1 << 30}, retAllow},
		{"bound: memfd_create", Options{MemoryBound: 64 << 20}, unix.SYS_MEMFD_CREATE, nil, enosys},
		{"bound: memfd_secret", Options{MemoryBound: 64 << 20}, 447, nil, enosys},
		{"bound: msgget", Options{MemoryBound: 64 << 20}, unix.SYS_MSGGET, nil, enosys},
		{"bound: shmget small", Options{MemoryBound: 64 << 20}, unix.SYS_SHMGET, []uint64{0, 16 << 10}, retAllow},
		{"bound: shmget past a 4096th", Options{MemoryBound: 64 << 20}, unix.SYS_SHMGET, []uint64{0, 16<<10 + 1}, uint32(retErrno | unix.EINVAL)},
		{"bound: shmget high bits", Options{MemoryBound: 64 << 20}, unix.SYS_SHMGET, []uint64{0, 1 << 40}, uint32(retErrno | unix.EINVAL)},
		{"bound: semget 32", Options{MemoryBound: 64 << 20}, unix.SYS_SEMGET, []uint64{0, 32}, retAllow},
		{"bound: semget 33", Options{MemoryBound: 64 << 20}, unix.SYS_SEMGET, []uint64{0, 33}, uint32(retErrno | unix.EINVAL)},
		{"bound: semget negative", Options{MemoryBound: 64 << 20}, unix.SYS_SEMGET, []uint64{0, 0xffffffff}, uint32(retErrno | unix.EINVAL)},
		{"no notify: unlinkat", Options{}, unix.SYS_UNLINKAT, nil, retAllow},
		{"personality query", Options{}, unix.SYS_PERSONALITY, []uint64{0xffffffff}, retAllow},
		{"personality PER_LINUX", Options{}, unix.SYS_PERSONALITY, []uint64{0}, retAllow},
		{"personality PER_LINUX32", Options{}, unix.SYS_PERSONALITY, []uint64{8}, retAllow},
		{"personality UNAME26", Options{}, unix.SYS_PERSONALITY, []uint64{0x20000}, retAllow},
		{"personality ADDR_NO_RANDOMIZE", Options{}, unix.SYS_PERSONALITY, []uint64{0x0040000}, eperm},
		{"personality READ_IMPLIES_EXEC", Options{}, unix.SYS_PERSONALITY, []uint64{0x0400000}, eperm},
		{"personality PER_LINUX32|ADDR_NO_RANDOMIZE", Options{}, unix.SYS_PERSONALITY, []uint64{0x0040008}, eperm},
		{"personality bit 31 alone", Options{}, unix.SYS_PERSONALITY, []uint64{0x80000000}, eperm},
		{"personality almost all ones", Options{}, unix.SYS_PERSONALITY, []uint64{0xfffffffe}, eperm},
		{"personality PER_BSD", Options{}, unix.SYS_PERSONALITY, []uint64{6}, eperm},
		{"notify: personality", Options{Notify: true}, unix.SYS_PERSONALITY, []uint64{0x0040000}, retNotify},
		{"socket inet6", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_DGRAM}, retAllow},
		{"socket netlink route", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, retAllow},
		{"socket netlink audit", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, eperm},
		{"socket netlink uevent", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_KOBJECT_UEVENT}, eperm},
		{"socket vsock", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, eperm},
		{"socket packet", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_PACKET, unix.SOCK_RAW}, eperm},
		{"socket alg", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_ALG, unix.SOCK_SEQPACKET}, eperm},
		{"socket key", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_KEY, unix.SOCK_RAW}, eperm},
		{"socket unspec", Options{}, unix.SYS_SOCKET, []uint64{unix.AF_UNSPEC, unix.SOCK_STREAM}, eperm},
		{"socket inet with high bits", Options{}, unix.SYS_SOCKET, []uint64{1<<32 | unix.AF_INET, unix.SOCK_STREAM}, eperm},
		{"socket vsock, unix allowed", Options{AllowUnix: true}, unix.SYS_SOCKET, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, eperm},
		{"notify: socket vsock", Options{Notify: true}, unix.SYS_SOCKET, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, retNotify},
		{"i386 ABI", Options{}, 0, nil, retKill},
		{"x32 ABI", Options{}, 0x40000000 | unix.SYS_READ, nil, retKill},
		// Numbers above LastReviewed answer ENOSYS, whatever else the
		// options say; those up to it are judged by the lists.
		{"unreviewed 470", Options{}, 470, nil, enosys},
		{"unreviewed 470, notified", Options{Notify: true, NoNamespaces: true, NoMetadata: true}, 470, nil, enosys},
		{"unreviewed 1023", Options{AllowUnix: true}, 1023, nil, enosys},
		{"unreviewed below x32", Options{}, 0x3fffffff, nil, enosys},
		{"unreviewed with x32 bit", Options{}, 0x40000000 | 470, nil, retKill},
		{"file_setattr reviewed", Options{}, 469, nil, retAllow},
		{"file_getattr reviewed", Options{}, 468, nil, retAllow},
		{"uretprobe reviewed", Options{}, 335, nil, retAllow},
	}
	vms := map[Options]vm{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := vms[tc.o]
			if !ok {
				v = newVM(t, tc.o)
				vms[tc.o] = v
			}
			arch := uint32(auditArch)
			if tc.name == "i386 ABI" {
				arch = 0x40000003
			}
			got := v.run(t, arch, tc.nr, tc.args...)
			if got&0xffff0000 == retKill || got == retKill {
				got = retKill
			}
			if got != tc.want {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
		})
	}
}

// TestFilterSetIDModes: every syscall that takes a mode refuses one with
// S_ISUID or S_ISGID (EPERM, also when refusals are notified: the
// supervisor would let a notified write run), whatever else is in the
// argument; a mode without them is left as before (allowed, or notified
// as a write); openat2, whose mode the filter cannot see, answers ENOSYS;
// mkdir keeps its mode.
func TestFilterSetIDModes(t *testing.T) {
	if unix.SYS_OPENAT != 257 {
		t.Skip("table written for amd64")
	}
	eperm := uint32(retErrno | unix.EPERM)
	nrs := map[string]int{
		"chmod": unix.SYS_CHMOD, "fchmod": unix.SYS_FCHMOD, "fchmodat": unix.SYS_FCHMODAT, "fchmodat2": 452,
		"open": unix.SYS_OPEN, "openat": unix.SYS_OPENAT, "creat": unix.SYS_CREAT,
		"mknod": unix.SYS_MKNOD, "mknodat": unix.SYS_MKNODAT,
	}
	if len(nrs) != len(modeSyscalls) {
		t.Fatalf("the test knows %d syscalls, modeSyscalls has %d", len(nrs), len(modeSyscalls))
	}
	for _, o := range []Options{{}, {Notify: true}, {AllowUnix: true, UnixBroker: true, Notify: true}} {
		v := newVM(t, o)
		for _, m := range modeSyscalls {
			nr, ok := nrs[m.Name]
			if !ok {
				t.Fatalf("no number for %s", m.Name)
			}
			// Flags that make the open calls writes, so that a mode
			// without set-id bits is notified.
			flags := map[string]uint64{"open": unix.O_CREAT | unix.O_WRONLY, "openat": unix.O_CREAT | unix.O_WRONLY | unix.O_EXCL}
			for _, tc := range []struct {
				mode uint64
				deny bool
			}{
				{0o4755, true}, {0o2755, true}, {0o6755, true}, {0o4000, true}, {0o2000, true},
				{unix.S_IFREG | 0o4755, true}, {1<<32 | 0o4755, true}, {0xffffffff, true},
				{0o755, false}, {0o644, false}, {0o1777, false}, {0o777, false}, {unix.S_IFREG | 0o644, false}, {1<<32 | 0o755, false},
			} {
				args := make([]uint64, 6)
				args[m.ModeArg] = tc.mode
				if m.Name == "open" || m.Name == "openat" {
					args[m.ModeArg-1] = flags[m.Name]
				}
				got := v.run(t, auditArch, nr, args...)
				want := uint32(retAllow)
				switch {
				case tc.deny:
					want = eperm
				case o.Notify:
					want = retNotify
				}
				if got != want {
					t.Errorf("%+v: %s mode %#o: got %#x, want %#x", o, m.Name, tc.mode, got, want)
				}
			}
		}
		// An open that is not a write: allowed, unless its mode has a
		// set-id bit (the mode counts whatever the flags).
		for _, tc := range []struct {
			nr   int
			args []uint64
			want uint32
		}{
			{unix.SYS_OPENAT, []uint64{0, 0, unix.O_RDONLY | unix.O_CLOEXEC, 0}, retAllow},
			{unix.SYS_OPENAT, []uint64{0, 0, unix.O_RDONLY, 0o4755}, eperm},
			{unix.SYS_OPEN, []uint64{0, unix.O_RDONLY, 0}, retAllow},
			{unix.SYS_OPEN, []uint64{0, unix.O_RDONLY, 0o2000}, eperm},
			{unix.SYS_OPENAT2, []uint64{0, 0, 0, 24}, uint32(retErrno | unix.ENOSYS)},
			{unix.SYS_MKDIR, []uint64{0, 0o2775}, map[bool]uint32{false: retAllow, true: retNotify}[o.Notify]},
			{unix.SYS_MKDIRAT, []uint64{0, 0, 0o2775}, map[bool]uint32{false: retAllow, true: retNotify}[o.Notify]},
		} {
			if got := v.run(t, auditArch, tc.nr, tc.args...); got != tc.want {
				t.Errorf("%+v: syscall %d %#o: got %#x, want %#x", o, tc.nr, tc.args, got, tc.want)
			}
		}
	}
}

// TestUnreviewedInKernel loads the check Build puts first, with a lower
// number than LastReviewed, in a child process: a call that exists on
// this kernel above it answers ENOSYS, the one at it does not, and the
// program behind the check (here: allow) decides the rest. The numbers are
// the newest (file_getattr, open_tree_attr: Linux 6.17 and 6.15), which
// the Go runtime and testing never call.
func TestUnreviewedInKernel(t *testing.T) {
	const last, above = 467, 468
	if os.Getenv("MOAT_SECCOMP_CHILD") == "1" {
		// Without the filter file_getattr exists (EBADF for no descriptor).
		if _, _, e := unix.Syscall6(above, ^uintptr(0), 0, 0, 0, 0, 0); e == unix.ENOSYS {
			t.Skipf("this kernel has no syscall %d (before Linux 6.17)", above)
		}
		pre, err := unreviewed(last)
		if err != nil {
			t.Fatal(err)
		}
		allow := binary.NativeEndian.AppendUint16(nil, unix.BPF_RET|unix.BPF_K)
		allow = append(allow, 0, 0)
		allow = binary.NativeEndian.AppendUint32(allow, retAllow)
		prog := append(pre, allow...)
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		fprog := unix.SockFprog{Len: uint16(len(prog) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
		if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
			t.Fatalf("load the filter: %v", e)
		}
		if _, _, e := unix.Syscall6(above, ^uintptr(0), 0, 0, 0, 0, 0); e != unix.ENOSYS {
			t.Errorf("syscall %d, above %d: got %v, want ENOSYS", above, last, e)
		}
		if _, _, e := unix.Syscall6(last, ^uintptr(0), 0, 0, 0, 0, 0); e == unix.ENOSYS {
			t.Errorf("syscall %d, the last reviewed: ENOSYS", last)
		}
		if os.Getpid() <= 0 {
			t.Error("getpid failed")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnreviewedInKernel$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "MOAT_SECCOMP_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Skipf("child: %s", out)
	}
}

func BenchmarkBuild(b *testing.B) {
	for b.Loop() {
		if _, err := Build(Options{Notify: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestListsReviewed: every number the lists name is at most LastReviewed
// (a rule for one above it would never be reached: the check in front
// answers ENOSYS first), and so is every call they name that this
// libseccomp knows.
func TestListsReviewed(t *testing.T) {
	nrs := append([]int{openat2Nr, memfdSecretNr}, rawDenied...)
	for _, nr := range metadataNrs {
		nrs = append(nrs, nr)
	}
	for _, m := range modeSyscalls {
		nrs = append(nrs, m.Nr)
	}
	names := append(append(append([]string(nil), Denied...), MetadataSyscalls...), SysVIPCSyscalls...)
	for _, w := range WriteSyscalls {
		names = append(names, w.Name)
	}
	for _, name := range names {
		if nr, ok := Number(name); ok {
			nrs = append(nrs, nr)
		}
	}
	for _, nr := range nrs {
		if nr > LastReviewed {
			t.Errorf("syscall %d is in the lists but above LastReviewed (%d): raise it once the kernel's new calls are reviewed", nr, LastReviewed)
		}
	}
}
