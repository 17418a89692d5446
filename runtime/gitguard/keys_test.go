package gitguard

import "testing"

// Keys that make the user's git run a program, in sections otherwise
// harmless: each is a risk (found by attack passes: an alias without "!"
// that passes -c, gc.recentObjectsHook run by automatic gc since git 2.42).
func TestRiskInSafeSections(t *testing.T) {
	cfg := "[alias]\n\tst = -c core.fsmonitor=/x status\n\tco = checkout\n" +
		"[gc]\n\trecentObjectsHook = /x\n\tauto = 100\n" +
		"[core]\n\tfsmonitor = /x\n\tfsmonitor = true\n\tabbrev = 12\n"
	es, err := ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{ // risky?
		"alias.st": true, "alias.co": true, "gc.recentobjectshook": true, "gc.auto": false,
		"core.fsmonitor=/x": true, "core.fsmonitor=true": false, "core.abbrev": false,
	}
	for _, e := range es {
		name := e.Name
		if name == "core.fsmonitor" {
			name += "=" + e.Value
		}
		risky, ok := want[name]
		if !ok {
			t.Fatalf("unexpected entry %s", name)
		}
		if got := Risk(e) != ""; got != risky {
			t.Errorf("Risk(%s) = %q, want risky %v", name, Risk(e), risky)
		}
	}
}
