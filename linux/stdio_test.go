//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A sealed memfd (a session's shell snapshot) is handed over as it is; a
// memfd that can still be written, and a file, are not.
func TestHandOverSealedMemfdOnly(t *testing.T) {
	memfd := func(seals int) *os.File {
		fd, err := unix.MemfdCreate("t", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		if err != nil {
			t.Skip(err)
		}
		if seals != 0 {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
				t.Fatal(err)
			}
		}
		f := os.NewFile(uintptr(fd), "t")
		t.Cleanup(func() { f.Close() })
		return f
	}
	file, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	all := unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL
	for _, tc := range []struct {
		name string
		f    *os.File
		want bool
	}{
		{"sealed memfd", memfd(all), true},
		{"memfd open to writes", memfd(0), false},
		{"memfd sealed but for writes", memfd(unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL), false},
		{"file", file, false},
	} {
		var st unix.Stat_t
		if err := unix.Fstat(int(tc.f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		if got := handOver(tc.f, &st); got != tc.want {
			t.Errorf("%s: handOver = %v, want %v", tc.name, got, tc.want)
		}
	}
}
