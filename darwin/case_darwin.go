//go:build darwin

package darwin

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// pcCaseSensitive is _PC_CASE_SENSITIVE of macOS's <sys/unistd.h>
// (golang.org/x/sys/unix does not name it): pathconf answers 1 on a
// case-sensitive volume, 0 on a case-insensitive one.
const pcCaseSensitive = 11

// volumeCaseSensitive is the default Options.CaseSensitive on macOS: the
// answer of pathconf(_PC_CASE_SENSITIVE) for the volume of p's longest
// existing prefix. Anything but a clear 1 (an error, a volume that does
// not say) is case-insensitive: the folded rules then cost a regex, where
// a wrong "sensitive" would lose the protection.
func volumeCaseSensitive(p string) bool {
	for q := filepath.Clean(p); ; q = filepath.Dir(q) {
		if _, err := os.Lstat(q); err == nil {
			v, err := unix.Pathconf(q, pcCaseSensitive)
			return err == nil && v == 1
		}
		if q == "/" || q == "." {
			return false
		}
	}
}
