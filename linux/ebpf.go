//go:build linux

package linux

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/bpf"
	"github.com/moat-sandbox/moat/bpf/cgroup"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// kernelFilter is the eBPF layer when moat runs as root: the sandbox starts
// inside a cgroup of its own (CLONE_INTO_CGROUP), whose connect, sendmsg,
// bind and socket hooks let it reach only moat's proxy listeners and its own
// loopback, and report every refused attempt. It is a second layer behind
// the network namespace, and the one that reports attempts the namespace
// only makes fail (a direct connect to 203.0.113.7:443, DNS to 8.8.8.8).
type kernelFilter struct {
	group   *cgroup.Group
	shared  *sharedPrograms // the enforcer's loaded set (moatd), or nil: a set of the run's own
	progs   *bpf.Programs   // shared's set, acquired
	filter  *bpf.Filter
	report  func(policy.Violation)
	wg      sync.WaitGroup
	handled atomic.Uint64
	mu      sync.Mutex
	dropped uint64 // refusals already said to be unreported (guarded by mu)
}

// sharedPrograms is the set of eBPF programs a long-lived enforcer
// (NewShared: moatd's, kept for its life) loads at its first root launch and
// attaches to each run's and session's cgroup after that: the kernel
// verifies the programs once (2.8-3.4 ms a run for a set of the run's own,
// 0.47-0.49 ms to attach a loaded one and detach it again: go test -bench
// Attach ./bpf/). An enforcer of one run (New: a root moat run) loads a set
// for its one run: it would pay the load either way, and a set's maps sized
// for many runs cost more to make.
//
// The enforcer owns it: Enforcer.Close releases it, once the last filter
// attached from it is closed (a run still going keeps its reports).
type sharedPrograms struct {
	mu     sync.Mutex
	p      *bpf.Programs
	users  int  // kernel filters attached from p, not yet closed
	closed bool // the enforcer was closed: p goes with its last user
}

// errEnforcerClosed is a launch asked of a closed shared enforcer.
var errEnforcerClosed = errors.New("the enforcer's shared eBPF programs were released (Enforcer.Close)")

// acquire returns the set, loading it first; release must follow.
func (s *sharedPrograms) acquire() (*bpf.Programs, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errEnforcerClosed
	}
	if s.p == nil {
		// Room for 4096 runs and sessions at once (moatd allows 64
		// sessions and 16 runs a user by default), a 1 MiB ring buffer
		// for their refusals (about 18,000 waiting to be read).
		p, err := bpf.Load(bpf.LoadOptions{Filters: 4096, Destinations: 16384, EventBuffer: 1 << 20})
		if err != nil {
			return nil, err
		}
		s.p = p
	}
	s.users++
	return s.p, nil
}

// release ends one acquire; the set goes with the last user once the
// enforcer is closed.
func (s *sharedPrograms) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	if s.closed && s.users == 0 && s.p != nil {
		_ = s.p.Close()
		s.p = nil
	}
}

// close releases the set now, or with its last user. Idempotent.
func (s *sharedPrograms) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.users > 0 || s.p == nil {
		return nil
	}
	err := s.p.Close()
	s.p = nil
	return err
}

// kernelFilterSupported tells whether this run gets the eBPF layer, and
// why not. Only root can load the programs.
func kernelFilterSupported(cacheDir string) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (moat runs unprivileged: the network namespace is the layer)")
	}
	// The programs attach to the run's own cgroup: none can be made where
	// the cgroup2 hierarchy is read-only (a container's, as Docker mounts
	// it), and moat then runs as it does without eBPF (every run was
	// refused instead; found by the cgroup v2 machine of make test-vm).
	if dir := cgroup2Dir(); dir == "" {
		return errors.New("no cgroup2 hierarchy is mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified")
	} else if !cgroupWritable(dir) {
		return fmt.Errorf("the cgroup2 hierarchy %s is read-only here (a container's cgroupfs): no cgroup for the run can be made", dir)
	}
	// The probe loads a few test programs (about a millisecond): its
	// success is remembered until the next boot.
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	mark := ""
	if len(boot) > 8 && cacheDir != "" {
		mark = filepath.Join(cacheDir, "bpf-supported-"+strings.TrimSpace(string(boot)))
		if _, err := os.Stat(mark); err == nil {
			return nil
		}
	}
	if err := bpf.Supported(); err != nil {
		return err
	}
	if mark != "" && os.MkdirAll(cacheDir, 0o700) == nil {
		_ = os.WriteFile(mark, nil, 0o600)
	}
	return nil
}

