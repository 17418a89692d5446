//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// A mode, owner or attribute changed through a descriptor (fchmod, fchown,
// fsetxattr, fremovexattr: Python's os.chmod(fd), install, cp -p) of a file
// outside the writable paths is refused and reported by the path it was
// opened at: it failed with EROFS and the report said nothing (attack pass
// 79). What has no such path (a pipe, a memfd) and what is writable (the
// sandbox's /tmp, the working tree) is changed and not reported.
func TestDescriptorMetadataReported(t *testing.T) {
	coldRunsOnly(t)
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

// A write that reopens a descriptor of a read-only file by its link
// (/dev/fd/N, /proc/self/fd/N, /proc/$$/fd/N, /proc/PPID/fd/N from a
// child, a relative name in /proc/self/fd) is refused with EROFS and
// reported by the file's path: /proc and /dev were not looked at, and the
// report said nothing (attack pass 79). A reopen of a writable file, and
// of /dev/stdout, /dev/null, is not reported.
func TestReopenedDescriptorWriteReported(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	for _, route := range []string{
		`echo x > /dev/fd/3`,
		`echo x > /proc/self/fd/3`,
		`echo x >> /proc/$$/fd/3`,
		`sh -c 'echo x > /proc/$PPID/fd/3'`,
		`truncate -s 0 /dev/fd/3`,
		`cd /proc/self/fd && echo x > 3`,
		// a thread's links, the working directory's and the root's
		// (attack pass 81: unreported, and /proc/self/cwd was taken
		// for moat's own working directory)
		`echo x > /proc/self/task/$$/fd/3`,
		`echo x > /proc/$$/task/$$/fd/3`,
		`cd ` + filepath.Dir(f.target) + ` && echo x > /proc/self/cwd/` + filepath.Base(f.target),
		`cd ` + filepath.Dir(f.target) + ` && echo x > /proc/$$/cwd/` + filepath.Base(f.target),
		`echo x > /proc/$$/root` + f.target,
		`sh -c 'echo x > /proc/$PPID/root` + f.target + `'`,
	} {
		script := `exec 3<` + f.target + `; if ` + route + `; then echo ESCAPED; else echo blocked:; fi`
		if base := f.exec("/bin/bash", "-c", script); !strings.Contains(base.out, "ESCAPED") {
			t.Fatalf("%s: without moat the user writes its own file (or this test cannot fail):\n%s", route, base.out)
		}
		os.WriteFile(f.target, []byte(targetText+"\n"), 0o644)
		got := f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/bash", "-c", script+`; echo ok > /dev/stdout; echo > /dev/null; exec 4>`+f.work+`/own; echo y > /dev/fd/4`)
		if strings.Contains(got.out, "ESCAPED") {
			t.Errorf("ESCAPE: %s wrote a file outside the policy:\n%s", route, got.out)
		}
		want := "deny file-write " + f.target + " (not in allowWrite)"
		if strings.HasPrefix(route, "python3") {
			// Metadata calls are the supervisor's there (Landlock
			// does not govern them): reported by the call's name.
			want = "deny file-f" + route[strings.LastIndex(route, " ")+1:] + " " + f.target + " ("
		}
		if !strings.Contains(got.out, want) || strings.Count(got.out, "deny ") != 1 {
			t.Errorf("%s: the refused write must be reported, alone (exit %d):\n%s", route, got.code, got.out)
		}
	}
}

// An open for reading with O_CREAT or O_APPEND of a file that exists is no
// write, and succeeds outside the writable paths too (flock FILE opens its
// lock file O_RDONLY|O_CREAT): it was reported as a refused write (attack
// pass 79). So were the kernel's own answers that no policy changes
// (EISDIR, ENOENT without O_CREAT, EEXIST for O_EXCL). A real refusal
// beside them is reported.
func TestReadOpenWithWriteFlagNotReported(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	script := `import os, sys
target, outside = sys.argv[1], sys.argv[2]
for fl in (os.O_RDONLY | os.O_CREAT, os.O_RDONLY | os.O_APPEND):
    os.close(os.open(target, fl))
for p, fl in ((outside, os.O_WRONLY), (outside + "/missing", os.O_WRONLY), (target, os.O_WRONLY | os.O_CREAT | os.O_EXCL)):
    try:
        os.close(os.open(p, fl))
    except OSError as e:
        print("not opened:", p, e.strerror)
try:
    os.close(os.open(outside + "/new", os.O_WRONLY | os.O_CREAT))
    print("ESCAPED")
except OSError as e:
    print("blocked:", e.strerror)
`
	if base := f.exec("python3", "-c", script, f.target, f.outside); base.code != 0 {
		t.Fatalf("without moat the opens run (exit %d):\n%s", base.code, base.out)
	}
	os.Remove(f.outside + "/new")
	got := f.exec(moatBin, "run", "--settings", f.settings, "--", "sh", "-c", `python3 -c '`+script+`' "$@" && flock "$1" true && echo flocked`, "sh", f.target, f.outside)
	if got.code != 0 || !strings.Contains(got.out, "flocked") || strings.Contains(got.out, "ESCAPED") {
		t.Fatalf("under moat (exit %d):\n%s", got.code, got.out)
	}
	if !strings.Contains(got.out, "deny file-write "+f.outside+"/new (not in allowWrite)") || strings.Count(got.out, "deny ") != 1 {
		t.Errorf("only the refused create is reported:\n%s", got.out)
	}
}

// The same two reports in the no-namespace tier (moat run --best-effort
// where user namespaces are refused), where the supervisor judges
// metadata calls itself and Landlock refuses the reopened write: each is
// refused and reported once, by the file's path.
func TestNoUsernsDescriptorChangesReported(t *testing.T) {
	coldRunsOnly(t)
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock: the no-namespace tier has nothing to confine with")
	}
	f := makeFixture(t)
	meta := `import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    getattr(os, sys.argv[2])(fd, *{"chmod": (0o600,), "chown": (os.getuid(), -1), "setxattr": ("user.moat", b"1")}[sys.argv[2]])
    print("ESCAPED")
except OSError as e:
    print("blocked:", e)
    sys.exit(1)
`
	routes := []string{`echo x > /dev/fd/3`, `echo x > /proc/self/fd/3`, `truncate -s 0 /dev/fd/3`}
	for _, call := range []string{"chmod", "chown", "setxattr"} {
		routes = append(routes, "python3 -c '"+meta+"' "+f.target+" "+call)
	}
	for _, route := range routes {
		// The command succeeds (its refusal is caught), so the C
		// library's probe for nscd is left out of the report.
		script := `exec 3<` + f.target + `; if ` + route + `; then echo ESCAPED; else echo blocked:; fi`
		must(t, os.WriteFile(f.target, []byte(targetText+"\n"), 0o644))
		if base := f.noUserns("/bin/bash", "-c", script); !strings.Contains(base.out, "ESCAPED") {
			t.Fatalf("%s: without moat the user changes its own file (or this test cannot fail):\n%s", route, base.out)
		}
		must(t, os.WriteFile(f.target, []byte(targetText+"\n"), 0o644))
		got := f.noUserns(moatBin, "run", "--best-effort", "--settings", f.settings, "--", "/bin/bash", "-c", script)
		if strings.Contains(got.out, "ESCAPED") {
			t.Errorf("ESCAPE: %s changed a file outside the policy:\n%s", route, got.out)
		}
		want := "deny file-write " + f.target + " (not in allowWrite)"
		if strings.HasPrefix(route, "python3") {
			// Metadata calls are the supervisor's there (Landlock
			// does not govern them): reported by the call's name.
			want = "deny file-f" + route[strings.LastIndex(route, " ")+1:] + " " + f.target + " ("
		}
		if !strings.Contains(got.out, want) || strings.Count(got.out, "deny ") != 1 {
			t.Errorf("%s: the refused change must be reported, once (exit %d):\n%s", route, got.code, got.out)
		}
	}
}
