//go:build linux

package linux

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/internal/sys"
	"github.com/moat-sandbox/moat/linux/journal"
	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// makePlan resolves the policy for this launch (filesystem, placeholders,
// seccomp, environment, network) and encodes stage 2's plan. It runs while
// stage 2 starts.
func (ln *launcher) makePlan() error {
	pol := ln.pol
	st := ln.l.StateDir
	exe, _ := os.Executable()
	expose := []string{pol.Cwd}
	if exe != "" {
		expose = append(expose, exe) // "moat ssh-proxy" runs inside
	}
	if len(ln.l.Argv) > 0 && filepath.IsAbs(ln.l.Argv[0]) {
		expose = append(expose, ln.l.Argv[0])
	}
	// moat's own files are never writable: its state, its binary, the
	// settings files it read.
	pol2 := *pol
	pol2.Protect = append(append([]string(nil), pol.Protect...), st)
	if exe != "" {
		pol2.Protect = append(pol2.Protect, exe)
	}
	pol2.Protect = append(pol2.Protect, pol.Sources...)
	// moat's state is no sandbox's to read either: the output other
	// sessions' commands left (a command of one sandbox read another's,
	// whatever their policies: found by an attack pass), the quarantine,
	// the journals and the audit's records.
	pol2.FS.DenyRead = append(append([]policy.PathRule(nil), pol.FS.DenyRead...), policy.PathRule{Path: st, Source: ownStateSource})
	own := ""
	if id := ln.l.As; id != nil && id.Home != "" {
		// moatd: the git audit quarantines into the user's own state.
		own = filepath.Join(id.Home, ".local", "state", "moat")
		pol2.Protect = append(pol2.Protect, own)
		pol2.FS.DenyRead = append(pol2.FS.DenyRead, policy.PathRule{Path: own, Source: ownStateSource})
	}
	if ln.nons {
		dir, err := os.MkdirTemp("", "moat-run-")
		if err != nil {
			return fmt.Errorf("the command's temporary directory: %w", err)
		}
		ln.tmpDir = dir
	}
	var ownErr error
	uid, gid := ln.ids()
	in := planInput{pol: &pol2, uid: uid, gid: gid, exposeRO: expose,
		cache: cacheIO{dir: filepath.Join(st, "cache")}, mountPoint: ln.mountPoint, noMounts: ln.nons, dirs: ln.dirs,
		xdgConfigHome: envValue(ln.l.Env, "XDG_CONFIG_HOME"), hgrcPath: envValue(ln.l.Env, "HGRCPATH"), asClient: ln.l.As != nil,
		gitConfigGlobal: envValue(ln.l.Env, "GIT_CONFIG_GLOBAL"), gitConfigSystem: envValue(ln.l.Env, "GIT_CONFIG_SYSTEM"),
		gitTemplateDir: envValue(ln.l.Env, "GIT_TEMPLATE_DIR")}
	if id := ln.l.As; id != nil {
		// (The survey runs with them: what it reads, git's configs
		// included, and what it asks of reach, it looks at as the client.)
		in.clientReach = lstatReach
		// Every look the plan takes is the client's (as the making and
		// removing of its placeholders are), and its caches are root's,
		// one per uid, read and written by a goroutine of the daemon's.
		w, err := ln.clientWorker()
		if err != nil {
			return err
		}
		in.look = func(fn func()) { w.Do(func() error { fn(); return nil }) }
		if own != "" {
			// The client's moat state exists before the plan, made as the
			// client, so that the plan hides and protects it as it does
			// any existing path. One that did not exist yet was neither
			// (a hidden path is no protection to reserve, and a missing
			// one needs no mount): a command with a writable home made
			// ~/.local/state/moat/cache and wrote the git audit's record
			// of the tree there, which the audit after the run reads, and
			// a record giving a new repository's directory its own stamps
			// and no .git kept the audit from looking in it, so a
			// core.fsmonitor planted there ran at the user's next git
			// status (found by attack pass 57;
			// TestDaemonAttackSandboxMakesClientState).
			ownErr = w.Do(func() error { return os.MkdirAll(own, 0o700) })
		}
		in.cache = clientCache(st, id.Uid, func(fn func()) {
			done := make(chan struct{})
			go func() { defer close(done); fn() }() // not on the thread w lent the client's credentials
			<-done
		})
	}
	if ln.l.As == nil && uid == 0 && !ln.nons {
		// Root's sandbox maps root alone: what it cannot reach needs no
		// protection, and no mask (stage 2 could not mount over it).
		in.reach, in.clientReach = rootReach, rootReach
	}
	if ln.l.As == nil && uid != 0 && !ln.nons {
		in.kernelHides = kernelHidden(uid)
	}
	if ln.nons {
		in.mountPoint = nil // nothing is mounted: no placeholders
	}
	if ln.memoryByRlimit() {
		in.tmpfsSize = ln.eff.Memory
	}
	if pol.Violations && !ln.nons && ln.l.As == nil {
		// Reads of hidden files are reported: each gets a sentinel of
		// its own (moatd's sandboxes, started as another user, keep
		// /dev/null: that user could not open root's state directory).
		in.sentinel = ln.sentinel
	}
	fp, err := makeFSPlan(in)
	if err != nil {
		return err
	}
	if ownErr != nil {
		// It could not be made (a file in its way, a directory of the
		// client's without write permission): where a writable tree holds
		// it, the command could make it, so the run is refused.
		var c string
		var exists bool
		var cerr error
		in.lookAs(func() { c, exists, cerr = ln.dirs.canonical(own) })
		if cerr != nil {
			c, exists = own, false
		}
		if !exists && inAnyRoot(c, fp.view.allowWrite) {
			return fmt.Errorf("moat's state for this user, %s, cannot be made (%v), and a writable tree of the sandbox holds it: the command could make it and write the git audit's record; make it a directory of the user's", own, ownErr)
		}
	}
	if ln.nons {
		// The run's TMPDIR is writable (a Landlock rule of its own); the
		// view knows it for the violation report.
		fp.view.allowWrite = append(fp.view.allowWrite, rule{path: ln.tmpDir, source: "the run's TMPDIR"})
		ln.skipped = noNSSkipped(pol, landlockABI(), ln.kf != nil, fp.protected)
	}
	ln.fp = fp
	if ln.l.Planned != nil {
		if err := ln.l.Planned(ln.Footprint()); err != nil {
			return err
		}
	}
	ln.step("filesystem planned")
	prog, err := seccompProgram(filepath.Join(st, "cache"), seccompOptions(pol, ln.nons, ln.session, ln.memoryByRlimit(), ln.landlockTCP(), ln.memoryBound()))
	if err != nil {
		return err
	}
	ln.step("seccomp ready")
	// Without a network namespace (moat.shareNetwork, or the no-namespace
	// tier) the proxy listens on the host's loopback with a per-run
	// credential.
	if ln.net, err = newNetwork(ln.l.Proxy, pol.Net.Shared || ln.nons); err != nil {
		return err
	}
	ln.exe = exe
	ln.plan = ln.buildPlan(prog, ln.commandEnv(ln.l.Env))
	ln.logPlan()
	return nil
}

