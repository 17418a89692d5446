//go:build linux

package api

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
)

// procState is what moat serve reads of a process (a peer, or itself) to
// compare them: what confines it and what a command it starts inherits.
type procState struct {
	pid                  int
	status               string // /proc/PID/status
	cgroup               string
	label                string // the LSM label (attr/current)
	labelOK              bool
	userns, mntns, netns string
	exeDev, exeIno       uint64
	exeErr               error
	rootDev, rootIno     uint64 // its root directory (chroot)
	nice, policy, rtprio string // /proc/PID/stat
	oomScoreAdj          string
	personality          string
	personalityErr       error
	ioprio               int
	rlimits              [rlimNlimits]unix.Rlimit
}

// readProc reads process pid (0: this one).
func readProc(pid int) (*procState, error) {
	dir := "/proc/self"
	if pid != 0 {
		dir = "/proc/" + strconv.Itoa(pid)
	}
	st := &procState{pid: pid}
	var err error
	if st.status, err = readText(dir + "/status"); err != nil {
		return nil, err
	}
	if st.cgroup, err = readText(dir + "/cgroup"); err != nil {
		return nil, err
	}
	st.label, err = readText(dir + "/attr/current")
	st.labelOK = err == nil
	for _, ns := range []struct {
		name string
		to   *string
	}{{"user", &st.userns}, {"mnt", &st.mntns}, {"net", &st.netns}} {
		if *ns.to, err = os.Readlink(dir + "/ns/" + ns.name); err != nil {
			return nil, err
		}
	}
	var fi unix.Stat_t
	if st.exeErr = unix.Stat(dir+"/exe", &fi); st.exeErr == nil {
		st.exeDev, st.exeIno = fi.Dev, fi.Ino
	}
	if err := unix.Stat(dir+"/root", &fi); err != nil {
		return nil, err
	}
	st.rootDev, st.rootIno = fi.Dev, fi.Ino
	stat, err := readText(dir + "/stat")
	if err != nil {
		return nil, err
	}
	// After the command's name, "(...)", the fields from the third on:
	// nice is the 19th, rt_priority the 40th, policy the 41st.
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(f) < 39 {
		return nil, fmt.Errorf("%s/stat: %d fields", dir, len(f)+2)
	}
	st.nice, st.rtprio, st.policy = f[16], f[37], f[38]
	if st.oomScoreAdj, err = readText(dir + "/oom_score_adj"); err != nil {
		return nil, err
	}
	st.personality, st.personalityErr = readText(dir + "/personality")
	target := pid
	if target == 0 {
		target = os.Getpid()
	}
	prio, _, e := unix.Syscall(unix.SYS_IOPRIO_GET, 1 /* IOPRIO_WHO_PROCESS */, uintptr(target), 0)
	if e != 0 {
		return nil, fmt.Errorf("ioprio_get: %v", e)
	}
	st.ioprio = int(prio)
	for i := range st.rlimits {
		if err := unix.Prlimit(target, i, nil, &st.rlimits[i]); err != nil {
			return nil, fmt.Errorf("prlimit %d: %v", i, err)
		}
	}
	return st, nil
}

// readText reads a /proc file with plain system calls: open, reads to EOF,
// close (os.ReadFile also tries Go's poller, fstat and fcntl on each file:
// three times the calls, and a handed-over run reads 18 of these files).
func readText(p string) (string, error) {
	fd, err := sys.RetryValue(func() (int, error) { return unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0) })
	if err != nil {
		return "", &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	var stack [4096]byte
	b := stack[:0]
	for {
		if len(b) == cap(b) {
			if len(b) >= 1<<20 {
				return "", &os.PathError{Op: "read", Path: p, Err: errors.New("larger than 1 MiB")}
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := sys.RetryValue(func() (int, error) { return unix.Read(fd, b[len(b):cap(b)]) })
		if err != nil {
			return "", &os.PathError{Op: "read", Path: p, Err: err}
		}
		if n == 0 {
			return string(b), nil
		}
		b = b[:len(b)+n]
	}
}
