//go:build linux && cgo

package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"

	lsc "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Build compiles the filter and returns the BPF program (an array of
// struct sock_filter, native byte order). Its steps, in the order the rules
// are added: the filter's attributes (newFilter); syscalls refused outright
// (denySyscalls); syscalls refused by their arguments (denyArguments:
// clone3, MPTCP, namespace flags, ioctls, personalities); set-id modes
// (denyFileModes); socket families (denyFamilies); unix sockets
// (unixSockets); the writes the supervisor is told of (notifyWrites);
// metadata (denyMetadata); other processes (denyOtherProcesses); memory
// files (denyMemfd); System V IPC without namespaces (denySysVIPC); then
// the export, behind a check that answers ENOSYS to every syscall number
// above LastReviewed (unreviewed).
func Build(o Options) ([]byte, error) {
	f, err := newFilter()
	if err != nil {
		return nil, err
	}
	defer f.Release()
	b := &builder{f: f, deny: lsc.ActErrno.SetReturnCode(int16(unix.EPERM))}
	if o.Notify {
		b.deny = lsc.ActNotify
	}
	for _, step := range []func(Options) error{b.denySyscalls, b.denyArguments, b.denyFileModes, b.denyFamilies, b.unixSockets, b.denyListen, b.notifyWrites, b.denyMetadata, b.denyOtherProcesses, b.denyMemfd, b.denySysVIPC} {
		if err := step(o); err != nil {
			return nil, err
		}
	}
	prog, err := export(f)
	if err != nil {
		return nil, err
	}
	pre, err := unreviewed(LastReviewed)
	if err != nil {
		return nil, err
	}
	return append(pre, prog...), nil
}

// auditArches are the AUDIT_ARCH_* values of the architectures whose
// syscall numbers LastReviewed counts.
var auditArches = map[string]uint32{"amd64": 0xc000003e, "arm64": 0xc00000b7}

// unreviewed returns the instructions put before libseccomp's program:
// a native syscall numbered above last answers ENOSYS (LastReviewed). It
// looks at the architecture and the number only, so the kernel's cache of
// always-allowed syscalls still holds; a number with the x32 bit, or
// another architecture, goes on to libseccomp's program, which kills it.
// BPF jumps only forward, relative to the next instruction, so
// libseccomp's own jumps are unchanged behind it. An architecture whose
// numbers were not reviewed is an error, not a filter without the check.
func unreviewed(last uint32) ([]byte, error) {
	arch, ok := auditArches[goruntime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("seccomp: no reviewed syscall table for %s", goruntime.GOARCH)
	}
	const (
		ldAbs  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jgt    = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
		jge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		x32Bit = 0x40000000
	)
	ins := []unix.SockFilter{
		{Code: ldAbs, K: 4},                  // seccomp_data.arch
		{Code: jeq, Jt: 0, Jf: 4, K: arch},   // another: libseccomp's
		{Code: ldAbs, K: 0},                  // seccomp_data.nr
		{Code: jgt, Jt: 0, Jf: 2, K: last},   // reviewed: libseccomp's
		{Code: jge, Jt: 1, Jf: 0, K: x32Bit}, // x32: libseccomp's
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}
	out := make([]byte, 0, 8*len(ins))
	for _, in := range ins {
		out = binary.NativeEndian.AppendUint16(out, in.Code)
		out = append(out, in.Jt, in.Jf)
		out = binary.NativeEndian.AppendUint32(out, in.K)
	}
	return out, nil
}

// newFilter is an empty filter that allows, with moat's attributes.
func newFilter() (*lsc.ScmpFilter, error) {
	f, err := lsc.NewFilter(lsc.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("seccomp: new filter: %w", err)
	}
	if err := f.SetBadArchAction(lsc.ActKillProcess); err != nil {
		f.Release()
		return nil, fmt.Errorf("seccomp: bad-arch action: %w", err)
	}
	// A binary tree of syscall numbers rather than libseccomp's default
	// linear chain: each syscall the command makes walks a few comparisons
	// instead of one per rule, and loading the filter costs less, since the
	// kernel emulates it for every syscall number to build its cache of
	// always-allowed syscalls (under a spin lock, in every command's start).
	if err := f.SetOptimize(2); err != nil {
		f.Release()
		return nil, fmt.Errorf("seccomp: binary-tree optimization: %w", err)
	}
	if err := f.SetNoNewPrivsBit(false); err != nil { // stage 2 sets it itself
		f.Release()
		return nil, fmt.Errorf("seccomp: nnp attribute: %w", err)
	}
	return f, nil
}

