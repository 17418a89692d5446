//go:build linux

package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/runtime/enforce"
)

var _ enforce.Prober = (*Enforcer)(nil)

// Probe lists the host facts the Linux sandbox depends on, each with what
// would provide a missing one (a sysctl, a container's security context).
// It runs nothing in a sandbox: moat doctor's trial launch does that.
func (e *Enforcer) Probe(stateDir string) []enforce.Check {
	var out []enforce.Check
	add := func(name string, ok bool, detail, fix string) {
		c := enforce.Check{Name: name, OK: ok, Detail: detail}
		if !ok {
			c.Fix = fix
		}
		out = append(out, c)
	}
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	add("kernel", true, unix.ByteSliceToString(uts.Release[:]), "")
	if c := container(); c != "" {
		add("container", true, c, "")
	}
	add("stage 2 (cgo)", nsinit.Linked, "linked into this binary", "build moat with cgo (make build)")

	userns := usernsWorks()
	add("user namespaces", userns, usernsDetail(),
		"allow unprivileged user namespaces: sysctl -w user.max_user_namespaces=15000 (and kernel.unprivileged_userns_clone=1 on Debian kernels, "+
			"kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu); in Docker, a seccomp profile that allows clone/unshare with CLONE_NEWUSER "+
			"(--security-opt seccomp=unconfined, or docs/CONTAINERS.md's profile); in Kubernetes, securityContext.seccompProfile type Unconfined or Localhost; "+
			"or --best-effort for the no-namespace tier")

	abi := landlockABI()
	add("Landlock", abi > 0, "ABI "+strconv.Itoa(abi), "a kernel of 5.13 or later with Landlock among the LSMs (lsm=...,landlock on the kernel command line)")

	var sizes [3]uint16
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, 3 /* SECCOMP_GET_NOTIF_SIZES */, 0, uintptr(unsafe.Pointer(&sizes)))
	add("seccomp user notification", errno == 0, "violations and the unix-socket broker", "a kernel of 5.0 or later with CONFIG_SECCOMP_FILTER")

	root := os.Geteuid() == 0
	cgDetail, cgOK := cgroupFacts(root)
	add("cgroups (limits)", cgOK, cgDetail, "run moat as root with /sys/fs/cgroup writable (in a container: a cgroup namespace with a writable cgroupfs), or as a user whose cgroup v2 is delegated to it (systemd-run --user --scope -p Delegate=yes, or a user service with Delegate=yes); otherwise rlimits hold memory and processes per process, and a CPU rate is refused")

	kf := kernelFilterSupported(filepath.Join(stateDir, "cache"))
	kfDetail := "cgroup connect/sendmsg/sock_create programs on each run's cgroup"
	if kf != nil {
		kfDetail = kf.Error()
	}
	add("eBPF network filter (root)", kf == nil, kfDetail, "run moat as root on a kernel with cgroup v2 and BPF (the network namespace stays the first layer without it)")
	return out
}

// usernsDetail names the sysctls that govern user namespaces here.
func usernsDetail() string {
	var parts []string
	for _, k := range []string{"user/max_user_namespaces", "kernel/unprivileged_userns_clone", "kernel/apparmor_restrict_unprivileged_userns"} {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil {
			parts = append(parts, strings.ReplaceAll(k, "/", ".")+"="+strings.TrimSpace(string(b)))
		}
	}
	return strings.Join(parts, ", ")
}

// cgroupFacts says which cgroups moat may write here.
func cgroupFacts(root bool) (string, bool) {
	if !root {
		if d, have := delegatedSubtree(); d != "" {
			return "cgroup v2 delegated to this user: " + d + " (controllers: " + strings.Join(have, " ") + ")", true
		}
		return "moat runs unprivileged and no cgroup v2 is delegated to it: rlimits (RLIMIT_DATA, RLIMIT_NPROC in the sandbox's user namespace), no tree-wide limits", false
	}
	if cgroups.IsCgroup2UnifiedMode() {
		if cgroupWritable("/sys/fs/cgroup") {
			return "cgroup v2, writable", true
		}
		return "cgroup v2, not writable (read-only or refused)", false
	}
	var have, ro []string
	for _, c := range []string{"memory", "pids", "cpu"} {
		mnt, err := cgroups.FindCgroupMountpoint("", c)
		if err != nil {
			continue
		}
		if cgroupWritable(mnt) {
			have = append(have, c)
		} else {
			ro = append(ro, c)
		}
	}
	detail := fmt.Sprintf("cgroup v1 controllers writable: %s", strings.Join(have, ", "))
	if len(ro) > 0 {
		detail += fmt.Sprintf("; not writable: %s", strings.Join(ro, ", "))
	}
	return detail, len(have) == 3
}

// container names the container runtime this process seems to run in, or "".
func container() string {
	switch {
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		return "Kubernetes pod"
	case exists("/.dockerenv"):
		return "Docker container"
	case exists("/run/.containerenv"):
		return "Podman container"
	}
	if b, err := os.ReadFile("/proc/1/environ"); err == nil && strings.Contains(string(b), "container=") {
		return "container (" + strings.SplitN(strings.SplitN(string(b), "container=", 2)[1], "\x00", 2)[0] + ")"
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
