//go:build linux

package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// unitValue is a setting of dist/systemd/moatd.service ("" if unset).
func unitValue(t *testing.T, key string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "dist", "systemd", "moatd.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func unitList(t *testing.T, key string) []string { return strings.Fields(unitValue(t, key)) }

// unitHardening reads what dist/systemd/moatd.service restricts that a
// test can reproduce without systemd: its capability bounding set and
// NoNewPrivileges.
func unitHardening(t *testing.T) (caps []string, nnp bool) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "dist", "systemd", "moatd.service"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		switch k {
		case "CapabilityBoundingSet":
			caps = strings.Fields(v)
		case "NoNewPrivileges":
			nnp = v == "yes"
		}
	}
	if len(caps) == 0 {
		t.Fatal("moatd.service has no CapabilityBoundingSet")
	}
	return caps, nnp
}

// TestDaemonUnitHardening runs moatd as its systemd unit would (the unit's
// capability bounding set, NoNewPrivileges), since this machine has no
// systemd to start it: moat run and a session through it still run as the
// user, with the eBPF layer refusing a direct connection, and a write
// outside the policy still fails. It also checks the units with
// systemd-analyze verify where that is installed.
func TestDaemonUnitHardening(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireUserns(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		testutil.Unavailable(t, "setpriv: %v", err)
	}
	caps, nnp := unitHardening(t)
	if !nnp {
		t.Error("moatd.service does not set NoNewPrivileges=yes")
	}
	bounding := []string{"-all"}
	for _, c := range caps {
		bounding = append(bounding, "+"+strings.ToLower(strings.TrimPrefix(c, "CAP_")))
	}
	wrap := []string{"setpriv", "--bounding-set", strings.Join(bounding, ","), "--inh-caps", "-all"}
	if nnp {
		wrap = append(wrap, "--no-new-privs")
	}
	wrap = append(wrap, "--")
	// ProtectSystem=strict with the unit's ReadWritePaths: in a mount
	// namespace of its own, the paths bound to themselves (writable), then
	// the root remounted read-only (the API filesystems /proc, /sys, /dev
	// are mounts of their own and stay as they are, as under systemd).
	rw := unitList(t, "ReadWritePaths")
	// Socket activation, as moatd.socket starts it: the socket is made
	// before the daemon and given as fd 3 (LISTEN_FDS, LISTEN_PID).
	if unitValue(t, "Requires") != "moatd.socket" {
		t.Error("moatd.service is not started by moatd.socket")
	}
	if unitValue(t, "ProtectSystem") == "strict" {
		script := `set -e; for p in ` + strings.Join(rw, " ") + `; do [ -d "$p" ] && mount --rbind "$p" "$p"; done; mount -o remount,bind,ro /; ` +
			`export LISTEN_PID=$$ LISTEN_FDS=1; exec "$@"`
		wrap = append([]string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"}, wrap...)
	} else {
		t.Error("moatd.service does not set ProtectSystem=strict")
	}

	dir, err := os.MkdirTemp("/var/tmp", "moatd-unit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	u := lookupDaemonUser(t, "moat-ci", true)
	u.dir = filepath.Join(dir, u.name)
	if err := os.Mkdir(u.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(u.dir, u.uid, u.gid)
	outside := filepath.Join(dir, "outside")
	os.Mkdir(outside, 0o700)
	os.Chown(outside, u.uid, u.gid)
	sock := filepath.Join(dir, "activated.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o666)
	ul := l.(*net.UnixListener)
	lf, err := ul.File()
	if err != nil {
		t.Fatal(err)
	}
	ul.SetUnlinkOnClose(false)
	ul.Close() // the daemon holds the socket now (lf)
	d := startDaemon(t, moatBin(t), dir, withFiles{lf}, wrap...)
	lf.Close()
	if d.sock != sock {
		t.Fatalf("the daemon did not take the activated socket: it serves %s", d.sock)
	}
	// It answers on the socket it was given (and so is past its set-up).
	if code, body := u.call(t, d.sock, "GET", "/v1/health", ""); code != 200 {
		t.Fatalf("health on the activated socket: %d %s\ndaemon: %s", code, body, d.stderr)
	}
	// The daemon really runs with only the unit's capabilities, and sees
	// the system read-only.
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/mountinfo"); err != nil || !strings.Contains(string(b), " / / ro,") {
		t.Fatalf("the daemon's root is not read-only: %v\n%s", err, b)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "NoNewPrivs:\t1") {
		t.Fatalf("the daemon is not running with no_new_privs:\n%s", status)
	}
	// Its effective set is the unit's list (as far as this machine's root
	// has each: here root lacks CAP_SYS_RESOURCE), no more: CAP_SYS_MODULE,
	// CAP_SYS_RAWIO, CAP_MKNOD... are gone.
	capLine := func(status, key string) string {
		for _, line := range strings.Split(status, "\n") {
			if v, ok := strings.CutPrefix(line, key+":\t"); ok {
				return v
			}
		}
		return ""
	}
	want, err := exec.Command(wrap[0], append(wrap[1:], "cat", "/proc/self/status")...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, w := capLine(string(status), "CapEff"), capLine(string(want), "CapBnd"); got == "" || got != w {
		t.Errorf("the daemon's effective capabilities are %s, the unit's set here is %s", got, w)
	}
	if eff, _ := strconv.ParseUint(capLine(string(status), "CapEff"), 16, 64); eff&(1<<16) != 0 { // CAP_SYS_MODULE
		t.Errorf("the daemon kept CAP_SYS_MODULE")
	}

	cmd := moatRunAs(t, d, u, u.dir, "", nil, "--write", ".", "--", "sh", "-c",
		"id -u; bash -c 'echo > /dev/tcp/192.0.2.1/80'; echo x > "+filepath.Join(outside, "pwned")+"; echo end")
	out, err := cmd.CombinedOutput()
	text := string(out)
	if !strings.Contains(text, "moat: running through moatd") || !strings.Contains(text, strconv.Itoa(u.uid)+"\n") || !strings.Contains(text, "end") {
		t.Fatalf("moat run through the hardened daemon: %v\n%s\ndaemon: %s", err, text, d.stderr)
	}
	if !strings.Contains(text, "Operation not permitted") || !strings.Contains(text, "192.0.2.1:80") {
		t.Errorf("the eBPF layer did not refuse and report a direct connection:\n%s", text)
	}
	if _, err := os.Lstat(filepath.Join(outside, "pwned")); err == nil {
		t.Errorf("a write outside the policy succeeded through the hardened daemon:\n%s", text)
	}
	// A session too (curl as the user).
	sid := u.openSession(t, d, `{"cwd":"`+u.dir+`"}`)
	if code, body := u.run(t, d, sid, "id -u"); code != 200 || !strings.Contains(body, strconv.Itoa(u.uid)) {
		t.Errorf("a session command through the hardened daemon: %d %s", code, body)
	}

	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		// verify checks that ExecStart's binary exists: point it at ours.
		units := t.TempDir()
		for _, n := range []string{"moatd.service", "moatd.socket"} {
			b, err := os.ReadFile(filepath.Join("..", "..", "dist", "systemd", n))
			if err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.ReplaceAll(string(b), "/usr/local/bin/moat ", moatBin(t)+" "))
			os.WriteFile(filepath.Join(units, n), b, 0o644)
		}
		out, err := exec.Command("systemd-analyze", "verify", "--man=no", filepath.Join(units, "moatd.socket"), filepath.Join(units, "moatd.service")).CombinedOutput()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	}
}