// builder adds rules to a filter.
type builder struct {
	f *lsc.ScmpFilter
	// deny is a refusal: EPERM, or a notification the supervisor reports
	// and answers EPERM (Options.Notify).
	deny lsc.ScmpAction
}

// add adds a rule for the syscall name, if this architecture has it.
func (b *builder) add(name string, act lsc.ScmpAction, conds ...lsc.ScmpCondition) error {
	sc, err := lsc.GetSyscallFromName(name)
	if err != nil {
		return nil // not a syscall of this architecture
	}
	if len(conds) == 0 {
		err = b.f.AddRule(sc, act)
	} else {
		err = b.f.AddRuleConditional(sc, act, conds)
	}
	if err != nil {
		return fmt.Errorf("seccomp: rule for %s: %w", name, err)
	}
	return nil
}

// addNr is add, with nr (if not 0) where libseccomp does not know the
// name: the rule is added either way.
func (b *builder) addNr(name string, nr int, act lsc.ScmpAction, conds ...lsc.ScmpCondition) error {
	if _, err := lsc.GetSyscallFromName(name); err == nil || nr == 0 {
		return b.add(name, act, conds...)
	}
	if err := b.f.AddRuleConditional(lsc.ScmpSyscall(nr), act, conds); err != nil {
		return fmt.Errorf("seccomp: rule for %s (%d): %w", name, nr, err)
	}
	return nil
}

// masked is the condition "argument arg, masked with mask, is value".
func masked(arg uint, mask, value uint64) lsc.ScmpCondition {
	c, err := lsc.MakeCondition(arg, lsc.CompareMaskedEqual, mask, value)
	if err != nil {
		panic(err) // only with an invalid operator or argument index
	}
	return c
}

// denySyscalls refuses the syscalls of Denied and rawDenied, whatever
// their arguments.
func (b *builder) denySyscalls(Options) error {
	for _, name := range Denied {
		if err := b.add(name, b.deny); err != nil {
			return err
		}
	}
	for _, sc := range rawDenied {
		if err := b.f.AddRule(lsc.ScmpSyscall(sc), b.deny); err != nil {
			return fmt.Errorf("seccomp: rule for syscall %d: %w", sc, err)
		}
	}
	return nil
}

// denyMemfd keeps anonymous memory files and System V IPC within a memory
// bound an rlimit holds (MemoryBound).
func (b *builder) denyMemfd(o Options) error {
	if o.MemoryBound <= 0 {
		return nil
	}
	enosys := lsc.ActErrno.SetReturnCode(int16(unix.ENOSYS))
	einval := lsc.ActErrno.SetReturnCode(int16(unix.EINVAL))
	if err := b.add("memfd_create", enosys); err != nil {
		return err
	}
	if err := b.addNr("memfd_secret", memfdSecretNr, enosys); err != nil {
		return err
	}
	if o.NoNamespaces {
		return nil // System V IPC is refused whole (denySysVIPC)
	}
	if err := b.add("msgget", enosys); err != nil {
		return err
	}
	shm, sem := SysVBounds(o.MemoryBound)
	if err := b.add("shmget", einval, lsc.ScmpCondition{Argument: 1, Op: lsc.CompareGreater, Operand1: shm}); err != nil {
		return err
	}
	return b.add("semget", einval, lsc.ScmpCondition{Argument: 1, Op: lsc.CompareGreater, Operand1: sem})
}

