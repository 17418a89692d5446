//go:build linux

package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell/api/client"
	"github.com/moat-sandbox/moat/shell/sandbox"
)

// FuzzRequestBodies sends arbitrary bodies to the routes that decode one
// (open a session, run a command, decide), through Serve on a real unix
// socket, and checks that every answer is a 2xx or a 4xx with a JSON error
// (never a 5xx: a panic in a handler is one), and that the server answers
// /v1/health after each. No sandbox is ever opened: the server has no
// session slot left (a valid session request gets 429), and the session
// commands are sent to holds no command slot (a valid command gets 429).
//
//	go test -run '^$' -fuzz FuzzRequestBodies -fuzztime 30s ./shell/api
func FuzzRequestBodies(f *testing.F) {
	dir, err := os.MkdirTemp(os.TempDir(), "moat-fuzz-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "api.sock")
	pol := &policy.Policy{Cwd: dir, Home: dir}
	pol.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	s, err := New(Config{Policy: pol, Gate: sandbox.GateOff, StateDir: filepath.Join(dir, "state"), MaxSessions: 1,
		MaxRequestBytes: 4 << 10})
	if err != nil {
		f.Fatal(err)
	}
	s.pending = 1 // every session slot taken: a valid request gets 429
	s.sessions["sfuzz"] = &session{id: "sfuzz", owner: -1, slots: make(chan struct{}), bg: map[string]*bgCommand{}}
	l, err := Listen(sock)
	if err != nil {
		f.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	c := client.New(sock)
	f.Cleanup(func() {
		c.Close()
		s.mu.Lock()
		delete(s.sessions, "sfuzz") // not a real one: nothing to close
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.Shutdown(ctx)
		<-served
	})
	paths := []string{"/v1/sessions", "/v1/sessions/sfuzz/commands", "/v1/decide", "/v1/sessions/sfuzz/commands?stream=false"}
	for _, seed := range []string{
		`{}`, `{"command":"ls"}`, `{"command":"ls","background":true,"id":"x"}`, `{"gate":"off","write":["/etc"]}`,
		`{"command":`, `{"cwd":5}`, `[1]`, `null`, `{"a":1}{"b":2}`, "{\"command\":\"\x00\"}", `{"timeout_ms":-1,"command":"x"}`,
		`{"command":"` + strings.Repeat("a", 5<<10) + `"}`, "\xff\xfe", `{"id":"../../x","command":"y"}`,
	} {
		for i := range paths {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := paths[int(route)%len(paths)]
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.HTTP.Do(req)
		if err != nil {
			t.Fatalf("POST %s %q: %v", path, body, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch code := resp.StatusCode; {
		case code >= 200 && code < 300:
			if !json.Valid(b) {
				t.Errorf("POST %s %q: %d with a body that is not JSON: %q", path, body, code, b)
			}
		case code >= 400 && code < 500:
			var e client.Error
			if json.Unmarshal(b, &e) != nil || e.Message == "" {
				t.Errorf("POST %s %q: %d without a JSON error: %q", path, body, code, b)
			}
		default:
			t.Errorf("POST %s %q: %d %q, want a 2xx or a 4xx", path, body, code, b)
		}
		if _, err := c.Health(ctx); err != nil {
			t.Fatalf("the server stopped answering after POST %s %q: %v", path, body, err)
		}
	})
}
