package gitguard

import (
	"bytes"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
)

// mountTable keeps what autofsMounts reads of /proc/self/mountinfo: the
// file is read again only when poll says the mount table changed
// (POLLPRI), as linux/plan.go's mountTable does.
var mountTable struct {
	sync.Mutex
	fd     int // open on /proc/self/mountinfo; 0 before the first read
	t      *autofsTable
	pinned int // PinMounts in effect: the table as their start read it
}

// PinMounts reads the mount table now and keeps that reading, without a
// poll for each lookup, until the returned function is called: an audit
// or a plan asks about hundreds of paths, and a poll for each was 28 % of
// a plan's time. A mount made meanwhile is seen by the next pin (it could
// as well have been made just after the lookup).
func PinMounts() (unpin func()) {
	mountTable.Lock()
	readMounts(true) // also while another pin is in effect
	mountTable.pinned++
	mountTable.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mountTable.Lock()
			mountTable.pinned--
			mountTable.Unlock()
		})
	}
}

// autofsMounts is this process's autofs mounts that nothing is mounted on,
// and every mount point, or nil where there is no such autofs mount (or
// the mount table cannot be read: then the audit looks as before).
func autofsMounts() *autofsTable {
	mountTable.Lock()
	defer mountTable.Unlock()
	return readMounts(false)
}

// readMounts is autofsMounts with mountTable locked; a pin's reading is
// kept unless fresh.
func readMounts(fresh bool) *autofsTable {
	if mountTable.fd > 0 && mountTable.pinned > 0 && !fresh {
		return mountTable.t
	}
	if mountTable.fd > 0 {
		pfd := []unix.PollFd{{Fd: int32(mountTable.fd), Events: unix.POLLPRI}}
		if n, err := unix.Poll(pfd, 0); err == nil && n == 0 {
			return mountTable.t
		}
		if _, err := unix.Seek(mountTable.fd, 0, 0); err != nil {
			unix.Close(mountTable.fd)
			mountTable.fd = 0
		}
	}
	if mountTable.fd <= 0 {
		fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		mountTable.fd = fd
	}
	var b []byte
	buf := make([]byte, 16<<10)
	for {
		n, err := sys.RetryValue(func() (int, error) { return unix.Read(mountTable.fd, buf) })
		if err != nil {
			unix.Close(mountTable.fd)
			mountTable.fd = 0
			mountTable.t = nil
			return nil
		}
		if n == 0 {
			break
		}
		b = append(b, buf[:n]...)
	}
	mountTable.t = parseAutofs(b)
	return mountTable.t
}

// parseAutofs reads a mountinfo text: an autofs mount is covered where a
// mount of its own (its parent) is at its path.
func parseAutofs(b []byte) *autofsTable {
	type mount struct {
		id, parent int
		path       string
		autofs     bool
	}
	var all []mount
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		_, post, ok := bytes.Cut(line, []byte(" - "))
		f := bytes.Fields(line)
		if !ok || len(f) < 5 {
			continue
		}
		id, err1 := strconv.Atoi(string(f[0]))
		parent, err2 := strconv.Atoi(string(f[1]))
		if err1 != nil || err2 != nil {
			continue
		}
		fstype, rest, _ := bytes.Cut(post, []byte(" "))
		source, _, _ := bytes.Cut(rest, []byte(" "))
		// systemd's automount points (source systemd-1: /proc/sys/fs/
		// binfmt_misc on every systemd host, x-systemd.automount entries)
		// mount their one unit whatever the name looked up, and run no
		// program with it: not counted, or every audit on such a host
		// would lose its look-ahead and walk each path twice.
		autofs := string(fstype) == "autofs" && string(source) != "systemd-1"
		all = append(all, mount{id, parent, unescapeMountinfo(string(f[4])), autofs})
	}
	autofs := map[int]string{}
	for _, m := range all {
		if m.autofs {
			autofs[m.id] = m.path
		}
	}
	if len(autofs) == 0 {
		return nil
	}
	covered := map[int]bool{}
	t := &autofsTable{uncovered: map[string]bool{}, mounted: map[string]bool{}}
	for _, m := range all {
		t.mounted[m.path] = true
		if p, ok := autofs[m.parent]; ok && p == m.path {
			covered[m.parent] = true
		}
	}
	for id, p := range autofs {
		if !covered[id] {
			t.uncovered[p] = true
		}
	}
	if len(t.uncovered) == 0 {
		return nil
	}
	return t
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space,
// \011, \012, \134) in a mountinfo path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				out.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		out.WriteByte(s[i])
	}
	return out.String()
}
