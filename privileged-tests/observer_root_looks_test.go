//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// Found by attack pass 111: root's own sandbox cannot look into another
// user's 0700 directory (its user namespace maps root alone, and its
// command has no capability), but the violation observer, root with every
// capability outside the sandbox, looked there for it when it named a
// refused write: a write through a symlink in that directory named the
// link's target in the run's report, which the agent that chose the
// command reads, and a write that does not create was reported for a file
// that exists there and not for one that does not. The observer now looks
// as the command is: root without capabilities. Without moat, root reads
// the links and lists the directory.
func TestObserverLooksAsRootsCommand(t *testing.T) {
	testutil.RequireRoot(t) // root's own sandbox; a user's observer is that user
	f := newFixture(t)
	priv := filepath.Join(f.outside, "other-users")
	elsewhere := filepath.Join(f.outside, "ROOT-LEAK-DIR")
	must(t, os.MkdirAll(priv, 0o700))
	must(t, os.MkdirAll(elsewhere, 0o755))
	must(t, os.Symlink("/opt/ROOT-LEAK-FILE/key", filepath.Join(priv, "flink")))
	must(t, os.Symlink(elsewhere, filepath.Join(priv, "dlink")))
	must(t, os.WriteFile(filepath.Join(priv, "exists.txt"), nil, 0o600))
	for _, p := range []string{"flink", "dlink", "exists.txt", ""} {
		must(t, os.Lchown(filepath.Join(priv, p), 65534, 65534))
	}
	script := strings.Join([]string{
		"echo x > " + priv + "/flink",
		"touch " + priv + "/dlink/x",
		"dd if=/dev/null of=" + priv + "/exists.txt conv=nocreat,notrunc status=none",
		"dd if=/dev/null of=" + priv + "/missing.txt conv=nocreat,notrunc status=none",
		"echo done",
	}, "; ") + " 2>&1"
	got := f.sandboxedSh(script)
	if !strings.Contains(got.out, "done") {
		t.Fatalf("the script did not run (exit %d):\n%s", got.code, got.out)
	}
	for _, leak := range []string{"ROOT-LEAK-FILE", "ROOT-LEAK-DIR"} {
		if strings.Contains(got.out, leak) {
			t.Errorf("ESCAPE under moat: the target of a symlink in another user's 0700 directory (%s) reached root's command:\n%s", leak, got.out)
		}
	}
	if e, m := strings.Contains(got.out, "deny file-write "+priv+"/exists.txt"), strings.Contains(got.out, "deny file-write "+priv+"/missing.txt"); e != m {
		t.Errorf("ESCAPE under moat: the report says which files exist in another user's 0700 directory (exists.txt reported %v, missing.txt %v):\n%s", e, m, got.out)
	}
	base := f.exec("/bin/sh", "-c", "readlink "+priv+"/flink; ls "+priv)
	if !strings.Contains(base.out, "ROOT-LEAK-FILE") || !strings.Contains(base.out, "exists.txt") {
		t.Errorf("without moat root reads the directory (or this test cannot fail):\n%s", base.out)
	}
}
