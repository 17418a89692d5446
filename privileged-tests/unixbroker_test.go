//go:build linux

package privtests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/testutil"
	"github.com/moat-sandbox/moat/shell/api/client"
)

func init() {
	// serve-session SOCK DIR: through the moat serve API at SOCK, open a
	// session that may write DIR and run a command there that writes
	// DIR/planted-by-api.
	attacks["serve-session"] = serveSessionAttack
	attacks["unix-flood"] = unixFloodAttack
}

// unixFloodAttack: unix-flood PATH N connects N blocking unix sockets to
// PATH at once, each from a thread of its own, and after two seconds says
// how many are connected, refused and still waiting, then exits (the
// waiting ones with it). It "escapes" when more than 17 still wait: a
// listener that never accepts (backlog 0) keeps one connection queued, and
// every other connect waits; under moat at most nsinit.MaxConnectors of
// them may (each holds a process of the sandbox's init), the rest get
// EAGAIN.
func unixFloodAttack(a []string) (string, error) {
	n, err := strconv.Atoi(a[1])
	if err != nil {
		return "", err
	}
	var mu sync.Mutex
	counts := map[string]int{}
	for range n {
		go func() {
			res := "connected"
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err == nil {
				err = unix.Connect(fd, &unix.SockaddrUnix{Name: a[0]})
			}
			if err != nil {
				res = err.(unix.Errno).Error()
				if err == unix.EAGAIN {
					res = "EAGAIN"
				}
			}
			mu.Lock()
			counts[res]++
			mu.Unlock()
		}()
	}
	time.Sleep(2 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	done := 0
	for _, c := range counts {
		done += c
	}
	summary := fmt.Sprintf("%d connects: %d still waiting, %v", n, n-done, counts)
	if n-done > 17 {
		return summary, nil
	}
	return "", errors.New(summary)
}

func serveSessionAttack(a []string) (string, error) {
	sock, dir := a[0], a[1]
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	post := func(url string, body any) (int, []byte, error) {
		b, _ := json.Marshal(body)
		req, err := http.NewRequest("POST", "http://moat"+url, strings.NewReader(string(b)))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if len(a) > 2 {
			// The server's proof, given: this attack is on the peer
			// check behind it (a token that leaked, or a host that
			// handed it on).
			req.Header.Set(client.ProofHeader, a[2])
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out, nil
	}
	code, body, err := post("/v1/sessions", map[string]any{"write": []string{dir}, "mode": "bypassPermissions"})
	if err != nil {
		return "", fmt.Errorf("POST /v1/sessions: %w", err)
	}
	if code != http.StatusCreated {
		return "", fmt.Errorf("POST /v1/sessions: HTTP %d %s", code, strings.TrimSpace(string(body)))
	}
	var s struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &s); err != nil || s.ID == "" {
		return "", fmt.Errorf("POST /v1/sessions: no session id in %s", body)
	}
	planted := filepath.Join(dir, "planted-by-api")
	code, body, err = post("/v1/sessions/"+s.ID+"/commands?stream=false", map[string]any{"command": "echo x > " + planted})
	if err != nil {
		return "", fmt.Errorf("POST /v1/sessions/%s/commands: %w", s.ID, err)
	}
	if _, err := os.Stat(planted); err != nil {
		return "", fmt.Errorf("session %s opened, but its command wrote nothing (HTTP %d %s): %v", s.ID, code, strings.TrimSpace(string(body)), err)
	}
	return "a session of moat serve wrote " + planted, nil
}

// startServe starts moat serve (through wrap, a program and its arguments
// before moat's path: nil for none) with a socket in the fixture's root,
// and returns the socket's path once it answers. It is stopped when the
// test ends.
func (f *fixture) startServe(env, wrap []string, flags ...string) string {
	t := f.t
	t.Helper()
	sock := filepath.Join(f.root, "api.sock")
	settings := filepath.Join(f.root, "serve.json")
	b, _ := json.Marshal(map[string]any{
		"network":    map[string]any{"allowedDomains": []string{}, "deniedDomains": []string{}},
		"filesystem": map[string]any{"denyRead": []string{}, "allowWrite": []string{}, "denyWrite": []string{}},
	})
	must(t, os.WriteFile(settings, b, 0o644))
	args := append(append(append([]string(nil), wrap...), moatBin, "serve", "--socket", sock, "--settings", settings, "--gate", "off"), flags...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env = f.root, env
	log := &lockedLog{}
	cmd.Stdout, cmd.Stderr = io.Discard, log
	must(t, cmd.Start())
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return sock
		}
		select {
		case <-done:
			t.Fatalf("moat serve exited:\n%s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("moat serve never listened:\n%s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lockedLog is a log written by a process's output and read by the test.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// serveProof is the proof of the moat serve at sock, read as the user
// outside any sandbox (moat proof).
func (f *fixture) serveProof(sock string) string {
	f.t.Helper()
	r := f.exec(moatBin, "proof", sock)
	token := strings.TrimSpace(r.out)
	if r.code != 0 || token == "" || strings.ContainsAny(token, " \n") {
		f.t.Fatalf("moat proof %s: exit %d\n%s", sock, r.code, r.out)
	}
	return token
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A command whose allowUnixSockets lists the user's moat serve socket gets
// no session there: moat serve refuses a peer in another user namespace, or
// confined otherwise than itself, and the peer of a connection the unix
// socket broker allowed is a process inside the sandbox. The broker used to
// make the connection itself: the peer was moat's supervisor, unconfined,
// outside the sandbox's namespaces, and the command opened a session that
// wrote where it could not (found by an attack pass). allowAllUnixSockets
// (the kernel connects, the command is the peer) is refused too; without
// moat the same requests write the file.
func TestServerRefusesBrokeredSandbox(t *testing.T) {
	f := newFixture(t)
	sock := f.startServe(f.env(), nil)
	// The server's proof (every request shows it) is given to the attack:
	// what is attacked here is the peer check behind it.
	token := f.serveProof(sock)
	dir := f.outside // readable in the sandbox, not writable
	planted := filepath.Join(dir, "planted-by-api")
	settings := func(unix map[string]any) string {
		network := map[string]any{"allowedDomains": []string{}}
		for k, v := range unix {
			network[k] = v
		}
		return f.netSettings(network)
	}
	for _, tc := range []struct {
		name string
		unix map[string]any
	}{
		{"allowUnixSockets (the broker connects)", map[string]any{"allowUnixSockets": []string{sock}}},
		{"allowAllUnixSockets (the kernel connects)", map[string]any{"allowAllUnixSockets": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := f.sandboxedWith(settings(tc.unix), "serve-session", sock, dir, token)
			if _, err := os.Stat(planted); err == nil || got.escaped() {
				os.Remove(planted)
				t.Fatalf("ESCAPE: a sandboxed command opened a session of moat serve that wrote %s:\n%s", dir, got.out)
			}
			// The connection was made and refused by the server (not
			// refused by moat before it reached the server).
			if !strings.Contains(got.out, "blocked: POST /v1/sessions: HTTP 403") || strings.Contains(got.out, "does not show the server's proof") {
				t.Fatalf("the server's peer check did not refuse the connection (the attack must reach it, with the proof):\n%s", got.out)
			}
		})
	}
	if base := f.direct("serve-session", sock, dir, token); !base.escaped() {
		t.Fatalf("without moat the requests must write %s:\n%s", dir, base.out)
	}
	os.Remove(planted)
}

// TestServerRefusesBrokeredSandbox in the no-namespace tier, where the
// sandbox's init runs on the host, in the host's namespaces: the server,
// the supervisor and the attack's control all run under the same seccomp
// filter (the one that refuses user namespaces), so the supervisor is
// confined exactly as the server is, and a connection it made was the
// server's own user's. The broker's connection is made by a child of init
// under no_new_privs and a filter of its own: confined otherwise than the
// server, and refused.
func TestNoUsernsServerRefusesBrokeredSandbox(t *testing.T) {
	if landlockABI() == 0 {
		testutil.Unavailable(t, "no Landlock")
	}
	f := makeFixture(t)
	wrap := []string{self}
	env := append(f.env(), denyUsernsEnv+"=1")
	sock := f.startServe(env, wrap, "--best-effort")
	token := f.serveProof(sock)
	dir := f.outside
	planted := filepath.Join(dir, "planted-by-api")
	for _, unix := range []map[string]any{{"allowUnixSockets": []string{sock}}, {"allowAllUnixSockets": true}} {
		network := map[string]any{"allowedDomains": []string{}}
		for k, v := range unix {
			network[k] = v
		}
		settings := f.netSettings(network)
		got := f.noUserns(moatBin, "run", "--best-effort", "--settings", settings, "--", self, "serve-session", sock, dir, token)
		if _, err := os.Stat(planted); err == nil || got.escaped() {
			os.Remove(planted)
			t.Fatalf("ESCAPE (%v): a sandboxed command opened a session of moat serve that wrote %s:\n%s", unix, dir, got.out)
		}
		if !strings.Contains(got.out, "blocked: POST /v1/sessions: HTTP 403") || strings.Contains(got.out, "does not show the server's proof") {
			t.Fatalf("the server's peer check did not refuse the connection (%v; the attack must reach it, with the proof):\n%s", unix, got.out)
		}
	}
	// The control runs under the server's filter too (a peer confined
	// otherwise than the server is refused, the sandbox or not).
	if base := f.noUserns(self, "serve-session", sock, dir, token); !base.escaped() {
		t.Fatalf("without moat (under the same filter as the server) the requests must write %s:\n%s", dir, base.out)
	}
	os.Remove(planted)
}

// A command that floods the broker with connects that block (a listener
// that never accepts) cannot make the sandbox's init fork without bound:
// at most nsinit.MaxConnectors connects wait in init's connectors, the
// others are answered EAGAIN at once. Without moat every one waits.
func TestUnixBrokerConnectFlood(t *testing.T) {
	f := newFixture(t)
	stuck := filepath.Join(f.root, "stuck.sock")
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(fd)
	must(t, unix.Bind(fd, &unix.SockaddrUnix{Name: stuck}))
	must(t, os.Chmod(stuck, 0o666))
	must(t, unix.Listen(fd, 0)) // never accepted
	settings := f.netSettings(map[string]any{"allowedDomains": []string{}, "allowUnixSockets": []string{stuck}})
	start := time.Now()
	got := f.sandboxedWith(settings, "unix-flood", stuck, "40")
	if got.escaped() {
		t.Fatalf("more connects wait than init may make at once:\n%s", got.out)
	}
	if !strings.Contains(got.out, "EAGAIN") || !strings.Contains(got.out, "still waiting") {
		t.Fatalf("the flood did not run as expected under moat:\n%s", got.out)
	}
	t.Logf("under moat: %s", strings.TrimSpace(got.out))
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the run took %v: the waiting connects held it up", took.Round(time.Millisecond))
	}
	if base := f.direct("unix-flood", stuck, "40"); !base.escaped() {
		t.Fatalf("without moat every connect must wait:\n%s", base.out)
	}
}
