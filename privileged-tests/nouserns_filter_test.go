//go:build linux && cgo

package privtests

import (
	"fmt"
	"os"
	"syscall"

	lsc "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// denyUsernsMain loads a seccomp filter that refuses user namespaces the
// way Docker's default profile does (clone/unshare with CLONE_NEWUSER get
// EPERM, clone3 gets ENOSYS so that callers fall back to clone), then
// execs args. It stands in for a container that refuses user namespaces.
func denyUsernsMain(args []string) int {
	os.Unsetenv(denyUsernsEnv)
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "deny-userns: no command")
		return 2
	}
	f, err := lsc.NewFilter(lsc.ActAllow)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deny-userns:", err)
		return 2
	}
	c, err := lsc.MakeCondition(0, lsc.CompareMaskedEqual, unix.CLONE_NEWUSER, unix.CLONE_NEWUSER)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deny-userns:", err)
		return 2
	}
	for _, name := range []string{"clone", "unshare"} {
		sc, err := lsc.GetSyscallFromName(name)
		if err == nil {
			err = f.AddRuleConditional(sc, lsc.ActErrno.SetReturnCode(int16(unix.EPERM)), []lsc.ScmpCondition{c})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "deny-userns:", name, err)
			return 2
		}
	}
	sc, err := lsc.GetSyscallFromName("clone3")
	if err == nil {
		err = f.AddRule(sc, lsc.ActErrno.SetReturnCode(int16(unix.ENOSYS)))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "deny-userns: clone3", err)
		return 2
	}
	// Docker sets no_new_privs only when asked; an unprivileged process
	// needs it to load a filter.
	if os.Geteuid() != 0 {
		if err := f.SetNoNewPrivsBit(true); err != nil {
			fmt.Fprintln(os.Stderr, "deny-userns:", err)
			return 2
		}
	} else if err := f.SetNoNewPrivsBit(false); err != nil {
		fmt.Fprintln(os.Stderr, "deny-userns:", err)
		return 2
	}
	return loadAndExec(f, args)
}

func loadAndExec(f *lsc.ScmpFilter, args []string) int {
	if err := f.Load(); err != nil {
		fmt.Fprintln(os.Stderr, "deny filter: load:", err)
		return 2
	}
	err := syscall.Exec(args[0], args, os.Environ())
	fmt.Fprintln(os.Stderr, "deny filter: exec:", err)
	return 2
}

// denyMountsMain loads a filter that refuses every mount operation with
// EPERM (user namespaces stay allowed), as AppArmor's docker-default
// profile does in a container run with seccomp=unconfined, then execs args.
func denyMountsMain(args []string) int {
	os.Unsetenv(denyMountsEnv)
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "deny-mounts: no command")
		return 2
	}
	f, err := lsc.NewFilter(lsc.ActAllow)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deny-mounts:", err)
		return 2
	}
	for _, name := range []string{"mount", "umount2", "pivot_root", "open_tree", "move_mount", "mount_setattr", "fsopen", "fsmount", "fsconfig", "fspick"} {
		sc, err := lsc.GetSyscallFromName(name)
		if err == nil {
			err = f.AddRule(sc, lsc.ActErrno.SetReturnCode(int16(unix.EPERM)))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "deny-mounts:", name, err)
			return 2
		}
	}
	if err := f.SetNoNewPrivsBit(os.Geteuid() != 0); err != nil {
		fmt.Fprintln(os.Stderr, "deny-mounts:", err)
		return 2
	}
	return loadAndExec(f, args)
}
