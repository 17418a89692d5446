//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// String is what was written so far (lockedBuffer: daemon_test.go).
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe starts moat serve --debug for tr in another working directory
// than the client's, and waits for it to answer.
func startServe(t *testing.T, tr tree, env []string, extra ...string) (sock string, log *lockedBuffer) {
	t.Helper()
	sock, log, _ = startServeCmd(t, tr, env, extra...)
	return sock, log
}

// startServeCmd is startServe, with the server's process.
func startServeCmd(t *testing.T, tr tree, env []string, extra ...string) (sock string, log *lockedBuffer, cmd *exec.Cmd) {
	t.Helper()
	return startServeVia(t, tr, env, nil, extra...)
}

// startServeVia is startServeCmd with the server started by a wrapper
// command (pre: setpriv ...), if any.
func startServeVia(t *testing.T, tr tree, env, pre []string, extra ...string) (sock string, log *lockedBuffer, cmd *exec.Cmd) {
	t.Helper()
	sock = filepath.Join(filepath.Dir(tr.dir), "api.sock")
	args := append(append(append([]string(nil), pre...), moatBin(t), "serve", "--debug", "--socket", sock, "--settings", tr.settings), extra...)
	cmd = exec.Command(args[0], args[1:]...)
	// Not "/": the tree's settings make "." writable, and a server whose
	// "." was "/" gave its sessions the whole host to write, and their git
	// audits, root's, walked every other test's trees running beside them.
	cwd := filepath.Join(filepath.Dir(tr.dir), "serve-cwd")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Dir, cmd.Env = cwd, env
	log = &lockedBuffer{b: &bytes.Buffer{}}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	c := client.New(sock)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		h, err := c.Health(ctx)
		if err == nil && h.Status == "ok" {
			return sock, log, cmd
		}
		if ae := (*client.Error)(nil); pre != nil && errors.As(err, &ae) && ae.Status == 403 {
			return sock, log, cmd // it answers, if not this process (confined otherwise by pre)
		}
		if ctx.Err() != nil {
			t.Fatalf("moat serve never answered:\n%s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServerRun: moat run with MOAT_SERVER is handed to the user's moat
// serve by the C client before the Go runtime starts, and behaves as moat
// run in the caller's own process: the caller's working directory,
// relative --settings and --write, stdin, stdout and stderr, exit status,
// moat's own errors on the caller's stderr, forwarded signals; the caller
// killed kills the command. Each case runs with and without the server
// and must give the same result; the server's log proves it served.
func TestServerRun(t *testing.T) {
	tr := newTree(t)
	base := tr.env("MOAT_DAEMON=off")
	sock, log, srv := startServeCmd(t, tr, base)
	via := append(append([]string(nil), base...), "MOAT_SERVER="+sock)

	secret := filepath.Join(tr.home, "secret.txt")
	os.WriteFile(secret, []byte("s3cret\n"), 0o644)
	os.Mkdir(filepath.Join(tr.dir, "sub"), 0o755)
	writeJSON(t, filepath.Join(tr.dir, "rel.json"), map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{secret}, "allowWrite": []string{}, "denyWrite": []string{}},
	})
	served := 0
	cases := []struct {
		name, stdin string
		args        []string
		code        int
		stdout      string
		stderr      string // contained in stderr ("": stderr empty, "-": not checked)
	}{
		{"stdio and cwd", "in\n", []string{"run", "--settings", tr.settings, "-c", "cat; echo err >&2; pwd; exit 7"}, 7, "in\n" + tr.dir + "\n", "err\n"},
		{"relative settings and write", "", []string{"run", "--settings", "rel.json", "--write", "sub", "-c",
			"cat " + secret + "; touch sub/ok && echo wrote; touch notwritable 2>/dev/null || echo refused"}, 0, "wrote\nrefused\n", "<sandbox_violations>"},
		{"signal", "", []string{"run", "--settings", tr.settings, "-c", "kill -TERM $$"}, 128 + 15, "", "-"},
		{"not found", "", []string{"run", "--settings", tr.settings, "--", "no-such-command-moat"}, 127, "", "command not found"},
		{"bad flag", "", []string{"run", "--nope", "--", "true"}, 125, "", "unknown flag"},
		{"missing settings", "", []string{"run", "--settings", "nonexistent.json", "--", "true"}, 125, "", "no such file"},
	}
	if os.Getuid() == 0 {
		// As root the server's runs share one set of eBPF programs (loaded
		// by the server's first run, attached to each run's cgroup): the
		// run's refusals are still the run's, reported on its stderr.
		cases = append(cases, struct {
			name, stdin string
			args        []string
			code        int
			stdout      string
			stderr      string
		}{"eBPF refusal", "", []string{"run", "--settings", tr.settings, "--", "bash", "-c", "echo > /dev/tcp/192.0.2.1/80"}, 1, "", "deny network-connect-tcp 192.0.2.1:80 (eBPF"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, env := range [][]string{base, via} {
				os.Remove(filepath.Join(tr.dir, "sub", "ok"))
				before := strings.Count(log.String(), `msg="cli run"`)
				r := tr.moat(t, tc.stdin, env, tc.args...)
				where := "in its own process"
				if len(env) == len(via) {
					where = "through moat serve"
				}
				if r.code != tc.code || r.stdout != tc.stdout {
					t.Errorf("%s: exit %d stdout %q, want %d %q\nstderr: %s", where, r.code, r.stdout, tc.code, tc.stdout, r.stderr)
				}
				if tc.stderr == "" && r.stderr != "" || tc.stderr != "-" && !strings.Contains(r.stderr, tc.stderr) {
					t.Errorf("%s: stderr %q, want %q", where, r.stderr, tc.stderr)
				}
				if strings.Contains(r.stderr, "MOAT_SERVER not used") {
					t.Errorf("%s: %s", where, r.stderr)
				}
				// The server's log comes through a pipe the test reads
				// in another goroutine: a served run's line may come
				// after the run has ended.
				after := strings.Count(log.String(), `msg="cli run"`)
				for deadline := time.Now().Add(10 * time.Second); len(env) == len(via) && after == before && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					after = strings.Count(log.String(), `msg="cli run"`)
				}
				switch {
				case len(env) == len(via) && after != before+1:
					t.Errorf("moat serve did not run it:\n%s", log.String())
				case len(env) != len(via) && after != before:
					t.Errorf("moat serve ran it without MOAT_SERVER:\n%s", log.String())
				case len(env) == len(via):
					served++
				}
			}
		})
	}
	if served != len(cases) {
		t.Errorf("only %d cases were seen served", served)
	}
	if os.Getuid() == 0 {
		// The set stays loaded between runs: the server holds its
		// programs with no run going (a set of each run's own goes with
		// the run).
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", srv.Process.Pid))
		progs := 0
		for _, fd := range fds {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", srv.Process.Pid, fd.Name())); l == "anon_inode:bpf-prog" {
				progs++
			}
		}
		if progs == 0 {
			t.Errorf("moat serve keeps no eBPF programs between its runs: each run loads its own")
		}
	}

	// From a working directory reached through a symlink ($PWD names the
	// link), the run is the caller's own: the same result both ways.
	t.Run("symlinked working directory", func(t *testing.T) {
		link := filepath.Join(filepath.Dir(tr.dir), "link")
		if err := os.Symlink(tr.dir, link); err != nil {
			t.Fatal(err)
		}
		var got []runOut
		for _, env := range [][]string{base, via} {
			cmd := exec.Command(moatBin(t), "run", "--settings", "../settings.json", "--", "pwd")
			cmd.Dir, cmd.Env = link, append(append([]string(nil), env...), "PWD="+link)
			var so, se bytes.Buffer
			cmd.Stdout, cmd.Stderr = &so, &se
			err := cmd.Run()
			r := runOut{stdout: so.String(), stderr: se.String()}
			if ee, ok := err.(*exec.ExitError); ok {
				r.code = ee.ExitCode()
			}
			got = append(got, r)
		}
		if got[0].code != got[1].code || got[0].stdout != got[1].stdout || strings.Contains(got[1].stderr, "not used") {
			t.Errorf("in its own process %+v, through moat serve %+v", got[0], got[1])
		}
	})

	// A signal to the caller reaches the command.
	t.Run("forwarded signal", func(t *testing.T) {
		cmd := exec.Command(moatBin(t), "run", "--settings", tr.settings, "-c", `trap 'echo got; exit 3' TERM; echo ready; while :; do sleep 0.05; done`)
		cmd.Dir, cmd.Env = tr.dir, via
		out, _ := cmd.StdoutPipe()
		se := &lockedBuffer{b: &bytes.Buffer{}}
		cmd.Stderr = se
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(out)
		if l, err := br.ReadString('\n'); l != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%q %v %s", l, err, se.String())
		}
		cmd.Process.Signal(syscall.SIGTERM)
		rest, _ := br.ReadString(0)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || rest != "got\n" {
			t.Errorf("after SIGTERM: %v %q %s", err, rest, se.String())
		}
	})

	// The caller killed: the command and what it started end.
	t.Run("caller killed", func(t *testing.T) {
		marker := testutil.SleepMarker(300)
		cmd := exec.Command(moatBin(t), "run", "--settings", tr.settings, "-c", "sleep "+marker+" & wait")
		cmd.Dir, cmd.Env = tr.dir, via
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); len(testutil.Procs("sleep "+marker, os.Getuid())) == 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("the sleep never ran")
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
		for deadline := time.Now().Add(time.Minute); len(testutil.Procs("sleep "+marker, os.Getuid())) > 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the command outlived its caller")
			}
		}
	})
}

