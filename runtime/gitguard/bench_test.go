package gitguard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkAuditWarm is the audit after a command that wrote one file, in
// a tree the previous audit recorded: 3,000 directories (a node_modules
// shape) and a few nested repositories. It is what a writing command pays
// after it ends.
func BenchmarkAuditWarm(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("no git")
	}
	root := b.TempDir()
	w := filepath.Join(root, "w")
	for i := 0; i < 100; i++ {
		for j := 0; j < 30; j++ {
			d := filepath.Join(w, "node_modules", fmt.Sprintf("p%d", i), fmt.Sprintf("d%d", j))
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			os.WriteFile(filepath.Join(d, "index.js"), []byte("x"), 0o644)
		}
	}
	for i := 0; i < 5; i++ {
		if out, err := exec.Command("git", "init", "-q", filepath.Join(w, fmt.Sprintf("repo%d", i))).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
	opts := Options{Roots: []string{w}, Home: filepath.Join(root, "home"),
		QuarantineDir: filepath.Join(root, "q"), CacheDir: filepath.Join(root, "cache"),
		Parallel: func(fn func()) error { fn(); return nil }} // as moat's own audit
	opts.Since = time.Now()
	if _, err := Audit(opts); err != nil { // the record
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		time.Sleep(time.Millisecond)
		opts.Since = time.Now()
		os.WriteFile(filepath.Join(w, "repo0", "f"), []byte(fmt.Sprint(i)), 0o644)
		b.StartTimer()
		rep, err := Audit(opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Findings) != 0 {
			b.Fatalf("findings: %+v", rep.Findings)
		}
	}
}
