//go:build linux

package linux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/bpf/cgroup"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Delegated cgroups. An unprivileged user whose own cgroup v2 was
// delegated to it (systemd's Delegate=yes, as for a user service or
// `systemd-run --user --scope -p Delegate=yes`: the directory and its
// cgroup.procs, cgroup.subtree_control and cgroup.threads belong to the
// user) gets what root gets: a cgroup per run holding memory.max (and
// memory.swap.max), pids.max and cpu.max for the whole process tree, with
// OOM kills, refused forks and throttling reported. In the delegated
// cgroup D:
//
//	D/moat-leaf   the processes that were in D (moat, the shell that
//	              started it): cgroup v2 gives controllers to the children
//	              of a cgroup only when it holds no process itself
//	D/moat/<pid>-<random>   one per run (package bpf/cgroup: locked while
//	              its run lives, swept once its moat is gone)
//
// Everything else (a hybrid host's cgroup2 has no controllers, a login
// session's scope is root's) leaves the limits to rlimits, as before.

// delegatedLeaf is the child of the delegated cgroup that takes its
// processes.
const delegatedLeaf = "moat-leaf"

// delegatedSubtree returns the cgroup delegated to this user, if any, and
// the controllers it offers (cgroup.controllers): nothing as root, on a
// host without a unified hierarchy, or where this user may not write its
// own cgroup.
func delegatedSubtree() (dir string, controllers []string) {
	if os.Geteuid() == 0 || !cgroups.IsCgroup2UnifiedMode() {
		return "", nil
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", nil
	}
	own := ""
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			own = p
		}
	}
	if own == "" || !strings.HasPrefix(own, "/") || strings.Contains(own, "/../") {
		return "", nil
	}
	d := filepath.Join("/sys/fs/cgroup", own)
	if filepath.Base(d) == delegatedLeaf {
		d = filepath.Dir(d) // an earlier moat made this process's cgroup a leaf of D
	}
	for _, p := range []string{d, filepath.Join(d, "cgroup.procs"), filepath.Join(d, "cgroup.subtree_control")} {
		if unix.Access(p, unix.W_OK) != nil {
			return "", nil
		}
	}
	if readOnlyMount(d) {
		return "", nil
	}
	if t, err := os.ReadFile(filepath.Join(d, "cgroup.type")); err != nil || strings.TrimSpace(string(t)) != "domain" {
		return "", nil // a threaded subtree takes no memory or pids limit
	}
	c, err := os.ReadFile(filepath.Join(d, "cgroup.controllers"))
	if err != nil {
		return "", nil
	}
	return d, strings.Fields(string(c))
}

// limitControllers are the cgroup v2 controllers the limits need.
func limitControllers(eff policy.Limits) []string {
	var need []string
	if eff.Memory > 0 {
		need = append(need, "memory")
	}
	if eff.Pids > 0 {
		need = append(need, "pids")
	}
	if eff.CPU > 0 {
		need = append(need, "cpu")
	}
	return need
}

// delegatedFor reports the delegated cgroup that can hold every limit of
// eff ("" if there is none, or it lacks a controller they need).
func delegatedFor(eff policy.Limits) string {
	need := limitControllers(eff)
	if len(need) == 0 {
		return ""
	}
	d, have := delegatedSubtree()
	if d == "" {
		return ""
	}
	for _, c := range need {
		if !contains(have, c) {
			return ""
		}
	}
	return d
}

// delegatedGroup makes the run's cgroup in the delegated cgroup d, which
// it first prepares (under a lock on d: moat serve and moat run may do it
// at once): its processes moved into d/moat-leaf, the controllers enabled
// for its children and for d/moat's.
func delegatedGroup(d string, need []string) (*cgroup.Group, error) {
	dirFD, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the delegated cgroup %s: %w", d, err)
	}
	defer unix.Close(dirFD)
	if err := unix.Flock(dirFD, unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock the delegated cgroup %s: %w", d, err)
	}
	enable := "+" + strings.Join(need, " +")
	if !subtreeHas(d, need) {
		if err := evacuate(d); err != nil {
			return nil, err
		}
		if err := writeCgroupFile(filepath.Join(d, "cgroup.subtree_control"), enable); err != nil {
			return nil, fmt.Errorf("enable %s for the children of the delegated cgroup %s: %w", strings.Join(need, ", "), d, err)
		}
	}
	parent := filepath.Join(d, "moat")
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("make %s: %w", parent, err)
	}
	if !subtreeHas(parent, need) {
		if err := writeCgroupFile(filepath.Join(parent, "cgroup.subtree_control"), enable); err != nil {
			return nil, fmt.Errorf("enable %s in %s: %w", strings.Join(need, ", "), parent, err)
		}
	}
	m := &cgroup.Manager{Dir: parent}
	_, _ = m.CleanStale()
	return m.Create(strconv.Itoa(os.Getpid()) + "-")
}

// subtreeHas reports whether dir's cgroup.subtree_control enables every
// controller of need.
func subtreeHas(dir string, need []string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return false
	}
	have := strings.Fields(string(b))
	for _, c := range need {
		if !contains(have, c) {
			return false
		}
	}
	return true
}

// evacuate moves every process of d into d/moat-leaf, until none is left
// (one may fork while the list is read).
func evacuate(d string) error {
	leaf := filepath.Join(d, delegatedLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make %s: %w", leaf, err)
	}
	for attempt := 0; attempt < 50; attempt++ {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			return fmt.Errorf("read %s/cgroup.procs: %w", d, err)
		}
		pids := strings.Fields(string(b))
		if len(pids) == 0 {
			return nil
		}
		for _, p := range pids {
			if err := writeCgroupFile(filepath.Join(leaf, "cgroup.procs"), p); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("move process %s of the delegated cgroup %s into %s: %w", p, d, leaf, err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("the delegated cgroup %s keeps getting new processes: it cannot give its children controllers", d)
}

// writeCgroupFile writes one value to a cgroup file (no O_CREAT, no
// truncation: cgroupfs takes one write per value).
func writeCgroupFile(path, value string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(value))
	return err
}
