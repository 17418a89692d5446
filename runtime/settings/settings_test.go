package settings

import (
	"errors"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

type env struct {
	t         *testing.T
	cwd, home string
	managed   string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, cwd: filepath.Join(root, "work"), home: filepath.Join(root, "home"), managed: filepath.Join(root, "managed.json")}
	for _, d := range []string{e.cwd, e.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) write(path, body string) string {
	e.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return path
}

func (e *env) load(file string) (*policy.Policy, error) {
	p, _, err := Load(Options{File: file, Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
	return p, err
}

func paths(rs []policy.PathRule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Path)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

const minimalSRT = `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`

func TestDefaultsWithoutFiles(t *testing.T) {
	e := newEnv(t)
	p, err := e.load("")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.FS.AllowWrite) != 0 {
		t.Errorf("no settings must mean no writable paths, got %v", paths(p.FS.AllowWrite))
	}
	if !contains(paths(p.FS.DenyRead), filepath.Join(e.home, ".ssh")) {
		t.Errorf("~/.ssh must be denied by default, got %v", paths(p.FS.DenyRead))
	}
	if p.Net.WantsNetwork() {
		t.Error("no settings must mean no network")
	}
	if p.FS.MandatoryDenySearchDepth != policy.DefaultSearchDepth || !p.Violations {
		t.Errorf("defaults: depth %d violations %v", p.FS.MandatoryDenySearchDepth, p.Violations)
	}
}

func TestSRTFormat(t *testing.T) {
	e := newEnv(t)
	f := e.write(filepath.Join(e.cwd, "s.json"), `{
	 "network":{"allowedDomains":["example.com","*.github.com:443"],"deniedDomains":["*"],
	            "deniedDomainReasons":{"*":"nothing else"}},
	 "filesystem":{"denyRead":["~/secret","/etc/x"],"allowRead":["~/secret/ok"],
	   "allowWrite":[".","/tmp/build/**"],"denyWrite":["./keep"],"allowGitConfig":true},
	 "mandatoryDenySearchDepth": 5,
	 "moat":{"timeout":"2s","env":{"allow":["GITHUB_TOKEN"]}}}`)
	p, err := e.load(f)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"allowWrite": {e.cwd, "/tmp/build"},
		"denyWrite":  {filepath.Join(e.cwd, "keep")},
		"allowRead":  {filepath.Join(e.home, "secret/ok")},
	}
	got := map[string][]string{
		"allowWrite": paths(p.FS.AllowWrite),
		"denyWrite":  paths(p.FS.DenyWrite),
		"allowRead":  paths(p.FS.AllowRead),
	}
	for k, w := range want {
		if strings.Join(got[k], ",") != strings.Join(w, ",") {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
	dr := paths(p.FS.DenyRead)
	if !contains(dr, filepath.Join(e.home, "secret")) || !contains(dr, "/etc/x") {
		t.Errorf("denyRead = %v", dr)
	}
	if !p.FS.AllowGitConfig || p.FS.MandatoryDenySearchDepth != 5 || p.Limits.Timeout.String() != "2s" {
		t.Errorf("scalars: %+v %v", p.FS, p.Limits)
	}
	if len(p.Net.DeniedDomains) != 1 || p.Net.DeniedDomains[0].Reason != "nothing else" {
		t.Errorf("denied domains %+v", p.Net.DeniedDomains)
	}
	if !contains(p.Env.Allow, "GITHUB_TOKEN") {
		t.Errorf("env allow %v", p.Env.Allow)
	}
}

func TestClaudeFormatAndPrecedence(t *testing.T) {
	e := newEnv(t)
	e.write(e.managed, `{"permissions":{"deny":["Read(//etc/managed-secret)"]},
	  "sandbox":{"network":{"allowManagedDomainsOnly":true,"allowedDomains":["corp.example"]}}}`)
	e.write(filepath.Join(e.cwd, ".claude/settings.json"), `{"model":"x","env":{"A":"b"},
	  "permissions":{"allow":["Bash(npm run:*)","Edit(./out/**)","WebFetch(domain:evil.example)"],
	     "deny":["Read(./.env)","Edit(/pinned)"],"defaultMode":"plan"},
	  "sandbox":{"enabled":true}}`)
	e.write(filepath.Join(e.home, ".claude/settings.json"), `{"permissions":{"defaultMode":"acceptEdits","additionalDirectories":["//opt/extra"]},"sandbox":{"filesystem":{"allowWrite":["~/.kube"]}}}`)
	p, err := e.load("")
	if err != nil {
		t.Fatal(err)
	}
	aw := paths(p.FS.AllowWrite)
	for _, w := range []string{e.cwd, filepath.Join(e.cwd, "out"), filepath.Join(e.home, ".kube"), "/opt/extra"} {
		if !contains(aw, w) {
			t.Errorf("allowWrite %v lacks %s", aw, w)
		}
	}
	if !contains(paths(p.FS.DenyWrite), filepath.Join(e.cwd, ".claude", "pinned")) {
		t.Errorf("Edit(/pinned) is relative to the settings file's directory: %v", paths(p.FS.DenyWrite))
	}
	dr := paths(p.FS.DenyRead)
	if !contains(dr, "/etc/managed-secret") || !contains(dr, filepath.Join(e.cwd, ".env")) {
		t.Errorf("denyRead %v", dr)
	}
	if p.Permissions.DefaultMode != "plan" {
		t.Errorf("project beats user for scalars: got %q", p.Permissions.DefaultMode)
	}
	if len(p.Net.AllowedDomains) != 1 || p.Net.AllowedDomains[0].Pattern != "corp.example" || !p.Net.AllowedDomains[0].Managed {
		t.Errorf("managed-only domains: %+v", p.Net.AllowedDomains)
	}
	if len(p.Permissions.Allow) != 3 || len(p.Permissions.Deny) != 3 {
		t.Errorf("rules: %+v / %+v", p.Permissions.Allow, p.Permissions.Deny)
	}
}

func TestSettingsFileReplacesDefaults(t *testing.T) {
	e := newEnv(t)
	e.write(filepath.Join(e.cwd, ".claude/settings.json"), `{"sandbox":{"filesystem":{"allowWrite":["/from-project"]}}}`)
	f := e.write(filepath.Join(e.cwd, "x.json"), minimalSRT)
	p, err := e.load(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.FS.AllowWrite) != 0 {
		t.Errorf("--settings must replace the default chain; got %v", paths(p.FS.AllowWrite))
	}
}

func TestBadSettings(t *testing.T) {
	cases := []struct {
		name, body, field, reason string
	}{
		{"empty", "", "", "empty"},
		{"not json", "{", "", "not valid JSON"},
		{"array", "[]", "", "JSON object"},
		{"neither shape", `{"model":"x"}`, "", "not a settings file"},
		{"mixed", `{"filesystem":{},"permissions":{}}`, "", "mixes"},
		{"srt missing network", `{"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, "network", "required"},
		{"srt missing allowWrite", `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"denyWrite":[]}}`, "filesystem.allowWrite", "required"},
		{"unknown fs field", `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[],"alowRead":[]}}`, "filesystem.alowRead", "unknown field"},
		{"wrong type", `{"network":{"allowedDomains":"x","deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, "network.allowedDomains", "array of strings"},
		{"wrong item type", `{"network":{"allowedDomains":[1],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, "network.allowedDomains[0]", "want a string"},
		{"bare star allowed", `{"network":{"allowedDomains":["*"],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, "network.allowedDomains[0]", "allowed only in deniedDomains"},
		{"url domain", `{"network":{"allowedDomains":["https://x.com"],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, "network.allowedDomains[0]", ""},
		{"nul path", `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":["/a\u0000b"],"allowWrite":[],"denyWrite":[]}}`, "filesystem.denyRead[0]", "NUL"},
		{"empty path", `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[""],"allowWrite":[],"denyWrite":[]}}`, "filesystem.denyRead[0]", "empty path"},
		{"deny glob slash", `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":["/x/*/"],"allowWrite":[],"denyWrite":[]}}`, "filesystem.denyRead[0]", "fail open"},
		{"credentials", `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]},"credentials":{}}`, "credentials", "not supported"},
		{"tls terminate", `{"network":{"allowedDomains":[],"deniedDomains":[],"tlsTerminate":{}},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, "network.tlsTerminate", "not supported"},
		{"depth range", `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]},"mandatoryDenySearchDepth":11}`, "mandatoryDenySearchDepth", "outside 1..10"},
		{"port range", `{"network":{"allowedDomains":[],"deniedDomains":[],"httpProxyPort":70000},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, "network.httpProxyPort", "outside"},
		{"bad mode", `{"permissions":{"defaultMode":"yolo"}}`, "permissions.defaultMode", "unknown mode"},
		{"bad rule", `{"permissions":{"allow":["Bash(npm"]}}`, "permissions.allow[0]", "Tool(content)"},
		{"empty rule parens", `{"permissions":{"deny":["Bash()"]}}`, "permissions.deny[0]", "empty parentheses"},
		{"unknown sandbox key", `{"sandbox":{"enabeld":true}}`, "sandbox.enabeld", "unknown field"},
		{"unknown permissions key", `{"permissions":{"alow":[]}}`, "permissions.alow", "unknown field"},
		{"bool type", `{"sandbox":{"enabled":"yes"}}`, "sandbox.enabled", "boolean"},
		{"moat unknown", `{"sandbox":{},"moat":{"bestEfort":true}}`, "moat.bestEfort", "unknown field"},
		{"moat timeout", `{"sandbox":{},"moat":{"timeout":"soon"}}`, "moat.timeout", "invalid duration"},
		{"memory not a size", `{"sandbox":{},"moat":{"limits":{"memory":"lots"}}}`, "moat.limits.memory", "not a size"},
		{"memory negative", `{"sandbox":{},"moat":{"limits":{"memory":-5}}}`, "moat.limits.memory", "negative"},
		{"pids type", `{"sandbox":{},"moat":{"limits":{"pids":"many"}}}`, "moat.limits.pids", "number of processes"},
		{"cpu type", `{"sandbox":{},"moat":{"limits":{"cpu":"fast"}}}`, "moat.limits.cpu", "number of CPUs"},
		{"cpuTime", `{"sandbox":{},"moat":{"limits":{"cpuTime":"forever"}}}`, "moat.limits.cpuTime", "invalid duration"},
		{"limits unknown", `{"sandbox":{},"moat":{"limits":{"mem":"1GiB"}}}`, "moat.limits.mem", "unknown field"},
		{"moat env name", `{"sandbox":{},"moat":{"env":{"allow":["A-B"]}}}`, "moat.env.allow[0]", "not a variable name"},
		{"tilde user", `{"sandbox":{"filesystem":{"denyRead":["~root/x"]}}}`, "sandbox.filesystem.denyRead[0]", "~user"},
		{"reason names nothing", `{"network":{"allowedDomains":[],"deniedDomains":[],"deniedDomainReasons":{"x.com":"r"}},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, "network.deniedDomainReasons.x.com", "names no entry"},
		{"parent proxy url", `{"network":{"allowedDomains":[],"deniedDomains":[],"parentProxy":{"http":"corp:3128"}},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, "network.parentProxy.http", "http://"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			f := e.write(filepath.Join(e.cwd, "bad.json"), tc.body)
			_, err := e.load(f)
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("want a *settings.Error, got %v", err)
			}
			if se.File != f {
				t.Errorf("file = %q, want %q", se.File, f)
			}
			if se.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", se.Field, tc.field, err)
			}
			if !strings.Contains(se.Reason, tc.reason) {
				t.Errorf("reason %q does not mention %q", se.Reason, tc.reason)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Error("errors.Is(err, ErrInvalid) is false")
			}
		})
	}
}

func TestLimits(t *testing.T) {
	e := newEnv(t)
	p, err := e.load(e.write(filepath.Join(e.cwd, "s.json"), `{"sandbox":{},"moat":{"limits":{"memory":"1.5GiB","pids":256,"cpu":"150%","fileSize":"unlimited","cpuTime":"90s"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Limits{Memory: 3 << 29, Pids: 256, CPU: 1500, FileSize: policy.Unlimited, CPUTime: 90 * time.Second}
	if p.Limits != want {
		t.Fatalf("limits %+v, want %+v", p.Limits, want)
	}
	eff := p.Limits.Effective(8 << 30)
	if eff.FileSize != 0 || eff.Memory != 3<<29 || eff.CPU != 1500 {
		t.Errorf("effective %+v", eff)
	}
	// Defaults: half the machine's memory (at most 16 GiB), 4096 processes,
	// 16 GiB files, no CPU cap.
	d := policy.Limits{}.Effective(8 << 30)
	if d.Memory != 4<<30 || d.Pids != 4096 || d.FileSize != 16<<30 || d.CPU != 0 || d.CPUTime != 0 {
		t.Errorf("defaults %+v", d)
	}
	if d := (policy.Limits{}).Effective(64 << 30); d.Memory != 16<<30 {
		t.Errorf("default memory on 64 GiB: %d", d.Memory)
	}
	// Below what any command needs: refused, naming the field.
	for body, field := range map[string]string{
		`{"sandbox":{},"moat":{"limits":{"memory":"1KiB"}}}`:  "moat.limits.memory",
		`{"sandbox":{},"moat":{"limits":{"pids":2}}}`:         "moat.limits.pids",
		`{"sandbox":{},"moat":{"limits":{"cpuTime":"10ms"}}}`: "moat.limits.cpuTime",
	} {
		_, err := e.load(e.write(filepath.Join(e.cwd, "s.json"), body))
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want an error naming %s", body, err, field)
		}
	}
}

func TestMissingExplicitFile(t *testing.T) {
	e := newEnv(t)
	_, err := e.load(filepath.Join(e.cwd, "nope.json"))
	var se *Error
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "no such file") {
		t.Fatalf("got %v", err)
	}
}

func TestUnreadableDefaultFileIsAnError(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	e := newEnv(t)
	f := e.write(filepath.Join(e.home, ".srt-settings.json"), minimalSRT)
	if err := os.Chmod(f, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.load(""); err == nil {
		t.Fatal("an unreadable settings file must be refused, not skipped")
	}
}

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in            string
		tool, content string
		has, ok       bool
	}{
		{"Bash", "Bash", "", false, true},
		{"Bash(git status)", "Bash", "git status", true, true},
		{"Bash(echo (x))", "Bash", "echo (x)", true, true},
		{"mcp__srv__tool", "mcp__srv__tool", "", false, true},
		{"Bash(", "", "", false, false},
		{" Bash", "", "", false, false},
		{"(x)", "", "", false, false},
	} {
		tool, content, has, err := ParseRule(tc.in)
		if (err == nil) != tc.ok || tool != tc.tool || content != tc.content || has != tc.has {
			t.Errorf("ParseRule(%q) = %q %q %v %v", tc.in, tool, content, has, err)
		}
	}
}

// moat.toolCache: on by default in moat's own directory, off, or a
// directory of the user's; anything else names the field.
func TestToolCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "")
	e := newEnv(t)
	load := func(body string) (*policy.Policy, error) {
		return e.load(e.write(filepath.Join(e.cwd, "s.json"), body))
	}
	for body, want := range map[string]string{
		`{"sandbox":{}}`: filepath.Join(e.home, ".cache/moat/sandbox-cache"),
		`{"sandbox":{},"moat":{"toolCache":true}}`:             filepath.Join(e.home, ".cache/moat/sandbox-cache"),
		`{"sandbox":{},"moat":{"toolCache":false}}`:            "",
		`{"sandbox":{},"moat":{"toolCache":"~/caches/agent"}}`: filepath.Join(e.home, "caches/agent"),
		`{"sandbox":{},"moat":{"toolCache":"/var/cache/x/"}}`:  "/var/cache/x",
	} {
		p, err := load(body)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if p.ToolCache != want {
			t.Errorf("%s: toolCache %q, want %q", body, p.ToolCache, want)
		}
	}
	for _, body := range []string{`{"sandbox":{},"moat":{"toolCache":"rel/dir"}}`, `{"sandbox":{},"moat":{"toolCache":"/"}}`, `{"sandbox":{},"moat":{"toolCache":3}}`, `{"sandbox":{},"moat":{"toolCache":"/a\nb"}}`} {
		if _, err := load(body); err == nil || !strings.Contains(err.Error(), "toolCache") {
			t.Errorf("%s: error %v, want one naming moat.toolCache", body, err)
		}
	}
	// A project's settings may turn it off, never move it (a repository
	// pointed it at ~/.local, and ~/.local/bin became writable: found by
	// an attack pass); the user's own settings may.
	for _, name := range []string{"settings.json", "settings.local.json"} {
		proj := e.write(filepath.Join(e.cwd, ".claude", name), `{"sandbox":{},"moat":{"toolCache":"~/.local"}}`)
		if _, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err == nil || !strings.Contains(err.Error(), "toolCache") {
			t.Errorf("a project's %s moved the tool cache: %v", name, err)
		}
		e.write(proj, `{"sandbox":{},"moat":{"toolCache":false}}`)
		if p, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err != nil || p.ToolCache != "" {
			t.Errorf("a project's %s could not turn the tool cache off: %v", name, err)
		}
		os.Remove(proj)
	}
	e.write(filepath.Join(e.home, ".claude", "settings.json"), `{"sandbox":{},"moat":{"toolCache":"~/caches/mine"}}`)
	if p, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err != nil || p.ToolCache != filepath.Join(e.home, "caches/mine") {
		t.Errorf("the user's own settings could not move the tool cache: %v", err)
	}
	// The variables point into it, writable; a variable the user sets keeps
	// the user's value.
	p, err := load(`{"sandbox":{},"moat":{"env":{"set":{"GOCACHE":"/mine"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	q := p.WithToolCache()
	if q.Env.Set["GOCACHE"] != "/mine" || q.Env.Set["PIP_CACHE_DIR"] != filepath.Join(p.ToolCache, "pip") {
		t.Errorf("env.set %v", q.Env.Set)
	}
	if last := q.FS.AllowWrite[len(q.FS.AllowWrite)-1]; last.Path != p.ToolCache {
		t.Errorf("the tool cache is not writable: %v", q.FS.AllowWrite)
	}
	if len(p.FS.AllowWrite) == len(q.FS.AllowWrite) || p.Env.Set["PIP_CACHE_DIR"] != "" {
		t.Error("WithToolCache changed the policy it was given")
	}
}

// A .claude that is not a directory (another moat run's placeholder, a
// socket, while it runs in the same directory; a plain file) holds no
// settings: loading goes on as without it (a second moat run in a
// directory where one was running failed with "not a directory").
func TestClaudeNotADirectory(t *testing.T) {
	e := newEnv(t)
	for _, home := range []bool{false, true} {
		dir := e.cwd
		if home {
			dir = e.home
		}
		claude := filepath.Join(dir, ".claude")
		os.RemoveAll(claude)
		e.write(claude, "")
		if _, err := e.load(""); err != nil {
			t.Fatalf(".claude a file in %s: %v", dir, err)
		}
	}
}

// A placeholder at ~/.srt-settings.json or .claude/settings.json (a
// socket of mode 0, or an empty directory of mode 0 on a filesystem
// without sockets) holds no settings: a moat session whose working
// directory was the home reserved ~/.srt-settings.json, and every other
// moat of that user failed with "cannot read: permission denied" until
// the session ended (found by attack pass 55). A file of the user's that
// cannot be read is still an error.
func TestSettingsPlaceholderIsNoFile(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{filepath.Join(e.home, ".srt-settings.json"), filepath.Join(e.cwd, ".claude", "settings.json")} {
		for _, kind := range []string{"socket", "dir"} {
			os.RemoveAll(p)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if kind == "socket" {
				fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
				if err != nil {
					t.Fatal(err)
				}
				err = syscall.Bind(fd, &syscall.SockaddrUnix{Name: p})
				syscall.Close(fd)
				if err != nil {
					t.Fatal(err)
				}
			} else if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := e.load(""); err != nil {
				t.Errorf("a placeholder (%s) at %s: %v", kind, p, err)
			}
			os.Chmod(p, 0o755)
			os.RemoveAll(p)
		}
	}
	// Not a placeholder: a directory with a mode, a file.
	p := filepath.Join(e.home, ".srt-settings.json")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := e.load(""); err == nil {
		t.Errorf("a directory of mode 0755 at %s was taken for no file", p)
	}
	os.RemoveAll(p)
}

// A repository's own settings (.claude/settings.json, settings.local.json)
// may not weaken the sandbox for whoever runs moat in it (attack passes: a
// repository passed the user's AWS_SECRET_ACCESS_KEY in, reached
// docker.sock, showed the host's /proc, turned reports off and limits up);
// the user's own settings may. Writable paths and domains stay a project's
// to widen, as Claude Code reads them.
func TestProjectCannotWiden(t *testing.T) {
	e := newEnv(t)
	for field, body := range map[string]string{
		"moat.env.allow":            `{"sandbox":{},"moat":{"env":{"allow":["AWS_SECRET_ACCESS_KEY"]}}}`,
		"moat.bestEffort":           `{"sandbox":{},"moat":{"bestEffort":true}}`,
		"moat.violations":           `{"sandbox":{},"moat":{"violations":false}}`,
		"moat.shareNetwork":         `{"sandbox":{},"moat":{"shareNetwork":true}}`,
		"moat.limits":               `{"sandbox":{},"moat":{"limits":{"memory":"unlimited"}}}`,
		"enableWeakerNestedSandbox": `{"sandbox":{"enableWeakerNestedSandbox":true}}`,
		"network.allowUnixSockets":  `{"sandbox":{"network":{"allowAllUnixSockets":true}}}`,
		"ignoreViolations":          `{"sandbox":{"ignoreViolations":{"*":["/"]}}}`,
		"sandbox.excludedCommands":  `{"sandbox":{"excludedCommands":["docker"]}}`,
		// An external proxy turns moat's domain filtering off.
		"network.httpProxyPort":  `{"sandbox":{"network":{"httpProxyPort":18765}}}`,
		"network.socksProxyPort": `{"sandbox":{"network":{"socksProxyPort":18766}}}`,
		// Reads of what a default secret hides (more: TestProjectCannotReallowSecrets).
		"sandbox.filesystem.allowRead[0]": `{"sandbox":{"filesystem":{"allowRead":["~/.ssh"]}}}`,
		"permissions.allow[0]":            `{"permissions":{"allow":["Read(~/.ssh/**)"]}}`,
	} {
		for _, name := range []string{"settings.json", "settings.local.json"} {
			proj := e.write(filepath.Join(e.cwd, ".claude", name), body)
			_, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
			if err == nil || !strings.Contains(err.Error(), field) {
				t.Errorf("a project's %s with %s: error %v, want one naming %s", name, body, err, field)
			}
			os.Remove(proj)
			// The user's own settings may.
			user := e.write(filepath.Join(e.home, ".claude", "settings.json"), body)
			if _, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err != nil {
				t.Errorf("the user's own settings with %s: %v", body, err)
			}
			os.Remove(user)
		}
	}
	proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"permissions":{"allow":["Bash(npm test:*)"]},"sandbox":{"network":{"allowedDomains":["registry.npmjs.org"],"allowLocalBinding":true},"filesystem":{"allowWrite":["./build"]}},"moat":{"minimumTier":"full","env":{"set":{"CI":"1"}}}}`)
	defer os.Remove(proj)
	if _, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err != nil {
		t.Errorf("a project's ordinary settings: %v", err)
	}
}

// permissions.disableBypassPermissionsMode: "disable" is enforced, not
// only read (it was read and dropped: an administrator's file forbade a
// mode any request could still ask for; found by an attack pass). Once a
// file sets it no other file undoes it, bypassPermissions is refused as a
// default, and the policy's CheckMode refuses a request for it.
func TestDisableBypassPermissionsMode(t *testing.T) {
	e := newEnv(t)
	p, err := e.load(e.write(filepath.Join(e.cwd, "nobypass.json"), `{"permissions":{"disableBypassPermissionsMode":"disable"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Permissions.DisableBypass {
		t.Fatal("disableBypassPermissionsMode read and dropped")
	}
	if err := p.Permissions.CheckMode("bypassPermissions"); err == nil || !strings.Contains(err.Error(), "disableBypassPermissionsMode") {
		t.Errorf("a request for bypassPermissions: %v, want an error naming the setting", err)
	}
	for _, m := range []string{"", "default", "acceptEdits", "plan"} {
		if err := p.Permissions.CheckMode(m); err != nil {
			t.Errorf("mode %q: %v", m, err)
		}
	}
	_, err = e.load(e.write(filepath.Join(e.cwd, "contradiction.json"), `{"permissions":{"disableBypassPermissionsMode":"disable","defaultMode":"bypassPermissions"}}`))
	if err == nil || !strings.Contains(err.Error(), "defaultMode") {
		t.Errorf("defaultMode bypassPermissions with the mode disabled: %v, want an error naming permissions.defaultMode", err)
	}
	// The user's file disables it; the project's, read above it, cannot
	// undo it.
	e.write(filepath.Join(e.home, ".claude", "settings.json"), `{"permissions":{"disableBypassPermissionsMode":"disable"}}`)
	e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"permissions":{"defaultMode":"plan"}}`)
	p, err = e.load("")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Permissions.DisableBypass {
		t.Error("the project's file undid the user's disableBypassPermissionsMode")
	}
}

// Started in the home directory, ~/.claude/settings.json is the user's own
// file, not a project's: it is read once, as the user's, and may set what
// a project's may not (it was read twice, the second time as a project's,
// and moat.env.allow in it was refused).
func TestHomeSettingsAreTheUsers(t *testing.T) {
	e := newEnv(t)
	e.write(filepath.Join(e.home, ".claude", "settings.json"), `{"sandbox":{},"moat":{"env":{"allow":["GITHUB_TOKEN"]}}}`)
	p, srcs, err := Load(Options{Cwd: e.home, Home: e.home, ManagedFile: e.managed})
	if err != nil {
		t.Fatalf("the user's own settings, started in the home directory: %v", err)
	}
	if len(srcs) != 1 || srcs[0].Level != LevelUser {
		t.Errorf("sources %+v, want the user's file once", srcs)
	}
	if !contains(p.Env.Allow, "GITHUB_TOKEN") {
		t.Errorf("env allow %v", p.Env.Allow)
	}
	// Through a symbolic link to the home directory too.
	link := filepath.Join(e.cwd, "home")
	if err := os.Symlink(e.home, link); err != nil {
		t.Fatal(err)
	}
	if _, srcs, err := Load(Options{Cwd: link, Home: e.home, ManagedFile: e.managed}); err != nil || len(srcs) != 1 {
		t.Errorf("started in a link to the home directory: %v %+v", err, srcs)
	}
}

// A project's file may not make readable what a deny rule or a default
// secret hides (found by an attack pass: a repository's allowRead
// ["~/.ssh"], or Read(~/.ssh/**) in permissions.allow, printed the user's
// private key; Read(~/secrets/**) undid a managed deny). Refused: a path
// inside, equal to or holding one a deny hides, as written, through the
// repository's symbolic links, or matched by a glob. A Read rule inside
// the project that meets no deny stays accepted.
func TestProjectCannotReallowSecrets(t *testing.T) {
	e := newEnv(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(e.home, ".ssh"), 0o700))
	must(os.MkdirAll(filepath.Join(e.home, "secrets"), 0o700))
	must(os.MkdirAll(filepath.Join(e.home, "dotfiles", "gnupg"), 0o700))
	must(os.Symlink(filepath.Join(e.home, "dotfiles", "gnupg"), filepath.Join(e.home, ".gnupg")))
	must(os.MkdirAll(filepath.Join(e.cwd, "src"), 0o755))
	must(os.Symlink(filepath.Join(e.home, ".ssh"), filepath.Join(e.cwd, "keys")))
	must(os.Symlink("../home", filepath.Join(e.cwd, "h")))
	e.write(e.managed, `{"permissions":{"deny":["Read(~/secrets/**)"]}}`)
	user := e.write(filepath.Join(e.home, ".claude", "settings.json"), `{"permissions":{"deny":["Read(~/notes/**)","Read(**/.env)"]}}`)
	load := func() error {
		_, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
		return err
	}
	refused := map[string]string{
		`{"sandbox":{"filesystem":{"allowRead":["~/.ssh"]}}}`:                      "sandbox.filesystem.allowRead[0]",
		`{"sandbox":{"filesystem":{"allowRead":["~/.ssh/id_rsa"]}}}`:               "sandbox.filesystem.allowRead[0]",
		`{"permissions":{"allow":["Read(~/.ssh/**)"]}}`:                            "permissions.allow[0]",
		`{"permissions":{"allow":["Bash(ls)","Read(~/.aws/credentials)"]}}`:        "permissions.allow[1]",
		`{"sandbox":{"filesystem":{"allowRead":["~"]}}}`:                           "sandbox.filesystem.allowRead[0]", // holds ~/.ssh
		`{"permissions":{"allow":["Read(//)"]}}`:                                   "permissions.allow[0]",
		`{"permissions":{"allow":["Read(//etc)"]}}`:                                "permissions.allow[0]", // holds /etc/shadow
		`{"permissions":{"allow":["Read(~/secrets/**)"]}}`:                         "permissions.allow[0]", // managed deny
		`{"permissions":{"allow":["Read(~/notes/todo)"]}}`:                         "permissions.allow[0]", // the user's deny
		`{"permissions":{"allow":["Read(./.env)"]}}`:                               "permissions.allow[0]", // the user's glob deny
		`{"permissions":{"allow":["Read(./**)"]}}`:                                 "permissions.allow[0]", // holds what **/.env may match
		`{"permissions":{"deny":["Read(./private)"],"allow":["Read(./private)"]}}`: "permissions.allow[0]", // its own deny
		`{"permissions":{"allow":["Read(./keys/**)"]}}`:                            "permissions.allow[0]", // keys -> ~/.ssh
		`{"permissions":{"allow":["Read(./k*)"]}}`:                                 "permissions.allow[0]", // a glob matching it
		`{"permissions":{"allow":["Read(./h/*/id_rsa)"]}}`:                         "permissions.allow[0]", // h -> ../home
		`{"permissions":{"allow":["Read(~/dotfiles/**)"]}}`:                        "permissions.allow[0]", // ~/.gnupg -> dotfiles/gnupg
		`{"sandbox":{"filesystem":{"allowRead":["~/.s*"]}}}`:                       "sandbox.filesystem.allowRead[0]",
	}
	for body, field := range refused {
		for _, name := range []string{"settings.json", "settings.local.json"} {
			proj := e.write(filepath.Join(e.cwd, ".claude", name), body)
			err := load()
			var se *Error
			if !errors.As(err, &se) || se.File != proj || se.Field != field || !strings.Contains(se.Reason, "a project's settings may not make readable") {
				t.Errorf("a project's %s with %s: %v, want an error naming %s", name, body, err, field)
			}
			os.Remove(proj)
		}
	}
	for _, body := range []string{
		`{"permissions":{"allow":["Read(src/**)","Read(./src/*.go)","Read(//usr/share/doc/**)"]}}`,
		`{"sandbox":{"filesystem":{"allowRead":["./src"]}}}`,
		`{"permissions":{"allow":["Read(~/projects/**)"],"deny":["Read(./secret.txt)"]}}`,
		`{"permissions":{"allow":["Read(./docs/**)"],"deny":["Read(./docs/private/**)"]}}`, // its own, more specific deny decides
	} {
		proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), body)
		if err := load(); err != nil {
			t.Errorf("a project's %s: %v", body, err)
		}
		os.Remove(proj)
	}
	// The user's own file may re-allow a default secret (and the message
	// of a project's names the deny it meets).
	e.write(user, `{"sandbox":{"filesystem":{"allowRead":["~/.ssh/known_hosts"]}}}`)
	if err := load(); err != nil {
		t.Errorf("the user's own allowRead of a default secret: %v", err)
	}
	proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"sandbox":{"filesystem":{"allowRead":["./keys"]}}}`)
	if err := load(); err == nil || !strings.Contains(err.Error(), "moat's list of default secrets") || !strings.Contains(err.Error(), "through symbolic links") {
		t.Errorf("the message names neither the default secrets nor the link: %v", err)
	}
	os.Remove(proj)
}

// No weaker settings file undoes a stronger one's denyRead (managed >
// --settings and the user's files > the project's): an allowRead inside
// (or equal to) a stronger file's denyRead is refused, naming both rules
// and their files ("a managed deny can never be undone below it"; the
// sandbox lets the more specific rule decide, so a user's allowRead of
// ~/secrets/x undid the managed deny of ~/secrets).
func TestWeakerLayerCannotReallow(t *testing.T) {
	e := newEnv(t)
	e.write(e.managed, `{"permissions":{"deny":["Read(~/secrets/**)"]},"sandbox":{"filesystem":{"denyRead":["//srv/vault"]}}}`)
	for _, tc := range []struct{ file, body, field string }{
		{filepath.Join(e.home, ".claude", "settings.json"), `{"permissions":{"allow":["Read(~/secrets/x)"]}}`, "permissions.allow[0]"},
		{filepath.Join(e.home, ".claude", "settings.json"), `{"sandbox":{"filesystem":{"allowRead":["//srv/vault/**"]}}}`, "sandbox.filesystem.allowRead[0]"},
		{filepath.Join(e.home, SRTUserFile), `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowRead":["~/secrets"],"allowWrite":[],"denyWrite":[]}}`, "filesystem.allowRead[0]"},
		{filepath.Join(e.cwd, "given.json"), `{"permissions":{"allow":["Read(~/secrets/**)"]}}`, "permissions.allow[0]"},
	} {
		f := e.write(tc.file, tc.body)
		opts := Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}
		if strings.HasSuffix(f, "given.json") {
			opts.File = f
		}
		_, _, err := Load(opts)
		var se *Error
		if !errors.As(err, &se) || se.File != f || se.Field != tc.field || !strings.Contains(se.Reason, "managed settings deny") || !strings.Contains(se.Reason, e.managed) {
			t.Errorf("%s with %s: %v, want an error naming %s and the managed file", tc.file, tc.body, err, tc.field)
		}
		os.Remove(f)
	}
	// The managed file's own allowRead, and the user's outside the deny or
	// above it (the deny, more specific, still decides), are fine.
	e.write(e.managed, `{"permissions":{"deny":["Read(~/secrets/**)"],"allow":["Read(~/secrets/public/**)"]}}`)
	user := e.write(filepath.Join(e.home, ".claude", "settings.json"), `{"sandbox":{"filesystem":{"allowRead":["~/elsewhere","~"]}}}`)
	p, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
	if err != nil {
		t.Fatal(err)
	}
	if !contains(paths(p.FS.AllowRead), filepath.Join(e.home, "secrets/public")) {
		t.Errorf("allowRead %v", paths(p.FS.AllowRead))
	}
	// The user's deny, a project's allow: refused (the project's check).
	e.write(user, `{"sandbox":{"filesystem":{"denyRead":["~/work-notes"]}}}`)
	proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"sandbox":{"filesystem":{"allowRead":["~/work-notes/a"]}}}`)
	if _, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err == nil || !strings.Contains(err.Error(), proj) || !strings.Contains(err.Error(), user) {
		t.Errorf("a project's allowRead inside the user's denyRead: %v", err)
	}
}

// httpProxyPort / socksProxyPort hand every connection to an external
// proxy as is: moat's domain lists no longer apply (found by an attack
// pass: a project's httpProxyPort let the command reach any service on
// the host's 127.0.0.1:18765, under managed allowManagedDomainsOnly,
// allowedDomains and deniedDomains). A project may not set one
// (TestProjectCannotWiden); no file below managed settings that set
// network lists or allowManagedDomainsOnly may either; and where lists and
// an external proxy meet, a note says on every run that the lists are the
// proxy's to enforce.
func TestExternalProxy(t *testing.T) {
	e := newEnv(t)
	user := filepath.Join(e.home, ".claude", "settings.json")
	srtUser := filepath.Join(e.home, SRTUserFile)
	given := filepath.Join(e.cwd, "given.json")
	for _, managed := range []string{
		`{"sandbox":{"network":{"allowManagedDomainsOnly":true}}}`,
		`{"sandbox":{"network":{"allowedDomains":["corp.example"]}}}`,
		`{"sandbox":{"network":{"deniedDomains":["evil.example"]}}}`,
		`{"permissions":{"deny":["WebFetch(domain:evil.example)"]}}`,
	} {
		e.write(e.managed, managed)
		for _, tc := range []struct{ file, body, field string }{
			{user, `{"sandbox":{"network":{"httpProxyPort":18765}}}`, "sandbox.network.httpProxyPort"},
			{user, `{"sandbox":{"network":{"socksProxyPort":18766}}}`, "sandbox.network.socksProxyPort"},
			{srtUser, `{"network":{"allowedDomains":[],"deniedDomains":[],"httpProxyPort":18765},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, "network.httpProxyPort"},
			{given, `{"sandbox":{"network":{"httpProxyPort":18765}}}`, "sandbox.network.httpProxyPort"},
		} {
			f := e.write(tc.file, tc.body)
			opts := Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}
			if f == given {
				opts.File = f
			}
			_, _, err := Load(opts)
			var se *Error
			if !errors.As(err, &se) || se.File != f || se.Field != tc.field || !strings.Contains(se.Reason, "managed") || !strings.Contains(se.Reason, e.managed) {
				t.Errorf("managed %s, %s: %v, want an error naming %s and the managed file", managed, tc.body, err, tc.field)
			}
			os.Remove(f)
		}
	}
	// Managed settings may name the proxy themselves; with lists, a note.
	e.write(e.managed, `{"sandbox":{"network":{"allowManagedDomainsOnly":true,"allowedDomains":["corp.example"],"httpProxyPort":18765}}}`)
	p, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
	if err != nil {
		t.Fatal(err)
	}
	if p.Net.HTTPProxyPort != 18765 || !hasNote(p.Notes, "external proxy", "127.0.0.1:18765", "allowedDomains") {
		t.Errorf("port %d, notes %q", p.Net.HTTPProxyPort, p.Notes)
	}
	// Without managed network settings the user may, with the note when
	// there are lists, none without.
	os.Remove(e.managed)
	e.write(user, `{"sandbox":{"network":{"allowedDomains":["example.com"],"socksProxyPort":18766}},"permissions":{"deny":["WebFetch(domain:evil.example)"]}}`)
	p, _, err = Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
	if err != nil {
		t.Fatal(err)
	}
	if !hasNote(p.Notes, "external proxy", "127.0.0.1:18766", "allowedDomains", "deniedDomains", user) {
		t.Errorf("notes %q", p.Notes)
	}
	e.write(user, `{"sandbox":{"network":{"httpProxyPort":18765}}}`)
	p, _, err = Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
	if err != nil || len(p.Notes) != 0 {
		t.Errorf("an external proxy without lists: %v %q", err, p.Notes)
	}
}

// hasNote reports whether one of notes holds every one of want.
func hasNote(notes []string, want ...string) bool {
	for _, n := range notes {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(n, w)
		}
		if ok {
			return true
		}
	}
	return false
}

