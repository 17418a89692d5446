//go:build linux

package sealed

import (
	"fmt"
	"io"
	"os"
	"testing"
)

// The snapshot's descriptor cannot be written, however it is reached: not
// through itself, not reopened through /proc (as a command reopened its
// shell's descriptors), not truncated.
func TestFileIsSealed(t *testing.T) {
	f, err := File([]byte("builtin export PATH=/usr/bin\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("the descriptor is writable")
	}
	p := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if w, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		_, werr := w.Write([]byte("export PATH=/evil:$PATH\n"))
		w.Close()
		if werr == nil {
			t.Error("reopened through /proc and appended to")
		}
	}
	if err := os.Truncate(p, 0); err == nil {
		t.Error("truncated through /proc")
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	if string(b) != "builtin export PATH=/usr/bin\n" {
		t.Errorf("holds %q", b)
	}
	if b, _ := io.ReadAll(f); string(b) != "builtin export PATH=/usr/bin\n" {
		t.Errorf("reads %q from offset 0", b)
	}
}