// denySysVIPC: see Options.NoNamespaces. Without an IPC namespace every
// System V segment, queue and semaphore set is the host's, named by an id
// /proc/sysvipc lists, and Landlock governs none of them (they are not
// files): a command read and wrote the shared memory of its user's other
// processes, and read their message queues (found by attack pass 65).
// seccomp cannot tell the run's own objects from the host's by an id, so
// every call but shmdt (which only unmaps) is refused.
func (b *builder) denySysVIPC(o Options) error {
	if !o.NoNamespaces {
		return nil
	}
	for _, name := range SysVIPCSyscalls {
		if err := b.add(name, b.deny); err != nil {
			return err
		}
	}
	return nil
}

// denyArguments refuses syscalls by their arguments.
func (b *builder) denyArguments(o Options) error {
	// clone3 keeps its flags in memory, out of seccomp's sight: ENOSYS
	// makes libc fall back to clone, whose flags are checked below.
	if err := b.add("clone3", lsc.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
		return err
	}
	// Native AIO (io_setup): its count of events is the machine's, one
	// sysctl for every user (fs.aio-max-nr, 65536 by default), not the
	// user's nor the namespace's: a command took all of it, and while it
	// ran every other process's io_setup, root's too, failed with EAGAIN
	// (databases and VMs with native AIO; attack pass 80). ENOSYS, as a
	// kernel without AIO answers: libaio's users fall back to threads, and
	// the C library's POSIX AIO uses threads anyway. io_submit and the
	// rest need a context, so none is left to them.
	if err := b.add("io_setup", lsc.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
		return err
	}
	// Huge pages of the machine's pool (hugetlbfs): the pool is reserved
	// for the host as a whole (vm.nr_hugepages: a database's, a VM's), and
	// a command took every page of it with MAP_HUGETLB, so that the host's
	// processes, root's too, got none while it ran (attack pass 80). The
	// answers are an empty pool's: mmap and shmget ENOMEM, memfd_create
	// EINVAL (a kernel without hugetlbfs); transparent huge pages, which
	// reserve nothing, stay.
	const mapHugeTLB, mfdHugeTLB, shmHugeTLB = 0x40000, 0x4, 0o4000
	enomem := lsc.ActErrno.SetReturnCode(int16(unix.ENOMEM))
	for _, r := range []struct {
		name string
		arg  uint
		flag uint64
		act  lsc.ScmpAction
	}{{"mmap", 3, mapHugeTLB, enomem}, {"memfd_create", 1, mfdHugeTLB, lsc.ActErrno.SetReturnCode(int16(unix.EINVAL))}, {"shmget", 2, shmHugeTLB, enomem}} {
		if err := b.add(r.name, r.act, masked(r.arg, r.flag, r.flag)); err != nil {
			return err
		}
	}
	// MPTCP sockets escape Landlock's TCP rights (which check for
	// IPPROTO_TCP): answer "protocol not supported", so programs (Go's
	// listeners among them) fall back to plain TCP.
	if err := b.add("socket", lsc.ActErrno.SetReturnCode(int16(unix.EPROTONOSUPPORT)), masked(2, 0xffffffff, unix.IPPROTO_MPTCP)); err != nil {
		return err
	}
	if err := b.denyInetProtocols(); err != nil {
		return err
	}
	for _, fl := range nsFlags {
		if err := b.add("unshare", b.deny, masked(0, fl, fl)); err != nil {
			return err
		}
		if err := b.add("clone", b.deny, masked(0, fl, fl)); err != nil {
			return err
		}
	}
	// fcntl(F_SETLEASE): a lease needs only a descriptor of the file and
	// its ownership, and makes the kernel hold every other process's open
	// of it (every open under a write lease, every write under a read
	// lease) for lease-break-time, 45 s, each time: a command took one on
	// files it may only read, the user's (a ~/.bashrc every new shell
	// stalled on) and, as root, the system's (/etc/ld.so.cache, which
	// every program's start opens), and the host's processes waited
	// (found by attack pass 46). Nothing a sandboxed build runs takes
	// leases (Samba and NFS servers do).
	if err := b.add("fcntl", b.deny, masked(1, 0xffffffff, unix.F_SETLEASE)); err != nil {
		return err
	}
	for _, req := range deniedIoctls {
		if err := b.add("ioctl", b.deny, masked(1, 0xffffffff, req)); err != nil {
			return err
		}
	}
	// futex requeues of shared futexes (sharedRequeueOps): the command and
	// the private flag in the low byte of the operation.
	for _, op := range sharedRequeueOps {
		if err := b.add("futex", b.deny, masked(1, 0xff, op)); err != nil {
			return err
		}
	}
	if err := b.addNr("futex_requeue", futexRequeueNr, lsc.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
		return err
	}
	for _, req := range fscryptIoctls {
		if err := b.add("ioctl", b.deny, masked(1, 0xffff, req)); err != nil {
			return err
		}
	}
	// btrfs's ioctls, but the VFS's clone requests (btrfsIoctlType).
	for _, c := range btrfsDenied() {
		if err := b.add("ioctl", b.deny, masked(1, c[0], c[1])); err != nil {
			return err
		}
	}
	// personality(2): the query and the plain Linux personas only
	// (PER_LINUX, PER_LINUX32, either with UNAME26), as container
	// profiles allow: ADDR_NO_RANDOMIZE (ASLR off for what the command
	// runs next), READ_IMPLIES_EXEC, MMAP_PAGE_ZERO and the rest are
	// refused.
	for _, c := range personalityDenied() {
		if err := b.add("personality", b.deny, masked(0, c[0], c[1])); err != nil {
			return err
		}
	}
	// The sandbox's init (pid 1), the only process of moat's in the
	// command's sight, keeps its limits, priority and CPUs: it kills the
	// tree and removes the placeholders when the supervisor dies, and a
	// command of the same uid could otherwise lower its descriptor limit
	// (prlimit --pid 1) or starve it (found by an attack pass). Landlock's
	// scoping covers signals only. In the no-namespace tier pid 1 is the
	// host's init.
	kept := []uint64{1}
	if o.Session {
		kept = append(kept, 2) // the session's server
	}
	for _, pid := range kept {
		for _, r := range processArgs {
			if err := b.add(r.name, b.deny, masked(r.arg, 0xffffffff, pid)); err != nil {
				return err
			}
		}
	}
	// Every process of a uid (init's among them): renice -u, ionice -u.
	const prioUser, ioprioWhoUser = 2, 3
	if err := b.add("setpriority", b.deny, masked(0, 0xffffffff, prioUser)); err != nil {
		return err
	}
	if err := b.add("ioprio_set", b.deny, masked(0, 0xffffffff, ioprioWhoUser)); err != nil {
		return err
	}
	notNull, err := lsc.MakeCondition(2, lsc.CompareNotEqual, 0)
	if err != nil {
		return err
	}
	for _, pid := range kept {
		if err := b.add("prlimit64", b.deny, masked(0, 0xffffffff, pid), notNull); err != nil {
			return err
		}
	}
	if o.NoFastOpen {
		const msgFastOpen = 0x20000000
		for _, r := range []struct {
			name string
			arg  uint
		}{{"sendto", 3}, {"sendmsg", 2}, {"sendmmsg", 3}} {
			if err := b.add(r.name, b.deny, masked(r.arg, msgFastOpen, msgFastOpen)); err != nil {
				return err
			}
		}
	}
	if o.NoSourceRoute {
		for _, opt := range sourceRouteOptions {
			if err := b.add("setsockopt", b.deny, masked(1, 0xffffffff, opt[0]), masked(2, 0xffffffff, opt[1])); err != nil {
				return err
			}
		}
	}
	if o.NoGrowsDown {
		const mapGrowsDown = 0x100
		if err := b.add("mmap", lsc.ActErrno.SetReturnCode(int16(unix.ENOMEM)), masked(3, mapGrowsDown, mapGrowsDown)); err != nil {
			return err
		}
	}
	return nil
}

