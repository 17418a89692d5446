package gitguard

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A pointer the command leaves (sub/.git, a commondir) may lead to a
// device node, whose open has effects of its own (a watchdog's arms it; a
// serial port's raises its lines): the audit, as root for root's runs,
// opened what sub/.git -> /dev/DEVICE led to before it looked at what it
// was (attack pass 74, through moat run as root, seen with strace). It now
// opens nothing but a regular file. A named pipe stands in for the device
// here (an unprivileged test cannot make one): inotify reports any open of
// it but an O_PATH one, which opens nothing.
func TestAuditOpensNoDevice(t *testing.T) {
	for _, c := range []struct{ name, attack string }{
		{"a .git symlink", `mkdir s && ln -s "$OUT/dev" s/.git`},
		{"a .git file", `mkdir s && printf 'gitdir: %s\n' "$OUT/dev" > s/.git`},
		{"a commondir symlink", `git init -q s && ln -s "$OUT/dev" s/.git/commondir`},
		{"a new repository's HEAD symlink", `git init -q s && ln -sf "$OUT/dev" s/.git/HEAD`},
		{"a new repository's index symlink", `git init -q s && ln -sf "$OUT/dev" s/.git/index`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newScene(t)
			dev := filepath.Join(s.outside, "dev")
			if err := syscall.Mkfifo(dev, 0o644); err != nil {
				t.Fatal(err)
			}
			in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(in)
			if _, err := unix.InotifyAddWatch(in, dev, unix.IN_OPEN); err != nil {
				t.Fatal(err)
			}
			s.begin()
			s.sh(s.repo, c.attack)
			opened := func() bool {
				buf := make([]byte, 4096)
				n, _ := unix.Read(in, buf)
				return n > 0
			}
			if opened() {
				t.Fatal("opened before the audit")
			}
			s.audit()
			if opened() {
				t.Errorf("the audit opened what %s leads to, a named pipe (a device's open has effects)", c.name)
			}
			if _, err := os.Lstat(dev); err != nil {
				t.Fatal(err)
			}
		})
	}
}
