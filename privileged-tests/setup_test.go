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
	"testing"
	"time"
)

// TestInterruptedSetup: the sandbox's init starts a run's command
// vfork-style and, suspended until the command's exec, neither watches its
// supervisor nor passes on signals meanwhile; the command's process looks
// at both just before its exec. moat run killed, or sent SIGINT (Ctrl-C),
// while the command is still being set up must keep the command from
// running at all, as when init forked it (an attack pass saw 6 of 20
// commands run after moat was killed during their setup).
//
// The command's process is stopped in its setup (SIGSTOP: it cannot exec
// while stopped, which the test checks), moat is signalled, and once the
// signal took effect the process continues: the command must not run. The
// command is a small static C program that says so at its first
// instruction; without moat it runs.
func TestInterruptedSetup(t *testing.T) {
	if viaSession() {
		t.Skip("a session's commands are started by its server, not by init (TestSession* in package runtime)")
	}
	f := newFixture(t)
	mk := filepath.Join(f.root, "mk")
	src := mk + ".c"
	must(t, os.WriteFile(src, []byte(`#include <fcntl.h>
#include <unistd.h>
int main(int c, char **v) { write(1, "RAN\n", 4); return open(v[1], O_CREAT | O_WRONLY, 0644) < 0; }
`), 0o644))
	if out, err := exec.Command("cc", "-O2", "-static", "-o", mk, src).CombinedOutput(); err != nil {
		if out2, err2 := exec.Command("cc", "-O2", "-o", mk, src).CombinedOutput(); err2 != nil {
			t.Fatalf("cc: %v %s %s", err2, out, out2)
		}
	}
	os.Chmod(f.root, 0o755)
	// Without moat the command runs.
	if out, err := exec.Command(mk, filepath.Join(f.work, "direct")).Output(); err != nil || string(out) != "RAN\n" {
		t.Fatalf("the command must run without moat: %v %q", err, out)
	}
	// Many hidden files make the setup long enough to be caught.
	many := filepath.Join(f.outside, "many")
	var hidden []string
	for i := 0; i < 400; i++ {
		d := filepath.Join(many, strconv.Itoa(i))
		must(t, os.MkdirAll(d, 0o755))
		must(t, os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644))
		hidden = append(hidden, filepath.Join(d, "f"))
	}
	slow := f.writeSettings(map[string]any{"denyRead": hidden})

	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			caught := 0
			for i := 0; i < 40 && caught < 6; i++ {
				marker := filepath.Join(f.work, fmt.Sprintf("marker-%d-%d", sig, i))
				out := marker + ".out"
				so, err := os.Create(out)
				if err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(moatBin, "run", "--settings", slow, "--", mk, marker)
				cmd.Dir, cmd.Env, cmd.Stdout = f.work, f.env(), so
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				stopped := stopInSetup(cmd.Process.Pid)
				execd := false
				if stopped > 0 {
					cmd.Process.Signal(sig)
					// The signal took effect: moat is dead, or its init has
					// it pending (forwarded by stage 2).
					deadline := time.Now().Add(10 * time.Second)
					for sig == syscall.SIGKILL && time.Now().Before(deadline) {
						if _, err := os.Stat(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)); err != nil || state(cmd.Process.Pid) == "Z" {
							break
						}
						time.Sleep(5 * time.Millisecond)
					}
					for sig != syscall.SIGKILL && time.Now().Before(deadline) && !pending(initOf(stopped), sig) {
						time.Sleep(5 * time.Millisecond)
					}
					syscall.Kill(stopped, syscall.SIGCONT)
					caught++
					// A command killed right after its exec may not get
					// to say so: its exec shows as the process's name.
					for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
						if c := comm(stopped); c == "mk" {
							execd = true
							break
						} else if c == "" || state(stopped) == "Z" {
							break
						}
					}
				}
				cmd.Wait()
				so.Close()
				// Whatever outlived moat (its init after a SIGKILL) ends soon.
				time.Sleep(100 * time.Millisecond)
				b, _ := os.ReadFile(out)
				_, merr := os.Stat(marker)
				if stopped > 0 && (execd || strings.Contains(string(b), "RAN") || merr == nil) {
					t.Errorf("ESCAPE: %v to moat run during the command's setup, and the command ran anyway (try %d)", sig, i)
				}
			}
			if caught == 0 {
				t.Fatal("the command's process was never caught in its setup: the attack proves nothing")
			}
		})
	}
}

