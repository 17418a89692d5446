//go:build linux

package cgroup

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
)

// Mountpoint returns where the cgroup2 hierarchy is mounted, read from
// /proc/self/mountinfo: /sys/fs/cgroup on a pure v2 host,
// /sys/fs/cgroup/unified on a hybrid one, otherwise the first cgroup2
// mount listed. The error wraps [ErrUnsupported] when there is none.
func Mountpoint() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	defer f.Close()
	return findMount(f)
}

// findMount picks the cgroup2 mount point out of a mountinfo listing.
func findMount(r io.Reader) (string, error) {
	var found []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent maj:min root mountpoint options [optional...] - fstype source superopts
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+1 >= len(fields) || fields[sep+1] != "cgroup2" {
			continue
		}
		found = append(found, UnescapeMountinfo(fields[4]))
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("cgroup: read mountinfo: %w", err)
	}
	for _, want := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		for _, m := range found {
			if m == want {
				return m, nil
			}
		}
	}
	if len(found) > 0 {
		return found[0], nil
	}
	return "", fmt.Errorf("%w: no cgroup2 mount in /proc/self/mountinfo", ErrUnsupported)
}

// UnescapeMountinfo undoes the octal escapes (\040 for a space ...) that
// mountinfo uses in paths.
func UnescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Manager creates per-run cgroups under one parent directory.
type Manager struct {
	// Dir is the parent directory, inside a cgroup2 hierarchy.
	Dir string
}

// New returns a Manager for <cgroup2 mount>/name, creating that directory
// if needed. If name is "", it is [DefaultName].
func New(name string) (*Manager, error) {
	if name == "" {
		name = DefaultName
	}
	if err := checkName("parent name", name); err != nil {
		return nil, err
	}
	mnt, err := Mountpoint()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(mnt, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	return &Manager{Dir: dir}, nil
}

// Group is one per-run cgroup. It holds an open directory fd, locked, for
// as long as it is open.
type Group struct {
	path string
	dir  *os.File
}

// Add moves the process pid into the cgroup (cgroup.procs). Prefer
// starting a process inside it (FD with CLONE_INTO_CGROUP); Add is for a
// process that is known not to run anything before it is moved (one
// blocked reading its instructions), where clone3 is unavailable.
func (g *Group) Add(pid int) error {
	return writeFile(filepath.Join(g.path, "cgroup.procs"), strconv.Itoa(pid))
}

// Path returns the cgroup's directory.
func (g *Group) Path() string { return g.path }

// FD returns the directory fd to pass as syscall.SysProcAttr.CgroupFD
// (with UseCgroupFD: true). It stays valid until Remove or Close, and is
// -1 after them.
func (g *Group) FD() int {
	if g.dir == nil {
		return -1
	}
	return int(g.dir.Fd())
}

// Create makes the cgroup <Dir>/id and locks it. If id is "", a random one
// is chosen; if it ends in "-", it is the prefix of a random one (moat uses
// its pid, so a test can tell a process's cgroups apart). An id that
// already exists is an error.
func (m *Manager) Create(id string) (*Group, error) {
	prefix, random := id, id == "" || strings.HasSuffix(id, "-")
	if id != "" {
		if err := checkName("run id", id+"0"); err != nil { // "0": a prefix is checked as a name
			return nil, err
		}
	}
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		if random {
			var b [8]byte
			if _, err := rand.Read(b[:]); err != nil {
				return nil, fmt.Errorf("cgroup: %w", err)
			}
			id = prefix + hex.EncodeToString(b[:])
		}
		g, err := m.create(filepath.Join(m.Dir, id))
		if err == nil {
			return g, nil
		}
		if errors.Is(err, os.ErrExist) && random {
			continue
		}
		if !errors.Is(err, errRaced) {
			return nil, err
		}
		// A concurrent CleanStale took the directory between our mkdir and
		// our lock. Try again.
		lastErr = err
		time.Sleep(time.Millisecond)
	}
	return nil, fmt.Errorf("cgroup: create under %s: %w", m.Dir, lastErr)
}

var errRaced = errors.New("cgroup directory was removed or locked while being created")

func (m *Manager) create(path string) (*Group, error) {
	if err := os.Mkdir(path, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	dir, err := openDir(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errRaced
	}
	if err != nil {
		return nil, err
	}
	if err := tryLock(dir); err != nil {
		dir.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errRaced
		}
		return nil, fmt.Errorf("cgroup: lock %s: %w", path, err)
	}
	// Is the directory we locked still the one at path?
	var held, now unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &held); err != nil {
		dir.Close()
		return nil, fmt.Errorf("cgroup: %w", sys.Named("fstat", err))
	}
	if err := unix.Stat(path, &now); err != nil || now.Ino != held.Ino || now.Dev != held.Dev {
		dir.Close()
		return nil, errRaced
	}
	return &Group{path: path, dir: dir}, nil
}

func openDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

func tryLock(f *os.File) error {
	return sys.Retry(func() error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) })
}

// Close releases the directory fd and with it the ownership lock, leaving
// the cgroup in place: a later [Manager.CleanStale] kills what runs in it
// and removes it. Use Remove to do that now.
func (g *Group) Close() error {
	if g.dir == nil {
		return nil
	}
	err := g.dir.Close()
	g.dir = nil
	return err
}

// Kill sends SIGKILL to every process in the cgroup and its descendants.
func (g *Group) Kill() error { return kill(g.path) }

// Remove kills every process in the cgroup, removes it (descendants
// first) and closes it. Removing a cgroup that no longer exists is not an
// error.
func (g *Group) Remove() error {
	err := removeTree(g.path)
	if cerr := g.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// CleanStale removes the cgroups under Dir that no live Group holds (their
// moat exited without Remove, for example because it was killed), killing
// whatever still runs in them. It returns the paths it removed.
func (m *Manager) CleanStale() ([]string, error) {
	entries, err := os.ReadDir(m.Dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(m.Dir, e.Name())
		dir, err := openDir(path)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cgroup: %w", err))
			}
			continue
		}
		if err := tryLock(dir); err != nil {
			dir.Close()
			if !errors.Is(err, unix.EWOULDBLOCK) {
				errs = append(errs, fmt.Errorf("cgroup: lock %s: %w", path, err))
			}
			continue // a live run holds it
		}
		err = removeTree(path)
		dir.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}

// removeTimeout bounds how long removal waits for killed processes to
// leave a cgroup.
const removeTimeout = 10 * time.Second

func removeTree(path string) error {
	if err := kill(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	deadline := time.Now().Add(removeTimeout)
	return rmdirTree(path, deadline)
}

// rmdirTree removes path and the cgroups below it, deepest first.
func rmdirTree(path string, deadline time.Time) error {
	entries, err := os.ReadDir(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("cgroup: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := rmdirTree(filepath.Join(path, e.Name()), deadline); err != nil {
				return err
			}
		}
	}
	wait := time.Millisecond
	for {
		err := sys.Retry(func() error { return unix.Rmdir(path) })
		switch {
		case err == nil || err == unix.ENOENT:
			return nil
		case err != unix.EBUSY:
			return fmt.Errorf("cgroup: %w", &os.PathError{Op: "rmdir", Path: path, Err: err})
		case time.Now().After(deadline):
			return fmt.Errorf("cgroup: %w (processes still inside: %v)",
				&os.PathError{Op: "rmdir", Path: path, Err: err}, procsOrErr(path))
		}
		// Killed tasks leave the cgroup as they exit; give them a moment
		// and make sure nothing new was started meanwhile.
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
		if err := kill(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
}

// kill sends SIGKILL to every process in the subtree at path: through
// cgroup.kill where the kernel has it (5.14), otherwise by freezing the
// cgroup (5.2) and signalling each listed process.
func kill(path string) error {
	err := writeFile(filepath.Join(path, "cgroup.kill"), "1")
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if _, serr := os.Stat(path); serr != nil {
		return fmt.Errorf("cgroup: %w", serr)
	}
	return killEach(path)
}

// killEach is kill for kernels without cgroup.kill.
func killEach(path string) error {
	// No cgroup.kill. A frozen cgroup cannot fork, and SIGKILL still
	// reaches frozen tasks, so a few passes empty it.
	frozen := writeFile(filepath.Join(path, "cgroup.freeze"), "1") == nil
	deadline := time.Now().Add(removeTimeout)
	for {
		pids, err := treeProcs(path)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && err != unix.ESRCH {
				return fmt.Errorf("cgroup: kill %d: %w", pid, sys.Named("kill", err))
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup: processes still in %s after SIGKILL: %v", path, pids)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if frozen {
		_ = writeFile(filepath.Join(path, "cgroup.freeze"), "0")
	}
	return nil
}

// treeProcs lists the processes in the subtree at path.
func treeProcs(path string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		ps, err := procs(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		pids = append(pids, ps...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	return pids, nil
}

// procs lists the processes directly in the cgroup at path.
func procs(path string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("cgroup: parse %s/cgroup.procs: %w", path, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

func procsOrErr(path string) any {
	pids, err := treeProcs(path)
	if err != nil {
		return err
	}
	return pids
}

// writeFile writes one value to a cgroup interface file, which must exist.
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cgroup: write %s: %w", path, err)
	}
	return nil
}