// processArgs are the calls that change another process's priority, CPUs
// or I/O class, and the argument naming the process (0: the caller).
var processArgs = []struct {
	name string
	arg  uint
}{{"sched_setaffinity", 0}, {"sched_setscheduler", 0}, {"sched_setparam", 0}, {"sched_setattr", 0}, {"setpriority", 1}, {"ioprio_set", 1}}

// denyFileModes refuses every mode with S_ISUID or S_ISGID (modeSyscalls:
// chmod, fchmod, fchmodat, fchmodat2, and the create mode of open, openat,
// creat, mknod, mknodat). no_new_privs and nosuid hold only inside the
// sandbox: a set-id file the command leaves in a writable tree runs with
// its owner's ids on the host (root's, when moat runs as root), for any
// user who can reach it. g+s on a directory (group-shared trees) is
// refused too: simpler, and it fails closed; mkdir keeps what the parent
// gives. The answer is EPERM even with Notify: the supervisor lets the
// filesystem syscalls it is told of run, so the notify rules of
// notifyWrites leave these modes out. openat2 keeps its mode in memory,
// out of seccomp's sight, and no libc opens with it: ENOSYS, so a program
// that tries it falls back to openat, whose mode is checked.
func (b *builder) denyFileModes(Options) error {
	eperm := lsc.ActErrno.SetReturnCode(int16(unix.EPERM))
	for _, m := range modeSyscalls {
		for _, bit := range []uint64{unix.S_ISUID, unix.S_ISGID} {
			if err := b.addNr(m.Name, m.Nr, eperm, masked(uint(m.ModeArg), bit, bit)); err != nil {
				return err
			}
		}
	}
	return b.addNr("openat2", openat2Nr, lsc.ActErrno.SetReturnCode(int16(unix.ENOSYS)))
}

