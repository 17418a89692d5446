//go:build linux

package reportfd

import (
	"fmt"
	"io"
	"os"
	"testing"
)

// The process's end cannot be reopened through /proc, where a pipe's
// could (for writing, whichever end it was).
func TestNotReopenable(t *testing.T) {
	host, child, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if f, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", child.Fd()), os.O_WRONLY, 0); err == nil {
		f.Close()
		t.Error("the process's end was reopened through /proc")
	}
	if _, err := child.Write([]byte("cwd=/x\x00")); err != nil {
		t.Fatal(err)
	}
	child.Close()
	b, err := io.ReadAll(host)
	if err != nil || string(b) != "cwd=/x\x00" {
		t.Errorf("read %q, %v", b, err)
	}
}
