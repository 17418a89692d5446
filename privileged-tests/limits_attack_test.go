//go:build linux

package privtests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The resource attacks: each runs to the end without a limit.
func init() {
	// forkbomb N: start N processes that stay (sleeps), then end them.
	attacks["forkbomb"] = func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[0])
		var started []*os.Process
		defer func() {
			for _, p := range started {
				p.Kill()
				p.Wait()
			}
		}()
		for i := 0; i < n; i++ {
			p, err := os.StartProcess("/bin/sleep", []string{"sleep", "60"}, &os.ProcAttr{})
			if err != nil {
				return "", fmt.Errorf("process %d of %d refused: %v", i+1, n, err)
			}
			started = append(started, p)
		}
		return fmt.Sprintf("held %d processes at once", n), nil
	}
	// balloon MIB: a child process fills MIB MiB of memory (touching every
	// page) and reports.
	attacks["balloon"] = func(a []string) (string, error) {
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		cmd := exec.Command(exe, "balloon-child", a[0])
		cmd.Env = append(os.Environ(), "GOGC=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("the balloon did not fill: %v: %s", err, firstLine(out))
		}
		return string(out), nil
	}
	attacks["balloon-child"] = func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[0])
		b, err := unix.Mmap(-1, 0, n<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return "", err
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return fmt.Sprintf("filled %d MiB", n), nil
	}
	// storefill KIND MIB: a child process stores MIB MiB where an rlimit on
	// memory does not look: KIND file:DIR (a file in DIR, a tmpfs in the
	// sandbox), memfd, or shm (System V segments of 1 MiB). The store is
	// let go when the child ends (the file removed by the parent).
	attacks["storefill"] = func(a []string) (string, error) {
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		kind := a[0]
		if dir, ok := strings.CutPrefix(kind, "file:"); ok {
			file := filepath.Join(dir, fmt.Sprintf("moat-storefill-%d", os.Getpid()))
			kind = "file:" + file
			defer os.Remove(file)
		}
		cmd := exec.Command(exe, "storefill-child", kind, a[1])
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("the store did not fill: %v: %s", err, firstLine(out))
		}
		return strings.TrimSpace(strings.TrimPrefix(string(out), "ESCAPED: ")), nil
	}
	attacks["storefill-child"] = func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[1])
		mib := make([]byte, 1<<20)
		for i := range mib {
			mib[i] = byte(i)
		}
		var f *os.File
		switch kind := a[0]; {
		case strings.HasPrefix(kind, "file:"):
			var err error
			name := strings.TrimPrefix(kind, "file:")
			if f, err = os.Create(name); err != nil {
				return "", err
			}
			// Unlinked at once: its pages go when this process does (a
			// cgroup's OOM kill included), and the parent can report.
			os.Remove(name)
		case kind == "memfd":
			fd, err := unix.MemfdCreate("storefill", 0)
			if err != nil {
				return "", fmt.Errorf("memfd_create: %w", err)
			}
			f = os.NewFile(uintptr(fd), "memfd")
		case kind == "stack":
			// The main stack is not data: it grows by page faults up to
			// RLIMIT_STACK, whose soft limit the process may raise to
			// the hard one. (Growing it for real needs C recursion.)
			var r unix.Rlimit
			unix.Getrlimit(unix.RLIMIT_STACK, &r)
			r.Cur = r.Max
			if err := unix.Setrlimit(unix.RLIMIT_STACK, &r); err != nil {
				return "", fmt.Errorf("raise the stack limit: %w", err)
			}
			if r.Max != unix.RLIM_INFINITY && r.Max < uint64(n)<<20 {
				return "", fmt.Errorf("the stack may grow to %d MiB only", r.Max>>20)
			}
			return fmt.Sprintf("the stack may grow past %d MiB", n), nil
		case kind == "growsdown":
			// A mapping the kernel counts as stack, not data
			// (RLIMIT_DATA does not see it).
			b, err := unix.Mmap(-1, 0, n<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_GROWSDOWN)
			if err != nil {
				return "", fmt.Errorf("mmap(MAP_GROWSDOWN): %w", err)
			}
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			return fmt.Sprintf("stored %d MiB in a grows-down mapping", n), nil
		case kind == "shm":
			for i := 0; i < n; i++ {
				id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 1<<20, unix.IPC_CREAT|0o600)
				if err != nil {
					return "", fmt.Errorf("segment %d: shmget: %w", i, err)
				}
				b, err := unix.SysvShmAttach(id, 0, 0)
				// (removed now: it goes when it is detached, at the latest
				// when this process ends)
				unix.SysvShmCtl(id, unix.IPC_RMID, nil)
				if err != nil {
					return "", fmt.Errorf("segment %d: shmat: %w", i, err)
				}
				copy(b, mib)
			}
			return fmt.Sprintf("stored %d MiB in System V shared memory", n), nil
		default:
			return "", fmt.Errorf("unknown store %q", kind)
		}
		defer f.Close()
		for i := 0; i < n; i++ {
			if _, err := f.Write(mib); err != nil {
				return "", fmt.Errorf("after %d MiB: %w", i, err)
			}
		}
		return fmt.Sprintf("stored %d MiB in %s", n, a[0]), nil
	}
	// spin SECONDS: burn CPU for that long (wall clock); escapes when it got
	// at least 15% of a CPU: three times the 0.05-CPU limit the rate test
	// sets, and well below what a spinner gets without moat even on a busy
	// two-core machine (under a full test run it got 23%).
	attacks["spin"] = func(a []string) (string, error) {
		secs, _ := strconv.ParseFloat(a[0], 64)
		end := time.Now().Add(time.Duration(secs * float64(time.Second)))
		start := cpuTime()
		x := 0
		for time.Now().Before(end) {
			for i := 0; i < 100000; i++ {
				x += i
			}
		}
		used := cpuTime() - start
		if share := used.Seconds() / secs; share < 0.15 {
			return "", fmt.Errorf("got %.0f%% of a CPU over %vs (%d)", share*100, secs, x&1)
		}
		return fmt.Sprintf("burnt %v of CPU in %vs", used.Round(time.Millisecond), secs), nil
	}
	// burn SECONDS: burn that much CPU time (however long it takes on a
	// busy machine, up to two minutes): escapes when it did.
	attacks["burn"] = func(a []string) (string, error) {
		secs, _ := strconv.ParseFloat(a[0], 64)
		want := time.Duration(secs * float64(time.Second))
		start, deadline := cpuTime(), time.Now().Add(2*time.Minute)
		x := 0
		for cpuTime()-start < want {
			if time.Now().After(deadline) {
				return "", fmt.Errorf("got only %v of CPU in two minutes (%d)", cpuTime()-start, x&1)
			}
			for i := 0; i < 1000000; i++ {
				x += i
			}
		}
		return fmt.Sprintf("burnt %v of CPU", (cpuTime() - start).Round(time.Millisecond)), nil
	}
	// bigfile PATH MIB: write a file of MIB MiB.
	attacks["bigfile"] = func(a []string) (string, error) {
		n, _ := strconv.Atoi(a[1])
		f, err := os.Create(a[0])
		if err != nil {
			return "", err
		}
		defer os.Remove(a[0])
		defer f.Close()
		buf := make([]byte, 1<<20)
		for i := 0; i < n; i++ {
			if _, err := f.Write(buf); err != nil {
				return "", fmt.Errorf("after %d MiB: %v", i, err)
			}
		}
		return fmt.Sprintf("wrote %d MiB", n), nil
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