// logPlan tells the debug log what the sandbox will be (as srt's debug
// mode does): the writable trees, each protection, what was left out, and
// every step stage 2 takes (mounts, Landlock rules, rlimits, ...).
func (ln *launcher) logPlan() {
	log := ln.l.Log
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	for _, t := range ln.fp.llTrees {
		log.Debug("writable", "path", t)
	}
	for _, f := range ln.fp.llFiles {
		log.Debug("writable file", "path", f)
	}
	for _, p := range ln.fp.protected {
		log.Debug("protected", "path", p)
	}
	for _, ph := range ln.fp.placeholders {
		log.Debug("placeholder", "path", ph.path)
	}
	for _, n := range ln.fp.notes {
		log.Debug("note", "text", n)
	}
	for i, d := range ln.plan.Desc {
		log.Debug("stage 2", "step", i, "op", d)
	}
}

// commandEnv is a command's environment: credentials removed, git's
// safe.directory entries, a TMPDIR it can write, the proxy's variables.
func (ln *launcher) commandEnv(base []string) []string {
	pol := ln.pol
	env, removed := policy.FilterEnv(base, pol.Env.Allow, pol.Env.Set)
	if len(removed) > 0 {
		ln.l.Log.Debug("environment", "removed", strings.Join(removed, ","))
	}
	env = withGitSafeDirs(env, pol.Env.GitSafeDirectories)
	env = fixTmpdir(env, ln.fp.view)
	if ln.nons {
		env = mergeEnv(env, []string{"TMPDIR=" + ln.tmpDir})
	}
	return mergeEnv(env, ln.net.env(ln.exe))
}

