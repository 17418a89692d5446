//go:build linux

package journal

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkPlaceholders: one run's journal with the 14 placeholders of the
// default protections in a writable working directory, made and removed
// (what each run pays twice on the host filesystem).
//
//	go test -run XXX -bench Placeholders ./linux/journal/
func BenchmarkPlaceholders(b *testing.B) {
	root, err := os.MkdirTemp("/var/tmp", "moat-bench-journal-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(root)
	dir, tree := filepath.Join(root, "journal"), filepath.Join(root, "tree")
	os.MkdirAll(filepath.Join(tree, ".git"), 0o755)
	names := []string{".vscode", ".idea", ".mcp.json", ".claude", "HEAD", "objects", "refs", "hooks", ".gitmodules", ".git/hooks", ".git/config.worktree", ".gitconfig", ".bashrc", ".profile"}
	b.Run("create", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			j, err := Begin(dir)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for _, n := range names {
				if err := j.Create(filepath.Join(tree, n), Dir, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			j.Unlock()
			j.Close()
			b.StartTimer()
		}
	})
	b.Run("close", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			j, err := Begin(dir)
			if err != nil {
				b.Fatal(err)
			}
			for _, n := range names {
				if err := j.Create(filepath.Join(tree, n), Dir, ""); err != nil {
					b.Fatal(err)
				}
			}
			j.Unlock()
			b.StartTimer()
			if err := j.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
