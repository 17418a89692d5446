//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moat-sandbox/moat/runtime/settings"
)

// BenchmarkFSPlan is the filesystem plan of issue #12's cold-start policy
// (3 allowed domains, denyRead ~/.ssh, allowWrite .) in a git checkout,
// with the defaults' protected names: the planning a `moat run` waits for
// before stage 2 may mount. Placeholders are only listed (no mountPoint).
//
//	go test -run '^$' -bench FSPlan -benchtime 200x ./linux
func BenchmarkFSPlan(b *testing.B) {
	root := canonTB(b, b.TempDir())
	work := filepath.Join(root, "work")
	home := filepath.Join(root, "home")
	for _, d := range []string{work + "/.git/objects", work + "/.git/refs", work + "/src", home + "/.ssh", home + "/.config"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(work+"/.git/HEAD", []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	s := filepath.Join(root, "s.json")
	if err := os.WriteFile(s, []byte(`{"network":{"allowedDomains":["example.com","*.github.com","registry.npmjs.org"],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh"],"allowWrite":["."],"denyWrite":[]}}`), 0o644); err != nil {
		b.Fatal(err)
	}
	pol, _, err := settings.Load(settings.Options{File: s, Cwd: work, Home: home, ManagedFile: "-"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := makeFSPlan(planInput{pol: pol, uid: os.Getuid(), gid: os.Getgid(), exposeRO: []string{work}, dirs: newResolver()}); err != nil {
			b.Fatal(err)
		}
	}
}

// canonTB is p with its symlinks resolved (a test fails if it cannot be).
func canonTB(b testing.TB, p string) string {
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