// mountPoint makes sure a protected path the plan mounts over exists on the
// host: it creates a placeholder for a missing one, or adopts another run's
// (errVanished when there is nothing left to mount over). Placeholders go
// through the journal, under its global lock, which is held until the
// sandbox's mounts are in place: a run that ends meanwhile cannot remove a
// placeholder this one mounts over.
func (ln *launcher) mountPoint(path string, ph *placeholder) error {
	if ln.jr == nil {
		jr, err := journal.BeginContext(ln.ctx, ln.journalDir())
		if err != nil {
			return err
		}
		ln.jr = jr
		if ln.l.As != nil {
			// moatd: placeholders in the client's trees are made and
			// removed with the client's credentials (clientWorker).
			w, err := ln.clientWorker()
			if err != nil {
				jr.Close()
				ln.jr = nil
				return err
			}
			jr.SetAs(w.Do)
		}
	}
	// Its directory is held first, while this run plans: no run, of this
	// journal or another, removes a placeholder there meanwhile
	// (journal.Hold).
	if err := ln.jr.Hold(ln.ctx, filepath.Dir(path)); err != nil {
		return err
	}
	// What it mounts over is pinned (journal.Pin) once it is known.
	if ln.exists(path) {
		adopted, err := ln.jr.Adopt(path)
		if err != nil {
			return err
		}
		if adopted {
			return ln.jr.Pin(path)
		}
		if ln.exists(path) {
			// The user's own, mounted over as it is, or a placeholder
			// of another journal's run, claimed (journal.Claim).
			if _, err := ln.jr.Claim(path); err != nil {
				return err
			}
			return ln.jr.Pin(path)
		}
		// Another run's placeholder, removed while this run waited to
		// adopt it: made again below.
	}
	if ph == nil {
		return errVanished
	}
	if err := ln.jr.Create(ph.path, ph.kind, ph.content); err != nil {
		return err
	}
	// What was made (a filesystem without socket inodes gets a directory)
	// or adopted.
	if k, ok := ln.jr.KindOf(ph.path); ok {
		ph.kind = k
	}
	return ln.jr.Pin(ph.path)
}

// clientWorker runs functions with moatd's client's credentials for this
// launch, each on its caller's thread (ascred.Borrower: a thread of its
// own, ascred.Worker, cost two thread wake-ups a look, 3-6 ms a plan).
func (ln *launcher) clientWorker() (*ascred.Borrower, error) {
	if ln.asWorker == nil {
		id := ln.l.As
		w, err := ascred.NewBorrower(id.Uid, id.Gid, identityGroups(id))
		if err != nil {
			return nil, err
		}
		ln.asWorker = w
	}
	return ln.asWorker, nil
}

// exists reports whether path can be looked up: as the client, for moatd.
func (ln *launcher) exists(path string) bool {
	look := func() error { _, err := os.Lstat(path); return err }
	if ln.l.As == nil {
		return look() == nil
	}
	w, err := ln.clientWorker()
	return err == nil && w.Do(look) == nil
}

