//go:build linux

package runtime

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

func TestMain(m *testing.M) {
	// The sandbox re-executes this binary to clean up after a killed
	// supervisor: a program that uses Run handles that first.
	if code, ok := Reexec(os.Args); ok {
		os.Exit(code)
	}
	done := testutil.OwnHome()
	code := m.Run()
	done()
	os.Exit(code)
}

// testPolicy is a policy with a writable directory outside /tmp (which is
// private inside the sandbox).
func testPolicy(t *testing.T) (*policy.Policy, string) {
	t.Helper()
	testutil.RequireUserns(t)
	root := os.Getenv("MOAT_TEST_DIR")
	if root == "" {
		root = "/var/tmp"
	}
	dir, err := os.MkdirTemp(root, "moat-runtime-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	p := &policy.Policy{Cwd: dir, Home: dir, Violations: true}
	p.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	p.FS.AllowWrite = []policy.PathRule{{Path: dir, Source: "test"}}
	return p, dir
}

func runCapture(t *testing.T, ctx context.Context, req Request) (*Result, string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	req.Stdout, req.Stderr = w, w
	if req.StateDir == "" {
		req.StateDir = filepath.Join(req.Policy.Cwd, ".state")
	}
	out := make(chan string)
	go func() { b, _ := io.ReadAll(r); out <- string(b) }()
	res, err := Run(ctx, req)
	w.Close()
	return res, <-out, err
}

func TestRun(t *testing.T) {
	pol, dir := testPolicy(t)
	res, out, err := runCapture(t, context.Background(), Request{Policy: pol, Argv: []string{"/bin/sh", "-c", "echo hello; echo x > f; touch /etc/moat-test 2>/dev/null; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || strings.TrimSpace(out) != "hello" {
		t.Fatalf("exit %d, output %q", res.ExitCode, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "x\n" {
		t.Fatalf("the writable directory was not written: %q", b)
	}
	found := false
	for _, v := range res.Violations {
		found = found || v.Target == "/etc/moat-test"
	}
	if !found {
		t.Errorf("the refused write is not a violation: %+v", res.Violations)
	}
}

func TestRunErrors(t *testing.T) {
	pol, _ := testPolicy(t)
	if _, err := Run(context.Background(), Request{Argv: []string{"true"}}); err == nil {
		t.Error("no policy must be an error")
	}
	if _, err := Run(context.Background(), Request{Policy: pol}); err == nil {
		t.Error("no command must be an error")
	}
	bad := *pol
	bad.Cwd = "relative"
	if _, err := Run(context.Background(), Request{Policy: &bad, Argv: []string{"true"}}); !errors.Is(err, policy.ErrInvalid) {
		t.Errorf("an invalid policy: %v", err)
	}
	_, _, err := runCapture(t, context.Background(), Request{Policy: pol, Argv: []string{"/no/such/command"}})
	var xe *enforce.ExecError
	if !errors.As(err, &xe) || xe.ExitCode() != 127 {
		t.Errorf("a missing command: %v", err)
	}
}

// Cancelling the context and the policy's timeout both end the whole tree.
func TestRunEnds(t *testing.T) {
	pol, _ := testPolicy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, _, err := runCapture(t, ctx, Request{Policy: pol, Argv: []string{"/bin/sh", "-c", "sleep 60 & sleep 61"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal == 0 || time.Since(start) > 10*time.Second {
		t.Fatalf("not killed: %+v after %v", res, time.Since(start))
	}
	pol.Limits.Timeout = 200 * time.Millisecond
	res, _, err = runCapture(t, context.Background(), Request{Policy: pol, Argv: []string{"/bin/sh", "-c", "sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != 124 {
		t.Fatalf("the timeout did not end it: %+v", res)
	}
}

// Violations reach the callback as they happen, each once.
func TestRunOnViolation(t *testing.T) {
	pol, _ := testPolicy(t)
	var got []policy.Violation
	res, _, err := runCapture(t, context.Background(), Request{Policy: pol, OnViolation: func(v policy.Violation) { got = append(got, v) },
		Argv: []string{"/bin/sh", "-c", "touch /etc/a 2>/dev/null; touch /etc/a 2>/dev/null; true"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) != len(res.Violations) {
		t.Fatalf("callback %v, result %v", got, res.Violations)
	}
}

// The tool cache is writable inside and the variables point to it; the
// host's own cache beside it stays read-only (the same write succeeds
// without moat); moat.toolCache off leaves the variables alone.
func TestToolCache(t *testing.T) {
	p, dir := testPolicy(t)
	home := filepath.Join(dir, "home")
	hostCache := filepath.Join(home, ".cache", "go-build")
	if err := os.MkdirAll(hostCache, 0o755); err != nil {
		t.Fatal(err)
	}
	p.Home = home
	p.FS.AllowWrite = nil
	p.ToolCache = policy.DefaultToolCache(home, "")
	script := `echo "GOCACHE=$GOCACHE"; touch "$GOCACHE/entry" && echo cache-ok; touch ` + hostCache + `/planted && echo ESCAPED`
	res, out, err := runCapture(t, context.Background(), Request{Policy: p, Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin", "GOCACHE=" + hostCache}})
	if err != nil {
		t.Fatal(err)
	}
	want := "GOCACHE=" + filepath.Join(p.ToolCache, "go-build")
	if !strings.Contains(out, want) || !strings.Contains(out, "cache-ok") || strings.Contains(out, "ESCAPED") {
		t.Errorf("exit %d, output:\n%s\nwant %s, cache-ok, and the host's cache refused", res.ExitCode, out, want)
	}
	if _, err := os.Stat(filepath.Join(p.ToolCache, "go-build", "entry")); err != nil {
		t.Errorf("the cache entry is not on the host: %v", err)
	}
	if err := os.WriteFile(filepath.Join(hostCache, "planted"), nil, 0o644); err != nil {
		t.Fatalf("without moat the write must succeed: %v", err)
	}
	p.ToolCache = ""
	_, out, err = runCapture(t, context.Background(), Request{Policy: p, Argv: []string{"/bin/sh", "-c", `echo "GOCACHE=$GOCACHE"`}, Env: []string{"PATH=/usr/bin:/bin", "GOCACHE=" + hostCache}})
	if err != nil || !strings.Contains(out, "GOCACHE="+hostCache) {
		t.Errorf("toolCache off: %v\n%s", err, out)
	}
}
