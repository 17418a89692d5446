//go:build linux

package linux

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Resource limits. Where moat may write cgroups (as root), the run's cgroup
// holds memory (swap included), processes and the CPU rate for the whole
// process tree, and reports what it refused; cgroup v2 uses the cgroup the
// eBPF filter already made, a host with the v1 controllers mounted beside
// v2 (this machine kind) uses a cgroup in each v1 hierarchy. Otherwise
// rlimits hold what they can, per process: RLIMIT_NPROC (counted in the
// sandbox's own user namespace), RLIMIT_DATA; a CPU rate needs a cgroup.
// RLIMIT_FSIZE caps file sizes everywhere.

// totalMemory is the machine's RAM in bytes.
func totalMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// limiter is a run's cgroup limits.
type limiter struct {
	mgr  cgroups.Manager
	v2   bool
	eff  policy.Limits
	dirs map[string]string // controller -> directory (v1), "" -> directory (v2)

	// The counter files, opened once and read with pread (a session reads
	// them twice a command): memory OOM kills, pids refusals, CPU
	// throttling; -1 where the limit is not set or the file is missing.
	openOnce sync.Once
	fds      [3]int
}

// counterKeys are the keys counters reads, in the order of limiter.fds.
var counterKeys = [3]string{"oom_kill", "max", "nr_throttled"}

// limitMechanisms says what holds each limit here, for moat policy: the
// same choice newLimiter and rlimits make. setMemory: the settings set the
// memory limit (not moat's default). runCgroup says whether a run gets a
// cgroup v2 of its own (the eBPF filter's).
func limitMechanisms(eff policy.Limits, setMemory, nons, runCgroup bool) []enforce.Mechanism {
	root := os.Geteuid() == 0
	v2 := cgroups.IsCgroup2UnifiedMode()
	mounted := func(c string) bool {
		if v2 {
			return runCgroup
		}
		mnt, err := cgroups.FindCgroupMountpoint("", c)
		return err == nil && cgroupWritable(mnt)
	}
	var out []enforce.Mechanism
	add := func(part string, ok bool, by, note string) {
		out = append(out, enforce.Mechanism{Part: part, Enforced: ok, By: by, Note: note})
	}
	deleg := ""
	if !root {
		deleg = delegatedFor(eff)
	}
	cg := func(c, v2file, v1file string) (string, bool) {
		if deleg != "" {
			return "cgroup v2 " + v2file + " (the run's cgroup in " + deleg + ", delegated to this user)", true
		}
		if !root || !mounted(c) {
			return "", false
		}
		if v2 {
			return "cgroup v2 " + v2file + " (the run's cgroup)", true
		}
		return "cgroup v1 " + v1file + " (a cgroup of the run in the " + c + " hierarchy)", true
	}
	if eff.Memory > 0 {
		if by, ok := cg("memory", "memory.max + memory.swap.max", "memory.limit_in_bytes (+ memory.memsw.limit_in_bytes)"); ok {
			add("limit: memory", true, by, humanBytes(eff.Memory)+" for the whole tree; OOM kills are reported")
		} else {
			by := "RLIMIT_DATA"
			note := humanBytes(eff.Memory) + " per process, not the tree (a cgroup needs root, or a cgroup v2 delegated to this user)"
			if !nons {
				by += "; tmpfs size= of /tmp and /dev/shm"
				note += "; /tmp and /dev/shm hold at most as much each"
			} else {
				note += "; the host's /tmp and /dev/shm are not counted (no mount namespace)"
			}
			if setMemory && nons {
				by += "; memfd_create refused (ENOSYS; System V IPC is refused in this tier)"
			} else if setMemory {
				by += "; memfd_create and msgget refused (ENOSYS), System V segments and semaphore sets bounded (seccomp)"
			} else {
				note += "; memfds and System V IPC are not counted under this default (set moat.limits.memory to bound them)"
			}
			note += "; the kernel's own memory (sockets, pipes, inodes) is not counted; refused allocations are not reported"
			add("limit: memory", true, by, note)
		}
	} else {
		add("limit: memory", false, "", "none (moat.limits.memory is unlimited)")
	}
	if eff.Pids > 0 {
		switch by, ok := cg("pids", "pids.max", "pids.max"); {
		case ok:
			add("limit: processes", true, by, strconv.FormatInt(eff.Pids, 10)+" processes and threads; refused forks are reported")
		case nons && !root:
			add("limit: processes", false, "RLIMIT_NPROC, the user's count at the start plus the limit", "no user namespace and no writable cgroup: RLIMIT_NPROC counts every process of this user on the host, so the command gets the user's count at its start plus "+strconv.FormatInt(eff.Pids, 10)+", at most what leaves moat a reserve below its own limit, the cgroup's and the kernel's")
		case nons:
			add("limit: processes", false, "", "no user namespace and no writable cgroup: the kernel exempts root from RLIMIT_NPROC")
		case root:
			add("limit: processes", false, "", "as root only a cgroup holds it (the kernel exempts root from RLIMIT_NPROC) and none is writable here: moat refuses to run (--best-effort runs without it)")
		default:
			n := uint64(eff.Pids)
			if half, ok := userProcessHalf(); ok && half < n {
				n = half
			}
			note := strconv.FormatUint(n, 10) + " processes and threads; refused forks are not reported"
			if n < uint64(eff.Pids) {
				note += " (half of this user's own limit, which counts the sandbox's processes too)"
			}
			add("limit: processes", true, "RLIMIT_NPROC, counted in the sandbox's user namespace", note)
		}
	}
	if eff.CPU > 0 {
		if by, ok := cg("cpu", "cpu.max", "cpu.cfs_quota_us / cpu.cfs_period_us"); ok {
			add("limit: CPU rate", true, by, cpus(eff.CPU)+"; throttling is reported")
		} else {
			add("limit: CPU rate", false, "", "only a cgroup throttles a rate and none is writable here: moat refuses to run (--best-effort runs without it)")
		}
	}
	if eff.CPUTime > 0 {
		add("limit: CPU time", true, "RLIMIT_CPU (per process)", eff.CPUTime.String()+"; the process is killed and it is reported")
	}
	if eff.FileSize > 0 {
		add("limit: file size", true, "RLIMIT_FSIZE", humanBytes(eff.FileSize)+" per file; a writer killed by SIGXFSZ is reported")
	}
	return out
}

