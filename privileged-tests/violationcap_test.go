//go:build linux

package privtests

import (
	"strings"
	"testing"
)

// A command that makes more distinct refusals than the report lists must
// not hide the ones after: the report says how many it left out (a flood
// of refused connections hid the exfiltration attempt after it, unsaid:
// found by an attack pass).
func TestViolationReportSaysWhatItDrops(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	script := "for i in $(seq 1050); do : 2>/dev/null > " + f.outside + "/flood-$i; done; : 2>/dev/null > " + f.target + "; true"
	r := f.exec(moatBin, "run", "--settings", f.settings, "-c", script)
	if !strings.Contains(r.out, "more refusals not listed") {
		t.Errorf("past the report's cap the refusals left out must be counted and said:\n%.2000s", r.out)
	}
}