// buildPlan encodes everything stage 2 does, in order.
func (ln *launcher) buildPlan(prog []byte, env []string) *nsinit.Plan {
	pol := ln.pol
	p := nsinit.New()
	mode := uint32(0)
	if ln.nons {
		mode |= nsinit.ModeNoNS
	}
	if ln.session {
		mode |= nsinit.ModeSession
	}
	if mode != 0 {
		p.Mode(mode)
	}
	if !ln.nons {
		p.Hostname("moat")
		if !pol.Net.Shared {
			p.LoUp()
			for _, a := range listenAddrs {
				p.Listen(a.family, a.addr, a.port)
			}
		}
		if ln.jr != nil && len(ln.jr.Placeholders()) > 0 {
			p.Cleanup([]string{"/proc/self/exe", cleanupArg, ln.journalDir(), ln.jr.ID()})
		}
		ln.fp.build(p)
		// No new user namespaces, as a second layer behind seccomp. With
		// the host's /proc (host-proc tier) in a container that mounts
		// /proc/sys read-only, the knob cannot be written: seccomp alone
		// holds it, and that is said.
		if pol.FS.WeakerNested && readOnlyMount("/proc/sys") {
			ln.skipped = append(ln.skipped, enforce.Skip{Protection: enforce.ProtectionUsernsSysctl,
				Reason: "user.max_user_namespaces=0 inside (this host's /proc/sys is read-only): seccomp alone refuses new user namespaces"})
		} else {
			p.Sysctl("/proc/sys/user/max_user_namespaces", "0")
			for _, c := range ucountCaps() {
				p.Sysctl("/proc/sys/user/"+c.name, strconv.FormatUint(c.value, 10))
			}
		}
		ln.fp.lockdown(p)
	}
	p.NewKeyring()
	p.Cwd(pol.Cwd)
	ln.skipped = append(ln.skipped, rlimits(p, ln.eff, ln.lim, ln.nons, ln.l.As)...)
	if t := ln.l.Terminal; t != nil && !ln.session {
		p.PTY(t.Mask, t.Rows, t.Cols)
	}
	ln.landlock(p)
	flags := uint32(0)
	if pol.Violations || (len(pol.Net.AllowUnixSockets) > 0 && !pol.Net.AllowAllUnixSockets) || (ln.nons && os.Geteuid() != 0) {
		// (the metadata broker of the no-namespace tier as a user)
		flags |= nsinit.SeccompListen
	}
	if ln.kf != nil {
		p.WaitGo()
	}
	p.Seccomp(prog, flags)
	if !ln.session {
		p.Exec(ln.l.Argv[0], ln.l.Argv, env, execFlags(ln.l.Argv[0]))
	}
	return p
}

// execFlags: a bare name is looked up in the command's PATH.
func execFlags(argv0 string) uint32 {
	if strings.ContainsRune(argv0, '/') {
		return 0
	}
	return nsinit.ExecSearch
}

// landlockTCPPorts are the only ports TCP may connect to, where Landlock
// holds that (the no-namespace tier without eBPF: the proxy's), or nil.
// (With eBPF, the cgroup's programs confine every protocol and report what
// they refuse; Landlock would refuse TCP first, silently.)
func (ln *launcher) landlockTCPPorts() map[uint16]bool {
	if !ln.landlockTCP() || ln.net == nil {
		return nil
	}
	ports := map[uint16]bool{}
	for _, a := range ln.net.hostAddrs {
		ports[a.Port()] = true
	}
	return ports
}

// landlockTCP: Landlock alone confines TCP (to the proxy's ports).
func (ln *launcher) landlockTCP() bool {
	return ln.nons && ln.kf == nil && landlockABI() >= 4
}

