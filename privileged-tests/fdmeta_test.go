//go:build linux

package privtests

import (
	"strings"
	"testing"
)

// A mode, owner or attribute changed through a descriptor (fchmod, fchown,
// fsetxattr, fremovexattr: Python's os.chmod(fd), install, cp -p) of a file
// outside the writable paths is refused and reported by the path it was
// opened at: it failed with EROFS and the report said nothing (attack pass
// 79). What has no such path (a pipe, a memfd) and what is writable (the
// sandbox's /tmp, the working tree) is changed and not reported.
func TestDescriptorMetadataReported(t *testing.T) {
	f := newFixture(t)
	script := `import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
call = sys.argv[2]
try:
    if call == "fchmod":
        os.chmod(fd, 0o600)
    elif call == "fchown":
        os.chown(fd, os.getuid(), -1)
    elif call == "fsetxattr":
        os.setxattr(fd, "user.moat", b"1")
    else:
        os.removexattr(fd, "user.moat")
    print("ESCAPED")
except OSError as e:
    print("blocked:", e)
r, w = os.pipe(); os.chmod(r, 0o600)
m = os.memfd_create("m"); os.chmod(m, 0o600)
open("/tmp/t", "w").close(); os.chmod(os.open("/tmp/t", os.O_RDONLY), 0o600)
open("own", "w").close(); os.chmod(os.open("own", os.O_RDONLY), 0o600)
`
	for _, call := range []string{"fsetxattr", "fremovexattr", "fchown", "fchmod"} {
		if base := f.exec("python3", "-c", script, f.target, call); !strings.Contains(base.out, "ESCAPED") {
			t.Fatalf("%s: without moat the user changes its own file (or this test cannot fail):\n%s", call, base.out)
		}
		got := f.exec(moatBin, "run", "--settings", f.settings, "--", "python3", "-c", script, f.target, call)
		if strings.Contains(got.out, "ESCAPED") {
			t.Errorf("ESCAPE: %s changed a file outside the policy:\n%s", call, got.out)
		}
		block := got.out[strings.Index(got.out, "blocked:")+1:]
		if !strings.Contains(block, "deny file-write "+f.target+" (not in allowWrite)") {
			t.Errorf("the refused %s must be reported (exit %d):\n%s", call, got.code, got.out)
		}
		if strings.Count(block, "deny ") != 1 {
			t.Errorf("%s: only the refused call is reported, once:\n%s", call, got.out)
		}
	}
}
