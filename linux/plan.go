//go:build linux

package linux

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/bpf/cgroup"
	"github.com/moat-sandbox/moat/internal/planted"
	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/linux/journal"
	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/runtime/gitguard"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// fsPlan is the filesystem part of a launch: the resolved view, the mount
// operations, the Landlock rules, and the placeholders to create first.
type fsPlan struct {
	view *view
	// placeholders are absent protected paths that need a mount point on
	// the host before the sandbox starts.
	placeholders []placeholder
	// landlock lists writable trees (full write rights) and writable files.
	llTrees, llFiles []string
	// notes explain what the plan left out (for moat policy).
	notes []string
	// protected lists the protected paths that are writable otherwise
	// (what the mounts make read-only), for moat policy and the tests.
	protected []string
	// ops are applied after the plan's sources are cloned.
	build func(p *nsinit.Plan)
	// lockdown runs last, after the sysctl writes: it makes the kernel's
	// knobs under /proc read-only and hides what discloses the host.
	lockdown func(p *nsinit.Plan)
	// kernelMounts are the host's kernel filesystems mounted below a
	// writable root (a chroot's proc, a cgroup2 mounted in a build
	// directory): the writable bind carries them read-write, so they are
	// made read-only again.
	kernelMounts []string
}

type placeholder struct {
	path    string
	kind    journal.Kind
	content string
}

// planInput is what the filesystem plan needs besides the policy.
type planInput struct {
	pol      *policy.Policy
	uid, gid int
	// exposeRO are paths that must stay visible (read-only at least) even
	// inside a hidden region: the working directory, the command.
	exposeRO []string
	// cache holds the search's and the globs' caches (dir "" disables
	// them).
	cache cacheIO
	// noMounts: the no-namespace tier. The view and the protections are
	// computed (for Landlock and the report); no mount is planned.
	noMounts bool
	// dirs resolves symlinks for this launch (nil: without memory).
	dirs *resolver
	// mountPoint is called, before the plan is final, for every protected
	// path the plan mounts over inside a writable tree that does not exist
	// (to create ph) or that may be another run's placeholder (to adopt it;
	// ph is then the placeholder to create if it has vanished meanwhile, or
	// nil, and errVanished says there is nothing left to mount over). If
	// nil, placeholders are only listed in fsPlan.placeholders.
	mountPoint func(path string, ph *placeholder) error
	// sentinel, if set, makes the empty read-only file that is mounted
	// over a hidden file (its own inode, so that its opens can be watched
	// and reported) and returns its host path. If nil, /dev/null on a
	// nodev mount hides files (opening them fails) and nothing is watched.
	sentinel func(hidden string) (string, error)
	// xdgConfigHome is $XDG_CONFIG_HOME of the command's environment (the
	// client's under moatd), where the user's git config may live.
	xdgConfigHome string
	// hgrcPath is $HGRCPATH of the command's environment: the user's hg
	// reads the files it names.
	hgrcPath string
	// gitConfigGlobal, gitConfigSystem and gitTemplateDir are
	// $GIT_CONFIG_GLOBAL, $GIT_CONFIG_SYSTEM and $GIT_TEMPLATE_DIR of the
	// command's environment, the user's: files the user's git reads as its
	// configuration, and the directory git clone and git init copy into
	// each new repository (attack pass 47).
	gitConfigGlobal, gitConfigSystem, gitTemplateDir string
	// asClient: the sandbox is a client's (moatd): this process's own
	// environment says nothing of the user's.
	asClient bool
	// clientReach, for a client's sandbox (or root's), reports for each
	// path whether the sandbox can look it up (false: its permissions
	// refuse it).
	clientReach func(paths []string) []bool
	// kernelHides, for the user's own sandbox (rootless), reports for each
	// path whether the kernel keeps it from the sandbox already: another
	// user's file it may not read, or directory it may neither list nor
	// search (kernelHidden). Such a denyRead path needs no mask. nil:
	// every path is masked.
	kernelHides func(paths []string) []bool
	// reach, for root's own sandbox, reports for each path whether the
	// command could look it up (root's user namespace maps root alone, so
	// capabilities do not open another user's directories to it); nil:
	// every path the plan finds is reachable.
	reach func(paths []string) []bool
	// look, for a client's sandbox (moatd), runs fn on a thread with the
	// client's credentials: the survey, and each look the mount step takes
	// at a path in a writable tree, so that the kernel judges every lookup
	// of the plan as it would the client's. Root planned a client's tree
	// by its paths; a client's directory swapped for a symbolic link to
	// another user's 0700 directory after the daemon's check had root look
	// there, and the sandbox's mounts (or a refusal naming the first
	// protected name it could not reserve) told which of .git, .vscode,
	// .bashrc ... exist in it (attack pass 50). nil: this thread.
	look func(fn func())
	// tmpfsSize, if not 0, bounds each writable tmpfs moat mounts (/tmp,
	// /dev/shm): a rootless memory limit (RLIMIT_DATA) does not count the
	// pages of a tmpfs, which a cgroup would (found by an attack pass: 1.8
	// GiB in /tmp under a 64 MiB limit).
	tmpfsSize int64
}

// tmpfsInodes bounds the files of a tmpfs of size bytes: each inode costs
// the kernel memory of its own (about a kilobyte with its dentry), which
// size= does not count.
func tmpfsInodes(size int64) uint64 {
	if size <= 0 {
		return 0
	}
	return uint64(max(size/1024, 1024))
}

// node is one path the mount plan must consider.
type node struct {
	path  string
	kind  byte // 'd', 'f' or 0 (absent)
	pin   bool // make it a mount point (rename/rmdir then fail with EBUSY)
	prot  bool // reserved even where it does not exist: placeholder if absent
	synth string
}

// state of the tree at a node, as the mounts so far made it.
type state uint8

const (
	stRO   state = iota // the host, read-only
	stRW                // the host, writable
	stMask              // an empty read-only tmpfs moat mounted (host hidden)
	stTmp               // the private /tmp tmpfs (host hidden, writable)
	stDev               // moat's /dev
	stProc              // the new procfs
)

func (s state) hostHidden() bool { return s != stRO && s != stRW }

// makeFSPlan resolves the policy's filesystem rules and plans the mounts,
// in three steps: expand (rules to canonical paths, the view), protect (what
// must stay read-only inside writable trees, and which missing names are
// reserved), mount (the fewest mounts that give every path its access).
func makeFSPlan(in planInput) (*fsPlan, error) {
	defer gitguard.PinMounts()() // its autofs checks read the mount table once
	var fp *fsPlan
	var nodes []*node
	var err error
	in.lookAs(func() { fp, nodes, err = survey(in) })
	if err != nil {
		return nil, err
	}
	if in.noMounts {
		landlockOnly(fp)
		return fp, nil
	}
	if err := planMounts(in, fp, nodes); err != nil {
		return nil, err
	}
	fp.lockdown = kernelLockdown(in.uid, in.gid)
	return fp, nil
}

// keepWhere returns the rules of rs whose ok is true (in place).
func keepWhere(rs []rule, ok []bool) []rule {
	kept := rs[:0]
	for i, r := range rs {
		if ok[i] {
			kept = append(kept, r)
		}
	}
	return kept
}

// reachOf asks reach about the paths of rs.
func reachOf(reach func(paths []string) []bool, rs []rule) []bool {
	paths := make([]string, len(rs))
	for i, r := range rs {
		paths[i] = r.path
	}
	return reach(paths)
}

// lookAs runs fn as in.look says (the client's credentials), or here.
func (in planInput) lookAs(fn func()) {
	if in.look == nil {
		fn()
		return
	}
	in.look(fn)
}

// survey runs the steps that only look (expand, protect, and the mount
// step's gathering of nodes) with their lstats remembered, forgotten before
// the mount step makes placeholders. No nodes in the no-namespace tier.
func survey(in planInput) (*fsPlan, []*node, error) {
	in.dirs.beginStats()
	defer in.dirs.endStats()
	fp, err := expandRules(in)
	if err != nil {
		return nil, nil, err
	}
	reserved, err := findProtections(in, fp)
	if err != nil {
		return nil, nil, err
	}
	if in.noMounts {
		return fp, nil, nil
	}
	return fp, gatherNodes(in, fp.view, reserved), nil
}

// plantedWriteLinks refuses a writable path, as written, that goes
// through a symlink lying inside another writable tree: a command of an
// earlier run could have planted it (work/out -> /), and the next run
// given --write out (or an allowWrite naming it) made wherever it leads
// writable (found by an attack pass). srt skips such a path; moat refuses
// it, naming where it leads, so that the user names that place itself.
// The walk is internal/planted's, which the macOS enforcer shares.
func plantedWriteLinks(written []policy.PathRule, trees []rule) error {
	inside := func(n string) (string, bool) {
		for _, t := range trees {
			if n != t.path && within(n, t.path) {
				return t.path, true
			}
		}
		return "", false
	}
	for _, r := range written {
		if strings.ContainsAny(r.Path, "*?[") {
			continue
		}
		if l := planted.FindLink(r.Path, r.Source, inside, filepath.EvalSymlinks); l != nil {
			return l
		}
	}
	return nil
}

