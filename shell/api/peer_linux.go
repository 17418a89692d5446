//go:build linux

package api

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// checkPeer reads the peer's credentials from the socket (SO_PEERCRED):
// it must be this server's user, and its process must share this
// process's user and mount namespaces and be confined as it is
// (sameConfinement). The socket's mode (0600) already keeps other users
// out; this holds even if the mode were widened, and keeps out a command
// of one of the server's own sandboxes (each runs in new namespaces), or
// of another sandbox, that could reach the socket. What it read of the
// peer's process is returned for the routes that compare more
// (POST /v1/cli/run): read now, when the peer connects, and proved to be
// the peer's by a pidfd taken from the socket (SO_PEERPIDFD) that still
// names a live process after the reads, so that a pid reused later cannot
// stand in for it.
func checkPeer(c net.Conn) (*procState, error) {
	cred, err := peerCred(c)
	if err != nil {
		return nil, err
	}
	if int(cred.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("the peer runs as uid %d, not as the server's user (%d)", cred.Uid, os.Geteuid())
	}
	if cred.Pid <= 0 {
		return nil, errors.New("the peer's process is not visible from the server's PID namespace")
	}
	pidfd := peerPidfd(c)
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	// The server's own process is read beside the peer's.
	var mine *procState
	var mineErr error
	read := make(chan struct{})
	go func() {
		defer close(read)
		mine, mineErr = readProc(0)
	}()
	theirs, err := readProc(int(cred.Pid))
	<-read
	if err != nil {
		return nil, fmt.Errorf("cannot read the peer's process: %v", err)
	}
	if pidfd >= 0 {
		if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
			return nil, fmt.Errorf("the peer's process ended while it was checked: %v", err)
		}
	}
	if mineErr != nil {
		return nil, fmt.Errorf("cannot read the server's own process: %v", mineErr)
	}
	for _, ns := range []struct{ name, mine, theirs string }{{"user", mine.userns, theirs.userns}, {"mnt", mine.mntns, theirs.mntns}} {
		if ns.mine != ns.theirs {
			return nil, fmt.Errorf("the peer runs in another %s namespace (a sandboxed command?)", ns.name)
		}
	}
	if err := sameConfinement(mine, theirs); err != nil {
		return nil, err
	}
	return theirs, nil
}

// sameConfinement refuses a peer confined otherwise than the server: under
// no_new_privs or seccomp filters the server is not under, with other
// capability sets, another LSM label, in another network namespace or
// root directory (chroot).
// Another sandbox's command (Landlock sets no_new_privs; most sandboxes add
// a seccomp filter) shares the server's user and mount namespaces and could
// reach the socket: the server's commands would run without that sandbox's
// confinement (and the proxy's connections leave from the server's
// network namespace).
func sameConfinement(mine, theirs *procState) error {
	for _, k := range []string{"NoNewPrivs", "Seccomp", "Seccomp_filters", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if m, t := statusValue(mine.status, k), statusValue(theirs.status, k); m != t {
			return fmt.Errorf("the peer is confined otherwise than the server (%s %s, the server's %s): a command of another sandbox gets no command run by this server", k, t, m)
		}
	}
	if mine.labelOK != theirs.labelOK || mine.label != theirs.label {
		return fmt.Errorf("the peer runs under another LSM label than the server (%q, the server's %q)", strings.TrimSpace(theirs.label), strings.TrimSpace(mine.label))
	}
	if mine.netns != theirs.netns {
		return errors.New("the peer runs in another network namespace than the server")
	}
	if mine.rootDev != theirs.rootDev || mine.rootIno != theirs.rootIno {
		return errors.New("the peer runs in another root directory than the server (a chroot)")
	}
	return nil
}

// peerPidfd is a pidfd of the socket's peer (SO_PEERPIDFD), -1 where the
// kernel has none.
func peerPidfd(c net.Conn) int {
	pidfd := -1
	if uc, ok := c.(*net.UnixConn); ok {
		if raw, err := uc.SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) {
				if v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
					pidfd = v
				}
			})
		}
	}
	return pidfd
}

