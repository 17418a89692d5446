//go:build linux && cgo

package linux

import (
	"testing"

	"github.com/moat-sandbox/moat/linux/seccomp"
)

// Every syscall the filter hands the observer as a write is one the
// observer knows: an unknown one is refused (EPERM), so a write syscall
// added to the list without its entry here would break it.
func TestObserverKnowsEveryWriteSyscall(t *testing.T) {
	for _, w := range seccomp.WriteSyscalls {
		if _, ok := pathArgs[w.Name]; !ok {
			t.Errorf("%s is in seccomp.WriteSyscalls but not in the observer's pathArgs", w.Name)
		}
	}
}
