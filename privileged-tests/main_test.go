//go:build linux

// Package privtests holds moat's attack tests: each attack runs once without
// moat, as the same user, against a target that user can reach (it must
// escape), and once under `moat run` (it must be blocked). They run as root
// and as an unprivileged user in CI (.ci/run).
//
// The moat binary under test is $MOAT_BIN, or one built from this checkout.
// Test directories live under $MOAT_TEST_DIR (default /var/tmp): not under
// /tmp, which is private inside the sandbox.
package privtests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

var (
	moatBin string // the moat CLI under test
	self    string // this test binary (the attack helper)
)

func TestMain(m *testing.M) {
	if os.Getenv(denyUsernsEnv) == "1" {
		os.Exit(denyUsernsMain(os.Args[1:]))
	}
	if os.Getenv(denyMountsEnv) == "1" {
		os.Exit(denyMountsMain(os.Args[1:]))
	}
	if os.Getenv("MOAT_ATTACK") == "1" {
		os.Exit(attackMain(os.Args[1:]))
	}
	var err error
	if self, err = os.Executable(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	dir, err := os.MkdirTemp(testRoot(), "moat-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Chmod(dir, 0o755)
	cleanup := func() { os.RemoveAll(dir) }
	if moatBin, err = testutil.MoatBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if viaSession() {
		// A session's shell finds programs inside the sandbox, where the
		// host's /tmp (and the go tool's build directory in it) is hidden;
		// moat run opens its program before that. The attack helper goes
		// beside moat's binary, outside /tmp.
		if self, err = copyExecutable(self, filepath.Join(dir, "attack")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			cleanup()
			os.Exit(2)
		}
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func copyExecutable(src, dst string) (string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	return dst, os.WriteFile(dst, data, 0o755)
}

func testRoot() string {
	if d := os.Getenv("MOAT_TEST_DIR"); d != "" {
		return d
	}
	return "/var/tmp"
}

// fixture is a test tree outside /tmp:
//
//	root/home      HOME, with .ssh/id_ed25519 (a default secret)
//	root/work      the working directory, a git repository, writable
//	root/outside   readable, not writable: target.txt, secret.txt (denied)
type fixture struct {
	t                         *testing.T
	root, home, work, outside string
	secret, target            string
	settings                  string
	state                     string
	extraEnv                  []string    // added to env(), as the user's session would set them
	serve                     *serveState // MOAT_VIA=serve: the fixture's moat serve (its copies share it)
}

// serveState is a fixture's moat serve, started at its first run.
type serveState struct {
	mu   sync.Mutex
	sock string
	cmd  *exec.Cmd
}

func (s *serveState) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Signal(syscall.SIGTERM)
		s.cmd.Wait()
		s.cmd = nil
	}
}

const (
	secretText = "SECRET-9f8e7d"
	targetText = "ORIGINAL-1a2b3c"
)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	testutil.RequireUserns(t)
	return makeFixture(t)
}

// makeFixture is newFixture for tests that need no user namespace.
func makeFixture(t *testing.T) *fixture {
	t.Helper()
	root, err := os.MkdirTemp(testRoot(), "moat-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	f := &fixture{t: t, root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work"),
		outside: filepath.Join(root, "outside"), state: filepath.Join(root, "state"), serve: &serveState{}}
	t.Cleanup(f.serve.stop)
	f.secret = filepath.Join(f.outside, "secret.txt")
	f.target = filepath.Join(f.outside, "target.txt")
	for _, d := range []string{f.home + "/.ssh", f.work, f.outside + "/secretdir", f.state} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(f.home+"/.ssh/id_ed25519", []byte(secretText+"\n"), 0o600))
	must(t, os.WriteFile(f.secret, []byte(secretText+"\n"), 0o644))
	must(t, os.WriteFile(f.outside+"/secretdir/key", []byte(secretText+"\n"), 0o644))
	must(t, os.WriteFile(f.target, []byte(targetText+"\n"), 0o644))
	git(t, f.work, "init", "-q")
	f.settings = f.writeSettings(nil)
	return f
}