// peerCred returns the credentials of a unix socket's peer.
func peerCred(c net.Conn) (*syscall.Ucred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("not a unix socket (%T): the API answers only on unix sockets", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return cred, nil
}

// peerGroups returns the supplementary groups of a unix socket's peer
// when it connected (SO_PEERGROUPS: Linux 4.13 on), as SO_PEERCRED has
// its uid and gid.
func peerGroups(c net.Conn) ([]int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, fmt.Errorf("not a unix socket (%T): the API answers only on unix sockets", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var (
		gids []uint32
		gerr error
	)
	if err := raw.Control(func(fd uintptr) {
		// Too small a buffer gets ERANGE and the size needed.
		for n := 64; ; {
			buf := make([]uint32, n)
			size := uint32(4 * n)
			_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_PEERGROUPS, uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0)
			runtime.KeepAlive(buf)
			if e == unix.ERANGE && int(size/4) > n && n < 1<<17 {
				n = int(size / 4)
				continue
			}
			switch {
			case e != 0:
				gerr = e
			case int(size/4) > n:
				gerr = fmt.Errorf("%d bytes for %d groups", size, n)
			default:
				gids = buf[:size/4]
			}
			return
		}
	}); err != nil {
		return nil, err
	}
	if gerr != nil {
		return nil, fmt.Errorf("SO_PEERGROUPS (the peer's groups): %w", gerr)
	}
	out := make([]int, len(gids))
	for i, g := range gids {
		out[i] = int(g)
	}
	return out, nil
}

// checkDaemonPeer reads who connected to the daemon from the kernel
// (SO_PEERCRED and SO_PEERGROUPS: its uid, gid and groups when it
// connected; SO_PEERPIDFD where the kernel has it, so that the process
// whose namespaces are checked is the peer and not a process that reused
// its pid). Any user may connect (the socket's mode and group decide who
// can), but only from the host's own user and mount namespaces (those of
// PID 1; the daemon itself may run in a mount namespace of its own,
// systemd's ProtectSystem): a command inside a sandbox, or in a container,
// never gets a session of the user's.
//
// A refused peer's Peer is returned too, with the error: its uid (from the
// kernel, in the daemon's user namespace) still counts against that user's
// connections.
func checkDaemonPeer(c net.Conn) (*Peer, error) {
	cred, err := peerCred(c)
	if err != nil {
		return nil, err
	}
	p := &Peer{Uid: int(cred.Uid), Gid: int(cred.Gid), Pid: int(cred.Pid)}
	if cred.Pid <= 0 {
		return p, errors.New("the peer's process is not visible from the daemon's PID namespace")
	}
	// The peer's groups are those its process had when it connected, as
	// its gid is: a process started with fewer groups than the user
	// database lists (setpriv --clear-groups, a service manager's
	// SupplementaryGroups, a CI runner) got a sandbox with all of them
	// (found by an attack pass).
	if p.Groups, err = peerGroups(c); err != nil {
		return p, err
	}
	pidfd := peerPidfd(c)
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	ref, err := hostNamespaces()
	if err != nil {
		return p, err
	}
	for i, ns := range []string{"user", "mnt"} {
		host := ref[i]
		theirs, err := os.Readlink("/proc/" + strconv.Itoa(int(cred.Pid)) + "/ns/" + ns)
		if err != nil {
			return p, fmt.Errorf("cannot read the peer's %s namespace: %v", ns, err)
		}
		if host != theirs {
			return p, fmt.Errorf("the peer runs in another %s namespace than the host's (a sandboxed command, a container?)", ns)
		}
	}
	// A peer in another root directory than the host's is a command
	// jailed by chroot (a build chroot, an SFTP jail) that reaches the
	// socket: its sandbox would be made in the host's tree, and a
	// chrooted client read a file of the user's outside its jail (attack
	// pass 105, TestDaemonAttackPeerInChroot).
	if root, err := hostRoot(); err != nil {
		return p, err
	} else {
		var st unix.Stat_t
		if err := unix.Stat("/proc/"+strconv.Itoa(int(cred.Pid))+"/root", &st); err != nil {
			return p, fmt.Errorf("cannot read the peer's root directory: %v", err)
		}
		if st.Dev != root[0] || st.Ino != root[1] {
			return p, errors.New("the peer runs in another root directory than the host's (a chroot): its sandbox would be made in the host's tree")
		}
	}
	// A peer in another network namespace than the daemon's is a command
	// confined to a network of its own (unshare -n, ip netns exec, a
	// service's private network): its sandbox's proxy connects from the
	// daemon's namespace, and a command with no network at all reached
	// the host's loopback services the user's policy allows through it
	// (attack pass 105, TestDaemonAttackPeerInOtherNetns).
	if own, err := daemonNetns(); err != nil {
		return p, err
	} else if theirs, err := os.Readlink("/proc/" + strconv.Itoa(int(cred.Pid)) + "/ns/net"); err != nil {
		return p, fmt.Errorf("cannot read the peer's net namespace: %v", err)
	} else if theirs != own {
		return p, errors.New("the peer runs in another network namespace than the daemon's (a command confined to a network of its own?): its sandbox would get the daemon's network")
	}
	// A peer under no_new_privs or a seccomp filter is a command of some
	// sandbox (Landlock sets no_new_privs): the daemon's commands would
	// run without that sandbox's confinement. (The daemon itself may run
	// under NoNewPrivileges=yes: a peer is compared with a login process,
	// not with the daemon.)
	if st, err := procStatus(strconv.Itoa(int(cred.Pid))); err != nil {
		return p, fmt.Errorf("cannot read the peer's process: %v", err)
	} else if nnp, sc := statusValue(st, "NoNewPrivs"), statusValue(st, "Seccomp"); nnp != "0" || sc != "0" {
		return p, fmt.Errorf("the peer runs under no_new_privs (%s) or seccomp (%s): a command of another sandbox gets no command run by the daemon", nnp, sc)
	} else {
		// Its umask is its sandbox's: with the daemon's (022 where it was
		// started from a shell), a client under umask 077 made files any
		// user could read (attack pass 105, TestDaemonAttackClientUmask).
		u, err := strconv.ParseUint(statusValue(st, "Umask"), 8, 32)
		if err != nil {
			return p, fmt.Errorf("cannot read the peer's umask: %v", err)
		}
		m := int(u & 0o777)
		p.Umask = &m
	}
	// Its resource limits bound its sandbox's: the daemon's own are
	// root's, and a client under a hard RLIMIT_CPU of one second (an
	// administrator's limits.conf) ran a command for as long as it liked
	// (attack pass 105, TestDaemonAttackClientRlimitsEscaped).
	// (From /proc/PID/limits, open to all: prlimit(2) on another process
	// needs CAP_SYS_RESOURCE, which a daemon may be started without.)
	if p.Rlimits, err = procRlimits(int(cred.Pid)); err != nil {
		return p, fmt.Errorf("cannot read the peer's resource limits: %v", err)
	}
	// So do its nice value and oom_score_adj, which a user cannot lower
	// (the latter below what a privileged process set): a client at nice
	// 15 ran its commands at the daemon's 0 (attack pass 105,
	// TestDaemonAttackClientNiceEscaped).
	if p.Nice, p.OOMScoreAdj, err = procPriority(int(cred.Pid)); err != nil {
		return p, fmt.Errorf("cannot read the peer's priority: %v", err)
	}
	if pidfd >= 0 {
		// The pid still names the peer (it has not exited and been reused).
		if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
			return p, fmt.Errorf("the peer's process ended while it was checked: %v", err)
		}
	}
	return p, nil
}