// TestServerRunFallsBack: where moat serve cannot run moat run exactly as
// the caller would, the caller runs it itself and says why: no server, a
// variable moat reads that is not the server's, --control-fd (a
// descriptor of the caller's), a caller under no_new_privs.
func TestServerRunFallsBack(t *testing.T) {
	tr := newTree(t)
	base := tr.env("MOAT_DAEMON=off")
	sock, log := startServe(t, tr, base)
	run := func(t *testing.T, env []string, pre []string, stdin string, args ...string) runOut {
		t.Helper()
		if len(pre) == 0 {
			return tr.moat(t, stdin, env, args...)
		}
		return tr.moatVia(t, env, pre, args...)
	}
	// A copy of moat is another binary: a server of this one would protect
	// its own file, not the copy.
	cp := filepath.Join(filepath.Dir(tr.dir), "moat-copy")
	if b, err := os.ReadFile(moatBin(t)); err != nil || os.WriteFile(cp, b, 0o755) != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(tr.dir, "here.json"), map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{"."}, "denyWrite": []string{}},
	})
	settingsJSON, _ := os.ReadFile(tr.settings)
	writeJSON(t, filepath.Join(tr.dir, "procrules.json"), map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{"/proc/self/cwd/secret.txt"}, "allowWrite": []string{"."}, "denyWrite": []string{}},
	})
	if err := os.Symlink("/proc/self/cwd/here.json", filepath.Join(tr.dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		env   []string
		pre   []string
		args  []string
		why   string
		stdin string
	}{
		{"another moat binary", []string{"MOAT_SERVER=" + sock}, []string{cp}, nil, "not this moat binary", ""},
		{"nice", []string{"MOAT_SERVER=" + sock}, []string{"nice", "-n", "5"}, nil, "nice value", ""},
		{"settings through /proc/self", []string{"MOAT_SERVER=" + sock}, nil, []string{"--settings", "/proc/self/cwd/here.json"}, "/proc/self", ""},
		{"settings from stdin", []string{"MOAT_SERVER=" + sock}, nil, []string{"--settings", "/dev/stdin"}, "/dev/stdin", string(settingsJSON)},
		{"/proc/self in a settings file", []string{"MOAT_SERVER=" + sock}, nil, []string{"--settings", "procrules.json"}, "/proc/self/cwd/secret.txt", ""},
		{"settings through a symlink to /proc/self", []string{"MOAT_SERVER=" + sock}, nil, []string{"--settings", "link.json"}, "leads through /proc/self/cwd/here.json", ""},
		{"no server", []string{"MOAT_SERVER=" + sock + ".none"}, nil, nil, "connect: No such file", ""},
		{"relative socket", []string{"MOAT_SERVER=api.sock"}, nil, nil, "absolute socket path", ""},
		{"another HOME", []string{"MOAT_SERVER=" + sock, "HOME=" + tr.dir}, nil, nil, "$HOME is not the server's", ""},
		{"control fd", []string{"MOAT_SERVER=" + sock}, nil, []string{"--control-fd", "0"}, "--control-fd", ""},
		{"no_new_privs", []string{"MOAT_SERVER=" + sock}, []string{"setpriv", "--no-new-privs"}, nil, "no_new_privs", ""},
	}
	if goruntime.NumCPU() > 1 {
		cases = append(cases, struct {
			name  string
			env   []string
			pre   []string
			args  []string
			why   string
			stdin string
		}{"CPU affinity", []string{"MOAT_SERVER=" + sock}, []string{"taskset", "-c", "0"}, nil, "Cpus_allowed_list", ""})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := append(append([]string(nil), base...), tc.env...)
			args := []string{"run", "--settings", tr.settings}
			if len(tc.args) > 1 && tc.args[0] == "--settings" {
				args = []string{"run"}
			}
			args = append(append(args, tc.args...), "--", "sh", "-c", "echo ran")
			n := strings.Count(log.String(), `msg="cli run"`)
			r := run(t, env, tc.pre, tc.stdin, args...)
			// --control-fd 0 and settings from a pipe are errors of moat
			// run in its own process too: only the hand-over is tested.
			if tc.name != "control fd" && tc.name != "settings from stdin" && (r.code != 0 || r.stdout != "ran\n") {
				t.Errorf("exit %d %q: %s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "MOAT_SERVER not used") || !strings.Contains(r.stderr, tc.why) {
				t.Errorf("stderr does not say why (%s): %s", tc.why, r.stderr)
			}
			if strings.Count(log.String(), `msg="cli run"`) != n {
				t.Errorf("the server ran it:\n%s", log.String())
			}
		})
	}
}

