//go:build linux

package privtests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A set-id file left in a writable tree runs with its owner's ids on the
// host, for any user who can reach it: nosuid and no_new_privs hold only
// inside the sandbox. As root (uid 0 inside is 0 outside) that is a root
// shell for every local user (cp /bin/bash x && chmod 4755 x; x -p);
// rootless, a program that runs as this user for the others. Every way the
// command could give a file S_ISUID or S_ISGID is refused by the seccomp
// filter (linux/seccomp: denyFileModes).

func init() {
	attacks["setid"] = setIDAttack
}

// setid SCRIPT PATH: run the shell script (in the working directory), then
// look at PATH: a file with S_ISUID or S_ISGID escaped.
func setIDAttack(a []string) (string, error) {
	out, err := exec.Command("/bin/sh", "-c", a[0]).CombinedOutput()
	why := fmt.Sprintf("script: %v: %s", err, strings.TrimSpace(string(out)))
	var st unix.Stat_t
	if e := unix.Lstat(a[1], &st); e != nil {
		return "", fmt.Errorf("%s not made (%v); %s", a[1], e, why)
	}
	if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		return fmt.Sprintf("%s is mode %#o, owner %d:%d", a[1], st.Mode&0o7777, st.Uid, st.Gid), nil
	}
	return "", fmt.Errorf("%s is mode %#o; %s", a[1], st.Mode&0o7777, why)
}

// python runs a Python program from the shell script of a case.
func pythonScript(prog string) string {
	return python3() + " -c '" + strings.ReplaceAll(prog, "'", `'"'"'`) + "'"
}

// setIDCases are the ways a command can make a set-id file: each script
// makes (or tries to make) the file named f in the working directory. made:
// under moat the file is still made, without the bits (the step that
// refuses is a chmod after it was created).
var setIDCases = []struct {
	name   string
	script string
	made   bool
}{
	{"chmod 4755", "cp /bin/sh f && chmod 4755 f", true},
	{"chmod 2755", "cp /bin/sh f && chmod 2755 f", true},
	{"chmod 6755", "cp /bin/sh f && chmod 6755 f", true},
	{"chmod u+s (fchmodat)", "cp /bin/sh f && chmod u+s f", true},
	{"chmod g+s", "cp /bin/sh f && chmod g+s f", true},
	{"chmod g+s on a directory", "mkdir f && chmod g+s f", true},
	{"fchmod", "cp /bin/sh f && " + pythonScript(`import os
fd = os.open("f", os.O_RDONLY)
os.fchmod(fd, 0o4755)`), true},
	{"chmod(2) (os.chmod)", "cp /bin/sh f && " + pythonScript(`import os
os.chmod("f", 0o4755)`), true},
	{"fchmodat2", "cp /bin/sh f && " + pythonScript(`import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(452, -100, b"f", 0o4755, 0) < 0:
    sys.exit("fchmodat2: " + os.strerror(ctypes.get_errno()))`), true},
	{"install -m 4755", "install -m 4755 /bin/sh f", true},
	{"cp -p of a set-id file", "cp -p setid-src f", true},
	{"open O_CREAT 04755", pythonScript(`import os
os.umask(0o022)
os.close(os.open("f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o4755))`), false},
	{"open O_CREAT 02755", pythonScript(`import os
os.umask(0o022)
os.close(os.open("f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o2755))`), false},
	{"O_TMPFILE 04755 linked", pythonScript(`import ctypes, os, sys
os.umask(0o022)
fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o4755)
libc = ctypes.CDLL(None, use_errno=True)
if libc.linkat(-100, b"/proc/self/fd/%d" % fd, -100, b"f", 0x400) < 0:
    sys.exit("linkat: " + os.strerror(ctypes.get_errno()))`), false},
	{"creat 04755", pythonScript(`import ctypes, os, sys
os.umask(0o022)
libc = ctypes.CDLL(None, use_errno=True)
if libc.creat(b"f", 0o4755) < 0:
    sys.exit("creat: " + os.strerror(ctypes.get_errno()))`), false},
	{"mknod S_IFREG|04755", pythonScript(`import os
os.umask(0o022)
os.mknod("f", 0o104755)`), false},
	{"openat2 O_CREAT 04755", pythonScript(`import ctypes, os, sys
os.umask(0o022)
libc = ctypes.CDLL(None, use_errno=True)
how = (ctypes.c_uint64 * 3)(os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o4755, 0)
if libc.syscall(437, -100, b"f", ctypes.byref(how), 24) < 0:
    sys.exit("openat2: " + os.strerror(ctypes.get_errno()))`), false},
}

