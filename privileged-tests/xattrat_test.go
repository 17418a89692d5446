//go:build linux

package privtests

import (
	"strings"
	"testing"
)

// setxattrat (Linux 6.13) changes a file's extended attributes, ACLs
// among them (an ACL is a mode): moat is told of it like setxattr, so a
// run whose only change it makes is audited and a refusal reported (the
// filter let it through unseen: found by an attack pass).
func TestXattrAtReported(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	script := `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
val = b"1"
buf = ctypes.create_string_buffer(val)
class A(ctypes.Structure):
    _fields_ = [("value", ctypes.c_uint64), ("size", ctypes.c_uint32), ("flags", ctypes.c_uint32)]
a = A(ctypes.addressof(buf), len(val), 0)
# (Every argument as a full register: an int leaves the upper half of a
# variadic argument undefined, and the kernel reads size as 64 bits.)
libc.syscall.restype = ctypes.c_long
r = libc.syscall(ctypes.c_long(463), ctypes.c_long(-100), ctypes.c_char_p(sys.argv[1].encode()), ctypes.c_ulong(0),
                 ctypes.c_char_p(b"user.moat"), ctypes.byref(a), ctypes.c_size_t(ctypes.sizeof(a)))
e = ctypes.get_errno()
if r == 0:
    print("ESCAPED")
elif e == 38:
    print("NOSYS")
else:
    print("blocked:", os.strerror(e))
`
	base := f.exec("python3", "-c", script, f.target)
	if strings.Contains(base.out, "NOSYS") {
		t.Skip("this kernel has no setxattrat (Linux 6.13)")
	}
	if !strings.Contains(base.out, "ESCAPED") {
		t.Fatalf("without moat the user sets an attribute of its own file (or this test cannot fail):\n%s", base.out)
	}
	got := f.exec(moatBin, "run", "--settings", f.settings, "--", "python3", "-c", script, f.target)
	if strings.Contains(got.out, "ESCAPED") {
		t.Errorf("ESCAPE: setxattrat changed a file outside the policy:\n%s", got.out)
	}
	if !strings.Contains(got.out, "deny file-write "+f.target) {
		t.Errorf("the refused setxattrat must be reported (exit %d):\n%s", got.code, got.out)
	}
}