// moatVia runs moat under a wrapper command (setpriv ...), or another
// moat binary (pre is one absolute path).
func (tr tree) moatVia(t *testing.T, env, pre []string, args ...string) runOut {
	t.Helper()
	cmd := exec.Command(pre[0], append(append(pre[1:], moatBin(t)), args...)...)
	if len(pre) == 1 && filepath.IsAbs(pre[0]) {
		cmd = exec.Command(pre[0], args...)
	}
	cmd.Dir, cmd.Env = tr.dir, env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := runOut{stdout: so.String(), stderr: se.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// landlockEnv, set, makes this test binary confine itself with Landlock
// (writes only under the directories the variable lists, separated by
// ':') and exec its arguments after "--": a process in another sandbox
// (Landlock sets no_new_privs), in the server's user and mount namespaces.
const landlockEnv = "MOAT_TEST_LANDLOCK_WRITE"

// landlockNoNNPEnv, set with landlockEnv, applies the Landlock domain
// without no_new_privs, which root may (CAP_SYS_ADMIN): then nothing in
// /proc shows the confinement.
const landlockNoNNPEnv = "MOAT_TEST_LANDLOCK_NO_NNP"

func init() {
	dirs := os.Getenv(landlockEnv)
	if dirs == "" {
		return
	}
	i := 0
	for i < len(os.Args) && os.Args[i] != "--" {
		i++
	}
	if i+1 >= len(os.Args) {
		os.Stderr.WriteString("landlock helper: no command after --\n")
		os.Exit(2)
	}
	goruntime.LockOSThread()
	const write = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_REFER // handled, so that links and renames within the allowed trees work (ABI 2)
	attr := struct{ fs, net uint64 }{fs: write} // handled_access_fs, handled_access_net
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		os.Stderr.WriteString("landlock helper: create ruleset: " + e.Error() + "\n")
		os.Exit(2)
	}
	for _, d := range strings.Split(dirs, ":") {
		df, err := unix.Open(d, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			os.Stderr.WriteString("landlock helper: " + d + ": " + err.Error() + "\n")
			os.Exit(2)
		}
		pb := unix.LandlockPathBeneathAttr{Allowed_access: write, Parent_fd: int32(df)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&pb)), 0, 0, 0); e != 0 {
			os.Stderr.WriteString("landlock helper: add rule " + d + ": " + e.Error() + "\n")
			os.Exit(2)
		}
		unix.Close(df)
	}
	if os.Getenv(landlockNoNNPEnv) == "" {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			os.Exit(2)
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		os.Stderr.WriteString("landlock helper: restrict: " + e.Error() + "\n")
		os.Exit(2)
	}
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, landlockEnv+"=") && !strings.HasPrefix(kv, landlockNoNNPEnv+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(os.Args[i+1], os.Args[i+1:], env)
	os.Stderr.WriteString("landlock helper: exec: " + err.Error() + "\n")
	os.Exit(2)
}

