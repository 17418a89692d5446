//go:build linux

package runtime

import (
	"context"
	"os"
	goruntime "runtime"
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

// BenchmarkSessionMemory runs one command in a session, then 100 more, and
// reports what grew in between: the supervisor's live heap, its open
// descriptors, and the memory of the sandbox's own processes (the cgroup's
// usage as root; 0 where moat has no cgroup). Nothing should grow.
//
//	go test -run XXX -bench SessionMemory -benchtime 1x ./runtime/
func BenchmarkSessionMemory(b *testing.B) {
	t := &testing.T{}
	pol, _ := testPolicy(t)
	s, err := NewSession(context.Background(), SessionRequest{Policy: pol, StateDir: pol.Cwd + "/.state"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	run := func(n int) {
		for i := 0; i < n; i++ {
			res, err := s.Run(context.Background(), Command{Argv: []string{"/bin/sh", "-c", "echo x; ls / >/dev/null"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatal(err, res)
			}
		}
	}
	measure := func() (heap uint64, fds int) {
		goruntime.GC()
		var m goruntime.MemStats
		goruntime.ReadMemStats(&m)
		es, _ := os.ReadDir("/proc/self/fd")
		return m.HeapInuse, len(es)
	}
	for i := 0; i < b.N; i++ {
		run(1)
		h1, f1 := measure()
		run(100)
		h2, f2 := measure()
		b.ReportMetric(float64(int64(h2)-int64(h1))/1024, "heap-growth-KiB")
		b.ReportMetric(float64(f2-f1), "fd-growth")
	}
}
