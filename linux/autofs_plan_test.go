//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Found by attack pass 56: what a command left in a writable tree for the
// next run's plan to read (a .git file or symlink naming
// /net/DATA.attacker.tld/x, a commondir there, a config's include or
// core.hooksPath there) had the planner, outside the sandbox, look it up,
// and the kernel asked the host's automounter for DATA. The test is the
// automounter: planning must ask it for nothing.
func TestPlanAutofsNotAsked(t *testing.T) {
	testutil.RequireRoot(t) // mounting autofs takes root
	root := canon(t, t.TempDir())
	net := filepath.Join(root, "net")
	am := testutil.NewAutomounter(t, net)
	work := filepath.Join(root, "work")
	mkTree(t, root, "work/s2real/.git/HEAD", "work/s2real/.git/objects/", "work/s2real/.git/refs/",
		"work/s3/.git/HEAD", "work/s3/.git/objects/", "work/s3/.git/refs/",
		"work/s4/.git/HEAD", "work/s4/.git/objects/", "work/s4/.git/refs/", "home/")
	write := func(p, data string) {
		if err := os.WriteFile(filepath.Join(work, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(net+"/k-cwd/x", filepath.Join(work, ".git")))
	must(os.MkdirAll(filepath.Join(work, "s1"), 0o755))
	write("s1/.git", "gitdir: "+net+"/k-file/x\n")
	must(os.MkdirAll(filepath.Join(work, "s2"), 0o755))
	write("s2/.git", "gitdir: ../s2real/.git\n")
	write("s2real/.git/commondir", net+"/k-commondir\n")
	write("s3/.git/config", "[include]\n\tpath = "+net+"/k-include/cfg\n[core]\n\thooksPath = "+net+"/k-hooks\n")
	must(os.Symlink(net+"/k-via-link", filepath.Join(work, "lnk")))
	write("s4/.git/config", "[core]\n\thooksPath = ../lnk/hooks\n[include]\n\tpath = ../../lnk/cfg\n")
	pol := &policy.Policy{Cwd: work, Home: filepath.Join(root, "home")}
	pol.FS.AllowWrite = []policy.PathRule{{Path: work}}
	pol.FS.MandatoryDenySearchDepth = 3
	// A search cache that knows many/ and its 300 directories (a warm
	// search stamps what it knows ahead of the walk); many/ is then a
	// symlink below the mount.
	for i := range 300 {
		must(os.MkdirAll(filepath.Join(work, "many", "d"+strconv.Itoa(i)), 0o755))
	}
	in := planInput{pol: pol, exposeRO: []string{work}, cache: cacheIO{dir: filepath.Join(root, "cache")}}
	if _, err := makeFSPlan(in); err != nil {
		t.Fatal(err)
	}
	must(os.RemoveAll(filepath.Join(work, "many")))
	must(os.Symlink(net+"/k-prestamp", filepath.Join(work, "many")))
	am.Reset()
	if _, err := makeFSPlan(in); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if got := am.Asked(); len(got) > 0 {
		t.Errorf("ESCAPE: planning asked the host's automounter for %q", got)
	}
	// A lookup below the mount does ask (or this test cannot fail).
	am.Reset()
	os.Stat(filepath.Join(net, "k-direct", "x"))
	deadline := time.Now().Add(2 * time.Second)
	for len(am.Asked()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := am.Asked(); len(got) != 1 || got[0] != "k-direct" {
		t.Errorf("a lookup below the autofs mount must ask the automounter (asked %q)", got)
	}
}
