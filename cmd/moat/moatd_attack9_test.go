//go:build linux

package main

// Attack pass 75 on moatd: a few users against another, through the
// daemon's own descriptors (its sessions', commands' and runs'), which
// no per-user bound sized from the descriptor limit covered. Each test
// FAILS while the flaw it names is present.

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// filler opens 16 sessions as its user and starts 32 background commands
// in each (one curl process a session), printing each answer's status.
const filler = `S=$1
for s in $(seq 16); do
  out=$(curl -sS --max-time 60 --unix-socket "$S" -X POST -w '\n%{http_code}' http://moatd/v1/sessions -d '{}')
  echo "session ${out##*$'\n'} $(echo "$out" | head -1)"
  sid=$(echo "$out" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | head -1)
  [ -n "$sid" ] || continue
  argv=()
  for c in $(seq 32); do
    [ $c -gt 1 ] && argv+=(--next)
    argv+=(-sS --max-time 60 --unix-socket "$S" -o /dev/null -w 'command %{http_code}\n' -X POST -d '{"command":"sleep 600","background":true}' "http://moatd/v1/sessions/$sid/commands")
  done
  curl "${argv[@]}"
done
echo filled`

// daemonFDs is how many descriptors the daemon holds.
func daemonFDs(pid int) int {
	es, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(es)
}

// TestDaemonAttackFourUsersHoldEveryDescriptor: each user may hold 16
// sessions of 32 commands (and 16 runs, 256 connections), bounds that
// were the same whatever the daemon's descriptor limit. One user's 16
// sessions of 32 background sleeps held 2,985 descriptors of a daemon
// under 4,096, two users' every one, and every other user's moat run
// failed ("moatd: descriptor 1: dup: too many open files"), as did its
// sessions ("openat2 .../memory.limit_in_bytes: too many open files").
// Sessions, commands and runs now count against the user's share of the
// daemon's slots and the reserve the proxies' connections count against
// (netproxy.TakeSlots): past it a request is answered 429 (its share)
// or 503 (the reserve) naming the limit, and a fifth user still runs.
//
// The daemon runs with a limit of 4096 descriptors. The attackers are
// moatd-fds-0..3, the victim moatd-fds-4 (created if missing).
func TestDaemonAttackFourUsersHoldEveryDescriptor(t *testing.T) {
	f := newSlotsFixtureFor(t, 4096, "moatd-fds-4")
	out, took := f.victimRun()
	if !strings.Contains(out, "victim-ok") {
		t.Fatalf("the victim's request fails without an attack: the test proves nothing (%v): %s", took, out)
	}
	pid := f.d.cmd.Process.Pid
	base := daemonFDs(pid)
	var wg sync.WaitGroup
	outs := make([]string, 4)
	for i := range 4 {
		u := f.user(fmt.Sprintf("moatd-fds-%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, e, err := u.as("bash", "-c", filler, "filler", f.d.sock)
			outs[i] = o + e
			if err != nil {
				outs[i] += err.Error()
			}
		}()
	}
	wg.Wait()
	held := daemonFDs(pid)
	refused, tooMany := 0, ""
	for i, o := range outs {
		ok := strings.Count(o, "command 202") + strings.Count(o, "session 201")
		t.Logf("attacker %d: %d sessions and commands held, %d refused 429, %d 503, %d failed (too many open files)", i, ok,
			strings.Count(o, " 429"), strings.Count(o, " 503"), strings.Count(o, "too many open files"))
		refused += strings.Count(o, " 429") + strings.Count(o, " 503")
		for _, code := range []string{"429 {", "503 {"} {
			if i := strings.Index(o, code); i >= 0 && tooMany == "" {
				tooMany = o[i : i+strings.IndexByte(o[i:], '\n')]
			}
		}
	}
	t.Logf("the daemon holds %d descriptors (%d before the attack)", held, base)
	out, took = f.victimRun()
	t.Logf("a fifth user's moat run meanwhile (%v): %s", took.Round(time.Millisecond), strings.TrimSpace(out))
	if !strings.Contains(out, "victim-ok") {
		t.Errorf("DENIAL: four users' sessions and commands took every descriptor of moatd (%d held); a fifth user's moat run failed: %s", held, out)
	}
	f.victimSessionWorks("four users hold their sessions")
	if held >= 4000 {
		t.Errorf("four users hold %d of the daemon's 4096 descriptors", held)
	}
	if refused == 0 || !strings.Contains(tooMany, "slots") {
		t.Errorf("no request past a user's share was answered 429 or 503 naming the limit (%d refused): %q", refused, tooMany)
	}
}
