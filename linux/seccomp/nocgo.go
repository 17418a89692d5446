//go:build linux && !cgo

package seccomp

import "fmt"

// Build needs libseccomp, which needs cgo.
func Build(o Options) ([]byte, error) {
	return nil, fmt.Errorf("%w: built without cgo (libseccomp)", ErrUnsupported)
}

// Number needs libseccomp's syscall table.
func Number(name string) (int, bool) { return 0, false }