// kernelFS are the filesystems whose files are the kernel's interfaces,
// not data: writing them moves processes between cgroups (out of the
// run's own, which holds its limits and, as root, its eBPF network
// filter), sets kernel knobs, loads programs or changes firmware state.
var kernelFS = map[int64]string{
	unix.PROC_SUPER_MAGIC: "proc", unix.SYSFS_MAGIC: "sysfs", unix.CGROUP_SUPER_MAGIC: "cgroup",
	unix.CGROUP2_SUPER_MAGIC: "cgroup2", unix.BPF_FS_MAGIC: "bpf", unix.DEBUGFS_MAGIC: "debugfs",
	unix.TRACEFS_MAGIC: "tracefs", unix.SECURITYFS_MAGIC: "securityfs", unix.EFIVARFS_MAGIC: "efivarfs",
	unix.PSTOREFS_MAGIC: "pstore", unix.BINFMTFS_MAGIC: "binfmt_misc", unix.DEVPTS_SUPER_MAGIC: "devpts",
	unix.NSFS_MAGIC: "nsfs", 0x62656570: "configfs", 0x65735543: "fusectl",
	// The host's IPC namespace's message queues (the sandbox has its own),
	// huge pages (counted apart from memory.max), Android's binder.
	0x19800202: "mqueue", unix.HUGETLBFS_MAGIC: "hugetlbfs", 0x6c6f6f70: "binder",
}

// kernelWriteRoots refuses a writable root on a kernel filesystem
// (--write /sys/fs/cgroup/unified let a command as root move itself out of
// its cgroup, and with it out of the eBPF network filter: found by this
// project's review). A writable root is bound with the mounts below it as
// the host has them, so none may lie under /proc or /sys either (on a host
// with the v1 controllers, /sys/fs/cgroup is a tmpfs holding them).
func kernelWriteRoots(roots []rule) error {
	for _, r := range roots {
		for _, k := range []string{"/proc", "/sys"} {
			if within(r.path, k) {
				return fmt.Errorf("%s (%s) is under %s: its files are the kernel's interfaces (cgroups, knobs, devices), and moat makes none of them writable in a sandbox", r.path, r.source, k)
			}
		}
		var st unix.Statfs_t
		if unix.Statfs(r.path, &st) != nil {
			continue // not there: nothing of the kernel's either
		}
		if name, ok := kernelFS[int64(st.Type)]; ok {
			return fmt.Errorf("%s (%s) is on a kernel filesystem (%s): its files are the kernel's interfaces (cgroups, knobs, devices), and moat makes none of them writable in a sandbox", r.path, r.source, name)
		}
	}
	return nil
}

// kernelFSNames are kernelFS by the names /proc/self/mountinfo gives.
var kernelFSNames = map[string]bool{
	"proc": true, "sysfs": true, "cgroup": true, "cgroup2": true, "bpf": true, "debugfs": true,
	"tracefs": true, "securityfs": true, "efivarfs": true, "pstore": true, "binfmt_misc": true,
	"devpts": true, "nsfs": true, "configfs": true, "fusectl": true, "rpc_pipefs": true, "nfsd": true,
	"resctrl": true, "selinuxfs": true, "smackfs": true, "mqueue": true, "hugetlbfs": true, "binder": true,
}

// kernelMountsUnder lists the host's kernel filesystems mounted below a
// writable root, which the writable bind would carry read-write (root
// wrote the host's sysctls through a chroot's proc given as --write, and
// left its cgroup through a cgroup2 mounted in a build directory: found
// by an attack pass). moat's own /proc and /dev replace the host's, so
// what lies under those is left out. Without a mount namespace nothing can
// make them read-only again: such a root is refused.
func kernelMountsUnder(roots []rule, noMounts bool) ([]string, error) {
	if len(roots) == 0 {
		return nil, nil
	}
	table, err := kernelMountTable()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range table {
		if !noMounts && (within(m.path, "/proc") || within(m.path, "/dev")) {
			continue
		}
		for _, r := range roots {
			if m.path == r.path || !within(m.path, r.path) {
				continue
			}
			if noMounts {
				return nil, fmt.Errorf("%s (%s) holds %s, a kernel filesystem (%s): without a mount namespace (the no-namespace tier) nothing keeps it read-only, and moat makes no kernel interface writable in a sandbox; name a directory that holds none", r.path, r.source, m.path, m.fstype)
			}
			out = append(out, m.path)
			break
		}
	}
	return out, nil
}

// kernelMount is one kernel filesystem in this process's mount table.
type kernelMount struct{ path, fstype string }

// mountEntry is one mount of this process's mount table.
type mountEntry struct {
	id, parent   int
	dev          uint64 // the filesystem's device (major:minor)
	path, fstype string
	// root is the directory of the filesystem mounted there ("/" but for
	// bind mounts and btrfs subvolumes): two entries of one device show
	// the same files where their roots overlap.
	root string
}

// mountTable keeps /proc/self/mountinfo across the runs of a long-lived
// process (moat serve, moatd): the file is read again only when poll says
// the mount table changed (POLLPRI), which costs one poll instead of the
// kernel's rendering of every mount (25-50 µs here, more on hosts with
// hundreds of mounts).
var mountTable struct {
	sync.Mutex
	fd     int // open on /proc/self/mountinfo; 0 before the first read
	mounts []mountEntry
}

// kernelMountTable is the kernel filesystems of the mount table.
func kernelMountTable() ([]kernelMount, error) {
	all, err := mountEntries()
	if err != nil {
		return nil, err
	}
	var out []kernelMount
	for _, m := range all {
		if kernelFSNames[m.fstype] {
			out = append(out, kernelMount{path: m.path, fstype: m.fstype})
		}
	}
	return out, nil
}

// mountEntries is every mount of this process's mount table, in its order.
func mountEntries() ([]mountEntry, error) {
	mountTable.Lock()
	defer mountTable.Unlock()
	if mountTable.fd > 0 {
		pfd := []unix.PollFd{{Fd: int32(mountTable.fd), Events: unix.POLLPRI}}
		if n, err := sys.RetryValue(func() (int, error) { return unix.Poll(pfd, 0) }); err == nil && n == 0 {
			return mountTable.mounts, nil
		}
		if _, err := unix.Seek(mountTable.fd, 0, 0); err != nil {
			unix.Close(mountTable.fd)
			mountTable.fd = 0
		}
	}
	if mountTable.fd <= 0 {
		fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("read the mount table: %w", err)
		}
		mountTable.fd = fd
	}
	var b []byte
	buf := make([]byte, 16<<10)
	for {
		n, err := sys.RetryValue(func() (int, error) { return unix.Read(mountTable.fd, buf) })
		if err != nil {
			unix.Close(mountTable.fd)
			mountTable.fd = 0
			return nil, fmt.Errorf("read the mount table: %w", err)
		}
		if n == 0 {
			break
		}
		b = append(b, buf[:n]...)
	}
	var mounts []mountEntry
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		_, post, ok := bytes.Cut(line, []byte(" - "))
		if !ok {
			continue
		}
		fstype, _, _ := bytes.Cut(post, []byte(" "))
		f := bytes.Fields(line)
		if len(f) < 5 {
			continue
		}
		id, err1 := strconv.Atoi(string(f[0]))
		parent, err2 := strconv.Atoi(string(f[1]))
		major, minor, _ := bytes.Cut(f[2], []byte(":"))
		maj, err3 := strconv.ParseUint(string(major), 10, 32)
		mnr, err4 := strconv.ParseUint(string(minor), 10, 32)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue
		}
		mounts = append(mounts, mountEntry{id: id, parent: parent, dev: unix.Mkdev(uint32(maj), uint32(mnr)),
			path: cgroup.UnescapeMountinfo(string(f[4])), fstype: string(fstype),
			root: cgroup.UnescapeMountinfo(string(f[3]))})
	}
	mountTable.mounts = mounts
	return mounts, nil
}

// mountAliases is every other name the mount table gives the paths of
// rules (denyRead's, denyWrite's): the same directory mounted at a second place (a bind mount, a
// btrfs filesystem's top level mounted beside its subvolumes) shows the same
// files under another path. The mask hides a path, not an inode: with
// /data bound at /srv/data too, a denyRead /data/secrets was read as
// /srv/data/secrets; and in the no-namespace tier, where reads are granted
// on every sibling along the way to a hidden path, the grant on /srv/data
// (the inode of /data) let /data/secrets itself be read (attack pass 84).
// Each alias is kept only when it is the very file (device and inode) the
// rule's path is, or one below it, so a mount stacked over the second place
// never has an unrelated path hidden.
func mountAliases(rules []rule) ([]rule, error) {
	all, err := mountEntries()
	if err != nil {
		return nil, err
	}
	var out []rule
	seen := map[string]bool{}
	for _, r := range rules {
		seen[r.path] = true
	}
	// A source is a mount showing files of the rule's path: the one the
	// path lies on (showing rel of its filesystem at the path), and every
	// mount below the path (its whole root, at its mount point).
	type source struct {
		i          int
		rel, shown string
	}
	for _, r := range rules {
		// The mount r.path lies on: the deepest, and of those the last
		// (stacked over the others).
		home := -1
		for i, m := range all {
			if within(r.path, m.path) && (home < 0 || len(m.path) >= len(all[home].path)) {
				home = i
			}
		}
		if home < 0 {
			continue
		}
		hm := all[home]
		srcs := []source{{home, filepath.Join(hm.root, strings.TrimPrefix(r.path, hm.path)), r.path}}
		for i, m := range all {
			if m.path != r.path && within(m.path, r.path) {
				srcs = append(srcs, source{i, m.root, m.path})
			}
		}
		for _, src := range srcs {
			sm := all[src.i]
			for i, m := range all {
				if i == src.i || m.dev != sm.dev {
					continue
				}
				var alias, same string
				switch {
				case within(src.rel, m.root):
					// What src shows, under the other mount.
					alias, same = filepath.Join(m.path, strings.TrimPrefix(src.rel, m.root)), src.shown
				case within(m.root, src.rel):
					// A directory below it mounted elsewhere.
					alias, same = m.path, filepath.Join(src.shown, strings.TrimPrefix(m.root, src.rel))
				default:
					continue
				}
				if seen[alias] || within(alias, r.path) {
					continue // (one inside the rule's path is covered by it)
				}
				// Looked at only when another mount may show the files
				// (most hosts have none): the plan runs before every
				// command. It must be the very file, not one of a mount
				// stacked over the other place.
				var got, ref unix.Stat_t
				if unix.Lstat(same, &ref) != nil || unix.Lstat(alias, &got) != nil || got.Dev != ref.Dev || got.Ino != ref.Ino {
					continue
				}
				seen[alias] = true
				out = append(out, rule{path: alias, source: r.source + " (the same files mounted at " + m.path + ")"})
			}
		}
	}
	return out, nil
}

