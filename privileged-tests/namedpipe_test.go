//go:build linux

package privtests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"golang.org/x/sys/unix"
)

// Named pipes the command leaves where git opens a file by name: git's
// open of a FIFO waits for a writer for good, so .git/COMMIT_EDITMSG,
// .git/info/exclude or a .gitignore made a FIFO under moat hung the user's
// every later git status and git commit (attack pass 74). The git audit
// takes them out; without moat the same plant hangs the same git.
func TestGitNamedPipesTakenOut(t *testing.T) {
	f := newFixture(t)
	git(t, f.work, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "init")
	plant := "rm -f .git/COMMIT_EDITMSG .git/info/exclude && mkdir -p .git/info sub/dir && " +
		"mkfifo .git/COMMIT_EDITMSG .git/info/exclude sub/dir/.gitignore"
	for _, moat := range []bool{true, false} {
		for _, p := range []string{".git/COMMIT_EDITMSG", ".git/info/exclude", "sub/dir/.gitignore"} {
			os.Remove(filepath.Join(f.work, p))
		}
		out := f.plantWith(moat, plant)
		for _, args := range [][]string{{"status"}, {"commit", "-q", "--allow-empty", "-m", "x"}} {
			hung := userGitHangs(t, f.work, args...)
			switch {
			case moat && hung:
				t.Errorf("the user's git %v hangs on the named pipes a command left under moat:\n%s", args, out)
			case !moat && !hung:
				t.Errorf("without moat git %v did not hang on the named pipes (the test cannot fail)", args)
			}
		}
	}
}

// A pointer the command leaves may lead to a device node: the git audit
// after the run opened what sub/.git -> DEVICE or a commondir symlink led
// to, as the run's user (root for root's runs), before it looked at what
// it was, and a device's open has effects of its own (a watchdog's arms
// it, and the host reboots when nothing feeds it; attack pass 74, seen
// with strace as root). The node here is one of the test's own, a
// /dev/zero (inotify reports every open of it but an O_PATH one, which
// opens nothing); the test opens it once itself, so it can fail.
func TestGitAuditOpensNoDevice(t *testing.T) {
	f := newFixture(t)
	dev := filepath.Join(f.outside, "zero")
	if err := unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err != nil {
		t.Skipf("cannot make a device node here: %v", err)
	}
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, dev, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	opened := func() bool {
		buf := make([]byte, 4096)
		n, _ := unix.Read(in, buf)
		return n > 0
	}
	if d, err := os.Open(dev); err != nil {
		t.Fatal(err)
	} else {
		d.Close()
	}
	if !opened() {
		t.Fatal("an open of the device is not reported (the test cannot fail)")
	}
	for _, plant := range []string{
		"mkdir -p s && ln -sfn " + dev + " s/.git",
		"git init -q r && ln -sf " + dev + " r/.git/commondir",
	} {
		out := f.plantWith(true, plant)
		if opened() {
			t.Errorf("the git audit opened the device a pointer the command left leads to (%s):\n%s", plant, out)
		}
	}
}

// A named pipe git opens by a name the audit did not look at, or through
// a symlink made in the git directory: a loose object made a pipe
// (objects/XX/ was not read), .git/info/exclude -> ../../pipe, or .git/info
// -> ../d with a pipe d/exclude (a symlink leading inside the writable
// trees was left) hung the user's every later git log or git status
// (attack pass 78, through moat run). Without moat the same plant hangs
// the same git.
func TestGitNamedPipesBehindLinksTakenOut(t *testing.T) {
	coldRunsOnly(t)
	cases := []struct {
		name  string
		plant func(head string) string
		git   []string
	}{
		{"a loose object", func(h string) string {
			o := ".git/objects/" + h[:2] + "/" + h[2:]
			return "rm -f " + o + " && mkfifo " + o
		}, []string{"log", "-1"}},
		{"a symlink to a pipe", func(string) string {
			return "mkfifo pipe && mkdir -p .git/info && rm -f .git/info/exclude && ln -s ../../pipe .git/info/exclude"
		}, []string{"status"}},
		{"a symlinked directory", func(string) string {
			return "mkdir d && mkfifo d/exclude && rm -rf .git/info && ln -s ../d .git/info"
		}, []string{"status"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, moat := range []bool{true, false} {
				f := newFixture(t)
				git(t, f.work, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "init")
				rev := exec.Command("git", "rev-parse", "HEAD")
				rev.Dir, rev.Env = f.work, append(os.Environ(), "HOME="+f.work)
				b, err := rev.Output()
				if err != nil {
					t.Fatal(err)
				}
				head := strings.TrimSpace(string(b))
				out := f.plantWith(moat, c.plant(head))
				hung := userGitHangs(t, f.work, c.git...)
				switch {
				case moat && hung:
					t.Errorf("the user's git %v hangs on the named pipe a command left under moat:\n%s", c.git, out)
				case !moat && !hung:
					t.Errorf("without moat git %v did not hang on the named pipe (the test cannot fail)", c.git)
				}
			}
		})
	}
}

// userGitHangs runs git as the user would next in dir, and reports
// whether it hung (testutil.Hangs: waiting in a named pipe's open, or
// still running after 5 s).
func userGitHangs(t *testing.T, dir string, args ...string) bool {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@x"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !testutil.Hangs(cmd, 5*time.Second) {
		return false
	}
	// The killed git's lock would fail the next git at once.
	os.Remove(filepath.Join(dir, ".git", "index.lock"))
	return true
}