// TestServerRunConfinedCaller attacks moat serve from a process confined
// by another sandbox (Landlock, which cannot be seen in /proc but sets
// no_new_privs): that process may not write a directory, and asks the
// server, which runs unconfined, to run a command that writes there. The
// server must refuse it (the run stays in the confined caller, where the
// write fails). Without the confinement, the same request through the
// server writes the file: the route exists and only the check closes it.
func TestServerRunConfinedCaller(t *testing.T) {
	tr := newTree(t)
	base := tr.env("MOAT_DAEMON=off")
	sock, log, server := startServeCmd(t, tr, base, "--gate", "off")
	target := filepath.Join(filepath.Dir(tr.dir), "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	plant := filepath.Join(target, "planted")
	env := append(append([]string(nil), base...), "MOAT_SERVER="+sock)
	args := []string{"run", "--settings", tr.settings, "--write", target, "--", "sh", "-c", "echo x > " + plant}

	// Unconfined: the server runs it and the file is written.
	if r := tr.moat(t, "", env, args...); r.code != 0 || strings.Contains(r.stderr, "not used") {
		t.Fatalf("unconfined through the server: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(plant); err != nil {
		t.Fatalf("the unconfined run through the server did not write: %v\n%s", err, log.String())
	}
	os.Remove(plant)

	// The same as a Landlock-confined caller (writes allowed in the
	// working tree and the state directory only).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{"--", moatBin(t)}, args...)...)
	cmd.Dir = tr.dir
	cmd.Env = append(append([]string(nil), env...), landlockEnv+"="+filepath.Dir(tr.dir)+"/work:"+tr.state+":/dev")
	var se bytes.Buffer
	cmd.Stderr = &se
	_ = cmd.Run()
	if strings.Contains(se.String(), "landlock helper") {
		t.Fatalf("the confinement did not apply: %s", se.String())
	}
	if _, err := os.Stat(plant); err == nil {
		t.Fatalf("a Landlock-confined caller wrote outside its domain through moat serve:\n%s\n%s", se.String(), log.String())
	}
	if !strings.Contains(se.String(), "MOAT_SERVER not used") {
		t.Errorf("the caller was not told why: %s", se.String())
	}
	// The same through a session of the API: the confined caller is
	// refused at the door (403), the unconfined one gets the write.
	// (The server's proof, which every route asks for, is read as any
	// client reads it: from the server's /proc/PID/fd.)
	session := `P=$(ls -l /proc/` + strconv.Itoa(server.Process.Pid) + `/fd 2>/dev/null | sed -n 's/.*moat-serve-proof-\([0-9a-f]*\).*/\1/p'); ` +
		`id=$(curl -s --unix-socket ` + sock + ` -H "X-Moat-Proof: $P" -X POST http://moat/v1/sessions -d '{"write":["` + target + `"]}' | sed -n 's/.*"id":"\([^"]*\)".*/\1/p'); ` +
		`[ -n "$id" ] || { echo no session; exit 1; }; ` +
		`curl -s --unix-socket ` + sock + ` -H "X-Moat-Proof: $P" -X POST "http://moat/v1/sessions/$id/commands?stream=false" -d '{"command":"echo x > ` + plant + `"}'`
	out, err := exec.Command("sh", "-c", session).CombinedOutput()
	if _, serr := os.Stat(plant); serr != nil {
		t.Fatalf("the unconfined session did not write: %v %s %v", err, out, serr)
	}
	os.Remove(plant)
	cmd = exec.Command(self, "--", "/bin/sh", "-c", session)
	cmd.Env = append(append([]string(nil), base...), landlockEnv+"="+tr.dir+":/dev")
	out, _ = cmd.CombinedOutput()
	if _, err := os.Stat(plant); err == nil {
		t.Fatalf("a Landlock-confined caller wrote outside its domain through a session of moat serve: %s", out)
	}
	if !strings.Contains(string(out), "no session") {
		t.Errorf("the confined caller got a session: %s", out)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "confined otherwise than the server") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // the log comes through a pipe, maybe late
	}
	if !strings.Contains(log.String(), "confined otherwise than the server") {
		t.Errorf("the server did not say why it refused:\n%s", log.String())
	}

	// The proof POST /v1/cli/run asks for (the name of a memfd of the
	// server's) is readable by the same user unconfined, and not from a
	// Landlock domain, whatever else the caller's process looks like.
	look := "ls -l /proc/" + strconv.Itoa(server.Process.Pid) + "/fd 2>&1"
	if out, _ := exec.Command("sh", "-c", look).CombinedOutput(); !strings.Contains(string(out), "moat-serve-proof-") {
		t.Fatalf("the server shows no proof to its own user: %s", out)
	}
	cmd = exec.Command(self, "--", "/bin/sh", "-c", look)
	cmd.Env = append(append([]string(nil), base...), landlockEnv+"="+tr.dir+":/dev")
	if out, _ := cmd.CombinedOutput(); strings.Contains(string(out), "moat-serve-proof-") {
		t.Errorf("a Landlock-confined process read the server's proof: %s", out)
	}

	// The confinement itself holds without the server: a direct write fails.
	cmd = exec.Command(self, "--", "/bin/sh", "-c", "echo x > "+plant)
	cmd.Env = append(append([]string(nil), base...), landlockEnv+"="+tr.dir)
	if err := cmd.Run(); err == nil {
		if _, serr := os.Stat(plant); serr == nil {
			t.Fatal("the Landlock stand-in does not confine: the attack proves nothing")
		}
	}
}

// apiAttackEnv, set (JSON: apiAttack), makes this test binary a client of
// moat serve and of moat mcp's unix socket that asks each to write a file
// in Target: through a session, POST /v1/run and the bash tool. It uses
// moat's Go client, which shows the servers' proof when it can read it,
// prints one line per route ("session: served", "run: refused: ...") and
// exits.
const apiAttackEnv = "MOAT_TEST_API_ATTACK"

type apiAttack struct{ Serve, MCP, Target string }

func init() {
	spec := os.Getenv(apiAttackEnv)
	if spec == "" || os.Getenv(landlockEnv) != "" {
		return // not asked, or the Landlock helper's to run first
	}
	var a apiAttack
	if err := json.Unmarshal([]byte(spec), &a); err != nil {
		fmt.Println("bad", apiAttackEnv, err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report := func(route string, err error) {
		if err != nil {
			fmt.Printf("%s: refused: %v\n", route, strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			fmt.Printf("%s: served\n", route)
		}
	}
	c := client.New(a.Serve)
	s, err := c.CreateSession(ctx, client.SessionRequest{Write: []string{a.Target}})
	if err == nil {
		var ev client.Event
		if ev, err = c.RunWait(ctx, s.ID, client.CommandRequest{Command: "echo x > " + a.Target + "/by-session"}); err == nil && ev.ExitCode != 0 {
			err = fmt.Errorf("exit %d: %s", ev.ExitCode, ev.Output)
		}
	}
	report("session", err)
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	end, err := c.RunAttached(ctx, client.RunRequest{Argv: []string{"sh", "-c", "echo x > " + a.Target + "/by-run"},
		Env: []string{"PATH=/usr/bin:/bin"}, Write: []string{a.Target}}, [3]*os.File{null, null, null}, nil)
	if err == nil && end.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", end.ExitCode, end.Error)
	}
	report("run", err)
	// The MCP client says only "Forbidden": an initialize of its own
	// first, for the server's reason.
	hc := client.New(a.MCP).HTTP
	initReq := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://localhost/mcp", strings.NewReader(initReq))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := hc.Do(req); err != nil {
		report("mcp", err)
		os.Exit(0)
	} else if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 {
		report("mcp", fmt.Errorf("%s: %s", resp.Status, b))
		os.Exit(0)
	}
	mc := sdk.NewClient(&sdk.Implementation{Name: "moat-attack", Version: "1"}, nil)
	cs, err := mc.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://localhost/mcp", HTTPClient: hc}, nil)
	if err == nil {
		var r *sdk.CallToolResult
		if r, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo x > " + a.Target + "/by-mcp"}}); err == nil && r.IsError {
			err = fmt.Errorf("the tool failed: %+v", r.Content)
		}
		cs.Close()
	}
	report("mcp", err)
	os.Exit(0)
}

// TestServerProofLandlockCaller: a process confined by Landlock that
// nothing in /proc shows (root, which may enter a domain without
// no_new_privs; or any user when the servers themselves run under
// no_new_privs, as in a container with no-new-privileges or a systemd unit
// with NoNewPrivileges=) passes every peer check of moat serve and of moat
// mcp --http unix:, and had them write, through a session, POST /v1/run
// and the bash tool, where its domain forbids it (found by an attack
// pass). Every such request must show the server's proof, which such a
// process cannot read: refused (403), nothing written. The same requests
// from the same process unconfined are served: the routes are there and
// only the proof closes them.
func TestServerProofLandlockCaller(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		testutil.Unavailable(t, "no setpriv (util-linux)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	nnp := []string{setpriv, "--no-new-privs"}
	for _, tc := range []struct {
		name string
		// servers: what starts the servers; caller: what starts the
		// unconfined caller (confined as the servers are).
		servers, caller []string
		// noNNP: the Landlock domain is applied without no_new_privs.
		noNNP bool
	}{
		{name: "root without no_new_privs", noNNP: true},
		{name: "servers under no_new_privs", servers: nnp, caller: nnp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noNNP {
				testutil.RequireRoot(t) // Landlock without no_new_privs needs CAP_SYS_ADMIN
			}
			tr := newTree(t)
			base := tr.env("MOAT_DAEMON=off")
			target := filepath.Join(filepath.Dir(tr.dir), "target")
			if err := os.Mkdir(target, 0o755); err != nil {
				t.Fatal(err)
			}
			// Nothing writable but what the requests add (target): the
			// servers' working directories ("/" for moat serve) stay
			// read-only.
			writeJSON(t, tr.settings, map[string]any{
				"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
				"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{}, "denyWrite": []string{}},
			})
			sock, log, _ := startServeVia(t, tr, base, tc.servers, "--gate", "off")
			mcpSock := filepath.Join(filepath.Dir(tr.dir), "mcp.sock")
			startHTTPVia(t, tr, tc.servers, "--mode", "bypassPermissions", "--write", target, "--http", "unix:"+mcpSock)
			spec, _ := json.Marshal(apiAttack{Serve: sock, MCP: mcpSock, Target: target})
			env := append(append([]string(nil), base...), apiAttackEnv+"="+string(spec))
			files := []string{"by-session", "by-run", "by-mcp"}

			// Unconfined (as the servers are): served, the files written.
			cmd := exec.Command(self)
			if tc.caller != nil {
				cmd = exec.Command(tc.caller[0], append(tc.caller[1:], self)...)
			}
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil || strings.Count(string(out), ": served") != 3 {
				t.Fatalf("the unconfined caller: %v\n%s\n%s", err, out, log.String())
			}
			for _, f := range files {
				if err := os.Remove(filepath.Join(target, f)); err != nil {
					t.Errorf("the unconfined caller's %s: %v", f, err)
				}
			}

			// Confined by Landlock (writes in the tree and /dev only):
			// refused for want of the proof, nothing written.
			confined := append(append([]string(nil), env...), landlockEnv+"="+tr.dir+":/dev")
			if tc.noNNP {
				confined = append(confined, landlockNoNNPEnv+"=1")
			}
			cmd = exec.Command(self, "--", self)
			cmd.Env = confined
			out, _ = cmd.CombinedOutput()
			if strings.Contains(string(out), "landlock helper") {
				t.Fatalf("the confinement did not apply: %s", out)
			}
			t.Logf("the confined caller:\n%s", out)
			for _, route := range []string{"session", "run", "mcp"} {
				line := regexp.MustCompile(`(?m)^` + route + `: .*$`).FindString(string(out))
				if !strings.HasPrefix(line, route+": refused") || !strings.Contains(line, "403") && !strings.Contains(line, "Forbidden") {
					t.Errorf("ESCAPE? a Landlock-confined caller through %s: %q, want refused (403)", route, line)
				}
				if strings.HasPrefix(line, route+": refused") && !strings.Contains(line, "proof") {
					t.Errorf("%s: refused for another reason than the proof (%q): the peer checks should have let this caller through", route, line)
				}
			}
			for _, f := range files {
				if _, err := os.Stat(filepath.Join(target, f)); err == nil {
					t.Errorf("ESCAPE: a Landlock-confined caller wrote %s outside its domain through the server:\n%s", f, out)
				}
			}

			// Nor does moat proof read it there (it does unconfined).
			for _, s := range []string{sock, "unix:" + mcpSock} {
				cmd = exec.Command(self, "--", moatBin(t), "proof", s)
				cmd.Env = confined
				if out, err := cmd.CombinedOutput(); err == nil || strings.Contains(string(out), "landlock helper") {
					t.Errorf("moat proof %s in the Landlock domain: %v %s", s, err, out)
				}
				cmd = exec.Command(moatBin(t), "proof", s)
				if tc.caller != nil {
					cmd = exec.Command(tc.caller[0], append(tc.caller[1:], moatBin(t), "proof", s)...)
				}
				cmd.Env = base
				if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) != 32 {
					t.Errorf("moat proof %s unconfined: %v %s", s, err, out)
				}
			}

			// The domain holds without the servers: a direct write fails.
			direct := filepath.Join(target, "direct")
			cmd = exec.Command(self, "--", "/bin/sh", "-c", "echo x > "+direct)
			cmd.Env = confined
			cmd.Run()
			if _, err := os.Stat(direct); err == nil {
				t.Fatal("the Landlock stand-in does not confine: the attack proves nothing")
			}
		})
	}
}