// newLimiter makes the run's cgroup limits (root only; nil otherwise). On
// cgroup v2, dir is the run's cgroup (the eBPF one); on a v1 host moat makes
// a cgroup named id in the memory, pids and cpu hierarchies.
func newLimiter(eff policy.Limits, v2dir, id string) (*limiter, error) {
	if (os.Geteuid() != 0 && v2dir == "") || (eff.Memory == 0 && eff.Pids == 0 && eff.CPU == 0) {
		return nil, nil
	}
	res := &cgroups.Resources{}
	if eff.Memory > 0 {
		res.Memory = eff.Memory
	}
	if eff.Pids > 0 {
		p := eff.Pids
		res.PidsLimit = &p
	}
	if eff.CPU > 0 {
		res.CpuPeriod = 100000
		res.CpuQuota = eff.CPU * 100 // thousandths of a CPU per 100 ms
	}
	lm := &limiter{eff: eff, dirs: map[string]string{}}
	cg := &cgroups.Cgroup{Resources: res}
	if cgroups.IsCgroup2UnifiedMode() {
		if v2dir == "" {
			return nil, nil // no eBPF cgroup: the rlimits hold what they can
		}
		if eff.Memory > 0 {
			res.MemorySwap = eff.Memory // no swap beyond memory.max
		}
		m, err := fs2.NewManager(cg, v2dir)
		if err != nil {
			return nil, err
		}
		lm.mgr, lm.v2, lm.dirs[""] = m, true, v2dir
	} else {
		paths := map[string]string{}
		for _, c := range []string{"memory", "pids", "cpu"} {
			mnt, err := cgroups.FindCgroupMountpoint("", c)
			if err != nil {
				continue // that controller is not mounted: its limit falls to the rlimit
			}
			paths[c] = filepath.Join(mnt, "moat", id)
		}
		if _, ok := paths["memory"]; ok && eff.Memory > 0 {
			if _, err := os.Stat(filepath.Join(filepath.Dir(paths["memory"]), "..", "memory.memsw.limit_in_bytes")); err == nil {
				res.MemorySwap = eff.Memory
			}
		}
		if len(paths) == 0 {
			return nil, nil
		}
		for _, p := range paths {
			sweepLimitCgroups(filepath.Dir(p))
		}
		m, err := fs.NewManager(cg, paths)
		if err != nil {
			return nil, err
		}
		lm.mgr, lm.dirs = m, paths
	}
	if err := lm.mgr.Apply(-1); err != nil {
		if cgroupsRefused(err) {
			// A container that mounts the cgroups read-only, or denies
			// them: the rlimits hold what they can, as for an
			// unprivileged user (moat policy and moat doctor say so; a
			// CPU rate is refused unless best effort).
			return nil, nil
		}
		return nil, fmt.Errorf("create the run's cgroups: %w", err)
	}
	if err := lm.mgr.Set(res); err != nil {
		lm.mgr.Destroy()
		return nil, fmt.Errorf("set the run's limits: %w", err)
	}
	return lm, nil
}

