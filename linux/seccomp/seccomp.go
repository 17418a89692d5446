//go:build linux && cgo

package seccomp

import (
	"errors"
	"fmt"
	"io"
	"os"

	lsc "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

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
}

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

// rawDenied are syscalls libseccomp 2.5 does not know by name (amd64 and
// arm64 share these numbers): open_tree_attr (6.15).
var rawDenied = []lsc.ScmpSyscall{467}

// nsFlags are the clone/unshare flags that create namespaces.
var nsFlags = []uint64{
	unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
	unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

// Terminal ioctls that inject input or reach the console.
var deniedIoctls = []uint64{unix.TIOCSTI, unix.TIOCLINUX}

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
}

// writeOpenFlags are the open flags that make an open a write.
var writeOpenFlags = []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_CREAT, unix.O_TRUNC, unix.O_APPEND}

// Build compiles the filter and returns the BPF program (an array of
// struct sock_filter, native byte order).
func Build(o Options) ([]byte, error) {
	f, err := lsc.NewFilter(lsc.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("seccomp: new filter: %w", err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(lsc.ActKillProcess); err != nil {
		return nil, fmt.Errorf("seccomp: bad-arch action: %w", err)
	}
	if err := f.SetNoNewPrivsBit(false); err != nil { // stage 2 sets it itself
		return nil, fmt.Errorf("seccomp: nnp attribute: %w", err)
	}
	eperm := lsc.ActErrno.SetReturnCode(int16(unix.EPERM))
	deny := eperm
	if o.Notify {
		deny = lsc.ActNotify
	}
	add := func(name string, act lsc.ScmpAction, conds ...lsc.ScmpCondition) error {
		sc, err := lsc.GetSyscallFromName(name)
		if err != nil {
			return nil // not a syscall of this architecture
		}
		if len(conds) == 0 {
			err = f.AddRule(sc, act)
		} else {
			err = f.AddRuleConditional(sc, act, conds)
		}
		if err != nil {
			return fmt.Errorf("seccomp: rule for %s: %w", name, err)
		}
		return nil
	}
	addCmp := func(name string, act lsc.ScmpAction, op lsc.ScmpCompareOp, arg uint, value uint64) error {
		c, err := lsc.MakeCondition(arg, op, value)
		if err != nil {
			return fmt.Errorf("seccomp: condition for %s: %w", name, err)
		}
		return add(name, act, c)
	}
	masked := func(arg uint, mask, value uint64) lsc.ScmpCondition {
		c, err := lsc.MakeCondition(arg, lsc.CompareMaskedEqual, mask, value)
		if err != nil {
			panic(err) // only with an invalid operator or argument index
		}
		return c
	}
	for _, name := range Denied {
		if err := add(name, deny); err != nil {
			return nil, err
		}
	}
	for _, sc := range rawDenied {
		if err := f.AddRule(sc, deny); err != nil {
			return nil, fmt.Errorf("seccomp: rule for syscall %d: %w", sc, err)
		}
	}
	// clone3 keeps its flags in memory, out of seccomp's sight: ENOSYS
	// makes libc fall back to clone, whose flags are checked below.
	if err := add("clone3", lsc.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
		return nil, err
	}
	// MPTCP sockets escape Landlock's TCP rights (which check for
	// IPPROTO_TCP): answer "protocol not supported", so programs (Go's
	// listeners among them) fall back to plain TCP.
	if err := add("socket", lsc.ActErrno.SetReturnCode(int16(unix.EPROTONOSUPPORT)), masked(2, 0xffffffff, unix.IPPROTO_MPTCP)); err != nil {
		return nil, err
	}
	for _, fl := range nsFlags {
		if err := add("unshare", deny, masked(0, fl, fl)); err != nil {
			return nil, err
		}
		if err := add("clone", deny, masked(0, fl, fl)); err != nil {
			return nil, err
		}
	}
	for _, req := range deniedIoctls {
		if err := add("ioctl", deny, masked(1, 0xffffffff, req)); err != nil {
			return nil, err
		}
	}
	// personality(2): the query and the plain Linux personas only
	// (PER_LINUX, PER_LINUX32, either with UNAME26), as container
	// profiles allow: ADDR_NO_RANDOMIZE (ASLR off for what the command
	// runs next), READ_IMPLIES_EXEC, MMAP_PAGE_ZERO and the rest are
	// refused.
	for _, c := range personalityDenied() {
		if err := add("personality", deny, masked(0, c[0], c[1])); err != nil {
			return nil, err
		}
	}
	// socket(2) families: an allow-list. AF_INET and AF_INET6 (the proxy,
	// and servers with allowLocalBinding), AF_UNIX (decided below), and
	// AF_NETLINK for NETLINK_ROUTE only (the C library asks it for the
	// interfaces). Everything else (AF_PACKET, AF_VSOCK, AF_ALG, AF_KEY,
	// AF_XDP, Bluetooth, CAN, TIPC, RDS, ...) is kernel attack surface or a
	// route out that nothing here needs.
	for _, fam := range deniedFamilies() {
		if err := add("socket", deny, masked(0, 0xffffffff, fam)); err != nil {
			return nil, err
		}
	}
	if err := addCmp("socket", deny, lsc.CompareGreater, 0, unix.AF_NETLINK); err != nil {
		return nil, err
	}
	if sc, err := lsc.GetSyscallFromName("socket"); err == nil {
		c0 := masked(0, 0xffffffff, unix.AF_NETLINK)
		c2, err := lsc.MakeCondition(2, lsc.CompareGreater, unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("seccomp: netlink condition: %w", err)
		}
		if err := f.AddRuleConditional(sc, deny, []lsc.ScmpCondition{c0, c2}); err != nil {
			return nil, fmt.Errorf("seccomp: rule for socket: %w", err)
		}
	}
	switch {
	case o.AllowUnix:
	case o.UnixBroker:
		// Anything but SOCK_STREAM (the low 4 bits of the type) is refused.
		for _, typ := range []uint64{unix.SOCK_DGRAM, unix.SOCK_RAW, unix.SOCK_RDM, unix.SOCK_SEQPACKET, unix.SOCK_DCCP, unix.SOCK_PACKET} {
			c0 := masked(0, 0xffffffff, unix.AF_UNIX)
			c1 := masked(1, 0xf, typ)
			if sc, err := lsc.GetSyscallFromName("socket"); err == nil {
				if err := f.AddRuleConditional(sc, deny, []lsc.ScmpCondition{c0, c1}); err != nil {
					return nil, fmt.Errorf("seccomp: rule for socket: %w", err)
				}
			}
		}
		if err := add("connect", lsc.ActNotify); err != nil {
			return nil, err
		}
	default:
		if err := add("socket", deny, masked(0, 0xffffffff, unix.AF_UNIX)); err != nil {
			return nil, err
		}
	}
	if o.Notify {
		for _, w := range WriteSyscalls {
			if w.FlagArg < 0 {
				if err := add(w.Name, lsc.ActNotify); err != nil {
					return nil, err
				}
				continue
			}
			for _, fl := range writeOpenFlags {
				if err := add(w.Name, lsc.ActNotify, masked(uint(w.FlagArg), fl, fl)); err != nil {
					return nil, err
				}
			}
		}
	}
	return export(f)
}

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
