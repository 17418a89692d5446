//go:build linux

package runtime

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// The README's "Go library" program is built as written, as a program of
// its own (stage 2 linked into a binary that is not moat's), and runs a
// command in a sandbox: its exit status and output come back, a refused
// write is reported.
func TestREADMEGoLibrary(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if os.IsNotExist(err) {
		t.Skip("not run in the source tree (a test binary copied elsewhere)")
	} else if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Go library\n")
	if !ok {
		t.Fatal(`README.md has no "## Go library" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, code, ok := strings.Cut(section, "\n```go\n")
	if !ok {
		t.Fatal("the Go library section has no Go program")
	}
	code, _, ok = strings.Cut(code, "\n```\n")
	if !ok {
		t.Fatal("the Go library section's program has no end")
	}
	if !strings.Contains(section, "go get github.com/moat-sandbox/moat\n") {
		t.Error("the Go library section does not say go get github.com/moat-sandbox/moat")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command: the README's program is not built")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// The program goes in as an overlay: a package of this module that
	// exists only for this build.
	tmp := t.TempDir()
	src := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(src, []byte(code+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(root, "internal", "readmeprogram", "main.go"): src}})
	if err := os.WriteFile(filepath.Join(tmp, "overlay.json"), overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.RequireUserns(t)
	base := os.Getenv("MOAT_TEST_DIR")
	if base == "" {
		base = "/var/tmp" // not /tmp: private inside the sandbox
	}
	dir, err := os.MkdirTemp(base, "moat-readme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	prog := filepath.Join(dir, "program")
	build := exec.Command(gobin, "build", "-overlay", filepath.Join(tmp, "overlay.json"), "-o", prog, "./internal/readmeprogram")
	build.Dir = root
	// Offline: a user without this module's dependencies downloaded (the
	// rootless CI run) skips rather than fetch them.
	build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		if s := string(out); strings.Contains(s, "GOPROXY=off") || strings.Contains(s, "GOCACHE") {
			t.Skipf("go cannot build here (this user's module cache or build cache): %s", out)
		}
		t.Fatalf("the README's program does not build: %v\n%s\n%s", err, out, code)
	}
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	run := func(argv ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(prog, argv...)
		cmd.Dir = work
		// No settings file: HOME is empty, XDG_STATE_HOME keeps moat's
		// state out of the real home.
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + work, "XDG_STATE_HOME=" + filepath.Join(dir, "state"), "LANG=C"}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := run("sh", "-c", "echo hello; exit 3"); code != 3 || out != "hello\n" {
		t.Errorf("the README's program: exit %d, output %q (want 3, hello)", code, out)
	}
	if code, out := run("touch", "/etc/moat-readme"); code == 0 || !strings.Contains(out, "deny file-write /etc/moat-readme") {
		t.Errorf("a refused write: exit %d, output %q", code, out)
	}
}