// A project's file may make writable only what lies in the project (the
// directory that holds .claude): found by an attack pass, a repository's
// {"permissions":{"allow":["Edit(//etc/profile.d/**)"]}} made /etc/profile.d
// writable for whoever ran moat in it as root. allowWrite, Edit (Write,
// MultiEdit, NotebookEdit) allow rules and additionalDirectories outside
// the project are refused, as written, through the repository's symbolic
// links and as a glob's matches; the user's own settings may name them.
func TestProjectCannotWriteOutside(t *testing.T) {
	e := newEnv(t)
	for _, d := range []string{filepath.Join(e.home, "dotfiles"), filepath.Join(e.cwd, "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../home/dotfiles", filepath.Join(e.cwd, "out")); err != nil {
		t.Fatal(err)
	}
	load := func() error {
		_, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
		return err
	}
	refused := map[string]string{
		`{"permissions":{"allow":["Edit(//etc/profile.d/**)"]}}`:           "permissions.allow[0]",
		`{"permissions":{"allow":["Bash(ls)","Write(~/.bashrc)"]}}`:        "permissions.allow[1]",
		`{"permissions":{"allow":["MultiEdit(//usr/local/bin/*)"]}}`:       "permissions.allow[0]",
		`{"permissions":{"allow":["Edit(/../../x)"]}}`:                     "permissions.allow[0]",
		`{"sandbox":{"filesystem":{"allowWrite":["~/.kube"]}}}`:            "sandbox.filesystem.allowWrite[0]",
		`{"sandbox":{"filesystem":{"allowWrite":["./src","../sibling"]}}}`: "sandbox.filesystem.allowWrite[1]",
		`{"sandbox":{"filesystem":{"allowWrite":["//"]}}}`:                 "sandbox.filesystem.allowWrite[0]",
		`{"sandbox":{"filesystem":{"allowWrite":["//*/profile.d"]}}}`:      "sandbox.filesystem.allowWrite[0]",
		`{"permissions":{"additionalDirectories":["//opt/extra"]}}`:        "permissions.additionalDirectories[0]",
		`{"permissions":{"additionalDirectories":["../shared"]}}`:          "permissions.additionalDirectories[0]",
		`{"sandbox":{"filesystem":{"allowWrite":["./out"]}}}`:              "sandbox.filesystem.allowWrite[0]", // out -> ../home/dotfiles
		`{"sandbox":{"filesystem":{"allowWrite":["./out/new/file"]}}}`:     "sandbox.filesystem.allowWrite[0]",
		`{"permissions":{"allow":["Edit(./o*)"]}}`:                         "permissions.allow[0]", // a glob matching it
		`{"permissions":{"additionalDirectories":["./out"]}}`:              "permissions.additionalDirectories[0]",
	}
	for body, field := range refused {
		for _, name := range []string{"settings.json", "settings.local.json"} {
			proj := e.write(filepath.Join(e.cwd, ".claude", name), body)
			err := load()
			var se *Error
			if !errors.As(err, &se) || se.File != proj || se.Field != field || !strings.Contains(se.Reason, "a project's settings may not make writable") || !strings.Contains(se.Reason, e.cwd) {
				t.Errorf("a project's %s with %s: %v, want an error naming %s", name, body, err, field)
			}
			os.Remove(proj)
		}
	}
	proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"permissions":{"allow":["Edit(./src/**)","Edit(/../build/**)","Write(*.log)"],"additionalDirectories":["./packages/a"]},"sandbox":{"filesystem":{"allowWrite":[".","./dist/**","node_modules/.cache"]}}}`)
	if err := load(); err != nil {
		t.Errorf("a project's writable paths inside it: %v", err)
	}
	os.Remove(proj)
	e.write(filepath.Join(e.home, ".claude", "settings.json"), `{"permissions":{"allow":["Edit(//etc/profile.d/**)"],"additionalDirectories":["//opt/extra"]},"sandbox":{"filesystem":{"allowWrite":["~/.kube"]}}}`)
	if err := load(); err != nil {
		t.Errorf("the user's own writable paths: %v", err)
	}
}

// The implicit writable working directory is refused in a system
// directory unless an explicit allowWrite names it: the user's, not a
// project's (a repository at such a place, /usr/local once was one, named
// "." and lifted the refusal). Here the system directory is an ancestor
// of the home directory.
func TestProjectCannotLiftSystemDirectoryRefusal(t *testing.T) {
	e := newEnv(t)
	home := filepath.Join(e.cwd, "h")
	load := func() error {
		_, _, err := Load(Options{Cwd: e.cwd, Home: home, ManagedFile: e.managed})
		return err
	}
	proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"sandbox":{"filesystem":{"allowWrite":["."]}}}`)
	if err := load(); err == nil || !strings.Contains(err.Error(), "system directory") {
		t.Errorf("a project's allowWrite lifted the refusal of a system directory: %v", err)
	}
	os.Remove(proj)
	e.write(filepath.Join(home, ".claude", "settings.json"), `{"sandbox":{"filesystem":{"allowWrite":["//`+strings.TrimPrefix(e.cwd, "/")+`"]}}}`)
	if err := load(); err != nil {
		t.Errorf("the user's own allowWrite of the directory: %v", err)
	}
}