// linkAliasesMax bounds the entries linkAliases looks at.
const linkAliasesMax = 4096

// linkAliases is every other hard link of a hidden file (one of rules,
// denyRead's) that lies beside it or in a directory above it: a copy kept
// as a link next to the original (~/npmrc.bak for ~/.npmrc) stayed
// readable, since the mask hides a path, not a file (attack pass 84). Only
// files with more than one link are looked for (the survey's remembered
// lstats say which), so a host with none pays nothing; links elsewhere stay (moat cannot find them), and moat
// says so at the start of the run.
func linkAliases(rs *resolver, rules []rule) []rule {
	type fileID struct{ dev, ino uint64 }
	var linked map[fileID]rule
	var dirs, seen map[string]bool
	for _, r := range rules {
		// The survey looked at every rule's path already: its remembered
		// lstat says which are files with other links (most hosts have
		// none, and pay nothing more).
		if !rs.lstat(r.path).multi {
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(r.path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
			continue
		}
		if linked == nil {
			linked, dirs, seen = map[fileID]rule{}, map[string]bool{}, map[string]bool{}
			for _, r := range rules {
				seen[r.path] = true
			}
		}
		linked[fileID{uint64(st.Dev), uint64(st.Ino)}] = r
		for d := filepath.Dir(r.path); !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	var out []rule
	budget := linkAliasesMax
	for d := range dirs {
		es, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range es {
			if budget--; budget < 0 {
				return out
			}
			p := filepath.Join(d, e.Name())
			if !e.Type().IsRegular() || seen[p] {
				continue
			}
			var st unix.Stat_t
			if unix.Lstat(p, &st) != nil {
				continue
			}
			if r, ok := linked[fileID{uint64(st.Dev), uint64(st.Ino)}]; ok {
				seen[p] = true
				out = append(out, rule{path: p, source: r.source + " (a hard link of " + r.path + ")"})
			}
		}
	}
	return out
}

// autofsSource is the source of the rules that hide the host's autofs
// mounts.
const autofsSource = "autofs: a lookup below it asks the host's automounter"

// autofsRules hides every autofs mount of the host that nothing is mounted
// on (an empty read-only directory in the sandbox), and shows again what
// the host has mounted below one. A lookup of a name below an autofs mount
// makes the kernel ask the host's automounter (a root daemon, outside the
// sandbox's namespaces) for that name, whatever mount namespace it came
// from: a sandboxed command had a -hosts map (/net/HOST) resolve a name of
// its choosing, the data in a DNS query, and send RPC to any address
// through the host's network, and a program map run as root with the name
// (found by attack pass 56). What was already mounted below (a share the
// automounter mounted, the user's home on a /home map) was cloned with the
// sandbox's root and stays, with the access the rules give it; a path the
// rules already hide is left alone. A direct mount whose share is mounted
// on it is that share and asks for nothing.
func autofsRules(v *view) (deny, allow []rule, err error) {
	all, err := mountEntries()
	if err != nil {
		return nil, nil, err
	}
	autofs := map[int]string{}
	for _, m := range all {
		if m.fstype == "autofs" {
			autofs[m.id] = m.path
		}
	}
	if len(autofs) == 0 {
		return nil, nil, nil
	}
	covered := map[int]bool{}
	for _, m := range all {
		if p, ok := autofs[m.parent]; ok && p == m.path {
			covered[m.parent] = true
		}
	}
	for _, a := range all {
		if a.fstype != "autofs" || covered[a.id] || within(a.path, "/proc") || within(a.path, "/dev") ||
			(v.privateTmp && within(a.path, "/tmp")) {
			continue
		}
		if ok, _ := v.readable(a.path); !ok {
			continue
		}
		// Not one another mount hides (the path leads elsewhere): lstat
		// makes no request, even of a direct mount.
		var st unix.Stat_t
		if unix.Lstat(a.path, &st) != nil || st.Dev != a.dev {
			continue
		}
		deny = append(deny, rule{path: a.path, source: autofsSource})
		for _, m := range all {
			if m.path == a.path || !within(m.path, a.path) || m.fstype == "autofs" && !covered[m.id] {
				continue // (an autofs below is judged on its own)
			}
			if ok, _ := v.readable(m.path); ok {
				allow = append(allow, rule{path: m.path, source: "mounted below the autofs " + a.path})
			}
		}
	}
	return deny, allow, nil
}

// expandRules is the first step: the policy's rules as canonical paths
// (globs expanded, bounded), whether /tmp is private, what stays exposed.
func expandRules(in planInput) (*fsPlan, error) {
	pol := in.pol
	depth := pol.FS.MandatoryDenySearchDepth
	if depth == 0 {
		depth = policy.DefaultSearchDepth
	}
	budget := &globBudget{entries: DefaultGlobBudget, depth: depth}
	v := &view{}
	var err error
	if v.allowRead, err = in.dirs.expandAll(pol.FS.AllowRead, budget, in.cache); err != nil {
		return nil, err
	}
	restore := budget.forDeny()
	v.denyRead, err = in.dirs.expandAll(pol.FS.DenyRead, budget, in.cache)
	restore()
	if err != nil {
		return nil, err
	}
	if len(v.denyRead) > 0 {
		aliases, err := mountAliases(v.denyRead)
		if err != nil {
			return nil, err
		}
		v.denyRead = append(append(v.denyRead, aliases...), linkAliases(in.dirs, v.denyRead)...)
	}
	if in.clientReach != nil && len(v.denyRead) > 0 {
		// A client's sandbox (moatd, planned as root): a path the client
		// cannot reach (/root/.ssh) is hidden by the kernel already, and
		// its sandbox, made as the client, could not mount over it.
		v.denyRead = keepWhere(v.denyRead, reachOf(in.clientReach, v.denyRead))
	}
	if v.allowWrite, err = in.dirs.expandAll(pol.FS.AllowWrite, budget, in.cache); err != nil {
		return nil, err
	}
	if in.kernelHides != nil && len(v.denyRead) > 0 {
		// The user's own sandbox maps the user alone: a secret of
		// another user's that the user may neither read nor write
		// (/etc/shadow, /etc/ssl/private) stays closed to it without a
		// mask, whose bind, sentinel and watch each run paid for. In a
		// writable tree the mask also pins the path (no rename, no
		// unlink): there it stays.
		hidden := reachOf(in.kernelHides, v.denyRead)
		for i, r := range v.denyRead {
			hidden[i] = !hidden[i] || inAnyRoot(r.path, v.allowWrite)
		}
		v.denyRead = keepWhere(v.denyRead, hidden)
	}
	var notes []string
	if in.look != nil {
		// A client's sandbox, surveyed with the client's credentials: a
		// writable tree the client cannot search and write is no tree of
		// its sandbox (made as the client, it could not write there
		// either), and nothing is planned in it. The daemon checked the
		// client's own paths before; one swapped for a symbolic link since
		// (to another user's directory) ends here.
		kept := v.allowWrite[:0]
		for _, r := range v.allowWrite {
			if err := unix.Faccessat2(unix.AT_FDCWD, r.path, unix.W_OK|unix.X_OK, unix.AT_EACCESS); err != nil {
				notes = append(notes, fmt.Sprintf("not writable: %s (%s): this user cannot write there (%v)", r.path, r.source, err))
				continue
			}
			kept = append(kept, r)
		}
		v.allowWrite = kept
	}
	if err := plantedWriteLinks(pol.FS.AllowWrite, v.allowWrite); err != nil {
		return nil, err
	}
	if err := kernelWriteRoots(v.allowWrite); err != nil {
		return nil, err
	}
	km, err := kernelMountsUnder(v.allowWrite, in.noMounts)
	if err != nil {
		return nil, err
	}
	restore = budget.forDeny()
	v.denyWrite, err = in.dirs.expandAll(pol.FS.DenyWrite, budget, in.cache)
	restore()
	if err != nil {
		return nil, err
	}
	if len(v.denyWrite) > 0 {
		// A writable root's mounts below it are writable: a denyWrite
		// file of a directory bound there too was written through the
		// other name (attack pass 84).
		aliases, err := mountAliases(v.denyWrite)
		if err != nil {
			return nil, err
		}
		v.denyWrite = append(v.denyWrite, aliases...)
	}
	fp := &fsPlan{view: v, kernelMounts: km, notes: notes}
	if pol.FS.Disabled {
		// srt's filesystem.disabled: no filesystem rules at all; moat still
		// keeps the host read-only except what allowWrite names... which is
		// nothing in that case. Refuse instead of pretending.
		return nil, fmt.Errorf("filesystem.disabled turns every filesystem protection off; moat does not run commands without one")
	}
	// Is /tmp private? Not when the policy makes /tmp itself (or /) writable,
	// nor without a mount namespace.
	v.privateTmp = !in.noMounts
	for _, r := range v.allowWrite {
		if within("/tmp", r.path) {
			v.privateTmp = false
			fp.notes = append(fp.notes, "/tmp is the host's: "+r.source+" makes it writable")
		}
	}

	for _, p := range in.exposeRO {
		if c, _, err := in.dirs.canonical(p); err == nil {
			v.exposed = append(v.exposed, rule{path: c, source: c})
		}
	}
	if !in.noMounts {
		deny, allow, err := autofsRules(v)
		if err != nil {
			return nil, err
		}
		if in.clientReach != nil && len(deny)+len(allow) > 0 {
			// A client's sandbox mounts as the client: what the client
			// cannot look up, it cannot have the automounter asked for
			// either, nor read.
			rs := append(append([]rule(nil), deny...), allow...)
			ok := reachOf(in.clientReach, rs)
			deny, allow = deny[:0], allow[:0:0]
			for i, r := range rs {
				switch {
				case !ok[i]:
				case r.source == autofsSource:
					deny = append(deny, r)
				default:
					allow = append(allow, r)
				}
			}
		}
		v.denyRead = append(v.denyRead, deny...)
		v.allowRead = append(v.allowRead, allow...)
	}
	return fp, nil
}

// findProtections is the second step: the bounded search for git
// repositories and dangerous names under the writable roots, and the
// protections it yields (kept only where the rules would let the command
// write). It returns the protected paths reserved where they do not exist.
func findProtections(in planInput, fp *fsPlan) (map[string]bool, error) {
	pol, v := in.pol, fp.view
	depth := pol.FS.MandatoryDenySearchDepth
	if depth == 0 {
		depth = policy.DefaultSearchDepth
	}
	var prot []rule
	reserved := map[string]bool{}
	home := ""
	if pol.Home != "" {
		home, _, _ = in.dirs.canonical(pol.Home)
	}
	protect := func(p, why string, reserve bool) {
		if gitguard.AutofsOnWay(p, false) {
			// A hooks path, include or git directory a config or a
			// pointer names below an autofs mount nothing covers: even
			// its lstat would ask the host's automounter for the name
			// (attack pass 56, TestPlanAutofsNotAsked). The sandbox shows
			// such a mount as an empty read-only directory (autofsRules).
			return
		}
		follow := !gitguard.AutofsOnWay(p, true) // what p leads to may be looked at
		// A home's own file that is a symlink, or under one (.gitconfig,
		// .bashrc or .claude kept in a dotfiles tree that is writable): the
		// mount at the path holds the symlink, not what it leads to, so
		// that is protected too (found by an attack pass: ~/.gitconfig ->
		// a writable tree's gitconfig took a core.fsmonitor, ~/.claude ->
		// a writable directory took a settings.json). Only the home's:
		// a symlink the command planted in the tree (sub/.claude -> ..)
		// would otherwise make a later run's whole tree read-only; and
		// never a target that holds a writable root or is a git directory.
		if policy.HomeOwn(p, home) && follow && in.dirs.kind(p) != 0 {
			if c, exists, err := in.dirs.canonical(p); err == nil && exists && c != p && !holdsRoot(c, v.allowWrite) && !strings.Contains(c+"/", "/.git/") {
				prot = append(prot, rule{path: c, source: why + " (through the symlink " + p + ")"})
			} else if t, err := os.Readlink(p); err == nil {
				// A dangling symlink (~/.gitconfig to a file not made yet):
				// where it leads, in a writable tree, is reserved (a
				// placeholder there for the run), or the command could
				// make the file the home's name reads.
				if !filepath.IsAbs(t) {
					t = filepath.Join(filepath.Dir(p), t)
				}
				if gitguard.AutofsOnWay(t, true) {
					// (as above: not looked up)
				} else if c, exists, err := in.dirs.canonical(t); err == nil && !exists && inAnyRoot(c, v.allowWrite) && !holdsRoot(c, v.allowWrite) &&
					!strings.Contains(c+"/", "/.git/") && in.dirs.kind(filepath.Dir(c)) == 'd' {
					prot = append(prot, rule{path: c, source: why + " (where the symlink " + p + " leads)"})
					reserved[c] = true
				}
			}
		}
		if !reserve && in.dirs.kind(p) == 0 {
			return
		}
		prot = append(prot, rule{path: p, source: why})
		if reserve {
			reserved[p] = true
		}
	}
	xdg := in.xdgConfigHome
	if xdg == "" && !in.asClient {
		xdg = ownXDGConfigHome(home)
	}
	globalFiles := globalGitConfigs(home, xdg)
	for _, f := range []string{in.gitConfigGlobal, in.gitConfigSystem} {
		if filepath.IsAbs(f) {
			globalFiles = append(globalFiles, filepath.Clean(f))
		}
	}
	global := readGitFacts(globalFiles, home, readConfigFile)
	if filepath.IsAbs(in.gitTemplateDir) {
		global.templateDirs = append(global.templateDirs, filepath.Clean(in.gitTemplateDir))
	}
	// A reserved path needs a mount point, made in its parent: only where
	// the parent exists.
	reserveIfParent := func(p string) bool {
		return !gitguard.AutofsOnWay(p, false) && in.dirs.kind(filepath.Dir(p)) == 'd'
	}
	gitEntries := func(g string, reserve bool) {
		if gitguard.AutofsOnWay(g, true) {
			return // as protect
		}
		for _, n := range policy.GitProtected {
			if (n == "config" || n == "config.worktree") && pol.FS.AllowGitConfig {
				continue
			}
			r := reserve && contains(policy.GitReserved, n)
			protect(filepath.Join(g, n), gitWhy(n), r)
		}
		// A git directory with no HEAD is no repository for git, which
		// looks further up: a tree can ship one dormant, its config's
		// core.fsmonitor never run, and a HEAD the command made there
		// turned it into the repository of the user's next git status
		// (attack pass 82, TestGitDormantRepositoryCompleted; the audit
		// cannot tell a HEAD the run made in a .git directory from git's
		// own new HEAD). Its HEAD is reserved for the run.
		if head := filepath.Join(g, "HEAD"); inAnyRoot(g, v.allowWrite) && in.dirs.kind(head) == 0 && reserveIfParent(head) {
			protect(head, "git: a HEAD here would make this git directory a repository", true)
		}
		worktree := ""
		if filepath.Base(g) == ".git" {
			worktree = filepath.Dir(g)
		}
		for _, t := range gitRepoTargets(g, worktree, home, global, readConfigFile) {
			if pol.FS.AllowGitConfig && strings.HasSuffix(t.path, "config.worktree") {
				continue
			}
			protect(t.path, t.why, t.reserve && reserveIfParent(t.path))
		}
	}
	// A Mercurial repository's configuration and share pointer are
	// read-only where they exist (attack pass 89); where they do not, the
	// audit takes out what the run made (no placeholder: a directory per
	// repository per run).
	hgEntries := func(h string) {
		for _, n := range policy.HgProtected {
			protect(filepath.Join(h, n), "mercurial: "+n+" of a repository is never writable (hg runs its hooks, extensions and aliases)", false)
		}
	}
	// A darcs repository's defaults and prefs likewise (attack pass 93).
	darcsEntries := func(h string) {
		for _, n := range policy.DarcsProtected {
			protect(filepath.Join(h, n), "darcs: _darcs/"+n+" of a repository is never writable (darcs runs the hooks it names)", false)
		}
	}
	// A Subversion working copy's database (attack pass 93).
	svnEntries := func(h string) {
		for _, n := range policy.SvnProtected {
			protect(filepath.Join(h, n), "subversion: .svn/"+n+" of a working copy is never writable (it names the repository, whose hooks a file:// commit runs)", false)
		}
	}
	names := func(a string, reserve []string) {
		for _, n := range policy.MandatoryFiles {
			protect(filepath.Join(a, n), mandatoryWhy(n), contains(reserve, n))
		}
		for _, n := range policy.MandatoryDirs {
			protect(filepath.Join(a, n), mandatoryWhy(n), contains(reserve, n))
		}
		for _, n := range reserve {
			p := filepath.Join(a, n)
			if n == "HEAD" {
				// Reserved only where it is absent: an existing HEAD is a
				// repository's, and git must keep writing it.
				if in.dirs.kind(p) == 0 {
					protect(p, "git: a HEAD here would make this directory a repository", true)
				}
				continue
			}
			protect(p, mandatoryWhy(n), true)
		}
	}
	for _, r := range dedupe(append([]rule(nil), v.allowWrite...)) {
		if in.dirs.kind(r.path) != 'd' {
			continue
		}
		names(r.path, policy.ReservedNames)
		res, err := scanCache(r.path, depth, in.cache)
		if err != nil {
			return nil, err
		}
		for _, w := range res.workTrees {
			names(w, nil)
		}
		for _, g := range res.gitDirs {
			gitEntries(g, false)
		}
		for _, f := range res.gitFiles {
			protect(f, "git: a .git pointer is never writable", false)
		}
		for _, h := range res.hgDirs {
			hgEntries(h)
		}
		for _, h := range res.darcsDirs {
			darcsEntries(h)
		}
		for _, h := range res.svnDirs {
			svnEntries(h)
		}
		for _, r := range res.svnRepos {
			for _, n := range policy.SvnRepoProtected {
				protect(filepath.Join(r, n), "subversion: a repository's "+n+" is never writable (a file:// commit runs its hooks)", false)
			}
		}
		for _, n := range res.named {
			protect(n, "mandatory: "+filepath.Base(n)+" is never writable", false)
		}
		for _, u := range res.unlisted {
			protect(u, "mandatory: moat could not list this directory to find the git repositories and protected names in it (its permissions), so nothing in it is writable", false)
		}
	}
	if c, _, err := in.dirs.canonical(pol.Cwd); err == nil {
		names(c, policy.CwdReservedNames)
		// The repository the command works in: reserve its git entries.
		if gitDir, gitFile := enclosingGitDir(c); gitDir != "" {
			gitEntries(gitDir, true)
			if gitFile != "" {
				protect(gitFile, "git: a .git pointer is never writable", false)
			}
			if cd, ok := readCommondir(gitDir); ok {
				gitEntries(cd, true)
			}
		}
		// The Mercurial repository the command works in, found as hg
		// finds it (the closest .hg above), deeper than the search or not.
		if h := enclosingVCSDir(c, ".hg"); h != "" {
			hgEntries(h)
		}
		// darcs and fossil find theirs the same way.
		if h := enclosingVCSDir(c, "_darcs"); h != "" {
			darcsEntries(h)
		}
		if h := enclosingVCSDir(c, ".svn"); h != "" {
			svnEntries(h)
		}
		for _, f := range enclosingFossilCheckout(c) {
			protect(f, "mandatory: "+filepath.Base(f)+" is never writable", false)
		}
	}
	if home != "" {
		names(home, policy.HomeReservedNames)
		for _, n := range policy.HomeReservedPaths {
			p := filepath.Join(home, n)
			protect(p, "mandatory: ~/"+n+" is never writable", reserveIfParent(p))
		}
		for _, n := range policy.HomeProtectedPaths {
			protect(filepath.Join(home, n), "mandatory: ~/"+n+" is never writable (a version control tool's user configuration)", false)
		}
		// What the user's Mercurial configuration includes, in a writable
		// tree, is read-only where it exists: the user's hg status during
		// the run reads it (the audit judges it after: attack pass 94).
		for _, p := range gitguard.HgUserIncludes(home, xdg, in.hgrcPath) {
			c := p
			if !gitguard.AutofsOnWay(p, true) {
				if r, _, err := in.dirs.canonical(p); err == nil {
					c = r
				}
			}
			if inAnyRoot(c, v.allowWrite) && !holdsRoot(c, v.allowWrite) {
				protect(c, "hg: a file the user's Mercurial configuration includes (%include) or $HGRCPATH names", false)
			}
		}
	}
	// What the user's own git configuration names (below) is protected
	// where it leads as well: a path through a symlink of the user's
	// (~/link/tmpl, ~/link -> a writable tree) was compared with the
	// writable trees as written, found outside them, and left writable
	// (found by attack pass 47; the audit judged it, but the mounts are
	// the first layer). Not a writable root or one of its ancestors, and
	// nothing in a git directory.
	protectGlobal := func(p, why string) {
		protect(p, why, reserveIfParent(p))
		if gitguard.AutofsOnWay(p, true) {
			return // as protect
		}
		if c, exists, err := in.dirs.canonical(p); err == nil && c != p && exists && !holdsRoot(c, v.allowWrite) && !strings.Contains(c+"/", "/.git/") {
			protect(c, why+" (through a symlink on "+p+")", false)
		}
	}
	// The user's git configuration files outside the home's reserved
	// names ($XDG_CONFIG_HOME/git, $GIT_CONFIG_GLOBAL, $GIT_CONFIG_SYSTEM)
	// are never writable either (attack pass 47).
	if filepath.IsAbs(xdg) {
		protectGlobal(filepath.Join(xdg, "git"), "git: the user's $XDG_CONFIG_HOME/git")
		for _, n := range policy.XDGProtectedPaths {
			protect(filepath.Join(xdg, n), "mandatory: $XDG_CONFIG_HOME/"+n+" is never writable (a version control tool's user configuration)", false)
		}
	}
	for _, f := range []string{in.gitConfigGlobal, in.gitConfigSystem} {
		if filepath.IsAbs(f) {
			protectGlobal(filepath.Clean(f), "git: the user's git configuration ($GIT_CONFIG_GLOBAL, $GIT_CONFIG_SYSTEM)")
		}
	}
	// The user's own git configuration names hooks directories and
	// included files: none may be writable.
	for _, h := range global.hooksPaths {
		if p := gitguard.ConfigPath(h, "", home); p != "" {
			protectGlobal(p, "git: the user's core.hooksPath")
		}
	}
	for _, inc := range global.includes {
		protectGlobal(inc, "git: included by the user's git configuration")
	}
	// git clone and git init copy the template directory (hooks, config)
	// into every new repository (attack pass 45).
	for _, t := range global.templateDirs {
		if p := gitguard.ConfigPath(t, "", home); p != "" {
			protectGlobal(p, "git: the user's init.templateDir")
		}
	}
	for _, p := range pol.Protect {
		if c, _, err := in.dirs.canonical(p); err == nil {
			// One that does not exist yet (the managed settings'
			// directory) is reserved where a writable tree holds it and
			// this user could make it (as root with --write /etc). By the
			// effective ids, not access(2)'s real ones: for moatd's client
			// this runs on a thread with the client's fsuid, and a real
			// uid of root's (found in attack pass 57's review).
			protect(c, "moat: its own files are never writable", inAnyRoot(c, v.allowWrite) && reserveIfParent(c) &&
				unix.Faccessat2(unix.AT_FDCWD, filepath.Dir(c), unix.W_OK, unix.AT_EACCESS) == nil)
		}
	}
	if in.reach != nil && len(prot) > 0 {
		// Root's sandbox maps root alone: what its command cannot reach
		// (a file in another user's 0700 home, with --write /) needs no
		// protection, and stage 2 could not bind it (every root run with
		// --write / failed on a host with such a home, blaming the
		// kernel's support for mounts: found by a CI run, 2026-11-29).
		ok := reachOf(in.reach, prot)
		kept := prot[:0]
		for i, r := range prot {
			if ok[i] {
				kept = append(kept, r)
			} else {
				delete(reserved, r.path)
			}
		}
		prot = kept
	}
	// Keep the protections that matter: those the rules would let the
	// command write. A denyRead does not count: one over a name that holds
	// nothing (missing, or another run's placeholder) masks nothing, and
	// the command made the name (planMounts keeps the mask where there is
	// something to hide).
	pre := &view{allowRead: v.allowRead, allowWrite: v.allowWrite, denyWrite: v.denyWrite, privateTmp: v.privateTmp, exposed: v.exposed}
	for _, r := range dedupe(prot) {
		// Writable in the private /tmp means invisible on the host side.
		if ok, why := pre.writable(r.path); ok && why != privateTmpReason {
			v.protect = append(v.protect, r)
			fp.protected = append(fp.protected, r.path)
		}
	}
	return reserved, nil
}

// landlockOnly finishes a plan for the no-namespace tier: Landlock only
// grants, so what lies inside a writable tree cannot be denied again. Those
// protections are reported as not enforced, and the view (the violation
// report's judge) drops them.
func landlockOnly(fp *fsPlan) {
	v := fp.view
	kept := v.denyWrite[:0:0]
	for _, r := range v.denyWrite {
		if _, ok := closest(r.path, v.allowWrite); ok {
			fp.protected = append(fp.protected, r.path)
			continue
		}
		kept = append(kept, r)
	}
	v.denyWrite, v.protect = kept, nil
	for _, r := range dedupe(append([]rule(nil), v.allowWrite...)) {
		switch lstatKind(r.path) {
		case 'd':
			fp.llTrees = append(fp.llTrees, r.path)
		case 'f':
			fp.llFiles = append(fp.llFiles, r.path)
		}
	}
	fp.build = func(*nsinit.Plan) {}
	fp.lockdown = func(*nsinit.Plan) {}
}

// gatherNodes lists every path the mount plan must consider: the rules,
// the protections (with the ancestors to pin), what stays exposed, and
// moat's own /dev, /proc and /tmp.
func gatherNodes(in planInput, v *view, reserved map[string]bool) []*node {
	nodes := map[string]*node{}
	add := func(p string) *node {
		n, ok := nodes[p]
		if !ok {
			n = &node{path: p, kind: in.dirs.kind(p)}
			nodes[p] = n
		}
		return n
	}
	for _, list := range [][]rule{v.allowRead, v.denyRead, v.allowWrite, v.denyWrite} {
		for _, r := range list {
			add(r.path)
		}
	}
	for _, r := range v.denyWrite {
		add(r.path).prot = true
	}
	// Pin every ancestor of a protected path (a mandatory protection or the
	// user's denyWrite or denyRead) that lies in a writable directory, so
	// nothing above it can be renamed or removed and the path made again,
	// unprotected. Up to the outermost writable root, not the closest: a
	// writable root inside another (the working directory below an
	// allowWrite directory, as Claude Code's settings make it) could be
	// renamed through the outer one, and the working directory's reserved
	// names made again in a new directory of its name (found by an attack
	// pass).
	pinAncestors := func(p string) {
		for d := filepath.Dir(p); d != filepath.Dir(d); d = filepath.Dir(d) {
			if _, ok := closest(filepath.Dir(d), v.allowWrite); !ok {
				return
			}
			add(d).pin = true
		}
	}
	for _, r := range v.protect {
		n := add(r.path)
		n.prot = reserved[r.path]
		pinAncestors(r.path)
	}
	// A denyWrite of a missing file gets a placeholder: its ancestors are
	// pinned too (renamed aside, they would take the placeholder along and
	// leave the name free); a missing ancestor is not mounted.
	for _, r := range v.denyWrite {
		pinAncestors(r.path)
	}
	for _, r := range v.denyRead {
		if in.dirs.kind(r.path) != 0 {
			pinAncestors(r.path)
		} else {
			if v.unmasked == nil {
				v.unmasked = map[string]bool{}
			}
			v.unmasked[r.path] = true
		}
	}
	for _, p := range in.exposeRO {
		if c, _, err := in.dirs.canonical(p); err == nil {
			add(c)
		}
	}
	synth := map[string]string{"/dev": "dev", "/proc": "proc"}
	if v.privateTmp {
		synth["/tmp"] = "tmp"
	}
	for p, s := range synth {
		add(p).synth = s
	}
	list := make([]*node, 0, len(nodes))
	for _, n := range nodes {
		if n.path == "/" {
			continue // the root is the read-only host
		}
		list = append(list, n)
	}
	sort.Slice(list, func(i, j int) bool {
		di, dj := strings.Count(list[i].path, "/"), strings.Count(list[j].path, "/")
		if di != dj {
			return di < dj
		}
		return list[i].path < list[j].path
	})
	return list
}

// planMounts is the third step: walk the nodes shallow to deep; each
// compares what the policy wants there with what its closest planned
// ancestor left, and a mount is planned only where they differ.
// Placeholders for missing protected names are made (through mountPoint)
// here.
func planMounts(in planInput, fp *fsPlan, list []*node) error {
	m := &mounter{in: in, fp: fp, states: map[string]state{}, cloneFlags: map[string][2]uint64{}, cloneMay: map[string]bool{}, nodes: list}
	for _, n := range list {
		parent := m.stateAt(n.path)
		if parent == stDev || parent == stProc {
			if n.synth == "" {
				fp.notes = append(fp.notes, "ignored: "+n.path+" is inside moat's own /dev or /proc")
			}
			continue
		}
		if n.synth != "" {
			m.synthetic(n)
			continue
		}
		var err error
		switch fp.view.access(n.path) {
		case accMask:
			if n.prot && parent == stRW && (n.kind == 0 || in.mayBePlaceholder(n.path)) {
				// A reserved name that the denyRead hides but that holds
				// nothing (missing, or another run's placeholder) keeps
				// its protection: a placeholder, pinned, bound read-only.
				// A denyRead of a missing .vscode or .mcp.json (a
				// repository's own settings may add one) left it
				// unmasked and writable, and the command made
				// .vscode/tasks.json in the project (attack pass 108).
				// One that exists (an empty directory or file, maybe
				// the user's) is masked too, over the pinned bind:
				// bound alone it showed what the host wrote there
				// during the run, in place or as a new file inside, and
				// the runtime's look for made or replaced hidden paths
				// saw neither (attack pass 109).
				existed := n.kind != 0
				if err = m.readOnly(n, parent); err == nil && existed {
					var k byte
					in.lookAs(func() { k = readableKind(n.path) })
					if k != 0 {
						n.kind = k
						m.hide(n, parent)
					}
				}
				break
			}
			m.hide(n, parent)
		case accRW:
			m.writable(n, parent)
		case accRO:
			err = m.readOnly(n, parent)
		}
		if err != nil {
			return err
		}
	}
	fp.build = m.build
	return nil
}

// mounter is planMounts' state: the access each planned node left, and the
// plan steps so far.
type mounter struct {
	in     planInput
	fp     *fsPlan
	states map[string]state
	// clones are host paths cloned before the pivot, in order, with their
	// mount attributes; steps run after it; roAtEnd are made read-only last.
	clones     []string
	cloneFlags map[string][2]uint64
	// cloneMay are the clones that may find their source gone at the
	// set-up (bind): the slot is left empty and the mount step skipped.
	cloneMay map[string]bool
	steps    []step
	roAtEnd  []roEnd
	// watches are the hidden paths whose opens are reported (R_WATCH).
	watches []watch
	nodes   []*node // every path the plan considers
}

// ownStateSource is the source of the denyRead rules of moat's own state
// directories (makePlan).
const ownStateSource = "moat: its own state"

// roEnd is a mount made read-only last; mask: a hidden directory's, which
// may be gone by then (a directory removed on the host takes the mounts on
// it away in every namespace).
type roEnd struct {
	path string
	mask bool
}

type watch struct {
	path string
	dir  bool
}

// stateAt is what the closest planned ancestor of p left.
func (m *mounter) stateAt(p string) state {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if s, ok := m.states[d]; ok {
			return s
		}
		if d == "/" {
			return stRO
		}
	}
}

// mountpoint makes a mount point inside a tmpfs moat made, if it is there.
func (m *mounter) mountpoint(n *node, parent state) {
	if parent != stMask && parent != stTmp {
		return
	}
	path := n.path
	if n.kind == 'd' {
		m.steps = append(m.steps, func(p *nsinit.Plan, _ map[string]uint32) { p.Mkdir(path, 0o755) })
		return
	}
	m.steps = append(m.steps, func(p *nsinit.Plan, _ map[string]uint32) { p.Mkfile(path, 0o644) })
}

// bind binds the host's n onto itself with the attributes set. Inside a
// mask (parent stMask: an allowRead or allowWrite below a denyRead, a mount
// the host has below an autofs mount) the bind shows a path of the host
// again on a mount point in moat's own tmpfs; one gone between the plan
// and the set-up (an unmount, an automount that expired, a directory
// removed) leaves that mount point empty, as if it had not been there at
// plan time, and the run goes on (a run beside a test's unmount failed
// "open DIR": CI40). Elsewhere the bind is over the host's own path, and a
// source gone fails the set-up, as before.
func (m *mounter) bind(n *node, set uint64, parent state) {
	m.clones = append(m.clones, n.path)
	m.cloneFlags[n.path] = [2]uint64{set, 0}
	path := n.path
	if parent == stMask {
		// (Its source removed after the clone, the tree's root is a
		// deleted directory, which move_mount refuses with ENOENT: Mask
		// takes that for gone too.)
		m.cloneMay[n.path] = true
		m.steps = append(m.steps, func(p *nsinit.Plan, slots map[string]uint32) { p.Mask(slots[path], path) })
		return
	}
	m.steps = append(m.steps, func(p *nsinit.Plan, slots map[string]uint32) { p.Attach(slots[path], path) })
}

// synthetic plans moat's own /tmp, /dev and /proc.
func (m *mounter) synthetic(n *node) {
	uid, gid := uint32(m.in.uid), uint32(m.in.gid)
	switch n.synth {
	case "tmp":
		size := m.in.tmpfsSize
		m.steps = append(m.steps, func(p *nsinit.Plan, _ map[string]uint32) {
			p.TmpfsSized("/tmp", 0o700, uid, gid, nsinit.AttrNosuid|nsinit.AttrNodev, uint64(size), tmpfsInodes(size))
		})
		m.states[n.path] = stTmp
		m.fp.llTrees = append(m.fp.llTrees, "/tmp")
	case "dev":
		m.steps = append(m.steps, devSteps(m.in.uid, m.in.gid, m.in.tmpfsSize)...)
		m.states[n.path] = stDev
		m.roAtEnd = append(m.roAtEnd, roEnd{path: "/dev"})
	case "proc":
		if m.in.pol.FS.WeakerNested {
			m.clones = append(m.clones, "/proc")
			m.cloneFlags["/proc"] = [2]uint64{nsinit.AttrNosuid | nsinit.AttrNodev | nsinit.AttrNoexec, 0}
			m.steps = append(m.steps, func(p *nsinit.Plan, slots map[string]uint32) { p.Attach(slots["/proc"], "/proc") })
			m.fp.notes = append(m.fp.notes, "weaker nested mode: the host's /proc is visible (enableWeakerNestedSandbox)")
		} else {
			m.steps = append(m.steps, func(p *nsinit.Plan, _ map[string]uint32) {
				p.Proc("/proc", nsinit.AttrNosuid|nsinit.AttrNodev|nsinit.AttrNoexec)
			})
		}
		m.states[n.path] = stProc
	}
}

// hide plans a hidden path: an empty read-only tmpfs over a directory, an
// empty read-only sentinel file over a file (or, without sentinels,
// /dev/null on a nodev mount: opening it fails with EACCES). With
// sentinels, opens of both are watched and reported.
func (m *mounter) hide(n *node, parent state) {
	if parent.hostHidden() || n.kind == 0 {
		return
	}
	m.mountpoint(n, parent)
	path := n.path
	// A hidden path removed on the host between the plan and the mounts is
	// left as it is, gone (TmpfsMask, Mask): the runtime ends the run where
	// one is made there again (latesecrets.go). Not moat's own state, which
	// the runtime does not watch and which this run's moat makes again, nor
	// a reserved name in a writable tree (.vscode, .mcp.json, .git/hooks...),
	// which the mask also keeps the command from making: their removal
	// fails the set-up.
	optional := !(n.prot && parent == stRW)
	if r, ok := closest(path, m.fp.view.denyRead); ok && r.path == path && r.source == ownStateSource {
		optional = false
	}
	attach := func(p *nsinit.Plan, slot uint32) {
		if optional {
			p.Mask(slot, path)
		} else {
			p.Attach(slot, path)
		}
	}
	if n.kind == 'd' {
		uid, gid := uint32(m.in.uid), uint32(m.in.gid)
		names := m.mirrored(path)
		mode, attr := uint32(0o555), uint64(nsinit.AttrRdonly|nsinit.AttrNosuid|nsinit.AttrNodev|nsinit.AttrNoexec)
		if len(names) > 0 || m.holdsNodes(path) {
			// Stage 2 makes the names, or the mount points of what is
			// shown again inside (an allowRead below a denyRead: mkdir -p
			// in the mask), as the owner; read-only at the end.
			mode, attr = 0o755, attr&^nsinit.AttrRdonly
			m.roAtEnd = append(m.roAtEnd, roEnd{path: path, mask: optional})
		}
		m.steps = append(m.steps, func(p *nsinit.Plan, _ map[string]uint32) {
			if optional {
				p.TmpfsMask(path, mode, uid, gid, attr)
			} else {
				p.Tmpfs(path, mode, uid, gid, attr)
			}
			for _, e := range names {
				if e.dir {
					p.Mkdir(filepath.Join(path, e.name), 0o555)
				} else {
					p.Mkfile(filepath.Join(path, e.name), 0o444)
				}
			}
		})
		if m.in.sentinel != nil {
			m.watches = append(m.watches, watch{path: path, dir: true})
		}
	} else if m.in.sentinel != nil {
		if src, err := m.in.sentinel(path); err == nil {
			key := src
			m.clones = append(m.clones, key)
			m.cloneFlags[key] = [2]uint64{nsinit.AttrRdonly | nsinit.AttrNodev | nsinit.AttrNosuid | nsinit.AttrNoexec, 0}
			m.steps = append(m.steps, func(p *nsinit.Plan, slots map[string]uint32) { attach(p, slots[key]) })
			m.watches = append(m.watches, watch{path: path})
		} else {
			m.hideNull(path, attach)
		}
	} else {
		m.hideNull(path, attach)
	}
	m.states[n.path] = stMask
}

// holdsNodes reports a planned path strictly inside dir.
func (m *mounter) holdsNodes(dir string) bool {
	for _, n := range m.nodes {
		if n.path != dir && within(n.path, dir) {
			return true
		}
	}
	return false
}

// mirroredMax bounds the names mirrored into one hidden directory.
const mirroredMax = 64

type mirroredName struct {
	name string
	dir  bool
}

// mirrored lists the top-level names of a default secrets directory
// (~/.ssh, ~/.aws, ...: names every user's have alike) to recreate, empty,
// in its mask, so that reading ~/.ssh/id_ed25519 opens a watched empty file
// and is reported, where a lookup in an empty mask could not be. Only with
// sentinels (reports on), only for the default secrets (a user's own
// denyRead directory may have telling names: it stays empty), and not
// where the plan mounts anything inside.
func (m *mounter) mirrored(dir string) []mirroredName {
	if m.in.sentinel == nil {
		return nil
	}
	r, ok := closest(dir, m.fp.view.denyRead)
	if !ok || r.path != dir || r.source != policy.DefaultSecretsSource {
		return nil
	}
	for _, n := range m.nodes {
		if n.path != dir && within(n.path, dir) {
			return nil
		}
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []mirroredName
	for _, e := range es {
		if len(out) == mirroredMax {
			break
		}
		name := e.Name()
		if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			continue
		}
		out = append(out, mirroredName{name: name, dir: e.IsDir()})
	}
	return out
}

// hideNull hides a file behind /dev/null on a nodev mount.
func (m *mounter) hideNull(path string, attach func(p *nsinit.Plan, slot uint32)) {
	key := "/dev/null#" + path
	m.clones = append(m.clones, key)
	m.cloneFlags[key] = [2]uint64{nsinit.AttrRdonly | nsinit.AttrNodev | nsinit.AttrNosuid | nsinit.AttrNoexec, 0}
	m.steps = append(m.steps, func(p *nsinit.Plan, slots map[string]uint32) { attach(p, slots[key]) })
}

// writable plans a writable path (a bind where its parent is not writable
// already, or where it must be pinned).
func (m *mounter) writable(n *node, parent state) {
	if n.kind == 0 || (parent == stRW && !n.pin) {
		if parent == stRW {
			m.states[n.path] = stRW
		}
		return
	}
	if parent == stTmp && n.kind == 0 {
		return
	}
	m.mountpoint(n, parent)
	m.bind(n, nsinit.AttrNosuid|nsinit.AttrNodev, parent)
	m.states[n.path] = stRW
	if n.kind == 'd' {
		m.fp.llTrees = append(m.fp.llTrees, n.path)
	} else {
		m.fp.llFiles = append(m.fp.llFiles, n.path)
	}
}

// readOnly plans a read-only path inside a writable one (a protection, a
// denyWrite, a pin), with a placeholder on the host where it is missing.
func (m *mounter) readOnly(n *node, parent state) error {
	in := m.in
	if parent == stRO && !n.pin {
		return nil
	}
	if n.kind == 0 {
		if parent != stRW || !n.prot {
			return nil
		}
		// A protected name that does not exist in a writable directory: it
		// needs a mount point on the host.
		ph := placeholderFor(n.path)
		m.fp.placeholders = append(m.fp.placeholders, ph)
		if in.mountPoint != nil {
			if err := in.mountPoint(n.path, &ph); err != nil {
				return err
			}
		}
		n.kind = 'f'
		if ph.kind == journal.Dir {
			n.kind = 'd'
		}
	} else if parent == stRW && in.mountPoint != nil && in.mayBePlaceholder(n.path) {
		// Maybe another run's placeholder: adopt it under the journal's
		// lock. If it vanished meanwhile (that run ended), a reserved name
		// gets a placeholder of its own, anything else has nothing left to
		// protect.
		var ph *placeholder
		if n.prot {
			p := placeholderFor(n.path)
			ph = &p
		}
		if err := in.mountPoint(n.path, ph); errors.Is(err, errVanished) {
			return nil
		} else if err != nil {
			return err
		}
	}
	m.mountpoint(n, parent)
	m.bind(n, nsinit.AttrRdonly|nsinit.AttrNosuid|nsinit.AttrNodev, parent)
	m.states[n.path] = stRO
	return nil
}

// build encodes the mounts: every source cloned from the host first (before
// anything is mounted over), the pivot, the steps, the read-only flips.
func (m *mounter) build(p *nsinit.Plan) {
	p.Private()
	root := p.Clone("/", nsinit.CloneRecursive, nsinit.AttrRdonly|nsinit.AttrNosuid|nsinit.AttrNodev, 0)
	slots := map[string]uint32{}
	for _, c := range m.clones {
		src, flags := c, uint32(nsinit.CloneRecursive)
		if strings.HasPrefix(c, "/dev/null#") {
			src, flags = "/dev/null", 0
		}
		if m.cloneMay[c] {
			flags |= nsinit.CloneOptional
		}
		f := m.cloneFlags[c]
		slots[c] = p.Clone(src, flags, f[0], f[1])
	}
	for _, d := range devNodes {
		// Read-only: these are the host's inodes, whose mode and times a
		// command as root could change for the whole host (chmod 0600
		// /dev/null: found by an attack pass). Opening a device for
		// writing needs no write access to its mount.
		slots["dev:"+d] = p.Clone("/dev/"+d, 0, nsinit.AttrRdonly|nsinit.AttrNosuid|nsinit.AttrNoexec, 0)
	}
	p.AttachRoot(root, "/tmp")
	for _, s := range m.steps {
		s(p, slots)
	}
	for i := len(m.roAtEnd) - 1; i >= 0; i-- {
		if r := m.roAtEnd[i]; r.mask {
			p.SetattrIfPresent(r.path, false, nsinit.AttrRdonly, 0)
		} else {
			p.Setattr(r.path, false, nsinit.AttrRdonly, 0)
		}
	}
	for _, km := range m.fp.kernelMounts {
		p.SetattrIfPresent(km, true, nsinit.AttrRdonly|nsinit.AttrNosuid|nsinit.AttrNodev|nsinit.AttrNoexec, 0)
	}
	for _, w := range m.watches {
		p.Watch(w.path, w.dir)
	}
}

// procReadOnly are the parts of /proc that reach the whole machine, not
// the sandbox: kernel knobs (a root mapped into the sandbox is the host's
// root for their permission checks), the SysRq trigger, IRQ routing, bus
// and filesystem settings, pressure-stall triggers, the CPU's memory type
// ranges (/proc/mtrr: root-owned 0644 where the CPU has MTRRs; the kernel
// also wants CAP_SYS_ADMIN, which the sandbox never has, but the file is
// not left writable on that alone), the kernel's debug messages
// (/proc/dynamic_debug/control: root-owned 0644 on Debian 12's own kernel,
// which turns on any pr_debug of the kernel; found on the cgroup v2
// machine of make test-vm). They are made read-only, as the OCI runtimes
// do.
var procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/pressure", "/proc/mtrr", "/proc/dynamic_debug"}

// kernelMasked are files and directories that disclose the host's kernel,
// firmware or hardware (kernel memory, the keys of every user, timers and
// scheduler internals, ACPI and DMI tables, energy counters, debugfs,
// tracefs, securityfs, crash logs): hidden, a file behind /dev/null on a
// nodev mount (opening it fails), a directory behind an empty read-only
// tmpfs. Only what exists on this host is planned.
var kernelMasked = []string{
	"/proc/kcore", "/proc/keys", "/proc/key-users", "/proc/timer_list", "/proc/sched_debug",
	"/proc/latency_stats", "/proc/timer_stats", "/proc/acpi", "/proc/scsi", "/proc/asound",
	"/sys/firmware", "/sys/devices/virtual/powercap", "/sys/kernel/debug", "/sys/kernel/tracing",
	"/sys/kernel/security", "/sys/fs/pstore",
}

// kernelLockdown plans the read-only binds and masks above.
func kernelLockdown(uid, gid int) func(p *nsinit.Plan) {
	const ro = nsinit.AttrRdonly | nsinit.AttrNosuid | nsinit.AttrNodev | nsinit.AttrNoexec
	type mask struct {
		path string
		dir  bool
	}
	var readOnly []string
	var masks []mask
	for _, p := range procReadOnly {
		if lstatKind(p) != 0 {
			readOnly = append(readOnly, p)
		}
	}
	for _, p := range kernelMasked {
		switch lstatKind(p) {
		case 'd':
			masks = append(masks, mask{p, true})
		case 'f':
			masks = append(masks, mask{p, false})
		}
	}
	return func(p *nsinit.Plan) {
		for _, path := range readOnly {
			p.Bind(path, path, ro, 0, true)
		}
		for _, m := range masks {
			if m.dir {
				p.Tmpfs(m.path, 0o555, uint32(uid), uint32(gid), ro&^nsinit.AttrRdonly)
				p.Setattr(m.path, false, nsinit.AttrRdonly, 0)
				continue
			}
			p.Bind("/dev/null", m.path, ro, 0, true)
		}
	}
}

// inAnyRoot reports c lies in a writable root.
func inAnyRoot(c string, roots []rule) bool {
	for _, r := range roots {
		if within(c, r.path) {
			return true
		}
	}
	return false
}

// holdsRoot reports c is a writable root or an ancestor of one.
func holdsRoot(c string, roots []rule) bool {
	for _, r := range roots {
		if within(r.path, c) {
			return true
		}
	}
	return false
}

// errVanished: a path the plan found is gone, and needs no mount.
var errVanished = errors.New("vanished")

// step is one deferred plan operation; slots maps clone sources to slots.
type step func(p *nsinit.Plan, slots map[string]uint32)

// placeholderFor picks the kind of mount point for an absent protected
// path. Inside a git directory it is what git reads there: config and
// commondir files, a directory for the rest (hooks, modules). Elsewhere
// it is a socket inode (journal.Node): git status and git add list
// neither it nor an empty directory, it blocks creating a file or a
// directory of the same name, and, unlike a directory, removing it frees
// no data block (on a filesystem mounted with discard, rmdir waits for
// the trim: 0.1-0.4 ms a name on this project's machines, the largest
// part of a run's clean-up). Inside the sandbox it is a read-only mount
// that cannot be opened (ENXIO), removed or renamed over (EBUSY).
func placeholderFor(p string) placeholder {
	base := filepath.Base(p)
	inGit := strings.Contains(p, "/.git/") || isGitDir(filepath.Dir(p))
	switch {
	case inGit && base == "config":
		return placeholder{path: p, kind: journal.File}
	case inGit && base == "commondir":
		return placeholder{path: p, kind: journal.File, content: journal.CommondirContent}
	case inGit:
		return placeholder{path: p, kind: journal.Dir}
	}
	return placeholder{path: p, kind: journal.Node}
}

func isGitDir(d string) bool {
	for _, n := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(d, n)); err != nil {
			return false
		}
	}
	return true
}