// TestServerRunOtherUsersSocket attacks the client: another user binds
// the socket MOAT_SERVER names first (a shared directory). The client must
// send it nothing (its environment may hold secrets, its descriptors are
// its terminal's or pipes), and run moat itself. Root-only: the test needs
// two users (the listener is root's, the client nobody).
func TestServerRunOtherUsersSocket(t *testing.T) {
	testutil.RequireRoot(t)
	tr := newTree(t)
	shared := filepath.Join(filepath.Dir(tr.dir), "shared")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777)
	sock := filepath.Join(shared, "moat.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(sock, 0o777)
	got := make(chan string, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b, _ := io.ReadAll(c)
			got <- string(b)
			c.Close()
		}
	}()
	cmd := exec.Command(moatBin(t), "run", "--", "true")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "MOAT_DAEMON=off", "MOAT_SERVER=" + sock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var se bytes.Buffer
	cmd.Stderr = &se
	_ = cmd.Run() // the run itself may fail as nobody; what it sent matters
	if !strings.Contains(se.String(), "MOAT_SERVER not used") || !strings.Contains(se.String(), "runs as uid 0, not as this user") {
		t.Errorf("the client did not refuse the other user's socket: %s", se.String())
	}
	select {
	case b := <-got:
		if !onlyHello(b) {
			t.Errorf("the client sent more than its hello to another user's socket: %q", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client never connected: the attack proves nothing")
	}
}

// TestServerRunImpostor attacks the client: a process that is not the
// user's own moat serve binds the socket MOAT_SERVER names first: another
// program (which records how many bytes came), and moat serve itself
// where a command of some sandbox would run it (under no_new_privs;
// inside a moat sandbox, in other namespaces). None may get the caller's
// environment (which may hold secrets) or its descriptors, and the caller
// runs moat itself, saying why.
func TestServerRunImpostor(t *testing.T) {
	tr := newTree(t)
	base := tr.env("MOAT_DAEMON=off")
	listener := filepath.Join(filepath.Dir(tr.dir), "listener.py")
	os.WriteFile(listener, []byte(`import socket, sys
p, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(p)
s.listen(4)
open(out + ".ready", "w").close()
c, _ = s.accept()
c.settimeout(5)
d = b""
try:
    while True:
        x = c.recv(65536)
        if not x:
            break
        d += x
except Exception:
    pass
open(out + ".tmp", "wb").write(d)
import os
os.rename(out + ".tmp", out)
`), 0o644)
	unixOK := filepath.Join(filepath.Dir(tr.dir), "unix.json")
	writeJSON(t, unixOK, map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}, "allowAllUnixSockets": true},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{"."}, "denyWrite": []string{}},
	})
	serve := func(sock string) []string {
		return []string{moatBin(t), "serve", "--debug", "--socket", sock, "--settings", tr.settings}
	}
	cases := []struct {
		name string
		cmd  func(sock, out string) []string
		why  string
	}{
		{"another program", func(sock, out string) []string { return []string{"python3", listener, sock, out} }, "not this moat binary"},
		{"moat serve under no_new_privs", func(sock, _ string) []string {
			return append([]string{"setpriv", "--no-new-privs"}, serve(sock)...)
		}, "no_new_privs"},
		{"moat serve in a moat sandbox", func(sock, _ string) []string {
			return append([]string{moatBin(t), "run", "--settings", unixOK, "--"}, serve(sock)...)
		}, "another user or mount namespace"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(tr.dir, fmt.Sprintf("imp%d.sock", i))
			out := filepath.Join(tr.dir, fmt.Sprintf("imp%d.out", i))
			argv := tc.cmd(sock, out)
			l := exec.Command(argv[0], argv[1:]...)
			l.Dir, l.Env = tr.dir, base
			lerr := &lockedBuffer{b: &bytes.Buffer{}}
			l.Stderr = lerr
			if err := l.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { l.Process.Kill(); l.Wait() }()
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
				if fi, err := os.Stat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the impostor never listened: %s", lerr.String())
				}
			}
			env := append(append([]string(nil), base...), "MOAT_SERVER="+sock, "MY_SECRET=hunter2")
			r := tr.moat(t, "", env, "run", "--settings", tr.settings, "--", "sh", "-c", "echo ran")
			if r.code != 0 || r.stdout != "ran\n" {
				t.Errorf("the run: %d %q %s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "MOAT_SERVER not used") || !strings.Contains(r.stderr, tc.why) {
				t.Errorf("the client did not refuse the impostor (%s): %s", tc.why, r.stderr)
			}
			if strings.Contains(lerr.String(), "cli/run") || strings.Contains(lerr.String(), "cli run") {
				t.Errorf("the impostor got a request: %s", lerr.String())
			}
			if i > 0 {
				return
			}
			var n []byte
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(out); err == nil {
					n, _ = os.ReadFile(out)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the listener never reported (the client never connected: the attack proves nothing): %s", lerr.String())
				}
			}
			if !onlyHello(string(n)) {
				t.Errorf("the client sent more than its hello to the impostor: %q", n)
			}
		})
	}
}