// landlock plans the Landlock ruleset: writes only where the policy allows
// them (a second layer behind the mounts, the only one without them), TCP
// binding only with allowLocalBinding, and in the no-namespace tier the
// hiding of denyRead and TCP only to the proxy.
func (ln *launcher) landlock(p *nsinit.Plan) {
	abi := landlockABI()
	if abi == 0 {
		return
	}
	pol := ln.pol
	fsMask := landlockWriteRights(abi)
	var scoped uint64
	if abi >= 6 {
		scoped = llScopeAbstractUnix | llScopeSignal
	}
	var netMask uint64
	if abi >= 4 && !pol.Net.AllowLocalBinding {
		netMask = llBindTCP // no rule: servers cannot listen (allowLocalBinding)
	}
	var readDirs, readTrees []string
	if ln.nons {
		// Without a mount namespace Landlock does the hiding (reads) and
		// the network confinement (TCP to the proxy only). The host's
		// /dev is hidden but for the harmless nodes: its terminals (other
		// sessions' keystrokes), block devices (a disk read raw holds
		// every denyRead file), and /dev/shm (other processes' shared
		// memory) were readable, found by an attack pass.
		readDirs, readTrees = readRules(nonsReadView(ln.fp.view))
		if len(readDirs) > 0 {
			fsMask |= llReadFile | llReadDir
		}
		if ln.landlockTCPPorts() != nil {
			netMask |= llConnectTCP
		}
	}
	p.LandlockRuleset(abi, fsMask, netMask, scoped)
	writeMask := fsMask &^ (llReadFile | llReadDir)
	for _, t := range ln.fp.llTrees {
		p.LandlockPath(t, writeMask, nsinit.LLOptional)
	}
	if ln.nons {
		p.LandlockPath(ln.tmpDir, writeMask|fsMask&(llReadFile|llReadDir), 0)
		for _, d := range readDirs {
			p.LandlockPath(d, llReadDir, nsinit.LLOptional)
		}
		for _, t := range readTrees {
			p.LandlockPath(t, llReadFile|llReadDir, nsinit.LLOptional)
		}
		for port := range ln.landlockTCPPorts() {
			p.LandlockPort(llConnectTCP, uint64(port))
		}
	}
	for _, f := range ln.fp.llFiles {
		p.LandlockPath(f, writeMask, nsinit.LLOptional)
	}
	devFile := uint64(llWriteFile)
	if abi >= 3 {
		devFile |= llTruncate
	}
	devs := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts"}
	if ln.nons {
		// The host's /dev/pts holds every terminal of the host (its own,
		// fds 0-2, are reopened through the stdio rule), and /dev/shm is
		// the host's shared memory: neither is writable without a mount
		// namespace.
		devs = devs[:4]
	}
	for _, d := range devs {
		p.LandlockPath(d, devFile, 0)
	}
	if !ln.nons {
		p.LandlockPath("/dev/shm", writeMask, nsinit.LLOptional)
	}
	// Nothing in /proc is writable (the files behind fds 0-2 are reopened
	// through the stdio rule): /proc/PID/mem of another process of the
	// sandbox was, and a program an allowed command ran rewrote the
	// session shell's exit trap (found by an attack pass;
	// TestProcMemNotWritable). Without namespaces /proc is the host's,
	// whose kernel knobs a root command could write.
	p.LandlockStdio(devFile)
}

// withGitSafeDirs passes safe.directory entries to git through the
// environment (GIT_CONFIG_COUNT/KEY_n/VALUE_n), after any the caller set.
func withGitSafeDirs(env []string, dirs []string) []string {
	if len(dirs) == 0 {
		return env
	}
	n := 0
	idx := -1
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			fmt.Sscanf(v, "%d", &n)
			idx = i
		}
	}
	for _, d := range dirs {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=safe.directory", n), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, d))
		n++
	}
	c := fmt.Sprintf("GIT_CONFIG_COUNT=%d", n)
	if idx >= 0 {
		env[idx] = c
	} else {
		env = append(env, c)
	}
	return env
}

// fixTmpdir points TMPDIR at /tmp when the inherited one is not writable
// inside the sandbox.
func fixTmpdir(env []string, v *view) []string {
	for i, kv := range env {
		if d, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			if ok, _ := v.writable(filepath.Clean(d)); !ok && filepath.IsAbs(d) {
				env[i] = "TMPDIR=/tmp"
			}
			return env
		}
	}
	return env
}

// lstatReach reports, for each path, whether this thread can look it up
// (false only when permissions refuse it; a lookup that fails otherwise
// leaves the plan to decide about the path as before).
func lstatReach(paths []string) []bool {
	res := make([]bool, len(paths))
	for i, p := range paths {
		_, err := os.Lstat(p)
		res[i] = !errors.Is(err, fs.ErrPermission)
	}
	return res
}