// devNodes are the host devices bound into moat's /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// devSteps build a minimal /dev: a tmpfs with the harmless devices bound in
// from the host (a user namespace cannot mknod), a new devpts instance,
// a private /dev/shm (of shmSize bytes at most, if not 0) and the usual
// symlinks.
func devSteps(uid, gid int, shmSize int64) []step {
	return []step{
		func(p *nsinit.Plan, slots map[string]uint32) {
			p.Tmpfs("/dev", 0o755, uint32(uid), uint32(gid), nsinit.AttrNosuid|nsinit.AttrNoexec)
			for _, d := range devNodes {
				p.Mkfile("/dev/"+d, 0o666)
				p.Attach(slots["dev:"+d], "/dev/"+d)
			}
			p.Mkdir("/dev/pts", 0o755)
			p.Devpts("/dev/pts")
			p.Symlink("pts/ptmx", "/dev/ptmx")
			p.Mkdir("/dev/shm", 0o755)
			p.TmpfsSized("/dev/shm", 0o1777, uint32(uid), uint32(gid), nsinit.AttrNosuid|nsinit.AttrNodev, uint64(shmSize), tmpfsInodes(shmSize))
			p.Symlink("/proc/self/fd", "/dev/fd")
			p.Symlink("/proc/self/fd/0", "/dev/stdin")
			p.Symlink("/proc/self/fd/1", "/dev/stdout")
			p.Symlink("/proc/self/fd/2", "/dev/stderr")
			p.Symlink("/proc/kcore", "/dev/core")
		},
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// enclosingGitDir finds the git directory of the repository containing dir,
// as git's discovery does: dir/.git (a directory, or a file pointing to one)
// in dir or an ancestor, or dir itself being a bare repository.
func enclosingGitDir(dir string) (gitDir, gitFile string) {
	for d := dir; ; d = filepath.Dir(d) {
		g := filepath.Join(d, ".git")
		switch lstatKind(g) {
		case 'd':
			return g, ""
		case 'f':
			if t, ok := readGitPointer(g); ok {
				return t, g
			}
			return "", ""
		case 'l':
			// A .git symlink to a git directory (or a .git file) is the
			// working directory's repository as much as a .git
			// directory: it was passed over, and its hooks and config
			// were writable during the run (attack pass 82,
			// TestDotGitSymlinkProtected). One that leads nowhere git
			// would take passes over, as git does.
			if t, ok := readGitLink(g); ok {
				return t, g
			}
		}
		if isGitDir(d) {
			return d, ""
		}
		if d == "/" {
			return "", ""
		}
	}
}

// mayBePlaceholder is mayBePlaceholder(p) as in.look says.
func (in planInput) mayBePlaceholder(p string) (may bool) {
	in.lookAs(func() { may = mayBePlaceholder(p) })
	return may
}

// mayBePlaceholder reports whether a path the plan found could be another
// run's placeholder (an empty directory, an empty file, or a commondir
// holding ".\n"), or has vanished since: only those need the journal's lock.
func mayBePlaceholder(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil {
		return true // gone since the plan looked: the journal decides (adopt, create or skip)
	}
	switch {
	case fi.IsDir():
		// O_DIRECTORY|O_NOFOLLOW: whatever was renamed over p since the
		// Lstat (a FIFO, a symlink to a device) is refused, not opened.
		fd, err := sys.RetryValue(func() (int, error) {
			return unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return true
		}
		f := os.NewFile(uintptr(fd), p)
		defer f.Close()
		names, _ := f.Readdirnames(1)
		return len(names) == 0
	case fi.Mode().IsRegular():
		return fi.Size() == 0 || (filepath.Base(p) == "commondir" && fi.Size() == int64(len(journal.CommondirContent)))
	case fi.Mode()&os.ModeSocket != 0:
		return true
	}
	return false
}

// mandatoryWhys and gitWhys are the sources findProtections gives the
// protected names, made once: the planner asks for one for each of ~150
// names a run, most of which exist nowhere.
var (
	mandatoryWhys = sync.OnceValue(func() map[string]string {
		m := map[string]string{}
		for _, ns := range [][]string{policy.MandatoryFiles, policy.MandatoryDirs, policy.ReservedNames, policy.CwdReservedNames, policy.HomeReservedNames} {
			for _, n := range ns {
				m[n] = "mandatory: " + n + " is never writable"
			}
		}
		return m
	})
	gitWhys = sync.OnceValue(func() map[string]string {
		m := map[string]string{}
		for _, n := range policy.GitProtected {
			m[n] = "git: " + n + " is never writable"
		}
		return m
	})
)

func mandatoryWhy(n string) string {
	if w, ok := mandatoryWhys()[n]; ok {
		return w
	}
	return "mandatory: " + n + " is never writable"
}

func gitWhy(n string) string {
	if w, ok := gitWhys()[n]; ok {
		return w
	}
	return "git: " + n + " is never writable"
}

// readableKind is 'd' for a directory, 'f' for a regular file, and 0 for
// anything else (gone, or a placeholder node, which cannot be opened).
func readableKind(p string) byte {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return 0
	case fi.IsDir():
		return 'd'
	case fi.Mode().IsRegular():
		return 'f'
	}
	return 0
}
