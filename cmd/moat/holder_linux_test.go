package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// children lists the live children of pid (all its threads'), with their
// argv[0].
func children(pid int) map[int]string {
	out := map[int]string{}
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			c, _ := strconv.Atoi(w)
			cmd, _ := os.ReadFile("/proc/" + w + "/cmdline")
			out[c] = strings.SplitN(string(cmd), "\x00", 2)[0]
		}
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// The holder of the inotify instance that reports reads of hidden paths
// is moat's own binary in its C holder mode (no sleep to exec), and it
// never outlives moat: moat ends it after the command, and the kernel
// ends it (parent-death signal) when moat is killed.
func TestInotifyHolder(t *testing.T) {
	tr := newTree(t)
	bin := moatBin(t)
	secret := filepath.Join(tr.home, "secret")
	if err := os.MkdirAll(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(secret, "key"), []byte("k\n"), 0o644)
	settings := filepath.Join(filepath.Dir(tr.settings), "hide.json")
	writeJSON(t, settings, map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{secret}, "allowWrite": []string{"."}, "denyWrite": []string{}},
	})
	// Orphans of moat come to this process, where they can be seen.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)

	start := func(script string) (*exec.Cmd, int) {
		cmd := exec.Command(bin, "run", "--settings", settings, "-c", script)
		cmd.Dir, cmd.Env = tr.dir, tr.env("MOAT_DAEMON=off")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The holder, among moat's children, while the command runs.
		for i := 0; i < 200; i++ {
			for pid, argv0 := range children(cmd.Process.Pid) {
				if argv0 == "moat-hold" {
					return cmd, pid
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no moat-hold child of moat (%v)", children(cmd.Process.Pid))
		return nil, 0
	}
	gone := func(pid int, why string) {
		t.Helper()
		for i := 0; i < 400 && alive(pid); i++ {
			time.Sleep(25 * time.Millisecond)
		}
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, unix.WNOHANG, nil) // reparented here: reap it
		if alive(pid) {
			t.Errorf("the holder %d outlived moat (%s)", pid, why)
			unix.Kill(pid, unix.SIGKILL)
		}
	}

	var err error
	cmd, holder := start("cat " + secret + "/key 2>/dev/null && exit 9; sleep 1; exit 3")
	// It keeps stdio and the instance, nothing else of moat's (once its
	// constructor has run: argv[0] is moat-hold from the exec on).
	var es []os.DirEntry
	for i := 0; i < 200; i++ {
		if es, err = os.ReadDir("/proc/" + strconv.Itoa(holder) + "/fd"); err != nil || len(es) == 4 {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err == nil && len(es) != 4 {
		var fds []string
		for _, e := range es {
			l, _ := os.Readlink("/proc/" + strconv.Itoa(holder) + "/fd/" + e.Name())
			fds = append(fds, e.Name()+" -> "+l)
		}
		t.Errorf("the holder has %d descriptors: %v", len(es), fds)
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("reading the hidden path: %v", err)
	}
	gone(holder, "moat ended")

	cmd, holder = start("sleep 30")
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	gone(holder, "moat was killed")
}

// A hidden file is masked by a sentinel of its own under moat's state
// directory; the run removes its sentinels when it ends (a killed run's
// are swept a day later).
func TestSentinelsRemoved(t *testing.T) {
	tr := newTree(t)
	bin := moatBin(t)
	secret := filepath.Join(tr.home, "token.txt")
	if err := os.WriteFile(secret, []byte("s3cr3t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(filepath.Dir(tr.settings), "hidefile.json")
	writeJSON(t, settings, map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{secret}, "allowWrite": []string{"."}, "denyWrite": []string{}},
	})
	cmd := exec.Command(bin, "run", "--settings", settings, "--", "sh", "-c", "cat "+secret)
	cmd.Dir, cmd.Env = tr.dir, tr.env("MOAT_DAEMON=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(string(out), "s3cr3t") {
		t.Fatalf("the hidden file was read: %s", out)
	}
	es, err := os.ReadDir(filepath.Join(tr.state, "moat", "sentinel"))
	if err != nil {
		t.Fatalf("no sentinel directory (was the file masked by a sentinel?): %v", err)
	}
	for _, e := range es {
		t.Errorf("left behind in the sentinel directory: %s", e.Name())
	}
}
