//go:build !linux

package sealed

import "os"

// File returns a read-only descriptor, at offset 0, of an unlinked file
// that holds b (mode 0400). There is no /proc/PID/fd to reopen it by here.
func File(b []byte) (*os.File, error) {
	w, err := os.CreateTemp("", "moat-shell-snapshot-")
	if err != nil {
		return nil, err
	}
	name := w.Name()
	defer os.Remove(name)
	if _, err := w.Write(b); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Chmod(0o400); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return os.Open(name)
}
