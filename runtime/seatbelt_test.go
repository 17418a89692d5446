package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/darwin"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// seatbeltPolicy is a policy over a temporary tree, with an odd denyRead
// name (a quote, a parenthesis) that must reach the profile only as a
// parameter.
func seatbeltPolicy(t *testing.T) (*policy.Policy, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{Cwd: dir, Home: dir, Violations: true}
	p.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	p.FS.AllowWrite = []policy.PathRule{{Path: dir, Source: "test"}}
	secret := filepath.Join(dir, `se"cret (x)`)
	p.FS.DenyRead = []policy.PathRule{{Path: secret, Source: "test"}}
	p.Net.AllowedDomains = []policy.DomainRule{{Pattern: "example.com"}}
	return p, secret
}

// TestSeatbelt: the profile a Mac would enforce, with the parameters that
// carry the policy's strings and the description, on any platform.
func TestSeatbelt(t *testing.T) {
	pol, secret := seatbeltPolicy(t)
	sb, err := Seatbelt(pol)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.Profile, "\n(version 1)\n(deny default") {
		t.Errorf("profile does not start deny-by-default:\n%.300s", sb.Profile)
	}
	if !strings.Contains(sb.Profile, `(param "`) {
		t.Error("no parameter in the profile")
	}
	found := false
	for _, p := range sb.Params {
		if strings.HasSuffix(p.Value, darwin.MacRoot(secret)) || p.Value == secret {
			found = true
			if !strings.Contains(sb.Profile, `(param "`+p.Name+`")`) {
				t.Errorf("parameter %s is not used by the profile", p.Name)
			}
		}
	}
	if !found {
		t.Errorf("the denyRead path %q is not a parameter: %+v", secret, sb.Params)
	}
	if !strings.Contains(sb.Inline, `se\"cret (x)`) {
		t.Error("the inline profile does not carry the denyRead path escaped")
	}
	if sb.Description == nil || !strings.HasPrefix(sb.Description.Tier, "seatbelt") {
		t.Fatalf("description %+v", sb.Description)
	}
	b, err := json.Marshal(sb)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m["profile"] == nil || m["params"] == nil || m["description"] == nil {
		t.Errorf("JSON keys: %s", b)
	}
}

// TestSeatbeltRefuses: what Seatbelt cannot express is an error, not a
// weaker profile.
func TestSeatbeltRefuses(t *testing.T) {
	pol, _ := seatbeltPolicy(t)
	pol.Net.AllowLocalBinding = true
	if _, err := Seatbelt(pol); !errors.Is(err, darwin.ErrUnexpressible) {
		t.Fatalf("allowLocalBinding without best effort: err = %v, want ErrUnexpressible", err)
	}
	pol.BestEffort = true
	sb, err := Seatbelt(pol)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(sb.Description.Notes, "\n"), "allowLocalBinding") {
		t.Error("best effort: the description does not say what allowLocalBinding opens")
	}
	if _, err := Seatbelt(nil); err == nil {
		t.Error("nil policy accepted")
	}
}

// TestSeatbeltSpec: every field of a Launch reaches darwin's Spec, or is
// named here with why it does not; a field added to Launch fails this
// test until the macOS enforcer decides about it.
func TestSeatbeltSpec(t *testing.T) {
	notDarwins := map[string]string{
		"Mode":  "one tier on macOS: /proc and namespaces are Linux's",
		"Trace": "the adapter traces sandbox-exec's start",
		"As":    "moatd is Linux-only: Start refuses a Launch with As",
	}
	pol, _ := seatbeltPolicy(t)
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l := &enforce.Launch{
		Policy: pol, Argv: []string{"true"}, Env: []string{"A=1"}, Stdio: [3]*os.File{f, f, f},
		Terminal: &enforce.Terminal{Mask: 1, Rows: 24, Cols: 80}, OnTerminal: func(*os.File) {},
		StateDir: "/state", Mode: enforce.HostProc, Proxy: &proxy{}, Report: func(policy.Violation) {},
		Planned: func(enforce.Footprint) error { return nil }, Log: slog.New(slog.DiscardHandler), Trace: func(string) {},
	}
	s := seatbeltSpec(l)
	lv, sv := reflect.ValueOf(l).Elem(), reflect.ValueOf(s)
	for i := 0; i < lv.NumField(); i++ {
		name := lv.Type().Field(i).Name
		if _, ok := notDarwins[name]; ok {
			continue
		}
		got := sv.FieldByName(name)
		if !got.IsValid() {
			t.Errorf("Launch.%s has no field in darwin.Spec", name)
			continue
		}
		want := lv.Field(i)
		if want.Kind() == reflect.Func {
			if got.Pointer() != want.Pointer() {
				t.Errorf("Launch.%s is not passed on", name)
			}
			continue
		}
		if !reflect.DeepEqual(got.Interface(), want.Interface()) {
			t.Errorf("Spec.%s = %v, want %v", name, got.Interface(), want.Interface())
		}
	}
}

// TestSeatbeltSession: sessions on macOS are a typed refusal.
func TestSeatbeltSession(t *testing.T) {
	_, err := seatbelt{}.StartSession(context.Background(), &enforce.Launch{})
	var ue *enforce.UnsupportedFeatureError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupported) || !errors.Is(err, ErrSeatbeltSession) {
		t.Fatalf("err = %v, want an UnsupportedFeatureError wrapping ErrSeatbeltSession", err)
	}
	if !strings.Contains(err.Error(), "moat run") {
		t.Errorf("%v: does not say what to do instead", err)
	}
}

// TestSeatbeltOffMac: elsewhere the enforcer builds and refuses to run,
// saying it needs macOS (darwin's TestExitOf checks the exit it gives).
func TestSeatbeltOffMac(t *testing.T) {
	if goruntime.GOOS == "darwin" {
		t.Skip("runs sandbox-exec on macOS")
	}
	pol, _ := seatbeltPolicy(t)
	_, err := seatbelt{}.Start(context.Background(), &enforce.Launch{Policy: pol, Argv: []string{"true"}})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "macOS") {
		t.Errorf("err = %v, want unsupported: needs macOS", err)
	}
}
