//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Found by attack pass 111: the violation observer names a refused write by
// where it goes, its symlinks resolved as the host sees them, outside the
// sandbox. A symlink in a denyRead directory, which the sandbox sees empty,
// was read all the same, and its target (a hidden file's contents, to
// readlink) came back in the run's violation report, to the agent that
// chose the command: a write to secretdir/link, through secretdir/dlink/x,
// or through a symlink the command made that leads into secretdir, named
// the hidden links' targets. Without moat the user reads them with
// readlink.
func TestObserverHiddenSymlinkNotRead(t *testing.T) {
	f := newFixture(t)
	hid := filepath.Join(f.outside, "secretdir")
	elsewhere := filepath.Join(f.outside, "LEAKED-DIR-TARGET")
	must(t, os.MkdirAll(elsewhere, 0o755))
	must(t, os.Symlink("/opt/LEAKED-FILE-TARGET/key", filepath.Join(hid, "link")))
	must(t, os.Symlink(elsewhere, filepath.Join(hid, "dlink")))
	script := strings.Join([]string{
		"echo x > " + hid + "/link",
		"touch " + hid + "/dlink/x",
		"ln -s " + hid + "/dlink out && touch out/y",
		"ln -s " + hid + "/link out2 && echo x > out2",
		"readlink " + hid + "/link",
		"echo done",
	}, "; ") + " 2>&1"
	got := f.sandboxedSh(script)
	if !strings.Contains(got.out, "done") {
		t.Fatalf("the script did not run (exit %d):\n%s", got.code, got.out)
	}
	for _, leak := range []string{"LEAKED-FILE-TARGET", "LEAKED-DIR-TARGET"} {
		if strings.Contains(got.out, leak) {
			t.Errorf("ESCAPE under moat: a hidden symlink's target (%s) reached the run's report:\n%s", leak, got.out)
		}
	}
	if !strings.Contains(got.out, "deny file-write") {
		t.Errorf("the refused writes must still be reported:\n%s", got.out)
	}
	base := f.exec("/bin/sh", "-c", "readlink "+hid+"/link")
	if !strings.Contains(base.out, "LEAKED-FILE-TARGET") {
		t.Errorf("without moat the user reads the link (or this test cannot fail):\n%s", base.out)
	}
}