// cgroupsRefused: the cgroup filesystem is there but this process may not
// make cgroups in it.
func cgroupsRefused(err error) bool {
	return errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// cgroupWritable reports whether a cgroup could be made in dir.
func cgroupWritable(dir string) bool {
	return unix.Access(dir, unix.W_OK) == nil && !readOnlyMount(dir)
}

// readOnlyMount reports whether the filesystem holding dir is mounted
// read-only.
func readOnlyMount(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Flags&unix.ST_RDONLY != 0
}

// sweepLimitCgroups removes the v1 cgroups of runs that ended without
// removing theirs (moat killed): rmdir only removes a cgroup with no
// process in it, and one younger than a minute may be a run's that is
// still starting.
func sweepLimitCgroups(parent string) {
	es, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range es {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "run-") {
			continue
		}
		if fi, err := e.Info(); err == nil && (time.Since(fi.ModTime()) > time.Minute || !creatorAlive(e.Name())) {
			_ = unix.Rmdir(filepath.Join(parent, e.Name()))
		}
	}
}

// creatorAlive reports whether the moat process whose pid a run's cgroup
// is named after ("run-PID-...") still runs: a dead one's cgroup is stale
// however young it is.
func creatorAlive(name string) bool {
	f := strings.SplitN(name, "-", 3)
	if len(f) < 3 {
		return true
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		return true
	}
	return unix.Kill(pid, 0) != unix.ESRCH
}

// sweepAllLimitCgroups is sweepLimitCgroups in each v1 hierarchy moat
// uses (moatd's start).
func sweepAllLimitCgroups() {
	if cgroups.IsCgroup2UnifiedMode() {
		return
	}
	for _, c := range []string{"memory", "pids", "cpu"} {
		if mnt, err := cgroups.FindCgroupMountpoint("", c); err == nil {
			sweepLimitCgroups(filepath.Join(mnt, "moat"))
		}
	}
}

// holds reports whether the cgroup holds a controller's limit.
func (lm *limiter) holds(controller string) bool {
	if lm == nil {
		return false
	}
	if lm.v2 {
		return true
	}
	_, ok := lm.dirs[controller]
	return ok
}