// denyInetProtocols answers AF_INET and AF_INET6 sockets of the kinds the
// kernel serves from modules (SCTP, DCCP, L2TP over IP, SMC and any other
// protocol above UDP-Lite's number; the socket types only they serve:
// SOCK_SEQPACKET, SOCK_DCCP, SOCK_RDM, SOCK_PACKET) as a kernel without them
// does. Creating one makes the kernel load its module, with no privilege
// asked (the way the DCCP and SCTP privilege escalations were reached), and
// SCTP connects by setsockopt(SCTP_SOCKOPT_CONNECTX) too, a call the
// connect hooks moat's eBPF layer and broker judge never see. TCP, UDP,
// UDP-Lite, ICMP and ICMPv6 (ping sockets) and raw sockets (which need a
// capability the command lacks) stay.
func (b *builder) denyInetProtocols() error {
	noType := lsc.ActErrno.SetReturnCode(int16(unix.ESOCKTNOSUPPORT))
	noProto := lsc.ActErrno.SetReturnCode(int16(unix.EPROTONOSUPPORT))
	above, err := lsc.MakeCondition(2, lsc.CompareGreater, unix.IPPROTO_UDPLITE)
	if err != nil {
		return fmt.Errorf("seccomp: condition for socket: %w", err)
	}
	for _, fam := range []uint64{unix.AF_INET, unix.AF_INET6} {
		family := masked(0, 0xffffffff, fam)
		for _, typ := range inetModuleTypes {
			if err := b.add("socket", noType, family, masked(1, 0xf, typ)); err != nil {
				return err
			}
		}
		if err := b.add("socket", noProto, family, above); err != nil {
			return err
		}
		for _, p := range inetModuleProtocols {
			if err := b.add("socket", noProto, family, masked(2, 0xffffffff, p)); err != nil {
				return err
			}
		}
	}
	return nil
}

