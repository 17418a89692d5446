package shell_test

import (
	"context"
	"testing"

	"github.com/moat-sandbox/moat/shell"
)

// BenchmarkRun measures what the shell layer adds to a command: bash
// starting, the snapshot sourced, the environment reported twice, the
// output and the side channel read (the sandbox's own cost comes on top).
func BenchmarkRun(b *testing.B) {
	for _, tc := range []struct {
		name string
		rc   string
		mod  func(*shell.Config)
	}{
		{"snapshot", testRC, nil},
		{"login-shell", "", func(c *shell.Config) { c.NoSnapshot = true }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b, tc.rc, tc.mod)
			ctx := context.Background()
			if _, err := e.s.Run(ctx, shell.Request{Command: "true"}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := e.s.Run(ctx, shell.Request{Command: "true"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
