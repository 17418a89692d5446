package cgroup

import (
	"errors"
	"fmt"
	"regexp"
)

// ErrUnsupported reports that there is no usable cgroup v2 hierarchy (no
// cgroup2 mount, or a platform other than Linux).
var ErrUnsupported = errors.New("cgroup v2 unavailable")

// DefaultName is the parent directory [New] uses when given "".
const DefaultName = "moat"

// validName accepts the run ids and parent names this package creates:
// letters, digits, '.', '_' and '-', not starting with '.'.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

func checkName(what, name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("cgroup: invalid %s %q (want letters, digits, '.', '_' or '-', not starting with '.')", what, name)
	}
	return nil
}