// denyFamilies makes socket(2)'s families an allow-list. AF_INET and
// AF_INET6 (the proxy, and servers with allowLocalBinding), AF_UNIX
// (unixSockets decides), and AF_NETLINK for NETLINK_ROUTE only (the C
// library asks it for the interfaces). Everything else (AF_PACKET,
// AF_VSOCK, AF_ALG, AF_KEY, AF_XDP, Bluetooth, CAN, TIPC, RDS, ...) is
// kernel attack surface or a route out that nothing here needs.
func (b *builder) denyFamilies(Options) error {
	for _, fam := range deniedFamilies() {
		if err := b.add("socket", b.deny, masked(0, 0xffffffff, fam)); err != nil {
			return err
		}
	}
	above, err := lsc.MakeCondition(0, lsc.CompareGreater, unix.AF_NETLINK)
	if err != nil {
		return fmt.Errorf("seccomp: condition for socket: %w", err)
	}
	if err := b.add("socket", b.deny, above); err != nil {
		return err
	}
	notRoute, err := lsc.MakeCondition(2, lsc.CompareGreater, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("seccomp: netlink condition: %w", err)
	}
	if err := b.add("socket", b.deny, masked(0, 0xffffffff, unix.AF_NETLINK), notRoute); err != nil {
		return err
	}
	// socketpair(2) makes its two sockets with the family's own create
	// code (loading the family's or the protocol's module on demand)
	// before it asks the family for a pair, which only AF_UNIX (and TIPC)
	// make: socketpair(AF_INET, SOCK_STREAM, IPPROTO_SCTP) reached the
	// module-loading inet_create that denyInetProtocols keeps socket(2)
	// from, and socketpair(AF_TIPC) or any other refused family the
	// family's (attack pass 86). Every other family is answered as the
	// kernel answers inet, inet6 and netlink, before any socket is made.
	notUnix, err := lsc.MakeCondition(0, lsc.CompareNotEqual, unix.AF_UNIX)
	if err != nil {
		return fmt.Errorf("seccomp: condition for socketpair: %w", err)
	}
	return b.add("socketpair", lsc.ActErrno.SetReturnCode(int16(unix.EOPNOTSUPP)), notUnix)
}

// unixSockets decides AF_UNIX: left alone (AllowUnix), stream sockets only
// with every connect(2) told to the supervisor (UnixBroker), or refused.
func (b *builder) unixSockets(o Options) error {
	if !o.AllowUnix {
		// A datagram socket of a socketpair sends to any path with sendto
		// (a connected datagram socket takes another address): datagrams
		// reached every host unix socket the sandbox can see (/dev/log,
		// the journal, a daemon's control socket) with unix sockets
		// refused (found by an attack pass). Stream and seqpacket pairs
		// cannot address anything but each other.
		// SOCK_RAW is a datagram socket for AF_UNIX (unix_create turns
		// it into one: found by the next attack pass), and the rest are
		// refused with it.
		for _, typ := range []uint64{unix.SOCK_DGRAM, unix.SOCK_RAW, unix.SOCK_RDM, unix.SOCK_DCCP, unix.SOCK_PACKET} {
			if err := b.add("socketpair", b.deny, masked(0, 0xffffffff, unix.AF_UNIX), masked(1, 0xf, typ)); err != nil {
				return err
			}
		}
	}
	switch {
	case o.AllowUnix:
	case o.UnixBroker:
		// Anything but SOCK_STREAM (the low 4 bits of the type) is refused.
		for _, typ := range []uint64{unix.SOCK_DGRAM, unix.SOCK_RAW, unix.SOCK_RDM, unix.SOCK_SEQPACKET, unix.SOCK_DCCP, unix.SOCK_PACKET} {
			if err := b.add("socket", b.deny, masked(0, 0xffffffff, unix.AF_UNIX), masked(1, 0xf, typ)); err != nil {
				return err
			}
		}
		return b.add("connect", lsc.ActNotify)
	default:
		return b.add("socket", b.deny, masked(0, 0xffffffff, unix.AF_UNIX))
	}
	return nil
}

// denyListen: see Options.NoListen.
func (b *builder) denyListen(o Options) error {
	if !o.NoListen {
		return nil
	}
	return b.add("listen", b.deny)
}