// add moves pid into the v1 cgroups (on v2 stage 2 starts inside).
// taskFiles opens the `tasks` file of each v1 limit cgroup for writing
// (none on cgroup v2, or without limits): stage 2 writes "0" to each to
// move itself (nsinit.c, join_cgroups), which does not wait for an RCU
// grace period as a migration by pid does.
func (lm *limiter) taskFiles() ([]*os.File, error) {
	if lm == nil || lm.v2 {
		return nil, nil
	}
	cs := slices.Sorted(maps.Keys(lm.dirs))
	if len(cs) > nsinit.MaxJoins {
		return nil, fmt.Errorf("the run has %d limit cgroups, more than stage 2 takes", len(cs))
	}
	var out []*os.File
	for _, c := range cs {
		f, err := os.OpenFile(filepath.Join(lm.dirs[c], "tasks"), os.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, fmt.Errorf("move the sandbox into the %s cgroup: %w", c, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func (lm *limiter) add(pid int) error {
	if lm == nil || lm.v2 {
		return nil
	}
	for c, d := range lm.dirs {
		if err := cgroups.WriteCgroupProc(d, pid); err != nil {
			return fmt.Errorf("move the sandbox into the %s cgroup: %w", c, err)
		}
	}
	return nil
}

// counters are the cgroups' refusal counts: OOM kills, forks past
// pids.max, CPU throttling.
type counters struct{ oom, pids, throttled int64 }

func (lm *limiter) counters() counters {
	if lm == nil {
		return counters{}
	}
	lm.openOnce.Do(lm.openCounters)
	var buf [1024]byte
	var n [3]int64
	for i, fd := range lm.fds {
		if fd >= 0 {
			n[i] = preadKey(fd, buf[:], counterKeys[i])
		}
	}
	return counters{oom: n[0], pids: n[1], throttled: n[2]}
}

// openCounters opens the counter files of the limits that are set.
func (lm *limiter) openCounters() {
	dir := func(c string) string {
		if lm.v2 {
			return lm.dirs[""]
		}
		return lm.dirs[c]
	}
	var files [3]string
	if d := dir("memory"); d != "" && lm.eff.Memory > 0 {
		if lm.v2 {
			files[0] = filepath.Join(d, "memory.events")
		} else {
			files[0] = filepath.Join(d, "memory.oom_control")
		}
	}
	if d := dir("pids"); d != "" && lm.eff.Pids > 0 {
		files[1] = filepath.Join(d, "pids.events")
	}
	if d := dir("cpu"); d != "" && lm.eff.CPU > 0 {
		files[2] = filepath.Join(d, "cpu.stat")
	}
	for i, f := range files {
		lm.fds[i] = -1
		if f == "" {
			continue
		}
		if fd, err := unix.Open(f, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			lm.fds[i] = fd
		}
	}
}

// violations says what the cgroups refused since before.
func (lm *limiter) violations(before counters) []policy.Violation {
	if lm == nil {
		return nil
	}
	now := lm.counters()
	var out []policy.Violation
	if n := now.oom - before.oom; n > 0 {
		out = append(out, policy.Violation{Kind: policy.ResourceViolation, Op: "memory", Target: humanBytes(lm.eff.Memory),
			Rule: fmt.Sprintf("limit memory %s reached: %d process(es) killed (moat.limits.memory)", humanBytes(lm.eff.Memory), n)})
	}
	if n := now.pids - before.pids; n > 0 {
		out = append(out, policy.Violation{Kind: policy.ResourceViolation, Op: "pids", Target: strconv.FormatInt(lm.eff.Pids, 10),
			Rule: fmt.Sprintf("limit pids %d reached: %d fork(s) refused (moat.limits.pids)", lm.eff.Pids, n)})
	}
	if n := now.throttled - before.throttled; n > 0 {
		out = append(out, policy.Violation{Kind: policy.ResourceViolation, Op: "cpu", Target: cpus(lm.eff.CPU),
			Rule: fmt.Sprintf("limit cpu %s reached: throttled %d time(s) (moat.limits.cpu)", cpus(lm.eff.CPU), n)})
	}
	return out
}

// exitViolation reports a file-size or CPU-time rlimit that ended the
// command: death by SIGXFSZ or SIGXCPU, or by SIGKILL once the tree used
// the CPU time (a program that ignores SIGXCPU, as Go's do, is killed at
// the hard limit a second later). A shell reports its child's death as
// exit status 128+N, which counts too. used is the tree's CPU time, if
// known.
func exitViolation(e *enforce.Exit, eff policy.Limits, used time.Duration) []policy.Violation {
	if e == nil {
		return nil
	}
	sig := e.Signal
	if sig == 0 && e.Code > 128 && e.Code < 128+65 {
		sig = unix.Signal(e.Code - 128)
	}
	if sig == unix.SIGKILL && eff.CPUTime > 0 && used >= eff.CPUTime {
		sig = unix.SIGXCPU
	}
	switch {
	case sig == unix.SIGXFSZ && eff.FileSize > 0:
		return []policy.Violation{{Kind: policy.ResourceViolation, Op: "fileSize", Target: humanBytes(eff.FileSize),
			Rule: fmt.Sprintf("limit fileSize %s reached: the writer was killed (SIGXFSZ) (moat.limits.fileSize)", humanBytes(eff.FileSize))}}
	case sig == unix.SIGXCPU && eff.CPUTime > 0:
		return []policy.Violation{{Kind: policy.ResourceViolation, Op: "cpuTime", Target: eff.CPUTime.String(),
			Rule: fmt.Sprintf("limit cpuTime %v reached: the process was killed (moat.limits.cpuTime)", eff.CPUTime)}}
	}
	return nil
}

func (lm *limiter) destroy() {
	if lm == nil {
		return
	}
	lm.openOnce.Do(func() { lm.fds = [3]int{-1, -1, -1} })
	for i, fd := range lm.fds {
		if fd >= 0 {
			unix.Close(fd)
			lm.fds[i] = -1
		}
	}
	if lm.v2 {
		return // the eBPF cgroup's owner removes it
	}
	_ = lm.mgr.Destroy()
}

// preadKey reads "key N" from a flat-keyed cgroup file open on fd, from its
// start; 0 if it is not there.
func preadKey(fd int, buf []byte, key string) int64 {
	n, err := unix.Pread(fd, buf, 0)
	if err != nil || n <= 0 {
		return 0
	}
	rest := buf[:n]
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if k, v, _ := bytes.Cut(line, []byte(" ")); string(k) == key {
			x, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return x
		}
	}
	return 0
}

// rlimits plans the limits that rlimits hold: the file size always, the
// processes and memory where no cgroup holds them, none of the process
// count without a user namespace (RLIMIT_NPROC would count every process
// of this user on the host). It returns what could not be held.
//
// as is moatd's client: no limit the sandbox gets is above the client's
// own (its soft and hard limits when it connected), whether planned here
// or inherited from the daemon, whose own limits are root's.
func rlimits(p *nsinit.Plan, eff policy.Limits, lm *limiter, nons bool, as *enforce.Identity) []enforce.Skip {
	var skipped []enforce.Skip
	planned := map[int][2]uint64{}
	if as != nil && as.Rlimits != nil {
		defer func() {
			for r, c := range as.Rlimits {
				l, ok := planned[r]
				if !ok {
					var own unix.Rlimit
					if unix.Getrlimit(r, &own) != nil {
						continue
					}
					l = [2]uint64{own.Cur, own.Max}
				}
				if c[0] < l[0] || c[1] < l[1] {
					p.Rlimit(r, min(l[0], c[0]), min(l[1], c[1]))
				}
			}
		}()
	}
	set := func(r int, soft, hard uint64) {
		planned[r] = [2]uint64{soft, hard}
		p.Rlimit(r, soft, hard)
	}
	for _, r := range halvedRlimits {
		var rl unix.Rlimit
		if unix.Getrlimit(r, &rl) == nil {
			if half, ok := halfRlimit(rl); ok {
				set(r, half, half)
			}
		}
	}
	if eff.FileSize > 0 {
		set(unix.RLIMIT_FSIZE, uint64(eff.FileSize), uint64(eff.FileSize))
	}
	if eff.CPUTime > 0 {
		secs := uint64((eff.CPUTime + time.Second - 1) / time.Second)
		set(unix.RLIMIT_CPU, secs, secs+1)
	}
	if eff.Memory > 0 && !lm.holds("memory") {
		set(unix.RLIMIT_DATA, uint64(eff.Memory), uint64(eff.Memory))
		// The main stack is not data either: with its soft limit raised
		// to an unlimited hard one it grew to 512 MiB under 64 (found by
		// an attack pass). It gets no more than the limit.
		var st unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_STACK, &st) == nil {
			lim := uint64(eff.Memory)
			set(unix.RLIMIT_STACK, min(st.Cur, lim), min(st.Max, lim))
		}
		if nons {
			skipped = append(skipped, enforce.Skip{Protection: enforce.ProtectionLimitMemory, Reason: "the memory limit beyond each process's own (no mount namespace: the host's /tmp and /dev/shm are not counted; System V IPC is refused in this tier)"})
		}
	}
	if eff.Pids > 0 && !lm.holds("pids") {
		if nons {
			// As root: the kernel exempts root from RLIMIT_NPROC, and only
			// a cgroup could hold it.
			reason := "the process limit (no writable cgroup, and the kernel exempts root from RLIMIT_NPROC): a command that uses up the machine's processes can stop moat before its git audit (the next moat run audits what it left)"
			if os.Geteuid() != 0 {
				n := nonsProcessLimit(eff.Pids)
				set(unix.RLIMIT_NPROC, n.limit, n.limit)
				reason = fmt.Sprintf("the process limit exactly (no user namespace, no writable cgroup): RLIMIT_NPROC counts every process of this user on the host; the command may start %d more than this user had at its start, keeping %d for moat and the host", n.limit-n.count, nonsReserve)
			}
			skipped = append(skipped, enforce.Skip{Protection: enforce.ProtectionLimitPids, Reason: reason})
		} else {
			n := uint64(eff.Pids)
			if half, ok := userProcessHalf(); ok {
				n = min(n, half)
			}
			set(unix.RLIMIT_NPROC, n, n)
		}
	} else if half, ok := userProcessHalf(); ok && !nons {
		set(unix.RLIMIT_NPROC, half, half)
	}
	return skipped
}

// halvedRlimits bound counts the kernel keeps per user, not per process,
// and charges to the user in every user namespace up to the host's (and,
// without one, directly): RLIMIT_SIGPENDING counts the queued signals and
// the POSIX timers (each holds a signal ready), RLIMIT_MEMLOCK the System V
// shared memory locked with SHM_LOCK. The sandbox's count is held by the
// command's own limit, and that was the user's whole limit: a command
// that made POSIX timers until refused took all 96,364 of its user's
// (root's, as root), and every timer_create and sigqueue of the user's
// own programs outside, root's daemons' as root, failed with EAGAIN while
// it ran; one that locked segments until refused left the user's own
// SHM_LOCK ENOMEM (found by attack pass 85). The command gets half, as it
// does of the inotify and fanotify counts (ucountCaps); several sandboxes
// of one user together are still bounded only by the user's limit.
var halvedRlimits = []int{unix.RLIMIT_SIGPENDING, unix.RLIMIT_MEMLOCK}

// halfRlimit is the soft and hard limit a sandbox gets of rl: half of the
// soft limit (what the user's programs are held to), never above the
// hard one. An unlimited count leaves the user nothing to keep.
func halfRlimit(rl unix.Rlimit) (uint64, bool) {
	if rl.Cur == unix.RLIM_INFINITY {
		return 0, false
	}
	return min(rl.Cur/2, rl.Max), true
}

// userProcessHalf is the RLIMIT_NPROC a sandbox with a user namespace
// gets at most: half of moat's own soft limit, the user's. The kernel
// counts a user's processes and threads in every user namespace up to the
// host's, and checks the host's count against the limit the user had when
// the sandbox's namespace was made: the command's own limit (the policy's,
// 4096 by default, or a cgroup's pids.max) bounds the sandbox alone, so
// where the user's limit was no higher (RHEL's limits.d sets 4096 for
// every user) a command that forked until refused took every process the
// user had, and the user's shell could not fork while it ran (attack pass
// 85, under a limit of 300). Root, whom the kernel exempts from the
// limit, and the no-namespace tier (nonsProcessLimit) are not held here.
func userProcessHalf() (uint64, bool) {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &rl) != nil {
		return 0, false
	}
	return halfRlimit(rl)
}

// nonsReserve is how many processes and threads a command of the
// no-namespace tier leaves below the limits it shares with moat.
const nonsReserve = 128

// nonsLimit is the RLIMIT_NPROC of a command in the no-namespace tier:
// count, the tasks of this user now, and limit.
type nonsLimit struct{ count, limit uint64 }

// nonsProcessLimit bounds the processes of a rootless command without a
// user namespace. Nothing bounded them, and the command shares with moat
// its user's RLIMIT_NPROC, the cgroup's pids.max (a container's) and the
// kernel's pid_max: a command that planted a core.fsmonitor and then
// started threads until the kernel refused had moat's next thread refused
// (pthread_create: EAGAIN), and moat died before its git audit; the
// user's next git status ran the program (found by attack pass 65). So
// RLIMIT_NPROC, which counts every task of this user, is set to the count
// now plus the policy's limit, and never closer than nonsReserve to any of
// those limits as they stand now. moat's own RLIMIT_NPROC stays as it
// was, so the reserve below it holds whatever the count was; the others
// are shared with every user, and the reserve is measured once.
func nonsProcessLimit(pids int64) nonsLimit {
	count := userTasks(os.Getuid())
	room := uint64(pids)
	shrink := func(left uint64) {
		if left < nonsReserve {
			room = 0
		} else {
			room = min(room, left-nonsReserve)
		}
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &rl) == nil && rl.Cur != unix.RLIM_INFINITY {
		shrink(sub(rl.Cur, count))
	}
	if total, ok := systemTasks(); ok {
		for _, f := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
			if max, ok := readUint(f); ok {
				shrink(sub(max, total))
			}
		}
	}
	if left, ok := cgroupPidsRoom(); ok {
		shrink(left)
	}
	lim := count + room
	if rl.Max != unix.RLIM_INFINITY {
		lim = min(lim, rl.Max)
	}
	return nonsLimit{count: min(count, lim), limit: lim}
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

func readUint(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// userTasks counts the tasks (threads) whose real uid is uid, in this pid
// namespace: the count RLIMIT_NPROC is checked against (a task the scan
// does not see makes the limit tighter, not looser).
func userTasks(uid int) uint64 {
	es, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var n uint64
	for _, e := range es {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var real, threads int64 = -1, 0
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					real, _ = strconv.ParseInt(f[0], 10, 64)
				}
			} else if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
		if real == int64(uid) && threads > 0 {
			n += uint64(threads)
		}
	}
	return n
}

