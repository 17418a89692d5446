//go:build linux

package runtime

import (
	"context"
	"testing"
)

// BenchmarkSessionTrue is one `true` in an open session (the shell layer's
// per-command cost): go test -run XXX -bench SessionTrue ./runtime/
func BenchmarkSessionTrue(b *testing.B) {
	t := &testing.T{}
	pol, _ := testPolicy(t)
	s, err := NewSession(context.Background(), SessionRequest{Policy: pol, StateDir: pol.Cwd + "/.state"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := s.Run(context.Background(), Command{Argv: []string{"/bin/true"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkRunTrue is a cold runtime.Run of `true`, for comparison.
func BenchmarkRunTrue(b *testing.B) {
	t := &testing.T{}
	pol, _ := testPolicy(t)
	for i := 0; i < b.N; i++ {
		res, err := Run(context.Background(), Request{Policy: pol, Argv: []string{"/bin/true"}, StateDir: pol.Cwd + "/.state"})
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
	}
}