// writeSettings writes an srt settings file; extra fields are merged into
// "filesystem".
func (f *fixture) writeSettings(extra map[string]any) string {
	fs := map[string]any{
		"denyRead":   []string{f.secret, f.outside + "/secretdir"},
		"allowWrite": []string{f.work},
		"denyWrite":  []string{},
	}
	for k, v := range extra {
		fs[k] = v
	}
	b, _ := json.Marshal(map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": fs,
	})
	p := filepath.Join(f.root, fmt.Sprintf("settings-%d.json", time.Now().UnixNano()))
	must(f.t, os.WriteFile(p, b, 0o644))
	return p
}

type result struct {
	code int
	out  string
	pid  int // the process run (moat's pid names its cgroups)
}

func (r result) escaped() bool { return r.code == 0 && strings.Contains(r.out, "ESCAPED") }

func (f *fixture) env() []string {
	return append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + f.home,
		"XDG_STATE_HOME=" + f.state,
		"MOAT_ATTACK=1",
		"LANG=C",
		// moat's own sandbox, as root or rootless, whether or not a moatd
		// is installed here (cmd/moat's TestDaemon* test the daemon's).
		"MOAT_DAEMON=off",
	}, f.extraEnv...)
}

// direct runs an attack without moat.
func (f *fixture) direct(args ...string) result {
	f.t.Helper()
	return f.exec(self, args...)
}

// sandboxed runs an attack under moat with the fixture's settings.
func (f *fixture) sandboxed(args ...string) result {
	f.t.Helper()
	return f.sandboxedWith(f.settings, args...)
}

// sandboxedSh runs a shell script under moat with the fixture's settings,
// the way sandboxedWith runs the test binary: in a session, handed to moat
// serve, or in moat run's own process.
func (f *fixture) sandboxedSh(script string) result {
	f.t.Helper()
	checkNotCold(f.t)
	if viaSession() {
		return f.inSession(f.settings, []string{"/bin/sh", "-c", script})
	}
	env := f.env()
	if viaServe() {
		env = append(env, "MOAT_SERVER="+f.server())
	}
	return f.execEnv(env, moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c", script)
}

func (f *fixture) sandboxedWith(settings string, args ...string) result {
	f.t.Helper()
	checkNotCold(f.t)
	if viaSession() {
		return f.inSession(settings, append([]string{self}, args...))
	}
	if viaServe() {
		r := f.execEnv(append(f.env(), "MOAT_SERVER="+f.server()), moatBin, append([]string{"run", "--settings", settings, "--", self}, args...)...)
		if strings.Contains(r.out, "MOAT_SERVER not used") {
			f.t.Logf("MOAT_VIA=serve: the run stayed in its own process: %s", r.out)
		}
		return r
	}
	return f.exec(moatBin, append([]string{"run", "--settings", settings, "--", self}, args...)...)
}

// viaServe: MOAT_VIA=serve hands every sandboxed attack to a moat serve of
// the fixture's (MOAT_SERVER), whose runs after the first take a stage 2
// started ahead of them (linux/spare.go): the attacks against that path.
func viaServe() bool { return os.Getenv("MOAT_VIA") == "serve" }

// server starts the fixture's moat serve, once, with its environment (a
// server serves only callers whose variables moat reads are its own).
func (f *fixture) server() string {
	f.t.Helper()
	s := f.serve
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return s.sock
	}
	s.sock = filepath.Join(f.root, "via-serve.sock")
	dir := filepath.Join(f.root, "serve-cwd")
	must(f.t, os.MkdirAll(dir, 0o755))
	cmd := exec.Command(moatBin, "serve", "--socket", s.sock)
	cmd.Dir, cmd.Env = dir, f.env()
	var log bytes.Buffer
	cmd.Stderr = &log
	must(f.t, cmd.Start())
	s.cmd = cmd
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", s.sock); err == nil {
			c.Close()
			return s.sock
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("moat serve did not answer: %s", log.String())
		}
	}
}

// viaSession: MOAT_VIA=session runs every sandboxed attack as a command of
// a session sandbox (moat session --jsonl) instead of a cold moat run, so
// that sessions are held to the same attacks (.ci/run runs both).
func viaSession() bool { return os.Getenv("MOAT_VIA") == "session" }

