//go:build linux && !cgo

package privtests

import (
	"fmt"
	"os"
)

func denyUsernsMain([]string) int {
	fmt.Fprintln(os.Stderr, "deny-userns: this test binary was built without cgo (libseccomp)")
	return 2
}

func denyMountsMain([]string) int {
	fmt.Fprintln(os.Stderr, "deny-mounts: this test binary was built without cgo (libseccomp)")
	return 2
}
