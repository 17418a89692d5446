//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell"
)

// BenchmarkShellCommand is one agent command through the whole session
// path: the gate's decision, the shell layer (the command string, the
// snapshot sourced, cwd and environment tracked, output captured and
// interpreted) and the session sandbox's new process tree.
//
//	go test -run XXX -bench ShellCommand ./shell/sandbox/
func BenchmarkShellCommand(b *testing.B) {
	dir, err := os.MkdirTemp("/var/tmp", "moat-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	pol := &policy.Policy{Cwd: dir, Home: dir}
	pol.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	pol.FS.AllowWrite = []policy.PathRule{{Path: dir, Source: "bench"}}
	s, err := Open(context.Background(), Config{Policy: pol, Gate: GateOff, StateDir: filepath.Join(dir, ".state"), Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "LANG=C"}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Session.Run(ctx, shell.Request{Command: "true"}); err != nil { // the snapshot
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r, err := s.Session.Run(ctx, shell.Request{Command: "true"}); err != nil || r.ExitCode != 0 {
			b.Fatal(err, r.ExitCode)
		}
	}
}