// A project's permissions.defaultMode may not be bypassPermissions or
// acceptEdits: either allows what the user's ask rules would ask about
// (found by an attack pass: a project's "bypassPermissions" made `moat
// check -- curl x` allow under the user's ask rule Bash(curl:*)). plan and
// default stay a project's to set; the user's own settings may set any.
func TestProjectDefaultMode(t *testing.T) {
	e := newEnv(t)
	load := func() (*policy.Policy, error) {
		p, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
		return p, err
	}
	for _, mode := range []string{"bypassPermissions", "acceptEdits"} {
		for _, name := range []string{"settings.json", "settings.local.json"} {
			proj := e.write(filepath.Join(e.cwd, ".claude", name), `{"permissions":{"defaultMode":"`+mode+`"}}`)
			_, err := load()
			var se *Error
			if !errors.As(err, &se) || se.File != proj || se.Field != "permissions.defaultMode" || !strings.Contains(se.Reason, mode) {
				t.Errorf("a project's %s with defaultMode %s: %v", name, mode, err)
			}
			os.Remove(proj)
		}
		user := e.write(filepath.Join(e.home, ".claude", "settings.json"), `{"permissions":{"defaultMode":"`+mode+`"}}`)
		if p, err := load(); err != nil || p.Permissions.DefaultMode != mode {
			t.Errorf("the user's own defaultMode %s: %v", mode, err)
		}
		os.Remove(user)
	}
	for _, mode := range []string{"plan", "default"} {
		proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"permissions":{"defaultMode":"`+mode+`"}}`)
		if p, err := load(); err != nil || p.Permissions.DefaultMode != mode {
			t.Errorf("a project's defaultMode %s: %v", mode, err)
		}
		os.Remove(proj)
	}
}

// Claude Code's managed-settings.d: the *.json files beside the managed
// file, merged in alphabetical order on top of it (dotfiles skipped; the
// base file may be absent), are managed settings too (found by an attack
// pass: they were ignored, and an administrator's deny in one of them did
// nothing). Each is read with the managed file's checks (a regular file of
// at most 4 MiB); lists merge, a later file's scalar wins, managed-only
// switches count from them, and no file below undoes their denies.
func TestManagedDropIns(t *testing.T) {
	e := newEnv(t)
	d := filepath.Join(filepath.Dir(e.managed), "managed-settings.d")
	load := func() (*policy.Policy, []Source, error) {
		return Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
	}
	deny := e.write(filepath.Join(d, "10-secrets.json"), `{"sandbox":{"filesystem":{"denyRead":["~/secrets"]}},"permissions":{"defaultMode":"plan"}}`)
	p, srcs, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if !contains(paths(p.FS.DenyRead), filepath.Join(e.home, "secrets")) {
		t.Errorf("the drop-in's denyRead, without a managed file: %v", paths(p.FS.DenyRead))
	}
	if len(srcs) != 1 || srcs[0].File != deny || srcs[0].Level != LevelManaged {
		t.Errorf("sources %+v", srcs)
	}
	// With the base file and more drop-ins: a later file's scalar wins,
	// lists merge, dotfiles and other names are skipped.
	e.write(e.managed, `{"permissions":{"defaultMode":"default","deny":["Read(~/base)"]}}`)
	e.write(filepath.Join(d, "20-net.json"), `{"sandbox":{"network":{"allowManagedDomainsOnly":true,"allowedDomains":["corp.example"]}},"permissions":{"defaultMode":"acceptEdits"}}`)
	e.write(filepath.Join(d, ".30-hidden.json"), `not json`)
	e.write(filepath.Join(d, "README"), `not json`)
	e.write(filepath.Join(e.home, ".claude", "settings.json"), `{"permissions":{"defaultMode":"plan"},"sandbox":{"network":{"allowedDomains":["mine.example"]}}}`)
	p, srcs, err = load()
	if err != nil {
		t.Fatal(err)
	}
	if p.Permissions.DefaultMode != "acceptEdits" {
		t.Errorf("defaultMode %q: the last drop-in's scalar must win (over the base file and the user's)", p.Permissions.DefaultMode)
	}
	dr := paths(p.FS.DenyRead)
	if !contains(dr, filepath.Join(e.home, "secrets")) || !contains(dr, filepath.Join(e.home, "base")) {
		t.Errorf("denyRead %v", dr)
	}
	if !p.Net.AllowManagedDomainsOnly || len(p.Net.AllowedDomains) != 1 || p.Net.AllowedDomains[0].Pattern != "corp.example" || !p.Net.AllowedDomains[0].Managed {
		t.Errorf("a drop-in's allowManagedDomainsOnly: %v %+v", p.Net.AllowManagedDomainsOnly, p.Net.AllowedDomains)
	}
	var managed []string
	for _, s := range srcs {
		if s.Level == LevelManaged {
			managed = append(managed, filepath.Base(s.File))
		}
	}
	if strings.Join(managed, ",") != "20-net.json,10-secrets.json,managed.json" {
		t.Errorf("managed sources (strongest first) %v", managed)
	}
	// A project may not re-allow a drop-in's deny; the error names it.
	proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"permissions":{"allow":["Read(~/secrets/**)"]}}`)
	if _, _, err := load(); err == nil || !strings.Contains(err.Error(), deny) {
		t.Errorf("a project's allow of a drop-in's deny: %v", err)
	}
	os.Remove(proj)
	// Each drop-in is checked as the managed file is: errors name it.
	bad := e.write(filepath.Join(d, "40-bad.json"), `{"sandbox":{"enabeld":true}}`)
	if _, _, err := load(); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "sandbox.enabeld") {
		t.Errorf("a bad drop-in: %v", err)
	}
	os.Remove(bad)
	fifo := filepath.Join(d, "50-fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := load(); err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("a FIFO drop-in: %v", err)
	}
	os.Remove(fifo)
	// A managed-settings.d that is not a directory is an error; "-" reads
	// neither the managed file nor its drop-ins.
	os.RemoveAll(d)
	e.write(d, `{}`)
	if _, _, err := load(); err == nil || !strings.Contains(err.Error(), d) {
		t.Errorf("managed-settings.d a file: %v", err)
	}
	os.Remove(d)
	e.write(filepath.Join(d, "10-secrets.json"), `{"sandbox":{"filesystem":{"denyRead":["~/secrets"]}}}`)
	if p, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: "-"}); err != nil || contains(paths(p.FS.DenyRead), filepath.Join(e.home, "secrets")) {
		t.Errorf(`ManagedFile "-" read a drop-in: %v`, err)
	}
}

