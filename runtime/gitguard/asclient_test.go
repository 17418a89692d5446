//go:build linux

package gitguard_test

// moatd's audit runs with the client's fsuid (ascred: setfsuid only, the
// euid stays 0, capabilities dropped). The audit took the euid for whom it
// ran as, never made a search-only directory searchable, and a hook the
// command left in a hooks directory made search-only stayed unseen, and
// ran on the user's git commit (found by an attack pass, 41).
import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/runtime/gitguard"
)

func TestAuditAsClientSearchOnlyHooksDir(t *testing.T) {
	testutil.RequireRoot(t)
	const uid = 1013
	root, _ := os.MkdirTemp("/var/tmp", "a41-moatd-")
	defer os.RemoveAll(root)
	os.Chmod(root, 0o755)
	w := filepath.Join(root, "w")
	sh := func(script string) {
		cmd := exec.Command("setpriv", "--reuid=1013", "--regid=1013", "--clear-groups", "bash", "-euc", script)
		cmd.Dir = root
		cmd.Env = []string{"HOME=" + root, "PATH=" + os.Getenv("PATH"), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", script, err, out)
		}
	}
	os.Chown(root, uid, uid)
	sh(`mkdir -p w/repo && cd w/repo && git init -q && git commit -q --allow-empty -m one`)
	time.Sleep(1100 * time.Millisecond)
	since := time.Now()
	time.Sleep(20 * time.Millisecond)
	// The sandboxed command: a hook, then its directory made search-only.
	sh(`cd w/repo && printf '#!/bin/sh\ntouch ` + root + `/PWNED\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && chmod 0100 .git/hooks`)
	var rep *gitguard.Report
	err := ascred.Do(uid, uid, nil, func() error {
		var err error
		rep, err = gitguard.Audit(gitguard.Options{Roots: []string{w}, Since: since, Home: root,
			QuarantineDir: filepath.Join(root, "q"), CacheDir: filepath.Join(root, "c")})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("findings %+v incomplete %v", rep.Findings, rep.Incomplete)
	sh(`cd w/repo && git commit -q --allow-empty -m two || true`)
	if _, err := os.Stat(filepath.Join(root, "PWNED")); err == nil {
		t.Fatalf("ESCAPE: moatd's audit (fsuid %d) left a hook in a search-only hooks directory; git ran it (findings %d, incomplete %v)", uid, len(rep.Findings), rep.Incomplete)
	}
}
