//go:build linux

package seccomp

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ErrUnsupported is returned where the filter cannot be built (a moat
// built without cgo has no libseccomp).
var ErrUnsupported = errors.New("seccomp: unsupported in this build")

// Options select the variable parts of the filter.
type Options struct {
	// AllowUnix leaves socket(AF_UNIX) alone (allowAllUnixSockets).
	AllowUnix bool
	// UnixBroker allows AF_UNIX stream sockets but sends every connect(2)
	// to the supervisor, which connects allowed paths itself
	// (allowUnixSockets); datagram and seqpacket AF_UNIX sockets stay
	// refused. It needs a supervisor reading notifications.
	UnixBroker bool
	// Notify turns refusals into user notifications, so the supervisor can
	// report each one as a violation before answering EPERM, and asks for a
	// notification on every syscall that writes to the filesystem (the
	// supervisor records the ones the policy refuses and lets the kernel
	// decide). Without a supervisor reading, notified syscalls fail (ENOSYS).
	Notify bool
	// NoListen refuses listen(2). Without allowLocalBinding no TCP server
	// may listen, and listen on a TCP socket never bound binds it to every
	// address of the network namespace, a bind neither Landlock's
	// LANDLOCK_ACCESS_NET_BIND_TCP nor eBPF's bind hooks see. The filter
	// cannot tell a unix socket from a TCP one by a descriptor, and the
	// supervisor must not listen for the command (the socket would carry
	// the supervisor's credentials, SO_PEERCRED, to its clients): so moat
	// sets it when no socket may listen, which is when unix sockets are
	// not allowed, or the command shares the host's network (there, unix
	// socket servers need allowLocalBinding too).
	NoListen bool
	// NoMetadata refuses every call that changes a file's mode, owner,
	// times or extended attributes, and truncate(2) by path: for root
	// without a mount namespace (the no-namespace tier), where Landlock
	// governs none of them and root owns the system's files (chmod 0666
	// /etc/shadow worked: found by this project's review).
	NoMetadata bool
	// NoNamespaces (the no-namespace tier): the command shares the host's
	// pid namespace, so the sandbox's init and the supervisor are not pid
	// 1: no limit, priority, CPU or I/O class of any process but the
	// caller itself may change (prlimit --pid of the supervisor to no
	// descriptors turned its git audit off, and of init left processes
	// behind; as root, any host process's limits: found by an attack
	// pass). It shares the host's IPC namespace too: System V IPC
	// (SysVIPCSyscalls) is refused, since its objects are the host's
	// (attack pass 65).
	NoNamespaces bool
	// NotifyMetadata sends every call that changes a file's mode, owner,
	// times, extended attributes or size (MetadataSyscalls, utimensat
	// included, and the newer *at forms) to the supervisor, whatever
	// Notify says: in the no-namespace tier as a user, where Landlock
	// governs none of them, the supervisor makes the change itself on the
	// file it opened and checked (a broker), or refuses it.
	NotifyMetadata bool
	// MemoryBound, if not 0, is a memory limit held by an rlimit
	// (RLIMIT_DATA, no cgroup), which counts neither a memfd's pages nor
	// System V shared memory's: memfd_create and memfd_secret answer ENOSYS
	// (programs fall back to a file, in a tmpfs moat bounds), msgget
	// ENOSYS, and a shared memory segment or semaphore set that could,
	// times the namespace's default count of them (4096 segments, 32,000
	// sets), pass the bound is refused with EINVAL, as the kernel refuses
	// one past its own maximum (found by an attack pass).
	MemoryBound int64
	// NoGrowsDown answers mmap with MAP_GROWSDOWN ENOMEM: where memory is
	// an rlimit (RLIMIT_DATA), which counts such a mapping as stack, not
	// data (512 MiB under a 64 MiB limit: found by an attack pass).
	NoGrowsDown bool
	// NoFastOpen refuses sendto, sendmsg and sendmmsg with MSG_FASTOPEN:
	// where Landlock alone confines TCP (the no-namespace tier without
	// eBPF), which sees connect(2) and not the connect a Fast Open send
	// makes (any port was reached: found by an attack pass).
	NoFastOpen bool
	// NoSourceRoute refuses the socket options that send a packet to
	// another host than the one connect(2) or sendto(2) names: IPv4's
	// IP_OPTIONS (loose and strict source routes) and IPv6's routing
	// headers (IPV6_RTHDR, IPV6_2292RTHDR, and IPV6_2292PKTOPTIONS, which
	// sets one too). eBPF's connect and sendmsg hooks judge the address
	// the call names; with a source route the packet goes to the route's
	// first hop instead. Wherever the host's network is shared (eBPF, or
	// Landlock's TCP ports, is the enforcement), a connect to an allowed
	// "[::1]:3000" with a segment routing header sent its SYN, and up to
	// about 1.4 KB of chosen bytes in the header, to any IPv6 host (found
	// by attack pass 48). In the sandbox's own network namespace there is
	// no route to a first hop.
	NoSourceRoute bool
	// Session: the command runs in a session sandbox, whose server is pid
	// 2: its limits, priority and CPUs are kept as init's are (a command
	// lowered its descriptor limit, and every later command failed: found
	// by an attack pass). No limit of another process may change either:
	// the command's parent is its reaper, whose pid no rule can name (a
	// command had the kernel kill it through its CPU-time limit, and what
	// the command started outlived the command: attack pass 56).
	Session bool
}

// IsMetadata reports whether name is a call NotifyMetadata sends.
func IsMetadata(name string) bool {
	switch name {
	case "setxattrat", "removexattrat", "file_setattr":
		return true
	}
	for _, m := range MetadataSyscalls {
		if m == name {
			return true
		}
	}
	return false
}

// MetadataSyscalls are the calls NoMetadata refuses.
var MetadataSyscalls = []string{
	"chmod", "fchmod", "fchmodat", "fchmodat2",
	"chown", "fchown", "lchown", "fchownat",
	"utime", "utimes", "futimesat", "utimensat",
	"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
	"truncate",
}

// SysVIPCSyscalls are the System V IPC calls NoNamespaces refuses: all
// but shmdt.
var SysVIPCSyscalls = []string{"shmget", "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl"}

// metadataNrs are the x86-64 numbers of the MetadataSyscalls an older
// libseccomp may not know by name.
var metadataNrs = map[string]int{"fchmodat2": 452, "setxattrat": 463, "removexattrat": 466, "file_setattr": 469}

// inodeFlagIoctls set a file's inode flags (chattr) and its extended
// attributes' flags: refused with NoMetadata.
var inodeFlagIoctls = []uint64{0x40086602 /* FS_IOC_SETFLAGS */, 0x40046602 /* FS_IOC32_SETFLAGS */, 0x401c5820 /* FS_IOC_FSSETXATTR */}

// Denied syscalls answer EPERM: they would let the command leave the
// sandbox or reach the kernel's most attacked surfaces.
var Denied = []string{
	// other processes
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	// kernel keyrings (the caller's session keyring)
	"keyctl", "add_key", "request_key",
	// attack surface no sandboxed build needs
	"bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// x86's local descriptor table: 16-bit and custom segments, for
	// DOS and Windows emulators (Docker's profile refuses it too); the
	// code behind it has had privilege escalations and a build never
	// calls it. libseccomp knows no such call on arm64: skipped there.
	"modify_ldt",
	// fanotify (unprivileged since Linux 5.13, inode marks only): in the
	// no-namespace tier Landlock does not govern fanotify_mark, and a
	// command saw which files of a denyRead directory the user's own
	// processes opened and wrote, by name; no build watches with it
	// (watchers use inotify, which stays).
	"fanotify_init", "fanotify_mark",
	// mounts, old and new API, and namespaces
	"mount", "umount", "umount2", "pivot_root", "chroot",
	"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"setns", "open_by_handle_at",
	// the machine itself
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"reboot", "swapon", "swapoff", "acct", "syslog", "iopl", "ioperm",
	"quotactl", "quotactl_fd", "lookup_dcookie", "vhangup", "uselib",
	"nfsservctl", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
}

// LastReviewed is the highest syscall number (amd64 and arm64 share the
// numbers from 424 on) whose call this filter's lists were written
// against: file_setattr (469, Linux 6.17). Linux 6.18 added none above it
// (its one new call, amd64's uprobe, 336, answers a uprobe trampoline and
// no other caller: ENXIO). Every native number above it answers ENOSYS
// (unreviewed): the filter is a deny list, so a call a newer kernel adds
// would otherwise be allowed unseen, whatever it reaches; the C library
// takes ENOSYS for a kernel that lacks the call and falls back, as it does
// under Docker's and runc's profiles. Reviewing a new call is adding it
// to the lists, or leaving it allowed, and raising this number.
const LastReviewed = 469

// rawDenied are syscalls libseccomp 2.5 does not know by name (amd64 and
// arm64 share these numbers): open_tree_attr (6.15).
var rawDenied = []int{467}

// inetModuleTypes and inetModuleProtocols are the AF_INET and AF_INET6
// socket types and protocols (below UDP-Lite's number; everything above
// it is refused too) that only a module serves (denyInetProtocols):
// SOCK_SEQPACKET is SCTP's, SOCK_DCCP DCCP's, SOCK_RDM and SOCK_PACKET
// no inet protocol's; IPPROTO_DCCP, IPPROTO_L2TP, IPPROTO_SCTP.
var (
	inetModuleTypes     = []uint64{unix.SOCK_RDM, unix.SOCK_SEQPACKET, unix.SOCK_DCCP, unix.SOCK_PACKET}
	inetModuleProtocols = []uint64{unix.IPPROTO_DCCP, unix.IPPROTO_L2TP, unix.IPPROTO_SCTP}
)

// nsFlags are the clone/unshare flags that create namespaces.
var nsFlags = []uint64{
	unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
	unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

// Terminal ioctls that inject input or reach the console, and TIOCSETD,
// which changes a terminal's line discipline: on a pty of the sandbox's
// own devpts, with no privilege, and on a kernel with
// dev.tty.ldisc_autoload=1 (the upstream default) it makes the kernel load
// the discipline's module (n_hdlc, n_gsm, slip, ppp, can327...), code with
// a history of privilege escalations that a build never needs. Reading
// the discipline (TIOCGETD) stays.
var deniedIoctls = []uint64{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSETD}

// btrfsIoctlType is the type byte (bits 8-15 of the request) of btrfs's
// ioctls, BTRFS_IOCTL_MAGIC. They are refused whole but for cloneIoctls:
// a subvolume or a snapshot is made by an ioctl on a directory opened for
// reading, checked against the directory's mode only, never against a
// mount's view or Landlock. A snapshot of a subvolume the user owns copied
// its denyRead directory into the writable tree, where the command read it
// (every tier: the mask hides the path, not the subvolume), and in the
// no-namespace tier a subvolume, and a snapshot of one the command filled
// (an authorized_keys), was made in a directory outside the writable paths
// (found by attack pass 80). Nothing a sandboxed build runs needs them.
const btrfsIoctlType = 0x94

// cloneIoctls are the VFS's own requests that carry btrfs's type byte
// (FICLONE, FICLONERANGE, FIDEDUPERANGE: cp --reflink): they need a
// descriptor of the destination open for writing (dedupe: one whose
// contents are the same already), which Landlock and the mounts judged.
var cloneIoctls = []uint64{unix.FICLONE, unix.FICLONERANGE, unix.FIDEDUPERANGE}

// IsBtrfsIoctl reports whether req is one of the btrfs ioctls the filter
// refuses (btrfsIoctlType).
func IsBtrfsIoctl(req uint64) bool {
	if (req>>8)&0xff != btrfsIoctlType {
		return false
	}
	for _, r := range cloneIoctls {
		if uint64(uint32(req)) == r {
			return false
		}
	}
	return true
}

// fscryptIoctls are the fscrypt requests that change a filesystem's
// encryption state, matched by type and number ('f', 19-25), whatever
// their direction and size: refused in every tier. A key added to a
// filesystem (any file of it, opened for reading, through a read-only
// mount too) stays in the filesystem's keyring after the run, charged to
// the user's key quota: a command filled it (188 keys), and the user's
// own add_key, and unlocking an encrypted directory, failed with EDQUOT
// afterwards; removing the user's claim to a key locks the user's
// unlocked directories (attack pass 80: the keyring calls were refused,
// this was the same quota by another door). A directory's policy is set
// on an empty directory its owner opened for reading (Landlock does not
// see it), and ext4 writes a password salt to the superblock when asked
// for one it lacks. Reading a policy, a key's status or a nonce stays.
// FS_IOC_ENABLE_VERITY ('f', 133) rides with them: it makes a file's
// contents immutable for good through a descriptor open for reading,
// judged by the file's mode alone (Landlock sees no write): in the
// no-namespace tier, any file of the user's outside the writable paths on
// a filesystem with fs-verity (btrfs; ext4 and f2fs with the feature).
// Not tried here: this project's kernel has no fs-verity.
var fscryptIoctls = []uint64{
	0x6685, // FS_IOC_ENABLE_VERITY
	0x6613, // FS_IOC_SET_ENCRYPTION_POLICY
	0x6614, // FS_IOC_GET_ENCRYPTION_PWSALT
	0x6617, // FS_IOC_ADD_ENCRYPTION_KEY
	0x6618, // FS_IOC_REMOVE_ENCRYPTION_KEY
	0x6619, // FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS
}

// IsFscryptIoctl reports whether req is one of fscryptIoctls.
func IsFscryptIoctl(req uint64) bool {
	for _, r := range fscryptIoctls {
		if req&0xffff == r {
			return true
		}
	}
	return false
}

// sharedRequeueOps are futex(2)'s requeue operations (FUTEX_REQUEUE,
// FUTEX_CMP_REQUEUE, FUTEX_CMP_REQUEUE_PI) without FUTEX_PRIVATE_FLAG:
// refused in every tier, with futex_requeue(2), whose flags are in
// memory (ENOSYS). A shared futex is named by the file and offset it lies
// in, and a requeue needs only to read the word: a command that mapped a
// file it may only read moved the waiters of a host process of the
// user's, which waited on that file's futex, to a futex of its own, and
// the owner's wake reached none of them: the host process hung (attack
// pass 80; the mount's read-only view is the same inode). The C library's
// condition variables no longer requeue, and a private futex is the
// process's own.
var sharedRequeueOps = []uint64{futexRequeue, futexCmpRequeue, futexCmpRequeuePI}

// futex(2)'s operations (linux/futex.h; x/sys/unix has none of them).
const (
	futexWait         = 0
	futexWake         = 1
	futexRequeue      = 3
	futexCmpRequeue   = 4
	futexWaitBitset   = 9
	futexCmpRequeuePI = 12
	futexPrivateFlag  = 128
)

// futexRequeueNr is futex_requeue's number (amd64 and arm64, Linux 6.7).
const futexRequeueNr = 456

// btrfsDenied returns (mask, value) pairs for ioctl's request that match
// every request of btrfs's type whose number (bits 0-7) is not one of
// cloneIoctls', whatever its direction and size: blocks of numbers that
// share a prefix of bits, since libseccomp allows one check of an argument
// per rule (so no "type is btrfs's and the request is not FICLONE").
func btrfsDenied() [][2]uint64 {
	var out [][2]uint64
	var cover func(value uint64, bits int)
	cover = func(value uint64, bits int) {
		size := uint64(1) << (8 - bits)
		kept := 0
		for _, req := range cloneIoctls {
			if nr := req & 0xff; nr >= value && nr < value+size {
				kept++
			}
		}
		switch {
		case kept == 0:
			mask := uint64(0xff00) | (0xff &^ (size - 1))
			out = append(out, [2]uint64{mask, btrfsIoctlType<<8 | value})
		case bits < 8:
			cover(value, bits+1)
			cover(value+size/2, bits+1)
		}
	}
	cover(0, 0)
	return out
}

// WriteSyscalls are the filesystem syscalls the observer is told about.
// Each entry names the syscall and, for open-like calls, the argument that
// holds the flags (-1: always).
var WriteSyscalls = []struct {
	Name    string
	FlagArg int
}{
	{"open", 1}, {"openat", 2}, {"openat2", -1}, {"creat", -1},
	{"truncate", -1},
	{"mkdir", -1}, {"mkdirat", -1}, {"mknod", -1}, {"mknodat", -1},
	{"rmdir", -1}, {"unlink", -1}, {"unlinkat", -1},
	{"rename", -1}, {"renameat", -1}, {"renameat2", -1},
	{"link", -1}, {"linkat", -1}, {"symlink", -1}, {"symlinkat", -1},
	{"chmod", -1}, {"fchmodat", -1}, {"fchmodat2", -1},
	{"chown", -1}, {"lchown", -1}, {"fchownat", -1},
	{"utime", -1}, {"utimes", -1}, {"futimesat", -1},
	{"setxattr", -1}, {"lsetxattr", -1}, {"removexattr", -1}, {"lremovexattr", -1},
	// Linux 6.13 and 6.17's (an ACL is a mode: found by an attack pass);
	// by number where libseccomp does not know them (metadataNrs).
	{"setxattrat", -1}, {"removexattrat", -1}, {"file_setattr", -1},
	// Through a descriptor (no path to report): counted, so that a run
	// whose only change is a mode, an owner or an ACL (a directory made
	// readable again with fchmod) is still audited.
	{"fchmod", -1}, {"fchown", -1}, {"fsetxattr", -1}, {"fremovexattr", -1},
}

// modeSyscalls are the syscalls whose mode argument can give a file
// S_ISUID or S_ISGID (setIDBits), with that argument's index; the filter
// refuses such a mode (denyFileModes). Nr is the syscall's number where
// libseccomp does not know its name (amd64 and arm64 share it; 0: none).
// The open calls' mode counts whatever their flags (the kernel reads it
// with O_CREAT or O_TMPFILE only; libc passes 0 otherwise). Not here:
// mkdir and mkdirat (the kernel keeps only a new directory's permission
// and sticky bits, its S_ISGID comes from its parent), chown and the
// writes (the kernel clears S_ISUID for a caller without CAP_FSETID),
// ACLs (they hold no set-id bit), and openat2, whose mode the filter
// cannot read: it answers ENOSYS.
var modeSyscalls = []struct {
	Name    string
	Nr      int
	ModeArg int
}{
	{"chmod", 0, 1}, {"fchmod", 0, 1}, {"fchmodat", 0, 2}, {"fchmodat2", 452, 2},
	{"open", 0, 2}, {"openat", 0, 3}, {"creat", 0, 1},
	{"mknod", 0, 1}, {"mknodat", 0, 2},
}

// setIDBits are the mode bits no file made or changed in the sandbox gets.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// openat2Nr is openat2's number (amd64 and arm64), for a libseccomp that
// does not know it.
const openat2Nr = 437

// memfdSecretNr is memfd_secret's number (amd64 and arm64).
const memfdSecretNr = 447

// The kernel's defaults for a new IPC namespace: segments (SHMMNI) and
// semaphore sets (SEMMNI); and what a semaphore costs it, about.
const (
	shmMNI   = 4096
	semMNI   = 32000
	semBytes = 64
)

// SysVBounds are the largest shared memory segment and semaphore set a
// command under a memory bound may make (at least a page and one
// semaphore).
func SysVBounds(bound int64) (shmSize, semN uint64) {
	return uint64(max(bound/shmMNI, 4096)), uint64(max(bound/(semMNI*semBytes), 1))
}

// modeArg returns the index of a syscall's mode argument (modeSyscalls).
func modeArg(name string) (int, bool) {
	for _, m := range modeSyscalls {
		if m.Name == name {
			return m.ModeArg, true
		}
	}
	return 0, false
}

// writeOpenFlags are the open flags that make an open a write.
var writeOpenFlags = []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_CREAT, unix.O_TRUNC, unix.O_APPEND}

// personalityDenied returns (mask, value) pairs that, together, match every
// personality(2) argument except 0xffffffff (the query), PER_LINUX (0),
// PER_LINUX32 (8), and either of those with UNAME26 (0x20000): a value with
// bit 31 clear must have no bit outside 0x20008; a value with bit 31 set
// must be all ones.
func personalityDenied() [][2]uint64 {
	const allowed, top = 0x20008, 1 << 31
	var out [][2]uint64
	for b := 0; b < 31; b++ {
		bit := uint64(1) << b
		if bit&allowed == 0 {
			out = append(out, [2]uint64{bit | top, bit}) // bit set, bit 31 clear
		}
		out = append(out, [2]uint64{bit | top, top}) // bit 31 set, bit clear
	}
	return out
}

// AllowedFamilies are the socket families a sandboxed command may create
// (AF_UNIX further decided by the unix-socket options, AF_NETLINK for
// NETLINK_ROUTE only).
var AllowedFamilies = []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// deniedFamilies are the families below AF_NETLINK that are not allowed
// (those above it are refused by one comparison).
func deniedFamilies() []uint64 {
	var out []uint64
	for fam := uint64(0); fam < unix.AF_NETLINK; fam++ {
		ok := false
		for _, a := range AllowedFamilies {
			ok = ok || a == fam
		}
		if !ok {
			out = append(out, fam)
		}
	}
	return out
}

// IsInodeFlagIoctl reports whether req sets inode flags or a file's
// fsxattr (chattr).
func IsInodeFlagIoctl(req uint64) bool {
	for _, r := range inodeFlagIoctls {
		if uint64(uint32(req)) == r {
			return true
		}
	}
	return false
}

// sourceRouteOptions are the (level, name) pairs of setsockopt(2) that
// NoSourceRoute refuses: a source route, or an IPv6 routing header, sends
// the packets to its first hop rather than to the address connected to.
var sourceRouteOptions = [][2]uint64{
	{unix.IPPROTO_IP, unix.IP_OPTIONS},
	{unix.IPPROTO_IPV6, unix.IPV6_RTHDR},
	{unix.IPPROTO_IPV6, unix.IPV6_2292RTHDR},
	{unix.IPPROTO_IPV6, unix.IPV6_2292PKTOPTIONS},
}