// onlyHello: what a client sent to a socket it refused is at most its
// hello, which carries nothing of the caller's (no proof, no arguments,
// no environment).
func onlyHello(b string) bool {
	return b == "" || b == "POST /v1/cli/hello HTTP/1.1\r\nHost: moat\r\nContent-Length: 0\r\n\r\n"
}

// TestServerRunSignalsAndShutdown: a signal moat run in its own process
// ignores (Go ignores SIGALRM when nobody asked for it) does not end the
// handed-over run either; moat serve shutting down under a run ends the
// command, and the caller says so and exits 125.
func TestServerRunSignalsAndShutdown(t *testing.T) {
	tr := newTree(t)
	base := tr.env("MOAT_DAEMON=off")
	sock, log, server := startServeCmd(t, tr, base)
	via := append(append([]string(nil), base...), "MOAT_SERVER="+sock)
	start := func(script string) (*exec.Cmd, *bufio.Reader, *lockedBuffer) {
		cmd := exec.Command(moatBin(t), "run", "--settings", tr.settings, "-c", script)
		cmd.Dir, cmd.Env = tr.dir, via
		out, _ := cmd.StdoutPipe()
		se := &lockedBuffer{b: &bytes.Buffer{}}
		cmd.Stderr = se
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(out)
		if l, err := br.ReadString('\n'); l != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%q %v %s", l, err, se.String())
		}
		return cmd, br, se
	}
	fifo := filepath.Join(tr.dir, "go")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, br, se := start(`echo ready; read x < ` + fifo + `; echo done`)
	cmd.Process.Signal(syscall.SIGALRM)
	time.Sleep(100 * time.Millisecond)
	// Non-blocking: with no reader left (the command killed), the test
	// goes on and fails instead of waiting for ever.
	if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.WriteString("go\n")
		f.Close()
	}
	rest, _ := br.ReadString(0)
	if err := cmd.Wait(); err != nil || rest != "done\n" {
		t.Errorf("after SIGALRM: %v %q %s", err, rest, se.String())
	}

	cmd, _, se = start(`echo ready; sleep 300`)
	server.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(se.String(), "moat serve shut down") {
		t.Errorf("the server shut down under the run: %v %s\n%s", err, se.String(), log.String())
	}
}

// TestServerRunChrootedCaller: a caller in a chroot (as root, in the
// server's namespaces) must not have its run made in the server's root
// directory: the client refuses a server with another root, and moat run
// stays in the caller (where it refuses to run in a chroot). Root-only:
// chroot needs root. Everything happens in a mount namespace of its own.
func TestServerRunChrootedCaller(t *testing.T) {
	testutil.RequireRoot(t)
	tr := newTree(t)
	r := filepath.Join(filepath.Dir(tr.dir), "chroot")
	sock := filepath.Join(filepath.Dir(tr.dir), "api.sock")
	script := `set -e
R=` + r + `
for d in usr bin lib lib64 sbin proc dev sys var; do [ -e /$d ] || continue; mkdir -p $R/$d; mount --rbind /$d $R/$d; done
mkdir -p $R/etc $R/tmp; cp -a /etc/passwd /etc/group $R/etc/; echo CHROOT > $R/etc/marker
M=` + moatBin(t) + `; [ -e $R$M ] || { mkdir -p $R$(dirname $M); touch $R$M; mount --bind $M $R$M; }
cd / && ` + moatBin(t) + ` serve --socket ` + sock + ` --settings ` + tr.settings + ` 2>/dev/null &
SP=$!
for i in $(seq 200); do [ -S ` + sock + ` ] && break; sleep 0.05; done
chroot $R /bin/sh -c "cd /tmp && HOME=` + tr.home + ` MOAT_DAEMON=off MOAT_SERVER=` + sock + ` ` + moatBin(t) + ` run --settings ` + tr.settings + ` -- cat /etc/marker" </dev/null 2>&1 || true
kill $SP; wait $SP || true
`
	out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "MOAT_SERVER not used") || !strings.Contains(string(out), "another root directory") {
		t.Errorf("a chrooted caller was handed over: %s", out)
	}
}

// TestServerRunLandlockImpostor: the second attack pass's impostor. A
// process confined by Landlock (not visible in /proc), with the same
// no_new_privs state as the caller, listens on the MOAT_SERVER path, then
// the process that listened execs the real moat serve (so the socket's
// peer is moat, in the same namespaces and confinement as far as /proc
// tells), while a child that kept the socket accepts. The caller must
// send it neither its request nor its environment: the impostor cannot
// say back the nonce of the caller's memfd (it may not inspect the caller).
func TestServerRunLandlockImpostor(t *testing.T) {
	tr := newTree(t)
	base := tr.env("MOAT_DAEMON=off")
	dir := filepath.Dir(tr.dir)
	script := filepath.Join(dir, "impostor.py")
	os.WriteFile(script, []byte(`import os, socket, sys, time
sock, log, moat, real, settings = sys.argv[1:6]
s = socket.socket(socket.AF_UNIX)
s.bind(sock)
s.listen(8)
if os.fork() > 0:
    os.execv(moat, [moat, "serve", "--socket", real, "--settings", settings])
for _ in range(600):
    if os.path.exists(real):
        break
    time.sleep(0.05)
open(log + ".ready", "w").close()
while True:
    c, _ = s.accept()
    c.settimeout(5)
    data = b""
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            data += d
            if b"/v1/cli/hello" in data and data.endswith(b"\r\n\r\n"):
                c.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"proof":"x"}')
    except Exception:
        pass
    with open(log, "a") as f:
        f.write(repr(data) + "\n")
    c.close()
`), 0o644)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock, log, real := filepath.Join(tr.dir, "imp.sock"), filepath.Join(tr.dir, "imp.log"), filepath.Join(tr.dir, "real.sock")
	imp := exec.Command(self, "--", "/usr/bin/env", "python3", script, sock, log, moatBin(t), real, tr.settings)
	imp.Dir = tr.dir
	imp.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the impostor and its child end together
	imp.Env = append(append([]string(nil), base...), landlockEnv+"="+tr.dir+":"+tr.state+":"+tr.home+":/dev")
	var ierr bytes.Buffer
	imp.Stderr = &ierr
	if err := imp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-imp.Process.Pid, syscall.SIGKILL)
		imp.Wait()
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(log + ".ready"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the impostor never got ready: %s", ierr.String())
		}
	}
	env := append(append([]string(nil), base...), "MOAT_SERVER="+sock, "MY_SECRET=hunter2")
	cmd := exec.Command("setpriv", "--no-new-privs", moatBin(t), "run", "--settings", tr.settings, "--", "sh", "-c", "echo ran")
	cmd.Dir, cmd.Env = tr.dir, env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil || so.String() != "ran\n" {
		t.Errorf("the run: %v %q %s", err, so.String(), se.String())
	}
	if !strings.Contains(se.String(), "MOAT_SERVER not used") || !strings.Contains(se.String(), "did not prove it may inspect this one") {
		t.Errorf("the client was not stopped by the proof (the checks before it passed?): %s", se.String())
	}
	got := ""
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if b, _ := os.ReadFile(log); len(b) > 0 {
			got = string(b)
			break
		}
	}
	if got == "" {
		t.Fatalf("the impostor never got a connection: the attack proves nothing\n%s", ierr.String())
	}
	if strings.Contains(got, "hunter2") || strings.Contains(got, "/v1/cli/run") {
		t.Errorf("the impostor got the request: %s", got)
	}
}

