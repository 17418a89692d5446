//go:build linux

package api

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// sameProcess says how the caller's process (pid, and what its request
// reports of itself) differs from this one in anything moat run reads or
// its command would inherit, or nil: the variables moat reads from its own
// environment (runtime.HostEnv), the umask, resource limits and groups
// (which the command inherits from the process that starts it), and, read
// by the kernel's word rather than the caller's, its cgroup, network
// namespace, no_new_privs, seccomp filters, capabilities and LSM label. A
// caller more confined than the server (a command of another sandbox that
// sets no_new_privs, such as Landlock's) must not get commands run
// without that confinement; a caller in another cgroup must not get them
// run outside its limits.
func sameProcess(pid int, req *client.CLIRunRequest) error {
	for _, name := range runtime.HostEnv() {
		theirs, _ := envValue(req.Env, name)
		if theirs != os.Getenv(name) {
			return fmt.Errorf("$%s is not the server's", name)
		}
	}
	self, err := procStatus("self")
	if err != nil {
		return err
	}
	if um := statusValue(self, "Umask"); um == "" {
		return fmt.Errorf("the server's umask is unknown")
	} else if m, err := strconv.ParseInt(um, 8, 32); err != nil || int(m) != *req.Umask {
		return fmt.Errorf("the umask %04o is not the server's (%s)", *req.Umask, um)
	}
	if len(req.Rlimits) != rlimNlimits {
		return fmt.Errorf("rlimits: want %d resources, got %d", rlimNlimits, len(req.Rlimits))
	}
	for i, l := range req.Rlimits {
		var mine unix.Rlimit
		if err := unix.Getrlimit(i, &mine); err != nil {
			return fmt.Errorf("getrlimit %d: %v", i, err)
		}
		if i == unix.RLIMIT_NOFILE {
			// Go raised the soft limit at start; what the server's
			// process began with is what it passes on.
			cur, max, ok := runtime.StartRlimitNofile()
			if !ok {
				return fmt.Errorf("the server's own RLIMIT_NOFILE at start is unknown")
			}
			mine = unix.Rlimit{Cur: cur, Max: max}
		}
		if mine.Cur != l[0] || mine.Max != l[1] {
			return fmt.Errorf("the resource limit %d is not the server's", i)
		}
	}
	groups, err := unix.Getgroups()
	if err != nil {
		return err
	}
	theirs := slices.Clone(req.Groups)
	slices.Sort(groups)
	slices.Sort(theirs)
	if *req.Gid != unix.Getgid() || !slices.Equal(slices.Compact(groups), slices.Compact(theirs)) {
		return fmt.Errorf("the groups are not the server's")
	}
	if pid <= 0 {
		return fmt.Errorf("the caller's process is not visible to the server")
	}
	p := strconv.Itoa(pid)
	for _, f := range []string{"cgroup", "attr/current"} {
		mine, merr := os.ReadFile("/proc/self/" + f)
		theirs, terr := os.ReadFile("/proc/" + p + "/" + f)
		if (merr == nil) != (terr == nil) || !bytes.Equal(mine, theirs) {
			return fmt.Errorf("the caller's %s is not the server's", map[string]string{"cgroup": "cgroup", "attr/current": "LSM label"}[f])
		}
	}
	netns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return err
	}
	if theirs, err := os.Readlink("/proc/" + p + "/ns/net"); err != nil || theirs != netns {
		return fmt.Errorf("the caller's network namespace is not the server's")
	}
	theirsStatus, err := procStatus(p)
	if err != nil {
		return err
	}
	for _, k := range []string{"NoNewPrivs", "Seccomp", "Seccomp_filters", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if m, t := statusValue(self, k), statusValue(theirsStatus, k); m != t {
			return fmt.Errorf("the caller's %s (%s) is not the server's (%s)", k, t, m)
		}
	}
	return nil
}

// procStatus is /proc/PID/status.
func procStatus(pid string) (string, error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return "", fmt.Errorf("/proc/%s/status: %v", pid, err)
	}
	return string(b), nil
}

// statusValue is a field of a /proc/PID/status text ("" where the kernel
// has none).
func statusValue(status, key string) string {
	for line := range strings.SplitSeq(status, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// rlimNlimits is Linux's RLIM_NLIMITS (RLIMIT_CPU ... RLIMIT_RTTIME).
const rlimNlimits = 16
