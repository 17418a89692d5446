package runtime

import (
	"slices"
	"testing"

	"github.com/moat-sandbox/moat/runtime/gitguard"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// The audit's tool names are the mandatory names no placeholder reserves
// (gitguard may not import policy: the lists are kept together here).
func TestToolNamesArePolicys(t *testing.T) {
	var want []string
	for _, n := range append(append([]string(nil), policy.MandatoryFiles...), policy.MandatoryDirs...) {
		if !slices.Contains(policy.CwdReservedNames, n) && n != ".claude" {
			want = append(want, n)
		}
	}
	got := append([]string(nil), gitguard.ToolNames...)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("gitguard.ToolNames %v, want %v", got, want)
	}
}