// procPriority reads the nice value (the 19th field of /proc/PID/stat)
// and the oom_score_adj of process pid.
func procPriority(pid int) (nice, oom *int, err error) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := readText(dir + "/stat")
	if err != nil {
		return nil, nil, err
	}
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(f) < 17 {
		return nil, nil, fmt.Errorf("%s/stat: %d fields", dir, len(f)+2)
	}
	n, err := strconv.Atoi(f[16])
	if err != nil {
		return nil, nil, fmt.Errorf("%s/stat: nice %q", dir, f[16])
	}
	text, err := readText(dir + "/oom_score_adj")
	if err != nil {
		return nil, nil, err
	}
	o, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		return nil, nil, fmt.Errorf("%s/oom_score_adj: %q", dir, text)
	}
	return &n, &o, nil
}

// procRlimits reads the soft and hard limits of process pid from
// /proc/PID/limits, by resource: its lines are the resources in order,
// each a name of 25 columns, then the soft and hard limit ("unlimited" or
// a number) and a unit.
func procRlimits(pid int) ([][2]uint64, error) {
	text, err := readText("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != rlimNlimits+1 {
		return nil, fmt.Errorf("/proc/%d/limits: %d lines, want %d", pid, len(lines), rlimNlimits+1)
	}
	out := make([][2]uint64, rlimNlimits)
	for r, line := range lines[1:] {
		if len(line) < 26 {
			return nil, fmt.Errorf("/proc/%d/limits: line %q", pid, line)
		}
		f := strings.Fields(line[25:])
		if len(f) < 2 {
			return nil, fmt.Errorf("/proc/%d/limits: line %q", pid, line)
		}
		for i, v := range f[:2] {
			if v == "unlimited" {
				out[r][i] = unix.RLIM_INFINITY
				continue
			}
			if out[r][i], err = strconv.ParseUint(v, 10, 64); err != nil {
				return nil, fmt.Errorf("/proc/%d/limits: line %q: %v", pid, line, err)
			}
		}
	}
	return out, nil
}

