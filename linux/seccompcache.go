//go:build linux

package linux

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/moat-sandbox/moat/linux/seccomp"
)

// seccompProgram returns the compiled filter for o, from a cache in
// cacheDir when this same moat binary compiled it before (compiling with
// libseccomp costs a few hundred microseconds of every start). The key
// names the binary by path, inode, size and mtime, so a rebuilt moat never
// reads another build's filter; the cache lives in moat's state directory,
// which no sandbox can write. The inode, size and mtime are those of the
// file this process runs (/proc/self/exe), not of the file at its path: a
// moatd (or moat serve) running while a new release is installed runs the
// old code, and a filter it compiled after the install was cached under
// the new file's name, so the new release, once restarted, loaded the old
// release's filter (attack pass 87).
func seccompProgram(cacheDir string, o seccomp.Options) ([]byte, error) {
	key := ""
	if exe, err := os.Executable(); err == nil {
		var st syscall.Stat_t
		if syscall.Stat("/proc/self/exe", &st) == nil {
			// "running": keys made by releases before this one (the file
			// at the path) are never read, or an old moatd running while
			// this release is installed would still hand it its filter.
			h := sha256.Sum256(fmt.Appendf(nil, "running\x00%s\x00%d\x00%d\x00%d\x00%d\x00%+v", exe, st.Ino, st.Size, st.Mtim.Nano(), st.Dev, o))
			key = hex.EncodeToString(h[:12])
		}
	}
	file := ""
	if key != "" && cacheDir != "" {
		file = filepath.Join(cacheDir, "seccomp-"+key+".bpf")
		if b, ok := readOwnFile(file); ok && len(b) > 0 && len(b)%8 == 0 {
			return b, nil
		}
	}
	prog, err := seccomp.Build(o)
	if err != nil {
		return nil, err
	}
	if file != "" {
		if err := os.MkdirAll(cacheDir, 0o700); err == nil {
			tmp := tmpName(file)
			if f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600); err == nil {
				_, werr := f.Write(prog)
				if cerr := f.Close(); werr != nil || cerr != nil || os.Rename(tmp, file) != nil {
					os.Remove(tmp)
				}
			}
		}
	}
	return prog, nil
}

// readOwnFile reads a regular file of this user's that no one else can
// write, not following a symlink at its name: a compiled filter is loaded
// into a sandbox as it is, and one another user put in the cache allowed
// every call (the state directory is checked, but this is what is
// trusted; found by an attack pass).
func readOwnFile(file string) ([]byte, bool) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var st syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG ||
		int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 || st.Size > 1<<20 {
		return nil, false
	}
	b, err := io.ReadAll(f)
	return b, err == nil
}
