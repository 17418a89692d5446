//go:build linux

package main

// Attack pass 69 on moatd: one user against the others. Each test FAILS
// while the flaw it names is present.

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestDaemonAttackProxyTunnelsTakeEveryonesSlots: moatd runs every user's
// network proxy in its one process, whose connections are bounded by its
// descriptor limit (netproxy's process slots). One user's sandbox held
// tunnels open to an allowed host (a "localhost" entry of root's policy,
// or any allowed host of the internet) until every slot was taken: another
// user's proxy then answered nothing (curl timed out), for as long as the
// attacker held them. And once the attacker's command exited, its
// half-closed tunnels to the silent host kept its run from ending, with
// its descriptors and slots, for good. A user's sandboxes now share a
// quarter of the slots, and a run's tunnels end with it.
//
// The daemon runs with a limit of 4096 descriptors (384 slots, 96 a user)
// so that the attack takes a few hundred connections.
func TestDaemonAttackProxyTunnelsTakeEveryonesSlots(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireUserns(t)
	if _, err := exec.LookPath("prlimit"); err != nil {
		testutil.Unavailable(t, "prlimit: %v", err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "moatd-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	victim := lookupDaemonUser(t, "moatd-test2", true)
	victim.dir = filepath.Join(dir, victim.name)
	if err := os.Mkdir(victim.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(victim.dir, victim.uid, victim.gid)
	att := attackUser(t, dir)
	users := filepath.Join(dir, "users.d")
	if err := os.MkdirAll(users, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := `{"filesystem": {"denyRead": [], "allowWrite": [], "denyWrite": []}, "network": {"allowedDomains": ["localhost"], "deniedDomains": []}}`
	if err := os.WriteFile(filepath.Join(users, "default.json"), []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, moatBin(t), dir, nil, "prlimit", "--nofile=4096:4096")

	// The attacker's allowed host: accepts every connection, never answers.
	sink, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var sunk atomic.Int64
	var heldMu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := sink.Accept()
			if err != nil {
				return
			}
			sunk.Add(1)
			heldMu.Lock()
			held = append(held, c)
			heldMu.Unlock()
		}
	}()
	t.Cleanup(func() {
		sink.Close()
		heldMu.Lock()
		for _, c := range held {
			c.Close()
		}
		heldMu.Unlock()
	})
	// The victim's allowed host answers.
	web, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(web, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "victim-ok") }))
	t.Cleanup(func() { web.Close() })
	victimRun := func() (string, time.Duration) {
		t.Helper()
		start := time.Now()
		cmd := moatRunAs(t, d, victim, victim.dir, "", []string{"MOAT_DAEMON=required"}, "--", "curl", "-sS", "-m", "10",
			fmt.Sprintf("http://localhost:%d/", web.Addr().(*net.TCPAddr).Port))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		return out.String() + errb.String(), time.Since(start)
	}
	if out, took := victimRun(); !strings.Contains(out, "victim-ok") {
		t.Fatalf("the victim's request fails without an attack: the test proves nothing (%v): %s", took, out)
	}

	// The attacker: 400 tunnels from one sandbox, held.
	script := fmt.Sprintf(`for i in $(seq 400); do exec {fd}<>/dev/tcp/127.0.0.1/3128 || exit 1; printf 'CONNECT localhost:%d HTTP/1.1\r\nHost: x\r\n\r\n' >&$fd; done; echo opened; sleep 120`,
		sink.Addr().(*net.TCPAddr).Port)
	attacker := moatRunAs(t, d, att, att.dir, "", []string{"MOAT_DAEMON=required"}, "--", "bash", "-c", script)
	var aout bytes.Buffer
	attacker.Stdout, attacker.Stderr = &aout, &aout
	if err := attacker.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { attacker.Wait(); close(ended) }()
	t.Cleanup(func() { attacker.Process.Kill() })
	// Until the tunnels stop growing.
	for last, stable := int64(-1), 0; stable < 10; time.Sleep(100 * time.Millisecond) {
		if n := sunk.Load(); n == last && n > 0 {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	t.Logf("the attacker holds %d tunnels", sunk.Load())
	out, took := victimRun()
	t.Logf("the victim's request meanwhile (%v): %s", took.Round(time.Millisecond), strings.TrimSpace(out))
	if !strings.Contains(out, "victim-ok") {
		t.Errorf("DENIAL: one user's tunnels took every connection of moatd's proxies; another user's request got no answer (%d held): %s", sunk.Load(), out)
	}
	if sunk.Load() > 200 {
		t.Errorf("one user's sandbox holds %d tunnels, more than its share", sunk.Load())
	}

	// The attacker's command exits: its run ends, tunnels and all.
	syscall.Kill(attacker.Process.Pid, syscall.SIGTERM)
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Errorf("the attacker's run did not end in 20 s after its command did: its half-closed tunnels to a silent host hold it (and its descriptors): %s", aout.String())
	}
}