// hostRoot is the device and inode of the host's root directory, the one
// the daemon's clients must have, read once from the process
// hostNamespaces reads (PID 1, else the daemon's parent, else itself).
var hostRoot = sync.OnceValues(func() ([2]uint64, error) {
	var st unix.Stat_t
	var err error
	for _, pid := range []string{"1", strconv.Itoa(os.Getppid()), "self"} {
		if err = unix.Stat("/proc/"+pid+"/root", &st); err == nil {
			return [2]uint64{st.Dev, st.Ino}, nil
		}
	}
	return [2]uint64{}, fmt.Errorf("cannot read the daemon's root directory: %v", err)
})

// daemonNetns is the daemon's own network namespace, from which its
// sandboxes' proxies connect, read once.
var daemonNetns = sync.OnceValues(func() (string, error) {
	ns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return "", fmt.Errorf("cannot read the daemon's net namespace: %v", err)
	}
	return ns, nil
})

// hostNamespaces are the user and mount namespaces the daemon's clients
// must be in, read once: PID 1's; where PID 1 cannot be read (a VM's or
// container's init that refuses it), those of the process that started the
// daemon, which its own may not be (a supervisor that gives the daemon a
// mount namespace of its own, as systemd's ProtectSystem does); else the
// daemon's own.
var hostNamespaces = sync.OnceValues(func() ([2]string, error) {
	var out [2]string
	ppid := strconv.Itoa(os.Getppid())
	for i, ns := range []string{"user", "mnt"} {
		var err error
		for _, pid := range []string{"1", ppid, "self"} {
			if out[i], err = os.Readlink("/proc/" + pid + "/ns/" + ns); err == nil {
				break
			}
		}
		if err != nil {
			return out, fmt.Errorf("cannot read the daemon's %s namespace: %v", ns, err)
		}
	}
	return out, nil
})
