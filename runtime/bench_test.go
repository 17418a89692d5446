//go:build linux

package runtime

import (
	"context"
	"os"
	goruntime "runtime"
	"slices"
	"syscall"
	"testing"
	"time"
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
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, err := s.Run(context.Background(), Command{Argv: []string{"/bin/true"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
		took = append(took, time.Since(t0))
	}
	b.StopTimer()
	reportMedian(b, took)
}

// reportMedian adds the median of the iterations' times (the session
// target is a median: a few slow commands on a busy machine move the mean).
func reportMedian(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median")
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

// BenchmarkSessionMemory runs one command in a session, then 100 more (and
// then 400 more), and reports what grew in between: the supervisor's live
// heap and its open descriptors. (The sandbox's own processes are new for
// each command: nothing of a finished command stays in the sandbox.)
// Nothing should grow.
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
		// And 400 more: a leak grows with the count, a table sized once
		// (HeapInuse counts whole 8 KiB spans) does not.
		run(400)
		h3, f3 := measure()
		b.ReportMetric(float64(int64(h3)-int64(h1))/1024, "heap-growth-500-KiB")
		b.ReportMetric(float64(f3-f1), "fd-growth-500")
	}
}

// BenchmarkSpawnTrue is the floor under a session command: starting
// /bin/true at all (vfork, exec, wait) from this process, with no sandbox.
func BenchmarkSpawnTrue(b *testing.B) {
	took := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{})
		if err != nil {
			b.Fatal(err)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
			b.Fatal(err, ws)
		}
		took = append(took, time.Since(t0))
	}
	b.StopTimer()
	reportMedian(b, took)
}