// TestSetuidFiles: each way of making a set-id file works without moat (the
// same user, in the same tree) and is refused under moat; after the run
// the host sees the file without S_ISUID and S_ISGID (or not at all).
func TestSetuidFiles(t *testing.T) {
	f := newFixture(t)
	src := filepath.Join(f.work, "setid-src")
	target := filepath.Join(f.work, "f")
	reset := func(t *testing.T) {
		must(t, os.RemoveAll(target))
		// A set-id file of the tree's own, made on the host before the run
		// (cp -p copies its mode).
		must(t, os.RemoveAll(src))
		data, err := os.ReadFile("/bin/sh")
		must(t, err)
		must(t, os.WriteFile(src, data, 0o755))
		must(t, unix.Chmod(src, 0o4755))
	}
	outer := f.t
	for _, tc := range setIDCases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			f.t = t
			defer func() { f.t = outer }()
			reset(t)
			args := []string{"setid", tc.script, "f"}
			got := f.sandboxed(args...)
			if got.escaped() {
				t.Errorf("ESCAPE under moat: %s\n%s", tc.name, got.out)
			} else if !strings.Contains(got.out, "blocked:") {
				t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
			}
			// What the host sees after the run.
			var st unix.Stat_t
			switch err := unix.Lstat(target, &st); {
			case err != nil && tc.made:
				t.Errorf("under moat %s was not made (%v): the case must only lose the set-id bits\n%s", target, err, got.out)
			case err == nil && st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0:
				t.Errorf("ESCAPE: after the run the host sees %s with mode %#o", target, st.Mode&0o7777)
			}
			reset(t)
			base := f.direct(args...)
			if !base.escaped() && strings.Contains(base.out, "Function not implemented") {
				// fchmodat2 is Linux 6.6's: an older kernel has no such call to attack with.
				t.Skipf("this kernel lacks the call: %s", base.out)
			} else if !base.escaped() {
				t.Errorf("the attack must work without moat (or this test cannot detect an escape): %s\n%s", tc.name, base.out)
			}
			reset(t)
		})
	}
}

// TestSetuidOrdinaryModesStillWork: what builds and tools do with modes
// (chmod +x, 0644 creates, the sticky bit, install -m 755, cp -p of an
// ordinary file, mkdir in a setgid directory, which inherits S_ISGID from
// its parent) still works under moat; openat2 answers ENOSYS.
func TestSetuidOrdinaryModesStillWork(t *testing.T) {
	f := newFixture(t)
	must(t, os.Mkdir(filepath.Join(f.work, "shared"), 0o775))
	must(t, unix.Chmod(filepath.Join(f.work, "shared"), 0o2775))
	script := `set -e
umask 022
touch a && chmod 755 a && chmod u=rwx,go=rx a && chmod +x a
mkdir d && chmod 1777 d
install -m 755 /bin/sh e && cp -p a c
mkdir shared/sub
` + pythonScript(`import ctypes, os, sys
os.close(os.open("b", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
fd = os.open("a", os.O_RDONLY)
os.fchmod(fd, 0o700)
libc = ctypes.CDLL(None, use_errno=True)
how = (ctypes.c_uint64 * 3)(os.O_RDONLY, 0, 0)
r = libc.syscall(437, -100, b"a", ctypes.byref(how), 24)
print("openat2:", r, ctypes.get_errno())`) + `
stat -c '%n %a' a b c d e shared/sub`
	got := f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c", script)
	if got.code != 0 {
		t.Fatalf("ordinary modes under moat: exit %d\n%s", got.code, got.out)
	}
	for _, want := range []string{"a 700", "b 644", "c 755", "d 1777", "e 755", "shared/sub 2755", "openat2: -1 38"} {
		if !strings.Contains(got.out, want) {
			t.Errorf("under moat, want %q in:\n%s", want, got.out)
		}
	}
}
