//go:build linux

package main

// Attack pass 69 on moatd: one user against the others. Each test FAILS
// while the flaw it names is present.

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
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
	f := newSlotsFixture(t, 4096)
	att := f.user("moatd-attack")
	if out, took := f.victimRun(); !strings.Contains(out, "victim-ok") {
		t.Fatalf("the victim's request fails without an attack: the test proves nothing (%v): %s", took, out)
	}

	// The attacker: 400 tunnels from one sandbox, held.
	script := fmt.Sprintf(`for i in $(seq 400); do exec {fd}<>/dev/tcp/127.0.0.1/3128 || exit 1; printf 'CONNECT localhost:%d HTTP/1.1\r\nHost: x\r\n\r\n' >&$fd; done; echo opened; sleep 120`,
		f.sink.Addr().(*net.TCPAddr).Port)
	attacker := moatRunAs(t, f.d, att, att.dir, "", []string{"MOAT_DAEMON=required"}, "--", "bash", "-c", script)
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
		if n := f.sunk.Load(); n == last && n > 0 {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	t.Logf("the attacker holds %d tunnels", f.sunk.Load())
	out, took := f.victimRun()
	t.Logf("the victim's request meanwhile (%v): %s", took.Round(time.Millisecond), strings.TrimSpace(out))
	if !strings.Contains(out, "victim-ok") {
		t.Errorf("DENIAL: one user's tunnels took every connection of moatd's proxies; another user's request got no answer (%d held): %s", f.sunk.Load(), out)
	}
	if f.sunk.Load() > 200 {
		t.Errorf("one user's sandbox holds %d tunnels, more than its share", f.sunk.Load())
	}

	// The attacker's command exits: its run ends, tunnels and all.
	syscall.Kill(attacker.Process.Pid, syscall.SIGTERM)
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Errorf("the attacker's run did not end in 20 s after its command did: its half-closed tunnels to a silent host hold it (and its descriptors): %s", aout.String())
	}
}
