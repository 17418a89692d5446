// Package cgroup creates, finds and removes the per-run cgroup v2
// directories that moat puts a sandbox into when it runs as root.
//
// # What it owns
//
// One parent directory in the cgroup2 hierarchy (by default
// <mount>/moat, where <mount> is /sys/fs/cgroup on a pure v2 host and
// /sys/fs/cgroup/unified on a hybrid one) and one child per run under it.
// A [Group] holds an open directory fd for that child, which is what
// [syscall.SysProcAttr] needs with UseCgroupFD to start the sandbox inside
// the cgroup atomically (clone3 with CLONE_INTO_CGROUP): the command never
// runs a single instruction outside it, so filters attached to the cgroup
// beforehand (package bpf) apply from its first system call.
//
// # Ownership and stale runs
//
// A Group holds an exclusive flock(2) on its directory for as long as it is
// open. The lock dies with the process that holds it, so
// [Manager.CleanStale] can tell the cgroups of live runs (locked) from
// those a crashed or killed moat left behind (unlocked): it kills what is
// still running in the latter and removes them. [Manager.Create] re-checks
// after locking that the directory it locked is still the one at the path,
// so a concurrent CleanStale cannot remove a cgroup between its mkdir and
// its lock.
//
// # Removal
//
// [Group.Remove] kills every process in the subtree (cgroup.kill, Linux
// 5.14; before that, freeze and SIGKILL each process until none is left),
// then removes the directories bottom-up, retrying while the kernel still
// reports them busy (killed tasks take a moment to leave).
//
// # Imports
//
// The standard library and golang.org/x/sys/unix only. It knows nothing of
// policies, eBPF or the launcher: linux/ calls it, and it never imports
// linux/, netproxy/ or runtime/.
//
// Limits (memory.max, pids.max) are not written here; on a pure v2 host
// they need the controllers enabled in the parent's cgroup.subtree_control,
// and on this project's hybrid test machine they live in the v1 hierarchies.
package cgroup
