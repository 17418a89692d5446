//go:build linux

package gitguard

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// rchar is what this process has read (/proc/self/io).
func rchar(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skip("no /proc/self/io:", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "rchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// A run that changed the index has every sharedindex.* beside it read,
// each up to 256 MiB: sparse ones cost the command nothing, and 150 of
// them held moatd (root's) at a CPU and 650 MB for 40 s (attack pass 58;
// 10,000 for hours). What one audit reads of such files is bounded, and
// the index whose shared indexes were not all read is taken out (git
// reads the paths in them unchecked).
func TestAuditBigReadsBounded(t *testing.T) {
	// The bound is 4 GiB; the test proves it with 512 MiB (two of the
	// sparse files) rather than read 4 GiB of zeroes.
	defer func(n int64) { maxBigReads = n }(maxBigReads)
	maxBigReads = 512 << 20
	s := newScene(t)
	s.begin()
	s.sh(s.repo, `echo x > big.txt && git add big.txt && for i in $(seq 1 24); do truncate -s 268435456 .git/sharedindex.$(printf %040d $i); done`)
	before := rchar(t)
	rep := s.audit()
	read := rchar(t) - before
	t.Logf("read %d MiB; findings %+v", read>>20, rep.Findings)
	if most := maxBigReads + 256<<20; read > most {
		t.Errorf("the audit read %d MiB of 24 sparse shared indexes of 256 MiB (more than %d MiB)", read>>20, most>>20)
	}
	taken := false
	for _, f := range rep.Findings {
		if strings.HasSuffix(f.Path, "/.git/index") && f.MovedTo != "" {
			taken = true
		}
	}
	if !taken {
		t.Errorf("the index whose shared indexes the audit did not read all of stays: %+v", rep.Findings)
	}
}
