//go:build linux

package linux

import (
	"errors"
	"testing"

	"github.com/moat-sandbox/moat/bpf"
	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// TestSharedProgramsOwnedByEnforcer: a NewShared enforcer's launches
// attach one loaded set of eBPF programs; its Close releases the set once
// the last filter from it is closed, and a launch after Close is refused.
// New's enforcer keeps nothing.
func TestSharedProgramsOwnedByEnforcer(t *testing.T) {
	testutil.RequireRoot(t)
	if err := bpf.Supported(); err != nil {
		testutil.Unavailable(t, "eBPF filter: %v", err)
	}
	if e := New(); e.progs != nil || e.Close() != nil {
		t.Fatal("New's enforcer keeps programs")
	}
	e := NewShared()
	var filters []*kernelFilter
	t.Cleanup(func() {
		for _, k := range filters {
			k.close()
		}
		e.Close()
	})
	for range 2 {
		k, err := newKernelFilter(e.progs)
		if err != nil {
			t.Fatal(err)
		}
		filters = append(filters, k)
		if err := k.attach(nil, false, false, func(policy.Violation) {}); err != nil {
			t.Fatal(err)
		}
	}
	p := filters[0].progs
	if p == nil || filters[1].progs != p {
		t.Fatalf("two launches of one enforcer: sets %p and %p, want one", p, filters[1].progs)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := newKernelFilter(e.progs); !errors.Is(err, errEnforcerClosed) {
		t.Errorf("a launch after Close: %v, want errEnforcerClosed", err)
	}
	// The set stays while a filter from it is open.
	filters[0].close()
	filters = filters[1:]
	if e.progs.p != p {
		t.Fatal("the set was released while a filter from it was open")
	}
	own, err := newKernelFilter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer own.close()
	filters[0].close()
	filters = nil
	if e.progs.p != nil {
		t.Error("the set outlived its last filter after Close")
	}
	if f, err := p.Attach(own.group.Path(), nil, bpf.Options{}); err == nil {
		f.Close()
		t.Error("the released set still attaches")
	}
	if err := e.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}