// coldRunsOnly skips, under MOAT_VIA=session, a test that starts no session
// whichever way it runs (it runs moat run, the no-namespace tier or moat
// doctor itself, or no sandbox): its runs would repeat make test-go's, a
// minute and a half of CI's time. The tests that call it were found by a
// run under MOAT_VIA=session that logged every test reaching inSession
// (2026-11-30); a test that comes to use the fixture's sandboxed helpers
// must drop the call.
func coldRunsOnly(t *testing.T) {
	t.Helper()
	if viaSession() || viaServe() {
		t.Skip("starts no session and hands nothing to moat serve: make test-go runs it as it is")
	}
	coldTests.Store(t.Name(), true)
}

// coldTests are the tests that called coldRunsOnly: one of them that runs
// an attack through the fixture's sandboxed helpers (a session's command
// under MOAT_VIA=session) fails, so that it cannot lose its session runs
// unseen.
var coldTests sync.Map

func checkNotCold(t *testing.T) {
	t.Helper()
	if _, cold := coldTests.Load(strings.SplitN(t.Name(), "/", 2)[0]); cold {
		t.Errorf("%s runs a sandboxed attack (a session's command under MOAT_VIA=session) but calls coldRunsOnly, which skips it there: drop the call", t.Name())
	}
}

// inSession runs argv as the one command of a moat session --jsonl (the
// host decided: --gate off) and returns its exit status and output (the
// violations block included, as the agent gets it).
func (f *fixture) inSession(settings string, argv []string) result {
	f.t.Helper()
	return f.inSessionVia(nil, []string{"--settings", settings}, argv)
}

// inSessionVia is inSession with moat's flags given and moat started
// through wrap (a program and its arguments before moat's path, such as a
// container's emulation; nil: moat itself).
func (f *fixture) inSessionVia(wrap, flags, argv []string) result {
	f.t.Helper()
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'"
	}
	req, _ := json.Marshal(map[string]any{"id": "attack", "op": "run", "command": strings.Join(quoted, " "), "auto_background_ms": -1})
	args := append(append(append([]string(nil), wrap...), moatBin, "session", "--jsonl", "--gate", "off"), flags...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env = f.work, f.env()
	cmd.Stdin = bytes.NewReader(append(req, '\n'))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return result{code: 125, out: errb.String() + out.String()}
	}
	for _, line := range strings.Split(out.String(), "\n") {
		var ev struct {
			ID       string `json:"id"`
			Event    string `json:"event"`
			ExitCode int    `json:"exit_code"`
			Output   string `json:"output"`
			Error    string `json:"error"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.ID == "attack" && ev.Event == "finished" {
			if ev.ExitCode == -1 {
				return result{code: 125, out: ev.Error + errb.String()}
			}
			return result{code: ev.ExitCode, out: ev.Output + errb.String()}
		}
	}
	f.t.Fatalf("moat session gave no finished event:\n%s\n%s", out.String(), errb.String())
	return result{}
}

func (f *fixture) exec(bin string, args ...string) result {
	f.t.Helper()
	return f.execEnv(f.env(), bin, args...)
}

func (f *fixture) execEnv(env []string, bin string, args ...string) result {
	f.t.Helper()
	return f.execAs(nil, env, bin, args...)
}

// execAs is execEnv with the command's credentials (nil: the test's).
func (f *fixture) execAs(cred *syscall.Credential, env []string, bin string, args ...string) result {
	f.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = f.work
	cmd.Env = env
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatalf("run %s: %v", bin, err)
	}
	return result{code: code, out: out.String(), pid: cmd.Process.Pid}
}

// attack runs one attack both ways: it must escape without moat and be
// blocked under moat. reset restores the target between the two runs.
func (f *fixture) attack(args []string, reset func()) {
	f.t.Helper()
	f.attackWith(f.sandboxed, args, reset)
}

// attackWith is attack with the sandboxed run given (moat's flags differ).
func (f *fixture) attackWith(sandboxed func(...string) result, args []string, reset func()) {
	f.t.Helper()
	got := sandboxed(args...)
	if got.escaped() {
		f.t.Errorf("ESCAPE under moat: %v\n%s", args, got.out)
	} else if !strings.Contains(got.out, "blocked:") {
		f.t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
	}
	if reset != nil {
		reset()
	}
	base := f.direct(args...)
	if !base.escaped() {
		f.t.Errorf("the attack must work without moat (or this test cannot detect an escape): %v\n%s", args, base.out)
	}
	if reset != nil {
		reset()
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func git(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}
