//go:build linux

package linux

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
// which no sandbox can write.
func seccompProgram(cacheDir string, o seccomp.Options) ([]byte, error) {
	key := ""
	if exe, err := os.Executable(); err == nil {
		var st syscall.Stat_t
		if syscall.Stat(exe, &st) == nil {
			h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d\x00%d\x00%d\x00%+v", exe, st.Ino, st.Size, st.Mtim.Nano(), st.Dev, o))
			key = hex.EncodeToString(h[:12])
		}
	}
	file := ""
	if key != "" && cacheDir != "" {
		file = filepath.Join(cacheDir, "seccomp-"+key+".bpf")
		if b, err := os.ReadFile(file); err == nil && len(b) > 0 && len(b)%8 == 0 {
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
			if os.WriteFile(tmp, prog, 0o600) == nil && os.Rename(tmp, file) != nil {
				os.Remove(tmp)
			}
		}
	}
	return prog, nil
}