// cgroup2Dir is where the cgroup2 hierarchy is mounted, of the two places
// hosts mount it (two statfs calls; the run's cgroup itself is made where
// /proc/self/mountinfo says, package bpf/cgroup).
func cgroup2Dir() string {
	for _, d := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if unix.Statfs(d, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return d
		}
	}
	return ""
}

// newKernelFilter creates the run's cgroup (and removes those of dead runs).
// With shared, the run's filter comes from the enforcer's loaded set.
func newKernelFilter(shared *sharedPrograms) (*kernelFilter, error) {
	k := &kernelFilter{}
	if shared != nil {
		p, err := shared.acquire()
		if err != nil {
			return nil, fmt.Errorf("eBPF filter: %w", err)
		}
		k.shared, k.progs = shared, p
	}
	m, err := cgroup.New("moat")
	if err == nil {
		_, _ = m.CleanStale()
		k.group, err = m.Create(strconv.Itoa(os.Getpid()) + "-")
	}
	if err != nil {
		if k.shared != nil {
			k.shared.release()
		}
		return nil, err
	}
	return k, nil
}

// attach loads the programs onto the (still empty) cgroup. With the
// sandbox's own network namespace, its loopback is its own (allowed, and
// binding is free: Landlock rules it); sharing the host's network, only the
// listed destinations are reachable and binding follows allowLocalBinding.
func (k *kernelFilter) attach(allow []netip.AddrPort, shared, localBinding bool, report func(policy.Violation)) error {
	opts := bpf.Options{AllowLoopback: true, Bind: bpf.BindAny, Listen: allow}
	if shared {
		opts = bpf.Options{Bind: bpf.BindDeny}
		if localBinding {
			opts.Bind = bpf.BindLoopback
		}
	}
	var f *bpf.Filter
	var err error
	if k.progs != nil {
		f, err = k.progs.Attach(k.group.Path(), allow, opts)
	} else {
		f, err = bpf.Attach(k.group.Path(), allow, opts)
	}
	if err != nil {
		return fmt.Errorf("eBPF filter: %w", err)
	}
	k.mu.Lock()
	k.filter, k.report = f, report
	k.mu.Unlock()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		for e := range f.Events() {
			report(policy.Violation{Kind: policy.NetworkViolation, Op: e.Op + "-" + e.Proto, Target: e.Addr.String(),
				Rule: "eBPF: only moat's proxy is reachable", Pid: e.Pid})
			k.handled.Add(1)
		}
	}()
	return nil
}

// flush reports every refusal the kernel recorded (call it once the
// sandbox is gone, before reading the violations).
func (k *kernelFilter) flush() {
	if k.filter == nil {
		return
	}
	n := k.filter.Drain()
	deadline := time.Now().Add(500 * time.Millisecond)
	for k.handled.Load() < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	// Refusals the kernel could not queue (the ring buffer was full) were
	// refused all the same: the report says how many it lacks.
	k.mu.Lock()
	defer k.mu.Unlock()
	if d := k.filter.Dropped(); d > k.dropped {
		k.report(policy.Violation{Kind: policy.NetworkViolation, Op: "unreported", Target: strconv.FormatUint(d-k.dropped, 10) + " more refused attempts",
			Rule: "eBPF: refused, but not reported one by one (too many at once)"})
		k.dropped = d
	}
}

// close stops reporting and removes the cgroup (killing what is left in it).
func (k *kernelFilter) close() {
	if k.filter != nil {
		k.filter.Close()
	}
	k.wg.Wait()
	if k.shared != nil {
		k.shared.release()
	}
	if err := k.group.Remove(); err != nil {
		k.group.Close() // the next start's CleanStale removes it
	}
}

func proxyListenerAddrs() []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range listenAddrs {
		out = append(out, netip.AddrPortFrom(netip.MustParseAddr(a.addr), uint16(a.port)))
	}
	return out
}
