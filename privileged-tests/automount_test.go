//go:build linux

package privtests

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// An autofs mount of the host answers a lookup below it by asking the
// host's automounter (a root daemon, outside every namespace of the
// sandbox's) for the name looked up: with an automounter's -hosts map
// (/net/HOST), the sandboxed command had it resolve a name of its choosing
// (the data in a DNS query) and send RPC to any address, through the
// host's network, from a sandbox whose network is its own loopback and the
// proxy; a program map ran as root with the name (found by attack pass
// 56). In the sandbox an autofs mount is an empty read-only directory;
// what the host had mounted below it is still there. This test is the
// automounter itself: it mounts autofs on a pipe and reads the requests.
func TestAutomountNotTriggered(t *testing.T) {
	testutil.RequireRoot(t) // mounting autofs takes root
	f := newFixture(t)
	auto := filepath.Join(f.root, "net")
	am := testutil.NewAutomounter(t, auto)
	// A share the automounter mounted before the run: still there inside.
	shown := filepath.Join(auto, "mounted")
	mk := exec.Command("/bin/sh", "-c", "mkdir "+shown+" && mount -t tmpfs moat-test "+shown+" && echo SHOWN > "+shown+"/file")
	am.Quiet(mk)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("mount below the autofs: %v\n%s", err, out)
	}
	t.Cleanup(func() { unix.Unmount(shown, unix.MNT_DETACH) })
	wasAsked := func(name string) bool { return am.WasAsked(name, 2*time.Second) }

	script := func(key string) string {
		return "ls " + filepath.Join(auto, key) + " 2>&1; cat " + filepath.Join(shown, "file")
	}
	got := f.sandboxedSh(script("exfil-moat.example.test"))
	if wasAsked("exfil-moat.example.test") {
		t.Errorf("ESCAPE under moat: the host's automounter was asked for a name the command chose:\n%s", got.out)
	}
	if !strings.Contains(got.out, "SHOWN") {
		t.Errorf("what the host had mounted below the autofs must stay readable (exit %d):\n%s", got.code, got.out)
	}
	base := f.exec("/bin/sh", "-c", script("exfil-direct.example.test"))
	if !wasAsked("exfil-direct.example.test") {
		t.Errorf("without moat a lookup asks the automounter (or this test cannot fail):\n%s", base.out)
	}
	if !strings.Contains(base.out, "SHOWN") {
		t.Errorf("without moat the mounted share is readable:\n%s", base.out)
	}
}