// kernelHidden returns a planInput.kernelHides for a sandbox of this
// process's credentials whose user namespace maps uid alone: a path it
// cannot look up, or one of another user's that it may neither read nor
// write (a file) or neither list nor search (a directory), as the kernel judges this
// process (its groups and ACLs included). The sandbox cannot gain more:
// its capabilities are its own user namespace's, which maps no other
// user's files, and it cannot change another user's modes. A path of
// uid's own is never counted (its owner may chmod it where it can
// write), nor a symbolic link.
func kernelHidden(uid int) func(paths []string) []bool {
	return func(paths []string) []bool {
		res := make([]bool, len(paths))
		for i, p := range paths {
			var st unix.Stat_t
			err := sys.Retry(func() error { return unix.Lstat(p, &st) })
			switch {
			case errors.Is(err, unix.EACCES):
				res[i] = true
			case err != nil, int(st.Uid) == uid:
			case st.Mode&unix.S_IFMT == unix.S_IFDIR:
				res[i] = !accessible(p, unix.R_OK) && !accessible(p, unix.X_OK)
			case st.Mode&unix.S_IFMT != unix.S_IFLNK:
				res[i] = !accessible(p, unix.R_OK) && !accessible(p, unix.W_OK)
			}
		}
		return res
	}
}

// accessible reports whether this process (its effective ids) may access
// p as mode asks.
func accessible(p string, mode uint32) bool {
	err := sys.Retry(func() error { return unix.Faccessat2(unix.AT_FDCWD, p, mode, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW) })
	return !errors.Is(err, unix.EACCES)
}

// rootReach is lstatReach as root's sandbox would look: on a thread
// without capabilities, as its command has none over another user's
// files. If the check cannot be made, every path counts as reachable.
func rootReach(paths []string) []bool {
	res := make([]bool, len(paths))
	for i := range res {
		res[i] = true
	}
	ascred.DoCapless(func() error { res = lstatReach(paths); return nil })
	return res
}

// ucountLimits are the per-user kernel counts a sandbox gets half of: the
// host's limit (fs.*), and the same count's limit in moat's own user
// namespace (user.*), whichever is lower. The kernel charges such a count
// to the user in every user namespace up to the host's, so a command that
// made inotify instances until it was refused took all of its user's
// (root's, as root), and the user's own programs (editors, systemd) could
// make none while it ran (found by attack pass 46). The sandbox's own
// user namespace caps them at half; what several sandboxes of one user
// take together is still bounded only by the host's limit.
var ucountLimits = []struct{ host, name string }{
	{"fs/inotify/max_user_instances", "max_inotify_instances"},
	{"fs/inotify/max_user_watches", "max_inotify_watches"},
	{"fs/fanotify/max_user_groups", "max_fanotify_groups"},
	{"fs/fanotify/max_user_marks", "max_fanotify_marks"},
}

type ucountCap struct {
	name  string
	value uint64
}

// ucountCapsTTL is how long ucountCaps keeps what it read: eight reads of
// /proc/sys took 0.35-0.9 ms of every run's plan (its critical path), for
// limits an administrator rarely changes. A change reaches the sandboxes
// that start after this long.
const ucountCapsTTL = 30 * time.Second

var ucountCapsCache struct {
	sync.Mutex
	at   time.Time
	caps []ucountCap
}

// ucountCaps returns the caps of ucountLimits this kernel has (fanotify's
// came in 5.13), at least 1 each, as read at most ucountCapsTTL ago.
func ucountCaps() []ucountCap {
	c := &ucountCapsCache
	c.Lock()
	defer c.Unlock()
	if c.at.IsZero() || time.Since(c.at) >= ucountCapsTTL {
		c.caps, c.at = readUcountCaps(), time.Now()
	}
	return c.caps
}

func readUcountCaps() []ucountCap {
	read := func(p string) (uint64, bool) {
		b, err := os.ReadFile("/proc/sys/" + p)
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return v, err == nil
	}
	var out []ucountCap
	for _, l := range ucountLimits {
		own, ok := read("user/" + l.name)
		if !ok {
			continue // not a count of this kernel: no such file inside either
		}
		if host, ok := read(l.host); ok && host < own {
			own = host
		}
		out = append(out, ucountCap{l.name, max(own/2, 1)})
	}
	return out
}
