//go:build unix

package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// Under moatd the record of the walk and the quarantine are the client's
// own (~/.local/state/moat/cache and quarantine), which the client can
// fill as it likes between two runs. A FIFO named as a record
// (gitguard-*) held the audit's thread in open(2) for good: moatd's start
// audits the runs a killed daemon left before it serves anyone, and its
// shutdown waits for every session's last audit, so one user's FIFO kept
// the daemon from serving every user (attack pass 60). A FIFO or a
// symlink there is now no record, and loadCache returns at once.
func TestCacheFIFONotOpened(t *testing.T) {
	dir := t.TempDir()
	const root = "/var/tmp/proj"
	other := t.TempDir()
	good := newCache(root)
	good.put(root, dirInfo{id: fileID{dev: 1, ino: 2, ctime: 3}})
	if err := os.WriteFile(filepath.Join(other, "record"), encoded(good), 0o600); err != nil {
		t.Fatal(err)
	}
	fifos := []string{cacheFile(dir, root), filepath.Join(dir, "gitguard-0")}
	for _, f := range fifos {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A record reached through a symlink is not the user's record of this
	// tree either (it could be any file the reader may open).
	if err := os.Symlink(filepath.Join(other, "record"), filepath.Join(dir, "gitguard-1")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Whatever still waits in open(2) is let go (a writer pairs).
		for _, f := range fifos {
			if fd, err := syscall.Open(f, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				syscall.Close(fd)
			}
		}
	})
	done := make(chan *walkCache, 1)
	go func() { done <- loadCache(dir, root) }()
	select {
	case c := <-done:
		if c != nil {
			t.Errorf("a record read through a FIFO or a symlink: %+v", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("loadCache is still opening a FIFO named as a record after 5 s")
	}

	// The quarantine's index.
	q := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(q, "index.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifos = append(fifos, filepath.Join(q, "index.txt"))
	a := &auditor{o: Options{QuarantineDir: q}, qdir: q}
	dest := make(chan error, 1)
	go func() { _, err := a.dest("/var/tmp/proj/.git/config"); dest <- err }()
	select {
	case err := <-dest:
		if err != nil {
			t.Errorf("dest: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the quarantine is still opening a FIFO at its index after 5 s")
	}
}

// A record larger than maxRecordBytes is no record, and the records read
// in the search for one (loadCache's fallback) together stay within it,
// each file once: a client's made-up 12.9 MB record and three hard links
// to it took moatd from 21 MB to 2.2 GB for one audit (attack pass 60).
func TestCacheRecordBounded(t *testing.T) {
	dir := t.TempDir()
	const root = "/var/tmp/proj"
	c := newCache(root)
	for i := range 2000 {
		c.put(filepath.Join(root, "d", strconv.Itoa(i)), dirInfo{id: fileID{dev: 1, ino: uint64(i), ctime: 3}})
	}
	b := encoded(c)
	defer func(n int64) { maxRecordBytes = n }(maxRecordBytes)
	maxRecordBytes = int64(len(b)) + 100
	// The exact record, within the bound: read.
	if err := os.WriteFile(cacheFile(dir, root), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := loadCache(dir, root); got == nil || len(got.dirs) != len(c.dirs) {
		t.Fatalf("a record within the bound was not read: %v", got)
	}
	// Past it: no record.
	maxRecordBytes = int64(len(b)) - 1
	if got := loadCache(dir, root); got != nil {
		t.Errorf("a record of %d bytes was read past a bound of %d", len(b), maxRecordBytes)
	}
	// Hard links to one record, under other names (the fallback): read
	// once, and two records together no more than the bound.
	maxRecordBytes = int64(len(b)) + 100
	os.Remove(cacheFile(dir, root))
	first := filepath.Join(dir, "gitguard-0")
	if err := os.WriteFile(first, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"gitguard-1", "gitguard-2", "gitguard-3"} {
		if err := os.Link(first, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "gitguard-4"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	read := 0
	orig := readCacheHook
	readCacheHook = func(string) { read++ }
	defer func() { readCacheHook = orig }()
	if got := loadCache(dir, root); got == nil {
		t.Fatal("the fallback found no record")
	}
	if read != 1 {
		t.Errorf("the fallback decoded %d records (hard links to one, and a second past the bound), want 1", read)
	}
}

// A named pipe the run made where git opens a file by its name (HEAD, a
// ref, info/exclude, COMMIT_EDITMSG in a git directory; a .gitignore in
// any directory of the work tree) hung the user's every later git status
// or commit in open(2), waiting for a writer (attack pass 74, through moat
// run). git never makes one: the audit takes them out. Each case first
// hangs the user's git without the audit, so the test can fail.
func TestAuditTakesOutNamedPipes(t *testing.T) {
	cases := []pipeCase{
		{"HEAD", `mkfifo .git/HEAD.new && mv .git/HEAD.new .git/HEAD`, []string{"status"}},
		{"a ref", `rm .git/refs/heads/main && mkfifo .git/refs/heads/main`, []string{"log", "-1"}},
		{"info/exclude", `mkdir -p .git/info && rm -f .git/info/exclude && mkfifo .git/info/exclude`, []string{"status"}},
		{"COMMIT_EDITMSG", `rm -f .git/COMMIT_EDITMSG && mkfifo .git/COMMIT_EDITMSG`, []string{"commit", "-q", "--allow-empty", "-m", "x"}},
		{"a new repository's HEAD", `git init -q sub && rm sub/.git/HEAD && mkfifo sub/.git/HEAD`, []string{"-C", "sub", "status"}},
		{".gitignore", `mkfifo .gitignore`, []string{"status"}},
		{"a deep .gitignore", `mkdir -p a/b && mkfifo a/b/.gitignore`, []string{"status"}},
	}
	namedPipeCases(t, cases)
}

// TestAuditTakesOutNamedPipesBehindLinks: a loose object made a named pipe
// (objects/XX/ was not read), and a symlink made in the git directory to
// a pipe or to a directory holding one inside the writable trees (such a
// symlink was left: it leads nowhere the command could not write) hung
// the user's next git log or status (attack pass 78, through moat run).
func TestAuditTakesOutNamedPipesBehindLinks(t *testing.T) {
	namedPipeCases(t, []pipeCase{
		{"a loose object", `h=$(git rev-parse HEAD) && f=.git/objects/${h:0:2}/${h:2} && rm -f $f && mkfifo $f`, []string{"log", "-1"}},
		{"a loose object's symlink", `mkfifo p && h=$(git rev-parse HEAD) && f=.git/objects/${h:0:2}/${h:2} && rm -f $f && ln -s ../../../p $f`, []string{"log", "-1"}},
		{"info/exclude's symlink", `mkfifo p && mkdir -p .git/info && rm -f .git/info/exclude && ln -s ../../p .git/info/exclude`, []string{"status"}},
		{"a ref's symlink", `mkfifo p && rm .git/refs/heads/main && ln -s ../../../p .git/refs/heads/main`, []string{"log", "-1"}},
		{"a symlinked directory", `mkdir -p d && mkfifo d/exclude && rm -rf .git/info && ln -s ../d .git/info`, []string{"status"}},
	})
}

type pipeCase struct {
	name, attack string
	git          []string
}

// namedPipeCases runs each attack in a scene of its own, then git, first
// without the audit (git must hang: the test can fail), then with it (git
// must not).
func namedPipeCases(t *testing.T, cases []pipeCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, audited := range []bool{false, true} {
				s := newScene(t)
				s.begin()
				s.sh(s.repo, c.attack)
				if audited {
					rep := s.audit()
					if len(rep.Findings) == 0 {
						t.Errorf("no finding for the named pipe")
					}
				}
				cmd := exec.Command("git", c.git...)
				cmd.Dir, cmd.Env = s.repo, s.env()
				cmd.WaitDelay = time.Second
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				hung := testutil.Hangs(cmd, 3*time.Second)
				switch {
				case audited && hung:
					t.Errorf("git %v hangs after the audit", c.git)
				case !audited && !hung:
					t.Errorf("git %v does not hang without the audit (the test cannot fail)", c.git)
				}
			}
		})
	}
}
