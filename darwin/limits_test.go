package darwin

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

func skipNames(ss []enforce.Skip) []string {
	var out []string
	for _, s := range ss {
		out = append(out, string(s.Protection))
	}
	return out
}

// TestUnenforced: a limit the policy sets and macOS cannot hold is refused
// without best effort and reported with it; the defaults are reported,
// never refused; -1 says the user accepts running without them.
func TestUnenforced(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limits  policy.Limits
		best    bool
		local   bool
		want    []string
		wantErr string
	}{
		{name: "defaults", want: []string{"limits-default"}},
		{name: "defaults off", limits: policy.Limits{Memory: -1, Pids: -1}},
		{name: "file size and CPU time are held", limits: policy.Limits{Memory: -1, Pids: -1, FileSize: 1 << 20, CPUTime: time.Minute}},
		{name: "memory set", limits: policy.Limits{Memory: 1 << 30}, wantErr: "moat.limits.memory on macOS"},
		{name: "pids set", limits: policy.Limits{Memory: -1, Pids: 100}, wantErr: "moat.limits.pids on macOS"},
		{name: "cpu set", limits: policy.Limits{Memory: -1, Pids: -1, CPU: 500}, wantErr: "moat.limits.cpu on macOS"},
		{name: "best effort", limits: policy.Limits{Memory: 1 << 30, CPU: 500}, best: true, want: []string{"limit-memory", "limit-cpu", "limits-default"}},
		{name: "local binding", limits: policy.Limits{Memory: -1, Pids: -1}, best: true, local: true, want: []string{"network-loopback"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := &policy.Policy{Limits: tc.limits, BestEffort: tc.best}
			pol.Net.AllowLocalBinding = tc.local
			got, err := Unenforced(pol)
			if tc.wantErr != "" {
				var ue *enforce.UnsupportedFeatureError
				if !errors.As(err, &ue) || !errors.Is(err, enforce.ErrUnsupported) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "best effort") {
					t.Fatalf("err = %v, want an UnsupportedFeatureError naming %q and best effort", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names := skipNames(got); !slices.Equal(names, tc.want) {
				t.Errorf("skipped %v, want %v", names, tc.want)
			}
			for _, s := range got {
				if s.Reason == "" {
					t.Errorf("%s: no reason", s.Protection)
				}
			}
		})
	}
}

// TestLimitMechanisms: moat policy says what holds each limit on macOS,
// and that a set limit it cannot hold makes moat refuse.
func TestLimitMechanisms(t *testing.T) {
	pol := &policy.Policy{Limits: policy.Limits{Timeout: time.Minute, Pids: 50, CPUTime: 1500 * time.Millisecond}}
	got := map[string]enforce.Mechanism{}
	for _, m := range limitMechanisms(pol) {
		got[m.Part] = m
	}
	for part, enforced := range map[string]bool{"limit: timeout": true, "limit: memory": false, "limit: pids": false, "limit: cpu": false, "limit: fileSize": true, "limit: cpuTime": true} {
		m, ok := got[part]
		if !ok {
			t.Errorf("%q missing", part)
			continue
		}
		if m.Enforced != enforced {
			t.Errorf("%q enforced = %v, want %v", part, m.Enforced, enforced)
		}
	}
	if n := got["limit: pids"].Note; !strings.Contains(n, "refuses") {
		t.Errorf("a set pids limit: note %q does not say moat refuses", n)
	}
	if n := got["limit: cpuTime"].Note; !strings.HasPrefix(n, "2s") {
		t.Errorf("cpuTime 1.5s: note %q, want it rounded up to 2s", n)
	}
}

func TestRunRlimits(t *testing.T) {
	for _, tc := range []struct {
		l    policy.Limits
		want rlimits
	}{
		{policy.Limits{}, rlimits{FileSize: policy.DefaultFileSize}},
		{policy.Limits{FileSize: -1}, rlimits{}},
		{policy.Limits{FileSize: 4096, CPUTime: 2*time.Second + 1}, rlimits{FileSize: 4096, CPUSecs: 3}},
	} {
		if got := runRlimits(tc.l); got != tc.want {
			t.Errorf("runRlimits(%+v) = %+v, want %+v", tc.l, got, tc.want)
		}
	}
}

// TestTrampoline: what a run writes, Reexec reads back as it was; any
// other command line is not Reexec's, a damaged one is an error.
func TestTrampoline(t *testing.T) {
	args := []string{"-p", "(version 1)", "-D", "P0=/x", "--", "-dash", ""}
	argv := trampoline("/usr/local/bin/moat", rlimits{FileSize: 4096, CPUSecs: 7}, "/usr/bin/sandbox-exec", args)
	r, exe, ok, err := parseTrampoline(argv)
	if !ok || err != nil {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	if r != (rlimits{FileSize: 4096, CPUSecs: 7}) {
		t.Errorf("limits %+v", r)
	}
	if want := append([]string{"/usr/bin/sandbox-exec"}, args...); !slices.Equal(exe, want) {
		t.Errorf("exec %q, want %q", exe, want)
	}
	for _, a := range [][]string{nil, {"moat"}, {"moat", "run", "ls"}, {"moat", "policy"}} {
		if _, _, ok, err := parseTrampoline(a); ok || err != nil {
			t.Errorf("%q: ok=%v err=%v, want not handled", a, ok, err)
		}
	}
	for _, a := range [][]string{
		{"moat", reexecArg},
		{"moat", reexecArg, "1", "2"},
		{"moat", reexecArg, "1", "2", ""},
		{"moat", reexecArg, "x", "2", "/usr/bin/sandbox-exec"},
		{"moat", reexecArg, "1", "-2", "/usr/bin/sandbox-exec"},
	} {
		if _, _, ok, err := parseTrampoline(a); !ok || err == nil {
			t.Errorf("%q: ok=%v err=%v, want handled with an error", a, ok, err)
		}
	}
}

func TestExternalProxyAddrs(t *testing.T) {
	for _, tc := range []struct {
		h, s        int
		wantH, want string
	}{
		{8080, 1081, "127.0.0.1:8080", "127.0.0.1:1081"},
		{8080, 0, "127.0.0.1:8080", "127.0.0.1:8080"},
		{0, 1081, "127.0.0.1:1081", "127.0.0.1:1081"},
	} {
		h, s := externalProxyAddrs(policy.Network{HTTPProxyPort: tc.h, SOCKSProxyPort: tc.s})
		if h != tc.wantH || s != tc.want {
			t.Errorf("(%d, %d): %s %s", tc.h, tc.s, h, s)
		}
	}
}

// TestFootprint: the git audit covers the writable trees that exist, not
// the run's TMPDIR nor moat's state, and sees the protections as
// read-only.
func TestFootprint(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	work, state, tmp, gone := filepath.Join(root, "work"), filepath.Join(root, "state"), filepath.Join(root, "tmp"), filepath.Join(root, "gone")
	for _, d := range []string{work, filepath.Join(work, "sub"), state, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pol := &policy.Policy{Cwd: work, Home: root}
	pol.FS.AllowWrite = []policy.PathRule{pr(work, "cwd"), pr(work+"/sub/*.txt", "glob"), pr(state, "state"), pr(gone, "missing")}
	pol.FS.DenyWrite = []policy.PathRule{pr(work+"/locked", "denyWrite")}
	pol.FS.DenyRead = []policy.PathRule{pr(work+"/secret", "denyRead")}
	same := func(p string) (string, error) { return p, nil }
	p, err := Generate(pol, Options{Tag: "moat_test_footprint", TmpDir: tmp, Resolve: same,
		Protect: []Protection{{Path: work + "/.bashrc", Why: "mandatory"}}})
	if err != nil {
		t.Fatal(err)
	}
	fp := p.Footprint(tmp, state)
	if want := []string{work, work + "/sub"}; !slices.Equal(fp.WritableRoots, want) {
		t.Errorf("roots %q, want %q", fp.WritableRoots, want)
	}
	if fp.Observed {
		t.Error("Observed: Seatbelt does not report writes")
	}
	for path, ro := range map[string]bool{work + "/a": false, work + "/.bashrc": true, work + "/locked/x": true, work + "/secret": true, root + "/elsewhere": true} {
		if got := fp.ReadOnly(path); got != ro {
			t.Errorf("ReadOnly(%s) = %v, want %v", path, got, ro)
		}
	}
	for _, want := range []string{work + "/.bashrc", work + "/locked", work + "/secret"} {
		if !slices.Contains(fp.ReadOnlyPaths, want) {
			t.Errorf("ReadOnlyPaths %q lacks %s", fp.ReadOnlyPaths, want)
		}
	}
}
