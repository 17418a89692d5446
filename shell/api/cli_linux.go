//go:build linux

package api

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// sameProcess says how the caller's process differs from this one in
// anything moat run reads or its command would inherit, or nil. From the
// request: the variables moat reads from its own environment
// (runtime.HostEnv), umask, resource limits and groups as the caller
// reports them. From the kernel, read when the caller connected (peer, by
// checkPeer, which also compared the confinement and the namespaces):
// the same binary (moat protects its own binary in the sandbox: a caller
// that is another build, or a copy, would have its own left writable),
// umask, uids, gids and groups, resource limits, cgroup (accounting and
// limits), scheduling (nice, policy, CPU affinity, I/O priority),
// oom_score_adj and personality.
func sameProcess(peer *procState, req *client.CLIRunRequest) error {
	for _, name := range runtime.HostEnv() {
		theirs, _ := envValue(req.Env, name)
		if theirs != os.Getenv(name) {
			return fmt.Errorf("$%s is not the server's", name)
		}
	}
	if peer == nil {
		return fmt.Errorf("the caller's process is not known to the server")
	}
	// The server's own process now (not as it was when the caller
	// connected: its commands inherit what it is when the run starts,
	// however long the caller waited before asking).
	self, err := readProc(0)
	if err != nil {
		return fmt.Errorf("the server's own process: %v", err)
	}
	// The server's RLIMIT_NOFILE as it started (Go raised the soft limit
	// since; what it passes on is what it began with).
	cur, max, ok := runtime.StartRlimitNofile()
	if !ok {
		return fmt.Errorf("the server's own RLIMIT_NOFILE at start is unknown")
	}
	self.rlimits[unix.RLIMIT_NOFILE] = unix.Rlimit{Cur: cur, Max: max}
	if um := statusValue(self.status, "Umask"); um == "" {
		return fmt.Errorf("the server's umask is unknown")
	} else if m, err := strconv.ParseInt(um, 8, 32); err != nil || int(m) != *req.Umask {
		return fmt.Errorf("the umask %04o is not the server's (%s)", *req.Umask, um)
	}
	if len(req.Rlimits) != rlimNlimits {
		return fmt.Errorf("rlimits: want %d resources, got %d", rlimNlimits, len(req.Rlimits))
	}
	for i, l := range req.Rlimits {
		if self.rlimits[i].Cur != l[0] || self.rlimits[i].Max != l[1] {
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
	if peer.exeErr != nil || self.exeErr != nil || peer.exeDev != self.exeDev || peer.exeIno != self.exeIno {
		return fmt.Errorf("the caller is not the server's own moat binary (another build, or one replaced since the server started)")
	}
	for _, k := range []string{"Umask", "Uid", "Gid", "Groups", "Cpus_allowed_list"} {
		if m, t := statusValue(self.status, k), statusValue(peer.status, k); m != t {
			return fmt.Errorf("the caller's %s (%s) is not the server's (%s)", k, t, m)
		}
	}
	if peer.rlimits != self.rlimits {
		return fmt.Errorf("the caller's resource limits are not the server's")
	}
	for _, c := range []struct{ what, mine, theirs string }{
		{"cgroup", self.cgroup, peer.cgroup},
		{"nice value", self.nice, peer.nice},
		{"scheduling policy", self.policy + "/" + self.rtprio, peer.policy + "/" + peer.rtprio},
		{"I/O priority", strconv.Itoa(self.ioprio), strconv.Itoa(peer.ioprio)},
		{"oom_score_adj", self.oomScoreAdj, peer.oomScoreAdj},
	} {
		if c.mine != c.theirs {
			return fmt.Errorf("the caller's %s is not the server's", c.what)
		}
	}
	if peer.personalityErr != nil || self.personalityErr != nil || peer.personality != self.personality {
		return fmt.Errorf("the caller's personality (setarch) is not the server's")
	}
	return threadsAgree(self)
}

// errThreadsDiffer is threadsAgree's refusal.
var errThreadsDiffer = errors.New("the server's threads differ in nice value, scheduling, I/O priority or CPU affinity (renice, chrt, ionice or taskset -p change one thread): what its commands get is not what it shows")

// threadsAgree checks that every thread of this process has the main
// thread's nice value, scheduling policy and priority, I/O priority, CPU
// affinity and cgroups (self: as readProc read them, the main thread's).
// These are a thread's own, and renice -p PID, chrt -p, ionice -p or a
// write to a cgroup v1 tasks file change only one thread of a process; the sandbox starts from whichever thread Go
// runs that on, so a caller compared with the main thread alone had its
// command run at another priority than its own (found by an attack pass:
// nice 0 for a caller at 5).
func threadsAgree(self *procState) error {
	pid := os.Getpid()
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &mine); err != nil {
		return fmt.Errorf("the server's CPU affinity: %v", err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("the server's threads: %v", err)
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil || tid == pid {
			continue
		}
		stat, err := readText("/proc/self/task/" + task.Name() + "/stat")
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended
		} else if err != nil {
			return fmt.Errorf("the server's threads: %v", err)
		}
		f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
		if len(f) < 39 {
			return fmt.Errorf("/proc/self/task/%d/stat: %d fields", tid, len(f)+2)
		}
		if f[16] != self.nice || f[37] != self.rtprio || f[38] != self.policy {
			return errThreadsDiffer
		}
		// A cgroup v1 hierarchy (its tasks file) or a threaded v2 one
		// holds threads, not processes.
		cg, err := readText("/proc/self/task/" + task.Name() + "/cgroup")
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return fmt.Errorf("the server's threads: %v", err)
		}
		if cg != self.cgroup {
			return fmt.Errorf("the server's threads are in different cgroups (a cgroup v1 tasks file moves one thread): the cgroup its commands start in is not the one it shows")
		}
		prio, _, e := unix.Syscall(unix.SYS_IOPRIO_GET, 1 /* IOPRIO_WHO_PROCESS */, uintptr(tid), 0)
		if e == unix.ESRCH {
			continue
		} else if e != 0 {
			return fmt.Errorf("ioprio_get: %v", e)
		}
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); errors.Is(err, unix.ESRCH) {
			continue
		} else if err != nil {
			return fmt.Errorf("the server's CPU affinity: %v", err)
		}
		if int(prio) != self.ioprio || set != mine {
			return errThreadsDiffer
		}
	}
	return nil
}

// procStatus is /proc/PID/status.
func procStatus(pid string) (string, error) {
	b, err := readText("/proc/" + pid + "/status")
	if err != nil {
		return "", fmt.Errorf("/proc/%s/status: %v", pid, err)
	}
	return b, nil
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