// stopInSetup finds the command's process below moat (moat, stage 2,
// init, the command) while it is still moat's binary (being set up), stops
// it, and returns its pid once stopped and still not exec'd; 0 if it was
// not caught so.
func stopInSetup(moat int) int {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if state(moat) == "" || state(moat) == "Z" {
			return 0
		}
		for _, s2 := range children(moat) {
			for _, init := range children(s2) {
				for _, c := range children(init) {
					if comm(c) != "exe" {
						return 0 // exec'd already
					}
					if syscall.Kill(c, syscall.SIGSTOP) != nil {
						return 0
					}
					for i := 0; i < 1000 && state(c) != "T"; i++ {
						time.Sleep(time.Millisecond)
					}
					if state(c) != "T" || comm(c) != "exe" {
						syscall.Kill(c, syscall.SIGCONT)
						return 0
					}
					return c
				}
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	return 0
}

func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// statusField is a field of /proc/PID/status, "" if unreadable.
func statusField(pid int, key string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func state(pid int) string {
	s := statusField(pid, "State")
	if s == "" {
		return ""
	}
	return s[:1]
}

func initOf(cmd int) int {
	p, _ := strconv.Atoi(statusField(cmd, "PPid"))
	if p == 0 {
		return cmd // in another pid namespace: /proc shows it as the host sees it
	}
	return p
}

// pending: sig waits in pid's pending sets.
func pending(pid int, sig syscall.Signal) bool {
	for _, k := range []string{"SigPnd", "ShdPnd"} {
		if m, err := strconv.ParseUint(statusField(pid, k), 16, 64); err == nil && m&(1<<(uint(sig)-1)) != 0 {
			return true
		}
	}
	return false
}

// TestManyHiddenPaths: a policy that hides 1500 files (each a mount
// source that setup holds a descriptor for until it is mounted) runs, with
// every one of them hidden, and the command keeps the descriptor limit it
// would have had (an attack pass saw setup fail with "too many open files"
// at about 1000, under stage 2's soft limit of 1024).
func TestManyHiddenPaths(t *testing.T) {
	f := newFixture(t)
	many := filepath.Join(f.outside, "many")
	var hidden []string
	for i := 0; i < 1500; i++ {
		d := filepath.Join(many, strconv.Itoa(i))
		must(t, os.MkdirAll(d, 0o755))
		must(t, os.WriteFile(filepath.Join(d, "f"), []byte(secretText+"\n"), 0o644))
		hidden = append(hidden, filepath.Join(d, "f"))
	}
	settings := f.writeSettings(map[string]any{"denyRead": hidden})
	last := hidden[len(hidden)-1]
	if got := f.direct("read", last); !got.escaped() {
		t.Fatalf("the file must be readable without moat:\n%s", got.out)
	}
	if viaSession() {
		if got := f.sandboxedWith(settings, "read", last); got.escaped() || got.code == 125 {
			t.Fatalf("a hidden file must read as empty under moat (exit %d):\n%s", got.code, got.out)
		}
		return
	}
	// moat under a soft descriptor limit of 1024 (the usual default; root
	// here may have more), the command reading the last hidden file, then
	// saying its own limit.
	lowered := func(args ...string) result {
		cmd := exec.Command("sh", append([]string{"-c", `ulimit -Sn 1024 && exec "$@"`, "sh", moatBin, "run", "--settings", settings, "--"}, args...)...)
		cmd.Dir, cmd.Env = f.work, f.env()
		out, err := cmd.CombinedOutput()
		r := result{out: string(out)}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
		return r
	}
	if got := lowered(self, "read", last); got.escaped() || got.code == 125 {
		t.Fatalf("a hidden file must read as empty under moat (exit %d):\n%s", got.code, got.out)
	}
	if got := lowered("sh", "-c", "ulimit -Sn"); got.code != 0 || got.out != "1024\n" {
		t.Errorf("the command's descriptor limit: %q (exit %d), want the 1024 moat was started with", got.out, got.code)
	}
}
