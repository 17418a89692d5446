//go:build linux

package main

// Security review (fourth round, attack pass 50) of moatd. Each test FAILS
// while the flaw it names is present, and shows the client cannot do the
// same without moat (so it cannot pass vacuously).

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDaemonAttackPolicyCwdSwapListsProtectedNames: GET /v1/policy checks
// its cwd as the client (search permission, its real path), then plans
// the policy's protected paths and placeholders as root, by that path. A
// directory swapped for a symbolic link after the check (a RENAME_EXCHANGE
// loop, won in a few tries) had root plan in a directory the client cannot
// search, and the answer listed which protected names (.git, .vscode,
// .bashrc ...) exist there: the placeholders are the missing ones. The
// answer to a daemon peer carries no such list.
func TestDaemonAttackPolicyCwdSwapListsProtectedNames(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	// Root's policy for the users makes the working directory writable
	// (a common users.d file): its protected names are planned there.
	users := filepath.Join(dir, "users.d")
	if err := os.MkdirAll(users, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := `{"filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": []}, "network": {"allowedDomains": [], "deniedDomains": []}}`
	if err := os.WriteFile(filepath.Join(users, "default.json"), []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	const marker = "root-only-moatd-a50"
	c := cwdSwap(t, dir, u1, marker)
	path := "/v1/policy?cwd=" + url.QueryEscape(c)
	answered := 0
	// 400 tries, by one curl (one process for all, not one each: 400
	// processes as the user took this test 30-110 s of CI's time).
	for i, a := range u1.callMany(t, d.sock, "GET", path, 400) {
		if a.code != 200 {
			continue
		}
		answered++
		// (The directory's own path may be named, in a note that the
		// client cannot write there: the client made the link.)
		if strings.Contains(a.body, marker+"/") {
			t.Fatalf("ESCAPE: moatd planned in a directory the client cannot search and listed its protected names and placeholders (try %d): %s", i, a.body)
		}
	}
	t.Logf("%d answers, none naming what is in the directory", answered)
}

// TestDaemonAttackSessionCwdSwapPlansAsRoot: the same swap against a
// session. The daemon checks the session's cwd and writable paths as the
// client; root then planned the sandbox by those paths, so a directory
// swapped for a link to another user's 0700 directory after the check had
// root look inside it. The sandbox's mount table showed which protected
// names exist there (bound read-only) and which do not (placeholders), or
// the run was refused naming the first it could not reserve. Planned with
// the client's credentials, the client learns nothing it could not learn
// itself: whatever the swap, the sandbox's mounts and the daemon's answer
// never name a path inside the private directory.
func TestDaemonAttackSessionCwdSwapPlansAsRoot(t *testing.T) {
	d, u1, _, dir := daemonFixture(t)
	const marker = "root-only-moatd-s53"
	c := filepath.Join(u1.dir, "c")
	if _, errb, err := u1.as("mkdir", c); err != nil {
		t.Fatalf("mkdir: %v %s", err, errb)
	}
	// The same session request without the swap does plan in c (the
	// test's probe sees moat's mounts there), so the probe can find one.
	sid := u1.openSession(t, d, fmt.Sprintf(`{"cwd":%q,"write":[%q]}`, c, c))
	if code, out := u1.run(t, d, sid, "cat /proc/self/mountinfo"); code != 200 || !strings.Contains(out, filepath.Join(c, ".vscode")) {
		t.Fatalf("without the swap the sandbox shows no placeholder in c (the probe is blind): %d %s", code, out)
	}
	u1.call(t, d.sock, "DELETE", "/v1/sessions/"+sid, "")
	cwdSwap(t, dir, u1, marker)
	opened := 0
	for i := 0; i < 150; i++ {
		code, body := u1.call(t, d.sock, "POST", "/v1/sessions", fmt.Sprintf(`{"cwd":%q,"write":[%q]}`, c, c))
		if strings.Contains(body, marker+"/") {
			t.Fatalf("ESCAPE: the daemon's answer names a path in a directory the client cannot search (try %d): %d %s", i, code, body)
		}
		if code != 201 {
			continue
		}
		opened++
		sid := jsonField(t, body, "id")
		code, out := u1.run(t, d, sid, "cat /proc/self/mountinfo")
		u1.call(t, d.sock, "DELETE", "/v1/sessions/"+sid, "")
		if strings.Contains(out, marker) {
			t.Fatalf("ESCAPE: root planned the session in a directory the client cannot search; its mounts show what is there (try %d): %d %s", i, code, out)
		}
	}
	t.Logf("%d sessions opened, none planned in the private directory", opened)
}

// cwdSwap makes a root-only directory dir/marker holding .vscode, which u
// can neither list nor stat in (or the test could not fail), and u's own
// directory c beside a link c2 to it, then exchanges c and c2 over and
// over until the test ends (what the client can do in its own tree). It
// returns c.
func cwdSwap(t *testing.T, dir string, u *daemonUser, marker string) string {
	t.Helper()
	private := filepath.Join(dir, marker)
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(private, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, errb, err := u.as("ls", "-a", private); err == nil || strings.Contains(out, ".vscode") {
		t.Fatalf("the client lists the directory itself (or this test cannot fail): %q %q %v", out, errb, err)
	}
	if _, errb, err := u.as("stat", filepath.Join(private, ".vscode")); err == nil {
		t.Fatalf("the client stats the name itself (or this test cannot fail): %s", errb)
	}
	c, c2 := filepath.Join(u.dir, "c"), filepath.Join(u.dir, "c2")
	if _, err := os.Lstat(c); err != nil {
		if _, errb, err := u.as("mkdir", c); err != nil {
			t.Fatalf("mkdir: %v %s", err, errb)
		}
	}
	if _, errb, err := u.as("ln", "-s", private, c2); err != nil {
		t.Fatalf("ln: %v %s", err, errb)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			unix.Renameat2(unix.AT_FDCWD, c, unix.AT_FDCWD, c2, unix.RENAME_EXCHANGE)
		}
	}()
	t.Cleanup(func() { stop.Store(true); <-done })
	return c
}
