package validators

import "testing"

// TestKeyFilter: a keyFilter never rejects a key of its set, so the
// filtered lookups answer as the maps do.
func TestKeyFilter(t *testing.T) {
	sets := map[string]map[string]bool{"shellNames": shellNames, "nameBuiltins": nameBuiltins}
	ws := map[string]bool{}
	for k := range wrappers {
		ws[k] = true
	}
	sets["wrappers"] = ws
	long := "x"
	for len(long) < 70 {
		long += "x"
	}
	for name, m := range sets {
		f := newKeyFilter(m)
		probes := []string{"", "-", "ls", "/bin/sh", "--x", long, "bash ", "Bash"}
		for k := range m {
			if !f.mayHave(k) {
				t.Errorf("%s: filter rejects the key %q", name, k)
			}
			probes = append(probes, k+"x", k[:len(k)-1], "x"+k)
		}
		for _, p := range probes {
			if m[p] && !f.mayHave(p) {
				t.Errorf("%s: filter rejects %q", name, p)
			}
			for _, q := range []string{p, "/usr/bin/" + p, "./" + p, p + "/", "/", long + "/" + p, long + p, "/" + long + p} {
				if m[baseName(q)] && !f.mayHaveBase(q) {
					t.Errorf("%s: filter rejects the base of %q", name, q)
				}
			}
		}
	}
	f := newKeyFilter(map[string]bool{"": true, long: true})
	if !f.mayHave("") || !f.mayHave(long) || f.mayHave("x") || !f.mayHaveBase("/x/"+long) || !f.mayHaveBase("x/") {
		t.Error("empty and long keys")
	}
}
