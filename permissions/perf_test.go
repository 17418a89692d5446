package permissions

import (
	"reflect"
	"slices"
	"sync"
	"testing"
)

// TestContainsDropOrTruncate: the one-pass scan answers as the two
// containsFold calls it replaces.
func TestContainsDropOrTruncate(t *testing.T) {
	words := []string{"", "d", "dro", "drop", "DROP", "dRoP", "xdropx", "Drop table", "trunc", "truncate",
		"TRUNCATE", "truncat", "xTrUnCaTeX", "dr op", "\xc4rop", "Dro", "TRUNCATE TABLE x", "psql -c 'DROP'", "t", "dropt"}
	for _, a := range words {
		for _, b := range []string{"", " ", "x", "ru", "p"} {
			s := a + b
			want := containsFold(s, "drop") || containsFold(s, "truncate")
			if got := containsDropOrTruncate(s); got != want {
				t.Errorf("%q: %v, want %v", s, got, want)
			}
		}
	}
	for _, c := range loadCorpus(t) {
		if got, want := containsDropOrTruncate(c), containsFold(c, "drop") || containsFold(c, "truncate"); got != want {
			t.Errorf("%q: %v, want %v", c, got, want)
		}
	}
}

// TestParseFlagsPositionals: the positionals, in order, around "--".
func TestParseFlagsPositionals(t *testing.T) {
	tab := flags("-n= -v -x")
	for _, tc := range []struct {
		args []string
		pos  []int
	}{
		{[]string{"a", "--", "b"}, []int{0, 2}},
		{[]string{"a", "b", "--"}, []int{0, 1}},
		{[]string{"--", "a", "-v"}, []int{1, 2}},
		{[]string{"-v", "a", "-x", "b"}, []int{1, 3}},
		{[]string{"-n", "5", "a", "--", "-x", "c"}, []int{2, 4, 5}},
		{[]string{"-v"}, nil},
	} {
		pa, _, ok := parseFlags(tc.args, tab, flagOpts{})
		if !ok || !slices.Equal(pa.pos, tc.pos) {
			t.Errorf("parseFlags(%q): positionals %v ok=%v; want %v", tc.args, pa.pos, ok, tc.pos)
		}
	}
}

// TestDecideConcurrent: decisions made from several goroutines at once
// (the engine pools its per-decision state) are the sequential ones.
func TestDecideConcurrent(t *testing.T) {
	e := mustEngine(t, rules(benchRules...))
	corpus := loadCorpus(t)
	if testing.Short() {
		corpus = corpus[:300]
	}
	modes := []string{"default", "acceptEdits", "plan", "bypassPermissions"}
	want := make([]Summary, len(corpus))
	for i, c := range corpus {
		want[i] = Summarize(e.Decide(Request{Command: c, Cwd: testCwd, Mode: modes[i%len(modes)]}))
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range corpus {
				i := (k*7 + g*101) % len(corpus)
				got := Summarize(e.Decide(Request{Command: corpus[i], Cwd: testCwd, Mode: modes[i%len(modes)]}))
				if !reflect.DeepEqual(got, want[i]) {
					t.Errorf("%q: concurrent %+v, sequential %+v", corpus[i], got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestCommandTable: one lookup in commandTable says what displayKind,
// editSpecs and readOnlySpecs say.
func TestCommandTable(t *testing.T) {
	names := []string{"", ".", "nosuchcommand", "git", "sed", "cd"}
	for n := range kindOf.get() {
		names = append(names, n)
	}
	for n := range readOnlySpecs.get() {
		names = append(names, n)
	}
	for n := range editSpecs.get() {
		names = append(names, n)
	}
	for _, n := range names {
		info, known := commandTable.get()[n]
		kind := KindNone
		if known {
			kind = info.kind
		}
		if kind != displayKind(n) {
			t.Errorf("%q: kind %q, displayKind %q", n, kind, displayKind(n))
		}
		es, isEdit := editSpecs.get()[n]
		if isEdit != (info.edit != nil) || (isEdit && !reflect.DeepEqual(es, *info.edit)) {
			t.Errorf("%q: edit spec differs", n)
		}
		if rs := readOnlySpecs.get()[n]; rs != info.ro {
			t.Errorf("%q: read-only spec differs", n)
		}
	}
}
