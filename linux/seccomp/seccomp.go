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
	// A binary tree of syscall numbers rather than libseccomp's default
	// linear chain: each syscall the command makes walks a few comparisons
	// instead of one per rule, and loading the filter costs less, since the
	// kernel emulates it for every syscall number to build its cache of
	// always-allowed syscalls (under a spin lock, in every command's start).
	if err := f.SetOptimize(2); err != nil {
		return nil, fmt.Errorf("seccomp: binary-tree optimization: %w", err)
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
		if err := f.AddRule(lsc.ScmpSyscall(sc), deny); err != nil {
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