// serverChildren are the processes moat serve (pid) started that still run
// (its tasks' children).
func serverChildren(t *testing.T, pid int) []int {
	t.Helper()
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	var out []int
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// waitFor polls cond for up to ten seconds.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestServerRunSpareStage2: the user's moat serve starts the next run's
// stage 2 (namespaces made, init forked) between runs (linux/spare.go). A
// run that takes one is the run's alone and as confined as any: namespaces
// that are not the server's, a /tmp of its own (empty: no run before left
// anything there), the run's stdin, stdout, stderr and exit status, and a
// secret the settings hide stays hidden (the same read succeeds without
// moat). A spare that died before its run is replaced by a stage 2 of the
// run's own, and the server's end takes its spare with it.
func TestServerRunSpareStage2(t *testing.T) {
	tr := newTree(t)
	base := tr.env("MOAT_DAEMON=off")
	sock, log, srv := startServeCmd(t, tr, base)
	via := append(append([]string(nil), base...), "MOAT_SERVER="+sock, "MOAT_TRACE=1")
	secret := filepath.Join(tr.home, "spare-secret.txt")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(filepath.Dir(tr.dir), "spare.json")
	writeJSON(t, settings, map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{secret}, "allowWrite": []string{"."}, "denyWrite": []string{}},
	})
	script := "grep -q s3cret " + secret + " 2>/dev/null && echo LEAK; ls -A /tmp; touch /tmp/spare-mark; " +
		"for n in mnt pid net user ipc uts; do readlink /proc/self/ns/$n; done; cat; echo err >&2; exit 3"
	if out, _ := exec.Command("/bin/sh", "-c", script).Output(); !strings.Contains(string(out), "LEAK") {
		t.Fatalf("without moat the read failed: the test proves nothing\n%s", out)
	}
	server := map[string]bool{}
	for _, n := range []string{"mnt", "pid", "net", "user", "ipc", "uts"} {
		l, err := os.Readlink("/proc/" + strconv.Itoa(srv.Process.Pid) + "/ns/" + n)
		if err != nil {
			t.Fatal(err)
		}
		server[l] = true
	}
	// run runs a command through the server: its exit, stdout, the stderr
	// it wrote (without moat's trace) and whether it took a spare, or
	// found one it rightly did not take: a spare made before a change to
	// the mount table, and other tests on the machine may mount at any
	// time (as root).
	run := func(stdin, script string) (r runOut, took, stale bool) {
		r = tr.moat(t, stdin, via, "run", "--settings", settings, "-c", script)
		var keep []string
		for _, l := range strings.SplitAfter(r.stderr, "\n") {
			switch {
			case strings.Contains(l, "spare stage 2 taken"):
				took = true
			case strings.Contains(l, "spare stage 2 not taken: the mount table changed"):
				stale = true
			case !strings.HasPrefix(l, "moat trace:"):
				keep = append(keep, l)
			}
		}
		r.stderr = strings.Join(keep, "")
		return r, took, stale
	}
	// runSpare is run once a spare waits: its processes exist a moment
	// before the server has it ready (init's fork, then its word), and a
	// busy machine stretches that moment, so a run that found none is
	// tried again, five times at most.
	runSpare := func(stdin, script string) (r runOut, took, stale bool) {
		for attempt := 0; attempt < 5; attempt++ {
			if !waitFor(func() bool { return len(serverChildren(t, srv.Process.Pid)) > 0 }) {
				t.Fatalf("moat serve started no spare after the run before:\n%s", log.String())
			}
			if r, took, stale = run(stdin, script); took || stale {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		return r, took, stale
	}
	// As root a run has cgroups to join (the eBPF one, the v1 limit
	// cgroups): a spare would join them by pid, which waits for an RCU
	// grace period (more than a spare saves), so none is made; each run
	// starts its own stage 2 in its cgroup (spareFits).
	asRoot := os.Getuid() == 0
	for i := 0; i < 4; i++ {
		in := fmt.Sprintf("in-%d", i)
		var r runOut
		var took, stale bool
		if i == 0 || asRoot {
			r, took, stale = run(in+"\n", script)
		} else {
			r, took, stale = runSpare(in+"\n", script)
		}
		if r.code != 3 || !strings.HasPrefix(r.stderr, "err\n") || !strings.Contains(r.stderr, "deny file-read "+secret) {
			t.Fatalf("run %d: exit %d, stderr %q (want 3, err, and the hidden read reported)", i, r.code, r.stderr)
		}
		if i > 0 && !took && !stale && !asRoot {
			t.Errorf("run %d took no spare stage 2 (five tries, each after one waited)", i)
		}
		if asRoot && (took || stale) {
			t.Errorf("as root, run %d found a spare stage 2 (taken: %v)", i, took)
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if strings.Contains(r.stdout, "LEAK") || strings.Contains(r.stdout, "s3cret") || len(lines) != 7 || lines[6] != in {
			t.Fatalf("run %d: stdout %q: want six namespaces, then its stdin %q, no secret and nothing in /tmp", i, r.stdout, in)
		}
		for _, l := range lines[:6] {
			if server[l] {
				t.Errorf("run %d has the server's namespace %s", i, l)
			}
		}
	}
	if asRoot {
		// The run's eBPF filter holds its sandbox, in the run's cgroup.
		r, _, _ := run("", "exec 3<>/dev/tcp/192.0.2.1/80 && echo CONNECTED; cat /proc/self/cgroup")
		srvCg, _ := os.ReadFile("/proc/" + strconv.Itoa(srv.Process.Pid) + "/cgroup")
		if strings.Contains(r.stdout, "CONNECTED") || !strings.Contains(r.stderr, "deny network-connect-tcp 192.0.2.1:80 (eBPF") || strings.Contains(r.stdout, string(srvCg)) {
			t.Errorf("as root, a run through moat serve: stdout %q stderr %q; the server's cgroup %q", r.stdout, r.stderr, srvCg)
		}
		if kids := serverChildren(t, srv.Process.Pid); len(kids) != 0 {
			t.Errorf("as root, moat serve keeps %d children between runs, want no spare", len(kids))
		}
		return
	}
	// A spare that died before its run: the run gets a stage 2 of its own.
	var kids []int
	if !waitFor(func() bool { kids = serverChildren(t, srv.Process.Pid); return len(kids) == 1 }) {
		t.Fatalf("moat serve has %d children waiting, want one spare", len(kids))
	}
	inits := serverChildren(t, kids[0]) // its init
	syscall.Kill(kids[0], syscall.SIGKILL)
	if !waitFor(func() bool { return !alive(kids[0]) && (len(inits) == 0 || !alive(inits[0])) }) {
		t.Fatal("the spare outlived SIGKILL")
	}
	if r, took, _ := run("", "echo fine"); r.code != 0 || r.stdout != "fine\n" || took {
		t.Fatalf("after the spare died: exit %d stdout %q stderr %q, a spare taken: %v", r.code, r.stdout, r.stderr, took)
	}
	// The server's end ends its spare.
	if !waitFor(func() bool { kids = serverChildren(t, srv.Process.Pid); return len(kids) == 1 }) {
		t.Fatalf("moat serve has %d children waiting, want one spare", len(kids))
	}
	srv.Process.Signal(syscall.SIGTERM)
	srv.Wait()
	if !waitFor(func() bool { return !alive(kids[0]) }) {
		t.Errorf("spare %d outlived moat serve", kids[0])
	}
}

// TestServerRunSpareServerChanged: a spare stage 2 inherited the server's
// process as it was when the spare started (resource limits,
// oom_score_adj, cgroup...). The caller is compared with the server as it
// is when the run comes (api.sameProcess), and a stage 2 started then
// would carry that: so a spare started before the server changed must not
// serve the run. Here the user lowers the server's RLIMIT_CORE to 0:0 (no
// core dump may ever be raised) and raises its oom_score_adj after a run
// left a spare, then runs a command through it with the same values: the
// command must have them, as it has without moat, and not the older ones
// of the spare (found by an attack pass: it had core "0 unlimited" and
// oom_score_adj 0; as root, a server moved into another cgroup had its
// run's command left in the cgroup before).
func TestServerRunSpareServerChanged(t *testing.T) {
	testutil.RequireUnprivileged(t)
	tr := newTree(t)
	base := tr.env("MOAT_DAEMON=off")
	sock, log, srv := startServeCmd(t, tr, base)
	via := append(append([]string(nil), base...), "MOAT_SERVER="+sock, "MOAT_TRACE=1")
	pid := srv.Process.Pid
	script := `grep "core file" /proc/self/limits; cat /proc/self/oom_score_adj`
	// First, a run that leaves a spare behind it.
	if r := tr.moat(t, "", via, "run", "-c", "true"); r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	if !waitFor(func() bool { return len(serverChildren(t, pid)) > 0 }) {
		t.Fatalf("moat serve started no spare:\n%s", log.String())
	}
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	adj, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	adj += 100 // raising it needs no privilege
	if err := os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte(strconv.Itoa(adj)), 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_CORE, &unix.Rlimit{}, nil); err != nil {
		t.Fatal(err)
	}
	pre := []string{"choom", "-n", strconv.Itoa(adj), "--", "prlimit", "--core=0:0"}
	want := regexp.MustCompile(`(?m)^Max core file size +0 +0 +bytes *\n` + strconv.Itoa(adj) + `\n$`)
	// Without moat, the command has the caller's values.
	if out, err := exec.Command(pre[0], append(pre[1:], "/bin/sh", "-c", script)...).Output(); err != nil || !want.MatchString(string(out)) {
		t.Fatalf("without moat: %q %v: the test proves nothing", out, err)
	}
	r := tr.moatVia(t, via, pre, "run", "-c", script)
	if r.code != 0 || strings.Contains(r.stderr, "MOAT_SERVER not used") {
		t.Fatalf("the server did not run it: exit %d\n%s", r.code, r.stderr)
	}
	if !want.MatchString(r.stdout) {
		t.Errorf("the command did not get the server's (and the caller's) limits and oom_score_adj: %q (a spare from before they changed: %v)",
			r.stdout, strings.Contains(r.stderr, "spare stage 2 taken"))
	}
}

// TestServerRunServerThreadsNice: nice, like the scheduling policy, CPU
// affinity and I/O priority, is a thread's, and renice -p PID changes only
// the main thread of a process. The server compared the caller with its
// main thread (5 here, as the caller), but stage 2 starts from whichever
// thread Go runs it on (0): the caller's command ran at a higher priority
// than the caller, where moat run in the caller's own process would have
// kept its nice value (found by an attack pass). Now the server takes a
// run only when all its threads agree; else the caller runs moat itself.
func TestServerRunServerThreadsNice(t *testing.T) {
	testutil.RequireUnprivileged(t)
	tr := newTree(t)
	base := tr.env("MOAT_DAEMON=off")
	sock, _, srv := startServeCmd(t, tr, base)
	via := append(append([]string(nil), base...), "MOAT_SERVER="+sock)
	if n, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err != nil || 20-n != 0 {
		t.Skipf("this test's nice value is not 0 (%d, %v)", 20-n, err)
	}
	// Only the server's main thread: what renice -n 5 -p PID does.
	if err := unix.Setpriority(unix.PRIO_PROCESS, srv.Process.Pid, 5); err != nil {
		t.Fatal(err)
	}
	pre := []string{"nice", "-n", "5"}
	script := "nice"
	if out, err := exec.Command(pre[0], append(pre[1:], "/bin/sh", "-c", script)...).Output(); err != nil || string(out) != "5\n" {
		t.Fatalf("without moat: %q %v: the test proves nothing", out, err)
	}
	for i := 0; i < 3; i++ { // a cold stage 2, then spares
		r := tr.moatVia(t, via, pre, "run", "-c", script)
		if r.code != 0 || r.stdout != "5\n" {
			t.Fatalf("run %d: exit %d, nice %q, want 5 (the caller's)\n%s", i, r.code, r.stdout, r.stderr)
		}
	}
}

// TestServerRunServerThreadsCgroup: a cgroup v1 hierarchy holds threads
// (its tasks file moves one), and a sandbox starts in the cgroups of the
// server's thread that starts it. The server's threads but its main one
// moved into another blkio cgroup: the caller, in the main thread's, had
// its command run in the other (found by an attack pass); now the server
// refuses the run and the caller runs moat itself.
func TestServerRunServerThreadsCgroup(t *testing.T) {
	testutil.RequireRoot(t)
	const hier = "/sys/fs/cgroup/blkio"
	mine, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^\d+:blkio:(.*)$`).FindSubmatch(mine)
	if line == nil {
		t.Skip("no cgroup v1 blkio hierarchy")
	}
	other := filepath.Join(hier, string(line[1]), fmt.Sprintf("moat-test-threads-%d", os.Getpid()))
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Skipf("cgroup v1 blkio hierarchy not writable: %v", err)
	}
	t.Cleanup(func() { os.Remove(other) })
	tr := newTree(t)
	base := tr.env("MOAT_DAEMON=off")
	sock, _, srv := startServeCmd(t, tr, base)
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
		os.Remove(other)
	})
	via := append(append([]string(nil), base...), "MOAT_SERVER="+sock)
	pid := srv.Process.Pid
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		if task.Name() != strconv.Itoa(pid) {
			if err := os.WriteFile(filepath.Join(other, "tasks"), []byte(task.Name()), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	script := "grep :blkio: /proc/self/cgroup"
	want := string(line[0]) + "\n"
	if out, err := exec.Command("/bin/sh", "-c", script).Output(); err != nil || string(out) != want {
		t.Fatalf("without moat: %q %v, want %q", out, err, want)
	}
	for i := 0; i < 3; i++ {
		r := tr.moat(t, "", via, "run", "-c", script)
		if r.code != 0 || r.stdout != want {
			t.Fatalf("run %d: exit %d, %q, want %q (the caller's)\n%s", i, r.code, r.stdout, want, r.stderr)
		}
	}
}
