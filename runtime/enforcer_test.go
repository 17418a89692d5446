//go:build linux

package runtime

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/bpf"
)

// TestRunWithEnforcer: runs and a session given one long-lived Enforcer
// (moatd's) use it; as root with eBPF, what it keeps is released by Close,
// after which a run that needs it fails instead of loading its own.
func TestRunWithEnforcer(t *testing.T) {
	pol, _ := testPolicy(t)
	enf := NewEnforcer()
	defer enf.Close()
	for i := range 2 {
		res, out, err := runCapture(t, context.Background(), Request{Policy: pol, Argv: []string{"/bin/echo", "hello"}, Enforcer: enf})
		if err != nil || res.ExitCode != 0 || strings.TrimSpace(out) != "hello" {
			t.Fatalf("run %d with the enforcer: %v, %+v, %q", i, err, res, out)
		}
	}
	s, err := NewSession(context.Background(), SessionRequest{Policy: pol, Enforcer: enf, StateDir: pol.Cwd + "/.state"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := enf.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCapture(t, context.Background(), Request{Policy: pol, Argv: []string{"/bin/true"}, Enforcer: enf})
	keeps := os.Geteuid() == 0 && bpf.Supported() == nil
	switch {
	case keeps && (err == nil || !strings.Contains(err.Error(), "Enforcer.Close")):
		t.Errorf("a root run after the enforcer's Close: %v, want its programs released", err)
	case !keeps && err != nil:
		t.Errorf("a run after Close of an enforcer that keeps nothing: %v", err)
	}
}
