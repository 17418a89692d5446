//go:build linux

package api

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// The API serves the methods docs/openapi.yaml lists and no others. Go's
// mux serves HEAD wherever it serves GET, and a HEAD of a finished
// background command collected its result, which the server then forgot:
// the client's GET that followed got 404 and the result was lost (found
// by pass 77, following the docs with curl). HEAD is answered 405 now,
// and Allow names no HEAD.
func TestHeadNotServed(t *testing.T) {
	f := newFixture(t, nil)
	ctx := ctxT(t)
	s := f.session(t, client.SessionRequest{})
	if _, err := f.c.Start(ctx, s.ID, client.CommandRequest{ID: "h1", Command: "echo token-head-77"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		got, err := f.c.Session(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Commands) == 1 && !got.Commands[0].Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background command never finished: %+v", got.Commands)
		}
	}
	head := func(path string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, f.c.Base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := f.c.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for path, allow := range map[string]string{
		"/v1/health":                              "GET",
		"/v1/policy":                              "GET",
		"/v1/sessions":                            "GET, POST",
		"/v1/sessions/" + s.ID:                    "DELETE, GET",
		"/v1/sessions/" + s.ID + "/lifeline":      "GET",
		"/v1/sessions/" + s.ID + "/commands/h1":   "DELETE, GET",
		"/v1/sessions/" + s.ID + "/commands/nope": "DELETE, GET",
	} {
		resp := head(path)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != allow {
			t.Errorf("HEAD %s: %d, Allow %q; want 405, Allow %q", path, resp.StatusCode, resp.Header.Get("Allow"), allow)
		}
	}
	// The result is still there: a read gets it (the listing can say the
	// command ended a moment before its result is collected, so a read
	// may first give its output as running: CI15).
	var output string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		rd, err := f.c.Read(ctx, s.ID, "h1")
		if err != nil {
			t.Fatalf("the result after the HEAD requests: %v", err)
		}
		output += rd.Output
		if rd.Result != nil {
			output += rd.Result.Output
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result after the HEAD requests: %+v", rd)
		}
	}
	if !strings.Contains(output, "token-head-77") {
		t.Fatalf("the command's output after the HEAD requests: %q", output)
	}
	// A method the route does not take: Allow lists what it does, no HEAD.
	code, e := f.raw(t, http.MethodPut, "/v1/health", nil)
	if code != http.StatusMethodNotAllowed || e.Message != "PUT is not allowed on /v1/health (allowed: GET)" {
		t.Errorf("PUT /v1/health: %d %q", code, e.Message)
	}
}

// moatd serves no root caller (docs/DAEMON.md: root runs moat itself):
// every route but the health check answers it 403. The list of sessions
// answered it 200 and an empty list, the only route that did (pass 77).
func TestDaemonRefusesRootList(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the caller must be root")
	}
	f := newFixture(t, func(c *Config) {
		c.Daemon = &Daemon{
			PolicyFor: func(*enforce.Identity, string) (*policy.Policy, []string, error) {
				return nil, nil, errors.New("not used")
			},
			CheckWritable: func(*enforce.Identity, string) (string, error) { return "", errors.New("not used") },
			CheckDir:      func(*enforce.Identity, string) (string, error) { return "", errors.New("not used") },
		}
	})
	for _, path := range []string{"/v1/sessions", "/v1/policy", "/v1/sessions/s1"} {
		code, e := f.raw(t, http.MethodGet, path, nil)
		if code != http.StatusForbidden || !strings.Contains(e.Message, "root runs moat itself") {
			t.Errorf("GET %s as root: %d %q, want 403", path, code, e.Message)
		}
	}
}