// notifyWrites (Notify) tells the supervisor of every syscall that writes
// to the filesystem: those of WriteSyscalls, the opening ones only with a
// flag of writeOpenFlags, those with a mode argument only without a set-id
// bit (an unconditional rule for a syscall replaces its conditional ones in
// libseccomp, whatever their order: the refusals of denyFileModes would be
// lost), openat2 never (it answers ENOSYS).
func (b *builder) notifyWrites(o Options) error {
	if !o.Notify && !o.NotifyMetadata {
		return nil
	}
	calls := WriteSyscalls
	if o.NotifyMetadata {
		calls = append(calls[:len(calls):len(calls)], struct {
			Name    string
			FlagArg int
		}{"utimensat", -1})
	}
	for _, w := range calls {
		if w.Name == "openat2" || (!o.Notify && !IsMetadata(w.Name)) {
			continue
		}
		var conds []lsc.ScmpCondition
		if arg, ok := modeArg(w.Name); ok {
			conds = append(conds, masked(uint(arg), setIDBits, 0))
		}
		if w.FlagArg < 0 {
			if err := b.addNr(w.Name, metadataNrs[w.Name], lsc.ActNotify, conds...); err != nil {
				return err
			}
			continue
		}
		for _, fl := range writeOpenFlags {
			if err := b.add(w.Name, lsc.ActNotify, append([]lsc.ScmpCondition{masked(uint(w.FlagArg), fl, fl)}, conds...)...); err != nil {
				return err
			}
		}
	}
	if o.NotifyMetadata {
		// Inode flags (chattr) and the fsxattr of a file: the supervisor
		// sets them on the file it checked, or refuses.
		return b.inodeFlags(lsc.ActNotify)
	}
	return nil
}

// inodeFlags gives the ioctls that set inode flags (inodeFlagIoctls) the
// action act.
func (b *builder) inodeFlags(act lsc.ScmpAction) error {
	for _, req := range inodeFlagIoctls {
		if err := b.add("ioctl", act, masked(1, 0xffffffff, req)); err != nil {
			return err
		}
	}
	return nil
}

// denyMetadata: see Options.NoMetadata. Unconditional rules, added last:
// they replace the conditional ones of denyFileModes and notifyWrites for
// the same calls (the answer is the same refusal, reported with Notify).
func (b *builder) denyMetadata(o Options) error {
	if !o.NoMetadata {
		return nil
	}
	names := append(append([]string(nil), MetadataSyscalls...), "setxattrat", "removexattrat", "file_setattr")
	for _, name := range names {
		if err := b.addNr(name, metadataNrs[name], b.deny); err != nil {
			return err
		}
	}
	return b.inodeFlags(b.deny)
}

// denyOtherProcesses: see Options.NoNamespaces and Options.Session. A pid
// (or who) of 0 is the caller; prlimit64 with no new limit only reads.
func (b *builder) denyOtherProcesses(o Options) error {
	if !o.NoNamespaces && !o.Session {
		return nil
	}
	notZero := func(arg uint) lsc.ScmpCondition {
		c, err := lsc.MakeCondition(arg, lsc.CompareNotEqual, 0)
		if err != nil {
			panic(err) // only with an invalid operator or argument index
		}
		return c
	}
	if err := b.add("prlimit64", b.deny, notZero(0), notZero(2)); err != nil {
		return err
	}
	if !o.NoNamespaces {
		// A session command's reaper, its parent (a pid no rule can
		// name), keeps its limits as the server does: a command gave it
		// one second of CPU time and spent it with orphans for it to
		// reap, the kernel killed it, and what the command had started
		// outlived the command's end (found by attack pass 56). Its
		// priority and CPUs only slow its own reaping.
		return nil
	}
	for _, r := range processArgs {
		if err := b.add(r.name, b.deny, notZero(r.arg)); err != nil {
			return err
		}
	}
	return nil
}

func export(f *lsc.ScmpFilter) ([]byte, error) {
	fd, err := unix.MemfdCreate("moat-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: memfd: %w", err)
	}
	file := os.NewFile(uintptr(fd), "moat-seccomp")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seccomp: rewind: %w", err)
	}
	prog, err := io.ReadAll(file)
	if err != nil {
		return nil, fmt.Errorf("seccomp: read program: %w", err)
	}
	if len(prog) == 0 || len(prog)%8 != 0 {
		return nil, errors.New("seccomp: exported program is empty or misaligned")
	}
	return prog, nil
}

// Number returns the native number of a syscall, if this architecture has it.
func Number(name string) (int, bool) {
	sc, err := lsc.GetSyscallFromName(name)
	if err != nil || sc < 0 {
		return 0, false
	}
	return int(sc), true
}