// allowManagedPermissionRulesOnly (a managed-only key of Claude Code's):
// when managed settings set it, the permission rules (allow, ask, deny) of
// every other file are dropped, for the permission engine and for the
// sandbox rules made from them, with a note (found by an attack pass: it
// was ignored, and a project's Read(~/secrets/**) allow undid a managed
// deny under it). As with allowManagedDomainsOnly, another file's is read
// and has no effect.
func TestAllowManagedPermissionRulesOnly(t *testing.T) {
	e := newEnv(t)
	d := filepath.Join(filepath.Dir(e.managed), "managed-settings.d")
	e.write(e.managed, `{"allowManagedPermissionRulesOnly":true,"permissions":{"deny":["Read(~/secrets/**)","Bash(curl:*)"],"allow":["Edit(./managed-out/**)"]}}`)
	proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"permissions":{"allow":["Read(~/secrets/**)","Bash(npm test)","Edit(./out/**)","WebFetch(domain:evil.example)"],"ask":["Bash(git push:*)"]},"sandbox":{"filesystem":{"allowWrite":["./build"]}}}`)
	user := e.write(filepath.Join(e.home, ".claude", "settings.json"), `{"permissions":{"deny":["Read(./.env)","WebFetch(domain:x.example)"]}}`)
	p, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
	if err != nil {
		t.Fatalf("the project's rules are dropped, so nothing is refused: %v", err)
	}
	if contains(paths(p.FS.AllowRead), filepath.Join(e.home, "secrets")) {
		t.Errorf("a project's Read allow under allowManagedPermissionRulesOnly: allowRead %v", paths(p.FS.AllowRead))
	}
	var rules []string
	for _, list := range [][]policy.Rule{p.Permissions.Allow, p.Permissions.Ask, p.Permissions.Deny} {
		for _, r := range list {
			rules = append(rules, r.Rule)
		}
	}
	if strings.Join(rules, ",") != "Edit(./managed-out/**),Read(~/secrets/**),Bash(curl:*)" {
		t.Errorf("permission rules %v, want the managed file's only", rules)
	}
	aw := paths(p.FS.AllowWrite)
	if contains(aw, filepath.Join(e.cwd, "out")) || !contains(aw, filepath.Join(e.cwd, "build")) || !contains(aw, filepath.Join(e.cwd, "managed-out")) {
		t.Errorf("allowWrite %v: the project's Edit rule must go, its allowWrite (not a permission rule) stay", aw)
	}
	if contains(paths(p.FS.DenyRead), filepath.Join(e.cwd, ".env")) || len(p.Net.AllowedDomains) != 0 || len(p.Net.DeniedDomains) != 0 {
		t.Errorf("the other files' Read deny and WebFetch rules must go: denyRead %v, domains %+v %+v", paths(p.FS.DenyRead), p.Net.AllowedDomains, p.Net.DeniedDomains)
	}
	if !hasNote(p.Notes, proj, "allowManagedPermissionRulesOnly") || !hasNote(p.Notes, user, "allowManagedPermissionRulesOnly") {
		t.Errorf("notes %q", p.Notes)
	}
	// From a drop-in too; and the last managed file that sets it decides.
	e.write(e.managed, `{"permissions":{"deny":["Read(~/secrets/**)"]}}`)
	e.write(filepath.Join(d, "50-rules.json"), `{"allowManagedPermissionRulesOnly":true}`)
	if p, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err != nil || len(p.Permissions.Allow) != 0 {
		t.Errorf("a drop-in's allowManagedPermissionRulesOnly: %v %+v", err, p.Permissions.Allow)
	}
	os.RemoveAll(d)
	// Without it the project's Read allow of the managed deny is refused
	// (TestProjectCannotReallowSecrets), and a non-managed file's
	// allowManagedPermissionRulesOnly does nothing.
	e.write(user, `{"allowManagedPermissionRulesOnly":true,"permissions":{"deny":["Read(./.env)"]}}`)
	if _, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err == nil || !strings.Contains(err.Error(), "permissions.allow[0]") {
		t.Errorf("without managed allowManagedPermissionRulesOnly: %v", err)
	}
	os.Remove(proj)
	if p, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err != nil || !contains(paths(p.FS.DenyRead), filepath.Join(e.cwd, ".env")) {
		t.Errorf("the user's allowManagedPermissionRulesOnly dropped rules: %v", err)
	}
	e.write(user, `{"allowManagedPermissionRulesOnly":"yes"}`)
	if _, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err == nil || !strings.Contains(err.Error(), "allowManagedPermissionRulesOnly") {
		t.Errorf("a string: %v", err)
	}
}

// The default secrets are those of the account's home as well as $HOME's:
// with HOME pointing elsewhere (or sudo -E), ~/.aws of the account was
// readable (found by an attack pass). An explicit Options.Home (moatd's
// client) is taken as given.
func TestDefaultSecretsOfTheAccountHome(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" || u.HomeDir == "/" {
		t.Skipf("no account home: %v", err)
	}
	e := newEnv(t)
	t.Setenv("HOME", e.home)
	p, _, err := Load(Options{Cwd: e.cwd, ManagedFile: e.managed})
	if err != nil {
		t.Fatal(err)
	}
	got := paths(p.FS.DenyRead)
	for _, want := range []string{filepath.Join(u.HomeDir, ".aws"), filepath.Join(e.home, ".aws")} {
		if !slices.Contains(got, want) {
			t.Errorf("denyRead %v lacks %s", got, want)
		}
	}
	p, _, err = Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(paths(p.FS.DenyRead), filepath.Join(u.HomeDir, ".aws")) {
		t.Errorf("with Options.Home, the process's account home was added too")
	}
}

// A project may not allow the host's loopback or a private, link-local or
// metadata address, in any spelling: a repository's allowedDomains
// ["127.0.0.1"] reached every service on the host's loopback (found by an
// attack pass). A public name or address stays a project's to allow; the
// user's own settings may allow a local one.
func TestProjectCannotAllowLocalAddresses(t *testing.T) {
	e := newEnv(t)
	for _, d := range []string{"127.0.0.1", "localhost", "localhost:5432", "0x7f000001", "127.1", "[::1]", "[::ffff:127.0.0.1]",
		"10.1.2.3:80", "192.168.1.1", "169.254.169.254", "[fe80::1]", "app.localhost", "0.0.0.0"} {
		for _, body := range []string{
			`{"sandbox":{"network":{"allowedDomains":["` + d + `"]}}}`,
			`{"permissions":{"allow":["WebFetch(domain:` + d + `)"]}}`,
		} {
			proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), body)
			_, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
			if err == nil || !strings.Contains(err.Error(), "a project's settings may not allow") {
				t.Errorf("a project's %s: %v, want a refusal", body, err)
			}
			os.Remove(proj)
			user := e.write(filepath.Join(e.home, ".claude", "settings.json"), body)
			if _, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err != nil {
				t.Errorf("the user's own %s: %v", body, err)
			}
			os.Remove(user)
		}
	}
	// An address of this host (not a special one: 203.0.113.7 stands for a
	// public address of the host's interface).
	saved := hostAddrs
	hostAddrs = func() ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil }
	defer func() { hostAddrs = saved }()
	for _, d := range []string{"203.0.113.7", "203.0.113.7:8765", "[::ffff:203.0.113.7]"} {
		proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"sandbox":{"network":{"allowedDomains":["`+d+`"]}}}`)
		if _, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err == nil || !strings.Contains(err.Error(), "an address of this host") {
			t.Errorf("a project's %s (an address of this host): %v, want a refusal", d, err)
		}
		os.Remove(proj)
	}
	e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"sandbox":{"network":{"allowedDomains":["registry.npmjs.org","*.github.com","93.184.216.34:443"]}}}`)
	if _, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err != nil {
		t.Errorf("public names and addresses: %v", err)
	}
	// The host's addresses unknown (no descriptor for the netlink socket):
	// a project's address literal is refused, not taken for another's.
	hostAddrs = func() ([]netip.Addr, error) { return nil, errors.New("too many open files") }
	if _, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err == nil || !strings.Contains(err.Error(), "could not be read: too many open files") {
		t.Errorf("a project's address literal with the host's addresses unknown: %v, want a refusal", err)
	}
}

// Where allowLocalBinding comes from is kept: a project's is refused where
// the host's network is shared (TestNoUsernsProjectLocalBinding), the
// user's is not.
func TestLocalBindingProvenance(t *testing.T) {
	e := newEnv(t)
	proj := e.write(filepath.Join(e.cwd, ".claude", "settings.json"), `{"sandbox":{"network":{"allowLocalBinding":true}}}`)
	p, _, err := Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
	if err != nil || !p.Net.AllowLocalBinding || !p.Net.LocalBindingByProject {
		t.Errorf("a project's: %+v %v", p.Net, err)
	}
	os.Remove(proj)
	e.write(filepath.Join(e.home, ".claude", "settings.json"), `{"sandbox":{"network":{"allowLocalBinding":true}}}`)
	if p, _, err = Load(Options{Cwd: e.cwd, Home: e.home, ManagedFile: e.managed}); err != nil || !p.Net.AllowLocalBinding || p.Net.LocalBindingByProject {
		t.Errorf("the user's: %+v %v", p.Net, err)
	}
}

// Managed settings are root's alone to write: one owned by another user or
// writable by its group or others is refused (a drop-in planted where a
// user could write would be obeyed as the administrator's: found by an
// attack pass).
func TestManagedSettingsRootOnly(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "managed-settings.json")
	if err := os.WriteFile(f, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(f, 0o644)
	if err := rootOnly(f); (err == nil) != (os.Getuid() == 0) {
		t.Errorf("0644, owned by uid %d: %v", os.Getuid(), err)
	}
	os.Chmod(f, 0o664)
	if err := rootOnly(f); err == nil || !strings.Contains(err.Error(), "root's alone to write") {
		t.Errorf("0664: %v, want a refusal", err)
	}
	if err := rootOnly(filepath.Join(dir, "absent")); err != nil {
		t.Errorf("an absent file: %v", err)
	}
	// A symbolic link (mode 0777 always) is judged by its owner and by
	// what it leads to (a link of root's to root's 0644 file loads: every
	// run was refused, found by an attack pass).
	os.Chmod(f, 0o644)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(f, link); err != nil {
		t.Fatal(err)
	}
	if err := rootOnly(link); (err == nil) != (os.Getuid() == 0) {
		t.Errorf("a link to a 0644 file, owned by uid %d: %v", os.Getuid(), err)
	}
	os.Chmod(f, 0o666)
	if err := rootOnly(link); err == nil {
		t.Errorf("a link to a 0666 file: no refusal")
	}
}
