package cgroup

import (
	"errors"
	"fmt"
)

// ErrUnsupported reports that there is no usable cgroup v2 hierarchy (no
// cgroup2 mount, or a platform other than Linux).
var ErrUnsupported = errors.New("cgroup v2 unavailable")

// DefaultName is the parent directory [New] uses when given "".
const DefaultName = "moat"

// validName accepts the run ids and parent names this package creates:
// letters, digits, '.', '_' and '-', not starting with '.', at most 128
// bytes. (A loop, not a regexp: compiling {0,127} at every start of moat
// cost a third of a millisecond.)
func validName(name string) bool {
	if name == "" || len(name) > 128 || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func checkName(what, name string) error {
	if !validName(name) {
		return fmt.Errorf("cgroup: invalid %s %q (want letters, digits, '.', '_' or '-', not starting with '.')", what, name)
	}
	return nil
}
