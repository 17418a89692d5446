//go:build linux

package linux

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// describe resolves the policy as a launch would, without running anything
// or creating any placeholder, and probes the kernel features it needs.
// look, if not nil, is planInput.look: a client's credentials (moatd).
func describe(pol *policy.Policy, stateDir string, look func(fn func())) (*enforce.Description, error) {
	exe, _ := os.Executable()
	pol2 := *pol
	pol2.Protect = append(append(append([]string(nil), pol.Protect...), stateDir, exe), pol.Sources...)
	fp, err := makeFSPlan(planInput{pol: &pol2, uid: os.Getuid(), gid: os.Getgid(), exposeRO: []string{pol.Cwd}, look: look})
	if err != nil {
		return nil, err
	}
	d := &enforce.Description{Protected: fp.protected, Notes: fp.notes}
	for _, ph := range fp.placeholders {
		d.Placeholders = append(d.Placeholders, ph.path)
	}
	userns := usernsWorks()
	abi := landlockABI()
	d.Tier = "full"
	if os.Geteuid() != 0 {
		d.Tier = "rootless"
	}
	if !userns || !nsinit.Linked {
		d.Tier = "unavailable"
		if nsinit.Linked && abi > 0 {
			d.Tier = "no-namespace (--best-effort only)"
		}
	}
	add := func(part string, ok bool, by, note string) {
		d.Mechanisms = append(d.Mechanisms, enforce.Mechanism{Part: part, Enforced: ok, By: by, Note: note})
	}
	nsNote := ""
	if !userns {
		nsNote = "this user cannot create a user namespace here: moat refuses to run"
		if abi > 0 {
			nsNote += "; --best-effort runs it with Landlock, seccomp (and eBPF as root) only, listing what that leaves out"
		}
	}
	if !nsinit.Linked {
		nsNote = "built without cgo: no stage 2"
	}
	add("namespaces", userns && nsinit.Linked, "user, mount, pid, net, ipc, uts namespaces (clone + stage 2)", nsNote)
	add("filesystem: read-only host, writable paths, hidden paths", userns, "mount namespace: open_tree clones, mount_setattr(RDONLY, recursive), tmpfs masks", "")
	add("filesystem: mandatory protections", userns, "read-only bind mounts (+ placeholders, journal)", strconv.Itoa(len(fp.protected))+" paths")
	llNote := "ABI " + strconv.Itoa(abi)
	if abi == 0 {
		llNote = "not available on this kernel: the mounts alone enforce writes"
	}
	add("filesystem: writes only in writable trees (second layer)", abi > 0, "Landlock", llNote)
	add("private /tmp, /proc, /dev", userns, "tmpfs, procfs of the new pid namespace, minimal /dev with a new devpts", "")
	add("no capabilities, no_new_privs", true, "bounding set emptied, securebits locked, capset(0), PR_SET_NO_NEW_PRIVS", "")
	add("syscalls (userns, mount, ptrace, keyrings, bpf, io_uring, AF_UNIX, TIOCSTI)", nsinit.Linked, "seccomp (libseccomp-compiled BPF, loaded last)", "")
	netNote := "no destination allowed: every request is refused (and reported)"
	if pol.Net.WantsNetwork() {
		netNote = fmt.Sprintf("%d allowed, %d denied entries", len(pol.Net.AllowedDomains), len(pol.Net.DeniedDomains))
	}
	if pol.Net.HTTPProxyPort != 0 || pol.Net.SOCKSProxyPort != 0 {
		netNote = "relayed as is to the external proxy on the host's loopback (httpProxyPort/socksProxyPort): that proxy filters"
	}
	add("network", userns, "network namespace with only lo; moat's HTTP+SOCKS5 proxy listening inside it, served from the host", netNote)
	unixNote := "AF_UNIX sockets refused"
	switch {
	case pol.Net.AllowAllUnixSockets:
		unixNote = "all AF_UNIX sockets allowed (allowAllUnixSockets)"
	case len(pol.Net.AllowUnixSockets) > 0:
		unixNote = fmt.Sprintf("%d paths, connected by the supervisor on the command's behalf", len(pol.Net.AllowUnixSockets))
	}
	add("unix sockets", nsinit.Linked, "seccomp (+ user-notification broker for allowUnixSockets)", unixNote)
	bindNote := "allowed (allowLocalBinding)"
	bindOK := true
	if !pol.Net.AllowLocalBinding {
		bindNote = "servers cannot listen"
		if abi < 4 {
			bindNote = "not enforced: Landlock ABI < 4 (binding inside the sandbox's own network namespace exposes nothing to the host)"
			bindOK = false
		}
	}
	add("local binding", bindOK, "Landlock TCP bind rights", bindNote)
	kfNote := "second layer behind the network namespace: only moat's proxy and the sandbox's own loopback, every refusal reported"
	kfErr := kernelFilterSupported(filepath.Join(stateDir, "cache"))
	if kfErr != nil {
		kfNote = kfErr.Error()
	}
	add("network (eBPF, root)", kfErr == nil, "cgroup connect4/6, sendmsg4/6, sock_create programs on the run's cgroup", kfNote)
	add("process tree", userns, "pid namespace: init kills everything when the command exits or moat dies", "")
	add("environment", true, "credential variables removed", "")
	if pol.Limits.Timeout > 0 {
		add("timeout", true, "supervisor kills the pid namespace", pol.Limits.Timeout.String())
	}
	d.Mechanisms = append(d.Mechanisms, limitMechanisms(pol.Limits.Effective(totalMemory()), pol.Limits.Memory > 0, !userns, kfErr == nil)...)
	add("violations", pol.Violations, "seccomp user notifications observed by the supervisor", "")
	return d, nil
}

// usernsWorks reports whether this process can create a user namespace.
func usernsWorks() bool {
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" && os.Geteuid() != 0 {
		return false
	}
	t := "/bin/true"
	if _, err := os.Stat(t); err != nil {
		t = filepath.Join("/usr/bin", "true")
	}
	cmd := exec.Command(t)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
	}
	return cmd.Run() == nil
}
