package netproxy

import (
	"os"
	"path"
	"strconv"
	"strings"
)

// cgroupPidsMax is the smallest pids.max of the process's cgroup and of
// the cgroups above it, in the pids hierarchy of cgroup v1 or in cgroup
// v2 (mounted at /sys/fs/cgroup); 0 when none is set or none is found.
func cgroupPidsMax() int {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	least := 0
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controllers:path
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		var base string
		switch {
		case f[0] == "0" && f[1] == "":
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
				continue // v2 beside v1 (a hybrid host): its pids is v1's
			}
			base = "/sys/fs/cgroup"
		case strings.Contains(","+f[1]+",", ",pids,"):
			base = "/sys/fs/cgroup/pids"
		default:
			continue
		}
		for p := path.Clean(f[2]); ; p = path.Dir(p) {
			if b, err := os.ReadFile(base + p + "/pids.max"); err == nil {
				if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 && (least == 0 || n < least) {
					least = n // "max" is no limit
				}
			}
			if p == "/" {
				break
			}
		}
	}
	return least
}
