//go:build linux

package sys

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("gitdir: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(file, 100, true); err != nil || string(b) != "gitdir: x\n" {
		t.Errorf("a regular file: %q, %v", b, err)
	}
	if _, err := ReadRegular(file, 3, false); !errors.Is(err, os.ErrInvalid) {
		t.Errorf("a file over the limit: %v, want ErrInvalid", err)
	}
	link := filepath.Join(dir, "l")
	os.Symlink(file, link)
	if _, err := ReadRegular(link, 100, false); err != nil {
		t.Errorf("through a symlink, following: %v", err)
	}
	if _, err := ReadRegular(link, 100, true); err == nil {
		t.Error("through a symlink with nofollow: read")
	}
	// A FIFO: os.ReadFile would block in open(2) until a writer comes.
	fifo := filepath.Join(dir, "p")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadRegular(fifo, 100, false); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrInvalid) {
			t.Errorf("a FIFO: %v, want ErrInvalid", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadRegular blocked in a FIFO's open")
	}
	if _, err := ReadRegular("/dev/null", 100, false); !errors.Is(err, os.ErrInvalid) {
		t.Errorf("a device: %v, want ErrInvalid", err)
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b", "a", "c"} {
		os.Mkdir(filepath.Join(dir, n), 0o755)
	}
	es, err := ReadDir(dir, true)
	if err != nil || len(es) != 3 || es[0].Name() != "a" || es[2].Name() != "c" {
		t.Fatalf("ReadDir: %v %v", es, err)
	}
	link := filepath.Join(dir, "l")
	os.Symlink(filepath.Join(dir, "a"), link)
	if _, err := ReadDir(link, false); err != nil {
		t.Errorf("through a symlink, following: %v", err)
	}
	if _, err := ReadDir(link, true); err == nil {
		t.Error("through a symlink with nofollow: read")
	}
	fifo := filepath.Join(dir, "p")
	unix.Mkfifo(fifo, 0o600)
	done := make(chan error, 1)
	go func() { _, err := ReadDir(fifo, false); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO read as a directory")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadDir blocked in a FIFO's open")
	}
}