// systemTasks is the number of tasks on the machine (the fourth field of
// /proc/loadavg: running/total).
func systemTasks() (uint64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0, false
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(total, 10, 64)
	return n, err == nil
}

// cgroupPidsRoom is how many more tasks this process's pids cgroup and
// its ancestors admit (pids.max - pids.current, the least of them), if
// any of them has a limit moat can read.
func cgroupPidsRoom() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	var dir string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "" && cgroups.IsCgroup2UnifiedMode():
			dir = filepath.Join("/sys/fs/cgroup", parts[2])
		case slices.Contains(strings.Split(parts[1], ","), "pids"):
			dir = filepath.Join("/sys/fs/cgroup/pids", parts[2])
		}
	}
	if dir == "" {
		return 0, false
	}
	room, found := uint64(0), false
	for d := dir; strings.HasPrefix(d, "/sys/fs/cgroup"); d = filepath.Dir(d) {
		max, okMax := readUint(filepath.Join(d, "pids.max")) // "max" does not parse: no limit
		cur, okCur := readUint(filepath.Join(d, "pids.current"))
		if okMax && okCur {
			left := sub(max, cur)
			if !found || left < room {
				room, found = left, true
			}
		}
		if d == "/sys/fs/cgroup" || d == "/" {
			break
		}
	}
	return room, found
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func cpus(milli int64) string { return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64) + " CPUs" }
