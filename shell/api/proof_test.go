//go:build linux

package api

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/shell/api/client"
)

// TestProofOnEveryRoute: every request to moat serve but GET /v1/health
// and POST /v1/cli/hello must show the server's proof (the token of its
// memfd, which only a process that may inspect the server reads): a client
// that sends none, or a wrong one, gets 403 and nothing is done, on the
// session routes and POST /v1/run as on POST /v1/cli/run. Only
// POST /v1/cli/run asked for it, and a process confined by Landlock (which
// /proc does not show) opened sessions and ran commands outside its
// domain (found by an attack pass). moat's Go client shows it by itself.
func TestProofOnEveryRoute(t *testing.T) {
	f := newFixture(t, nil)
	// A client as curl is: HTTP on the socket, no proof unless told.
	plain := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", f.sock)
	}}}
	t.Cleanup(plain.CloseIdleConnections)
	send := func(method, path, body, proof string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctxT(t), method, "http://moat"+path, strings.NewReader(body))
		if proof != "" {
			req.Header.Set(client.ProofHeader, proof)
		}
		resp, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	s := f.session(t, client.SessionRequest{})
	proof := serverProof(t)
	if proof == "" || proof != client.Proof(dialed(t, f.sock)) {
		t.Fatalf("the client reads the proof %q, the process holds %q", client.Proof(dialed(t, f.sock)), proof)
	}
	planted := f.work + "/planted"
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/policy", ""},
		{"POST", "/v1/decide", `{"command":"ls"}`},
		{"POST", "/v1/sessions", `{}`},
		{"GET", "/v1/sessions", ""},
		{"GET", "/v1/sessions/" + s.ID, ""},
		{"GET", "/v1/sessions/" + s.ID + "/lifeline", ""},
		{"POST", "/v1/sessions/" + s.ID + "/commands?stream=false", `{"command":"echo x > ` + planted + `"}`},
		{"GET", "/v1/sessions/" + s.ID + "/commands/c9", ""},
		{"DELETE", "/v1/sessions/" + s.ID + "/commands/c9", ""},
		{"POST", "/v1/run", `{"argv":["sh","-c","echo x > ` + planted + `"],"env":["PATH=/usr/bin:/bin"]}`},
		{"POST", "/v1/cli/run", `{}`},
		{"GET", "/v1/no-such-route", ""},
		{"DELETE", "/v1/sessions/" + s.ID, ""},
	}
	for _, p := range []string{"", "00000000000000000000000000000000", proof + "0"} {
		for _, r := range routes {
			if code, body := send(r.method, r.path, r.body, p); code != http.StatusForbidden || !strings.Contains(body, "proof") {
				t.Errorf("%s %s with proof %q: %d %s, want 403 naming the proof", r.method, r.path, p, code, body)
			}
		}
	}
	if _, err := f.c.Session(ctxT(t), s.ID); err != nil {
		t.Errorf("the session is gone after requests without the proof: %v", err)
	}
	if ev := f.run(t, s.ID, "test -e "+planted+" && echo planted || echo none"); !strings.Contains(ev.Output, "none") {
		t.Errorf("a request without the proof ran its command: %q", ev.Output)
	}
	// Exempt: the health check, and the hello (which tells a caller only
	// the name of a memfd of its own; this server has no CLIRun: 404).
	if code, body := send("GET", "/v1/health", "", ""); code != 200 {
		t.Errorf("GET /v1/health without the proof: %d %s", code, body)
	}
	if code, body := send("POST", "/v1/cli/hello", "", ""); code != 404 {
		t.Errorf("POST /v1/cli/hello without the proof: %d %s, want the route's own 404", code, body)
	}
	// With the proof, as moat's client sends it: served.
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/policy", ""},
		{"POST", "/v1/sessions/" + s.ID + "/commands?stream=false", `{"command":"echo x > ` + planted + `"}`},
		{"GET", "/v1/sessions", ""},
	} {
		if code, body := send(r.method, r.path, r.body, proof); code != 200 {
			t.Errorf("%s %s with the proof: %d %s", r.method, r.path, code, body)
		}
	}
	if ev := f.run(t, s.ID, "cat "+planted); !strings.Contains(ev.Output, "x") {
		t.Errorf("the command sent with the proof did not run: %q", ev.Output)
	}
}

// dialed is a connection to sock, closed at the test's end.
func dialed(t *testing.T, sock string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// RequireProof (moat mcp --http unix:) answers a request without this
// process's proof 403 in JSON, and passes one with it on.
func TestRequireProof(t *testing.T) {
	h, err := RequireProof(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") }))
	if err != nil {
		t.Fatal(err)
	}
	proof := serverProof(t)
	for _, p := range []string{"", "x", strings.Repeat("0", len(proof)), proof} {
		req := httptest.NewRequest("POST", "/mcp", nil)
		if p != "" {
			req.Header.Set(client.ProofHeader, p)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var e client.Error
		switch {
		case p == proof && (w.Code != 200 || w.Body.String() != "served"):
			t.Errorf("with the proof: %d %q", w.Code, w.Body.String())
		case p != proof && (w.Code != 403 || json.Unmarshal(w.Body.Bytes(), &e) != nil || !strings.Contains(e.Message, "proof")):
			t.Errorf("proof %q: %d %q, want a JSON 403 naming the proof", p, w.Code, w.Body.String())
		}
	}
}
