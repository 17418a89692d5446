package runtime

import (
	"strconv"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Past the report's cap, refusals are counted and said, and each new one
// is still new for OnViolation: a flood hid a later refusal, unsaid.
func TestViolationSetSaysWhatItDrops(t *testing.T) {
	var s violationSet
	news := 0
	for i := 0; i < maxViolations+7; i++ {
		v := policy.Violation{Kind: policy.NetworkViolation, Op: "connect", Target: "127.0.0.1:" + strconv.Itoa(10000+i)}
		if s.add(&v) {
			news++
		}
		if s.add(&v) {
			t.Fatal("a repeat counted as new")
		}
	}
	if news != maxViolations+7 {
		t.Errorf("%d refusals handed on as new, want %d", news, maxViolations+7)
	}
	rep := s.report(false)
	last := rep[len(rep)-1]
	if !strings.Contains(last.Target, "7 more refusals not listed") {
		t.Errorf("the report's last line: %+v", last)
	}
}
