package darwin

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/planted"
	"github.com/moat-sandbox/moat/runtime/policy"
)

var update = flag.Bool("update", false, "rewrite the golden profiles in testdata/")

// A fixed machine for the golden profiles: no disk is read.
const (
	gHome = "/Users/dev"
	gWork = "/Users/dev/src/app"
)

// macResolve is a Mac's resolution without a Mac: the root symlinks, and
// one symlinked secret (~/.aws -> /Volumes/vault/aws).
func macResolve(p string) (string, error) {
	if p == gHome+"/.aws" || strings.HasPrefix(p, gHome+"/.aws/") {
		return "/Volumes/vault/aws" + strings.TrimPrefix(p, gHome+"/.aws"), nil
	}
	return MacRoot(p), nil
}

// macReadlink is macResolve's links, one at a time.
func macReadlink(p string) (string, error) {
	switch p {
	case "/tmp", "/var", "/etc":
		return "private" + p, nil
	case gHome + "/.aws":
		return "/Volumes/vault/aws", nil
	}
	return "", os.ErrInvalid
}

func pr(path, src string) policy.PathRule {
	return policy.PathRule{Path: path, Glob: policy.HasGlob(path), Source: src}
}

// goldenBase is what settings.Load makes of Claude Code settings with no
// sandbox section: the working directory writable, the default secrets.
func goldenBase() *policy.Policy {
	p := &policy.Policy{Cwd: gWork, Home: gHome, Violations: true}
	p.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	p.FS.DenyRead = policy.DefaultDenyRead(gHome)
	p.FS.AllowWrite = []policy.PathRule{{Path: gWork, Source: "working directory"}}
	return p
}

// goldenProtect is what Survey finds in a repository at gWork, written
// out from the policy's lists (Survey itself is tested on real trees).
func goldenProtect(pol *policy.Policy) []Protection {
	var out []Protection
	for _, n := range append(append([]string(nil), policy.MandatoryFiles...), policy.MandatoryDirs...) {
		out = append(out, Protection{Path: gWork + "/" + n, Why: "mandatory: " + n + " is never writable"})
	}
	out = append(out, Protection{Path: gWork + "/HEAD", Why: "git: a HEAD here would make this directory a repository"})
	for _, n := range policy.GitReserved {
		if n == "config" && pol.FS.AllowGitConfig {
			continue
		}
		out = append(out, Protection{Path: gWork + "/.git/" + n, Why: "git: " + n + " is never writable"})
	}
	return out
}

type goldenCase struct {
	name string
	pol  func() *policy.Policy
	opt  func(*Options)
}

var goldenCases = []goldenCase{
	{name: "empty", pol: func() *policy.Policy {
		return &policy.Policy{Cwd: gWork, Home: gHome, FS: policy.FS{MandatoryDenySearchDepth: 3}}
	}},
	{name: "defaults", pol: goldenBase},
	{name: "srt-like", pol: func() *policy.Policy {
		// ~/.srt-settings.json: {"network":{"allowedDomains":["example.com","*.github.com","registry.npmjs.org"],
		// "deniedDomains":[]},"filesystem":{"denyRead":["~/.ssh"],"allowWrite":[".","/tmp/claude"],"denyWrite":[]}}
		p := goldenBase()
		p.FS.AllowWrite = []policy.PathRule{pr(gWork, "~/.srt-settings.json: filesystem.allowWrite[0]"), pr("/tmp/claude", "~/.srt-settings.json: filesystem.allowWrite[1]")}
		p.FS.DenyRead = append(p.FS.DenyRead, pr(gHome+"/.ssh", "~/.srt-settings.json: filesystem.denyRead[0]"))
		p.Net.AllowedDomains = []policy.DomainRule{{Pattern: "example.com"}, {Pattern: "*.github.com"}, {Pattern: "registry.npmjs.org"}}
		p.Sources = []string{gHome + "/.srt-settings.json"}
		return p
	}},
	{name: "globs", pol: func() *policy.Policy {
		p := goldenBase()
		p.FS.DenyRead = append(p.FS.DenyRead, pr(gWork+"/**/*.pem", "s: denyRead[0]"), pr(gWork+"/config/secrets.[jy]ml", "s: denyRead[1]"), pr(gWork+"/keys/*/private", "s: denyRead[2]"))
		p.FS.AllowRead = []policy.PathRule{pr(gWork+"/**/test-*.pem", "s: allowRead[0]")}
		p.FS.AllowWrite = append(p.FS.AllowWrite, pr("/tmp/build-?/out", "s: allowWrite[1]"))
		p.FS.DenyWrite = []policy.PathRule{pr(gWork+"/**/*.lock", "s: denyWrite[0]"), pr(gWork+"/dist/[!a-z]*", "s: denyWrite[1]")}
		return p
	}},
	{name: "unix-sockets", pol: func() *policy.Policy {
		p := goldenBase()
		p.Net.AllowUnixSockets = []policy.PathRule{pr("/var/run/docker.sock", "s: allowUnixSockets[0]"), pr(gHome+"/.gnupg/S.gpg-agent*", "s: allowUnixSockets[1]")}
		return p
	}},
	{name: "all-unix-sockets", pol: func() *policy.Policy {
		p := goldenBase()
		p.Net.AllowAllUnixSockets = true
		return p
	}},
	{name: "local-binding", pol: func() *policy.Policy {
		p := goldenBase()
		p.Net.AllowLocalBinding = true
		p.BestEffort = true
		p.Net.AllowedDomains = []policy.DomainRule{{Pattern: "localhost:5432"}}
		return p
	}},
	{name: "managed-domains", pol: func() *policy.Policy {
		// Domains are the proxy's business: a managed-only policy makes
		// the same profile as any other that allows destinations.
		p := goldenBase()
		p.Net.AllowManagedDomainsOnly = true
		p.Net.AllowedDomains = []policy.DomainRule{{Pattern: "*.corp.example", Managed: true}, {Pattern: "evil.example"}}
		p.Sources = []string{"/Library/Application Support/ClaudeCode/managed-settings.json", gWork + "/.claude/settings.json"}
		return p
	}},
	{name: "external-proxy", pol: func() *policy.Policy {
		p := goldenBase()
		p.Net.HTTPProxyPort, p.Net.SOCKSProxyPort = 8888, 8889
		p.Net.AllowedDomains = []policy.DomainRule{{Pattern: "example.com"}}
		return p
	}, opt: func(o *Options) { o.HTTPProxyPort, o.SOCKSProxyPort = 0, 0 }},
	{name: "home-writable-git-config", pol: func() *policy.Policy {
		p := goldenBase()
		p.FS.AllowWrite = append(p.FS.AllowWrite, pr(gHome, "s: allowWrite[1]"))
		p.FS.AllowGitConfig = true
		p.FS.AllowRead = []policy.PathRule{pr(gHome+"/.aws/config", "s: allowRead[0]")}
		p.Protect = []string{"/usr/local/bin/moat"}
		return p
	}},
	{name: "terminal-tmpdir", pol: goldenBase, opt: func(o *Options) {
		o.TTY = "/dev/ttys004"
		o.TmpDir = "/var/folders/xy/abc123/T/moat-run-1"
	}},
	{name: "odd-names", pol: func() *policy.Policy {
		p := goldenBase()
		p.FS.AllowWrite = append(p.FS.AllowWrite, pr(`/Users/dev/My "Quoted" \ Dir`, "s: allowWrite[1]"))
		p.FS.DenyRead = append(p.FS.DenyRead, pr(gWork+`/a(b)c [x]/p$1.txt`, "s: denyRead[x]"))
		p.FS.DenyWrite = []policy.PathRule{{Path: gWork + "/lit[eral]", Source: "s: denyWrite[0] (a name, not a glob)"}}
		return p
	}},
}

func goldenOptions(pol *policy.Policy) Options {
	return Options{Tag: testTag, HTTPProxyPort: testHTTP, SOCKSProxyPort: testSOCKS, Resolve: macResolve, Readlink: macReadlink, Protect: goldenProtect(pol)}
}

// TestGolden compares each profile with testdata/NAME.sb (go test
// ./darwin -update rewrites them), and holds every one of them to the
// forbidden-rule checks.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			pol := c.pol()
			o := goldenOptions(pol)
			if c.opt != nil {
				c.opt(&o)
			}
			p, err := Generate(pol, o)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Document()
			file := filepath.Join("testdata", c.name+".sb")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./darwin -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the generated profile (go test ./darwin -update, then review the diff):\n%s", file, lineDiff(string(want), got))
			}
			for _, sb := range readBoth(t, p) {
				forbidden(t, sb, pol, o)
			}
			textForbidden(t, p.Text)
		})
	}
}

// lineDiff shows the first lines that differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return ""
}

// textForbidden are forms no moat profile may hold, whatever the policy
// (in its rules: comments show policy strings, which may spell anything).
func textForbidden(t *testing.T, src string) {
	t.Helper()
	es, err := parseSBPL(src)
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, e := range es {
		rules = append(rules, e.String())
	}
	text := strings.Join(rules, "\n")
	for _, bad := range []string{
		"(allow default", "(allow network*", "(allow network-outbound)", `(remote ip "*:`, `(local ip "*:`,
		"(allow file-write*)", "(allow mach-lookup)", "(allow sysctl-read)", "global-name-prefix",
		`"com.apple.SecurityServer"`, `"com.apple.securityd.xpc"`, `"com.apple.dnssd.service"`,
		`"kern.proc.all"`, `"kern.procargs`, "(allow process-info*)", "(allow signal)", "lsopen",
		"appleevent-send", "mach-register", "iokit", "(allow file-ioctl)", "(allow pseudo-tty",
		`"/dev/ptmx"`, "ttys[", "(allow process-exec*", "mach-priv-task-port",
	} {
		if strings.Contains(text, bad) {
			t.Errorf("the profile holds the forbidden %q", bad)
		}
	}
}

// forbidden checks the parsed rules: every allow is bounded, every write
// allow names a writable tree, the private TMPDIR, the run's terminal or a
// harmless device.
func forbidden(t *testing.T, sb *sbProfile, pol *policy.Policy, o Options) {
	t.Helper()
	if sb.deflt {
		t.Fatal("(allow default)")
	}
	if sb.message != o.Tag {
		t.Errorf("the default rule's message is %q, not the run's tag", sb.message)
	}
	roots := map[string]bool{}
	var inside []string // a path in each literal writable tree
	for _, r := range pol.FS.AllowWrite {
		res := resolver{fn: o.Resolve}
		rs, err := res.resolveRules([]policy.PathRule{r}, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range rs {
			roots[x.filter().String()] = true
			if !x.isGlob() {
				inside = append(inside, x.path, x.path+"/f")
			}
		}
	}
	if o.TmpDir != "" {
		c, _ := o.Resolve(o.TmpDir)
		roots[list("subpath", user(c)).String()] = true
		inside = append(inside, c+"/f")
	}
	for _, p := range append(inside, "/dev/null") {
		for _, op := range neverOps {
			if ok, err := sb.decide(sbQuery{op: op, path: p}); ok || err != nil {
				t.Errorf("%s allowed on %s (%v)", op, p, err)
			}
		}
	}
	okDevice := func(s string) bool {
		return slices.Contains(devWrite, s) || s == devFD || (o.TTY != "" && (s == o.TTY || s == "/dev/tty"))
	}
	for _, r := range sb.rules {
		unbounded := len(r.filters) == 0
		if r.allow && unbounded {
			for _, op := range r.ops {
				switch op {
				case "process-exec", "process-fork", "ipc-posix-sem", "ipc-posix-shm", "user-preference-read", "file-map-executable":
				case "file-read*":
					// reads are allowed everywhere but denyRead
				default:
					t.Errorf("an unbounded allow of %s: %s", op, r.src)
				}
			}
		}
		if r.message != o.Tag && !r.allow {
			t.Errorf("a deny without the run's tag: %s", r.src)
		}
		if !r.allow {
			continue
		}
		for _, op := range r.ops {
			switch op {
			case "file-write*", "file-write-create", "file-write-unlink", "file-write-data":
				for _, f := range r.filters {
					head := f.list[0].atom
					s := ""
					if head != "require-all" {
						s, _ = sb.str(f.list[1])
					}
					switch {
					case head == "literal" && okDevice(s), head == "subpath" && okDevice(s):
					case head == "require-all":
						// an allowRead projected onto writes: bounded by the writable trees
						if last := f.list[len(f.list)-1]; last.list[0].atom != "require-any" {
							t.Errorf("a write allow not bounded by the writable trees: %s", f)
						}
					default:
						if !roots[stringOf(sb, f)] {
							t.Errorf("a write allow outside allowWrite: %s", f)
						}
					}
				}
			case "network-outbound", "network-bind", "network-inbound", "network*":
				for _, f := range r.filters {
					if len(f.list) == 3 && f.list[1].atom != "unix-socket" {
						s, _ := sb.str(f.list[2])
						host, port, _ := splitHostPort(s)
						if host != "localhost" {
							t.Errorf("a network allow beyond loopback: %s", f)
						}
						if port == "*" && !pol.Net.AllowLocalBinding {
							t.Errorf("every loopback port without allowLocalBinding: %s", f)
						}
						if port != "*" && port != strconv.Itoa(o.HTTPProxyPort) && port != strconv.Itoa(o.SOCKSProxyPort) &&
							port != strconv.Itoa(pol.Net.HTTPProxyPort) && port != strconv.Itoa(pol.Net.SOCKSProxyPort) {
							t.Errorf("a loopback port that is not the proxy's: %s", f)
						}
					}
				}
			}
		}
	}
}

// stringOf renders a filter with its parameters substituted, as the
// generator's expr.String would.
func stringOf(sb *sbProfile, f sx) string {
	var parts []string
	for _, x := range f.list {
		switch {
		case x.isLst && len(x.list) == 2 && x.list[0].atom == "param":
			v, _ := sb.str(x)
			parts = append(parts, quote(v))
		case x.isLst:
			parts = append(parts, stringOf(sb, x))
		case x.isStr:
			parts = append(parts, quote(x.atom))
		default:
			parts = append(parts, x.atom)
		}
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// The macOS-only promises, beyond the shared table.

func TestMacPaths(t *testing.T) {
	pol := goldenBase()
	pol.FS.AllowWrite = append(pol.FS.AllowWrite, pr("/tmp/build", "s"))
	pol.FS.DenyRead = append(pol.FS.DenyRead, pr("/etc/moat-secret", "s"))
	p, err := Generate(pol, goldenOptions(pol))
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, p) {
		expect(t, sb.writable, "/private/tmp/build/a.o", true, "the real path of an allowWrite under /tmp")
		expect(t, sb.writable, "/private/tmp/other", false, "the rest of /tmp is the host's, not writable")
		expect(t, sb.readable, "/private/etc/moat-secret", false, "the real path of a denyRead under /etc")
		expect(t, sb.readable, "/Volumes/vault/aws/credentials", false, "a secret behind a symlink: its target is denied")
		expect(t, sb.readable, gHome+"/.aws", false, "and the symlink itself")
		expect(t, sb.readable, "/private/etc/hosts", true, "the rest of /etc")
	}
}

func TestDevicesAndTerminals(t *testing.T) {
	pol := goldenBase()
	plain, err := Generate(pol, goldenOptions(pol))
	if err != nil {
		t.Fatal(err)
	}
	o := goldenOptions(pol)
	o.TTY = "/dev/ttys004"
	withTTY, err := Generate(pol, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, plain) {
		expect(t, sb.writable, "/dev/null", true, "/dev/null")
		expect(t, sb.readable, "/dev/urandom", true, "/dev/urandom")
		expect(t, sb.readable, "/dev/fd/3", true, "the command's own descriptors")
		expect(t, sb.readable, "/dev/ttys004", false, "a terminal of the host: reading it would take its keystrokes")
		expect(t, sb.readable, "/dev/tty", false, "no controlling terminal without a pty of the run's own")
		expect(t, sb.readable, "/dev/disk0", false, "a disk")
		expect(t, sb.readable, "/dev/cu.usbserial", false, "a serial port")
	}
	for _, sb := range readBoth(t, withTTY) {
		expect(t, sb.readable, "/dev/ttys004", true, "the run's own terminal")
		expect(t, sb.writable, "/dev/ttys004", true, "the run's own terminal")
		expect(t, sb.readable, "/dev/ttys003", false, "another terminal of the host")
		expect(t, sb.writable, "/dev/ttys003", false, "another terminal of the host")
		ok, err := sb.decide(sbQuery{op: "file-ioctl", path: "/dev/ttys003"})
		if err != nil || ok {
			t.Errorf("ioctl (TIOCSTI) on another terminal: %v %v", ok, err)
		}
		ok, err = sb.decide(sbQuery{op: "file-ioctl", path: "/dev/ttys004"})
		if err != nil || !ok {
			t.Errorf("ioctl on the run's terminal: %v %v", ok, err)
		}
	}
}

func TestPrivateTmpDir(t *testing.T) {
	pol := goldenBase()
	pol.FS.AllowWrite = nil
	o := goldenOptions(pol)
	o.TmpDir = "/var/folders/xy/abc/T/moat-1"
	p, err := Generate(pol, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, p) {
		expect(t, sb.writable, "/private/var/folders/xy/abc/T/moat-1/f", true, "the run's TMPDIR")
		expect(t, sb.writable, "/private/var/folders/xy/abc/T/other", false, "the user's other temporary files")
		expect(t, sb.writable, gWork+"/a", false, "read-only policy: nothing else")
	}
}

func TestNetwork(t *testing.T) {
	pol := goldenBase()
	pol.Net.AllowedDomains = []policy.DomainRule{{Pattern: "example.com"}}
	p, err := Generate(pol, goldenOptions(pol))
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, p) {
		for _, c := range []struct {
			host string
			port int
			want bool
		}{
			{"127.0.0.1", testHTTP, true}, {"::1", testSOCKS, false}, {"::ffff:127.0.0.1", testHTTP, true},
			{"127.0.0.1", 22, false}, {"192.168.1.1", testHTTP, false}, {"8.8.8.8", 53, false}, {"10.0.0.1", 443, false},
		} {
			if got, err := sb.reachable(c.host, c.port); err != nil || got != c.want {
				t.Errorf("reach %s:%d = %v (%v), want %v", c.host, c.port, got, err, c.want)
			}
		}
		if ok, _ := sb.bind("127.0.0.1", 8080); ok {
			t.Error("binding without allowLocalBinding")
		}
		if ok, _ := sb.decide(sbQuery{op: "mach-lookup", name: "com.apple.dnssd.service"}); ok {
			t.Error("DNS through mDNSResponder")
		}
		if ok, _ := sb.decide(sbQuery{op: "mach-lookup", name: "com.apple.trustd.agent"}); !ok {
			t.Error("certificate trust (Go's crypto/x509, Apple's curl) needs trustd")
		}
		if ok, _ := sb.decide(sbQuery{op: "mach-lookup", name: "com.apple.SecurityServer"}); ok {
			t.Error("the keychain")
		}
		if ok, _ := sb.decide(sbQuery{op: "sysctl-read", name: "kern.procargs2"}); ok {
			t.Error("other processes' arguments and environment")
		}
		if ok, _ := sb.decide(sbQuery{op: "sysctl-read", name: "hw.optional.arm.FEAT_SHA256"}); !ok {
			t.Error("CPU features")
		}
		if ok, _ := sb.decide(sbQuery{op: "signal"}); ok {
			t.Error("a signal to a process outside the sandbox")
		}
		if ok, _ := sb.decide(sbQuery{op: "signal", same: true}); !ok {
			t.Error("a signal inside the sandbox")
		}
	}
	pol.BestEffort = true
	pol.Net.AllowLocalBinding = true
	p, err = Generate(pol, goldenOptions(pol))
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, p) {
		if ok, _ := sb.bind("127.0.0.1", 8080); !ok {
			t.Error("allowLocalBinding: loopback")
		}
		if ok, _ := sb.bind("0.0.0.0", 8080); ok {
			t.Error("allowLocalBinding: every interface (reachable from the network)")
		}
		if ok, _ := sb.reachable("10.0.0.1", 443); ok {
			t.Error("allowLocalBinding opened the network")
		}
	}
	if len(p.Notes) == 0 {
		t.Error("no note says what best effort gave away")
	}
}

func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*policy.Policy, *Options)
		is   error
	}{
		{"filesystem disabled", func(p *policy.Policy, _ *Options) { p.FS.Disabled = true }, ErrUnexpressible},
		{"local binding without best effort", func(p *policy.Policy, _ *Options) { p.Net.AllowLocalBinding = true }, ErrUnexpressible},
		{"network without a proxy", func(p *policy.Policy, o *Options) {
			p.Net.AllowedDomains = []policy.DomainRule{{Pattern: "example.com"}}
			o.HTTPProxyPort, o.SOCKSProxyPort = 0, 0
		}, nil},
		{"a class with a multi-byte character", func(p *policy.Policy, _ *Options) {
			p.FS.DenyRead = append(p.FS.DenyRead, pr(gWork+"/[é]", "s"))
		}, errGlob},
		{"a negated class with ]", func(p *policy.Policy, _ *Options) {
			p.FS.DenyWrite = append(p.FS.DenyWrite, pr(gWork+`/[^\]]`, "s"))
		}, errGlob},
		{"a reversed range", func(p *policy.Policy, _ *Options) {
			p.FS.AllowWrite = append(p.FS.AllowWrite, pr(gWork+"/[z-a]", "s"))
		}, errGlob},
		{"an unterminated class", func(p *policy.Policy, _ *Options) {
			p.FS.DenyRead = append(p.FS.DenyRead, pr(gWork+"/[abc", "s"))
		}, errGlob},
		{"a newline in a path", func(p *policy.Policy, _ *Options) {
			p.FS.DenyRead = append(p.FS.DenyRead, policy.PathRule{Path: gWork + "/a\n(allow default)"})
		}, nil},
		{"a relative path", func(p *policy.Policy, _ *Options) {
			p.FS.AllowWrite = append(p.FS.AllowWrite, policy.PathRule{Path: "relative"})
		}, nil},
		{"a bad tag", func(_ *policy.Policy, o *Options) { o.Tag = `x") (allow default` }, nil},
		{"a terminal that is not a device", func(_ *policy.Policy, o *Options) { o.TTY = "/Users/dev/.ssh/id_rsa" }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			pol := goldenBase()
			o := goldenOptions(pol)
			c.edit(pol, &o)
			p, err := Generate(pol, o)
			if err == nil {
				t.Fatalf("generated:\n%s", p.Inline())
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v is not %v", err, c.is)
			}
		})
	}
}

// TestNoFileFlags: no path, in a writable tree or not, takes file flags:
// a plant made immutable (chflags uchg, UF_IMMUTABLE, which any owner may
// set) or append-only could not be moved out by the git audit after the
// run.
func TestNoFileFlags(t *testing.T) {
	pol := goldenBase()
	o := goldenOptions(pol)
	o.TmpDir = "/var/folders/xy/abc/T/moat-1"
	p, err := Generate(pol, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, p) {
		for _, path := range []string{gWork + "/.git/hooks/pre-commit", gWork + "/sub/.git/config", gWork + "/a.txt", "/private/var/folders/xy/abc/T/moat-1/f"} {
			expect(t, sb.writable, path, !strings.Contains(path, "/.git/hooks"), "the file's data")
			ok, err := sb.decide(sbQuery{op: "file-write-flags", path: path})
			if err != nil || ok {
				t.Errorf("file-write-flags on %s: %v %v", path, ok, err)
			}
		}
	}
}

// TestNoSetID: no path takes a set-user-ID or set-group-ID bit (chmod
// u+s, g+s): a set-id file left in a writable tree runs as its owner for
// whoever runs it later. Linux refuses those modes too.
func TestNoSetID(t *testing.T) {
	pol := goldenBase()
	o := goldenOptions(pol)
	o.TmpDir = "/var/folders/xy/abc/T/moat-1"
	p, err := Generate(pol, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, p) {
		for _, path := range []string{gWork + "/bin/tool", gWork + "/a.txt", "/private/var/folders/xy/abc/T/moat-1/f"} {
			expect(t, sb.writable, path, true, "the file's data and mode")
			ok, err := sb.decide(sbQuery{op: "file-write-setugid", path: path})
			if err != nil || ok {
				t.Errorf("file-write-setugid on %s: %v %v", path, ok, err)
			}
		}
	}
}

// TestProtectionsOnlyWhereWritable keeps the profile to the protections
// that change something, and checks that every one of them holds.
func TestProtectionsOnlyWhereWritable(t *testing.T) {
	pol := goldenBase()
	o := goldenOptions(pol)
	o.Protect = append(o.Protect, Protection{Path: "/etc/passwd", Why: "not writable anyway"}, Protection{Path: gHome + "/.bashrc", Why: "not writable anyway"})
	p, err := Generate(pol, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range p.Protected {
		if !strings.HasPrefix(pr.Path, gWork+"/") {
			t.Errorf("a protection outside the writable trees: %s", pr.Path)
		}
	}
	for _, sb := range readBoth(t, p) {
		for _, pr := range p.Protected {
			expect(t, sb.writable, pr.Path, false, pr.Why)
			expect(t, sb.writable, pr.Path+"/below", false, pr.Why)
			expect(t, sb.readable, pr.Path, true, "a protection is read-only, not hidden")
		}
		expect(t, sb.movable, gWork, false, "the writable tree holding protections")
		expect(t, sb.movable, gWork+"/.git", false, "a directory holding protections")
		expect(t, sb.movable, gWork+"/src", true, "a directory holding none")
	}
}

// TestExplain names the rule behind a reported denial.
func TestExplain(t *testing.T) {
	pol := goldenBase()
	pol.FS.DenyWrite = []policy.PathRule{pr(gWork+"/cfg", "s: denyWrite[0]")}
	p, err := Generate(pol, goldenOptions(pol))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ op, target, want string }{
		{"file-read-data", gHome + "/.ssh/id_rsa", "denyRead default: secrets"},
		{"file-write-create", gWork + "/.bashrc", "mandatory: .bashrc is never writable"},
		{"file-write-data", gWork + "/cfg/x", "denyWrite s: denyWrite[0]"},
		{"file-write-create", "/etc/x", "read-only: not in allowWrite"},
		{"file-write-unlink", gWork, "above a protected path: it cannot be renamed, removed or created"},
		{"network-outbound", "1.1.1.1:443", "only moat's proxy is reachable"},
		{"network-outbound", "/var/run/docker.sock", "not in network.allowUnixSockets"},
		{"mach-lookup", "com.apple.dnssd.service", "a system service the sandbox does not reach"},
	} {
		if got := p.Explain(c.op, c.target); got != c.want {
			t.Errorf("Explain(%s, %s) = %q, want %q", c.op, c.target, got, c.want)
		}
	}
}

func expect(t *testing.T, f func(string) (bool, error), path string, want bool, why string) {
	t.Helper()
	got, err := f(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if got != want {
		t.Errorf("%s: %v, want %v (%s)", path, got, want, why)
	}
}

// TestGlobs reads the globs golden policy back.
func TestGlobs(t *testing.T) {
	var c goldenCase
	for _, g := range goldenCases {
		if g.name == "globs" {
			c = g
		}
	}
	pol := c.pol()
	o := goldenOptions(pol)
	o.CaseSensitive = func(string) bool { return true } // the globs as written
	p, err := Generate(pol, o)
	if err != nil {
		t.Fatal(err)
	}
	folded, err := Generate(pol, goldenOptions(pol))
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, folded) {
		expect(t, sb.readable, gWork+"/certs/SERVER.PEM", false, "**/*.pem, in any case")
		expect(t, sb.readable, gWork+"/Config/Secrets.YML", false, "[jy], in any case")
		expect(t, sb.readable, gWork+"/config/secrets.xml", true, "[jy]")
		expect(t, sb.readable, gWork+"/KEYS/a/Private", false, "keys/*/private")
		expect(t, sb.movable, gWork+"/KEYS/a", false, "renaming a directory between the base and a match, in any case")
		expect(t, sb.writable, gWork+"/a/b/YARN.LOCK", false, "denyWrite **/*.lock")
		expect(t, sb.writable, gWork+"/dist/Bundle.js", false, "[!a-z]: B is bundle.js's b on such a volume")
		expect(t, sb.writable, gWork+"/dist/.bundle.js", true, ". is not in [!a-z]")
	}
	for _, sb := range readBoth(t, p) {
		expect(t, sb.readable, gWork+"/certs/SERVER.PEM", true, "a case-sensitive volume: another name")
		expect(t, sb.readable, gWork+"/certs/server.pem", false, "**/*.pem")
		expect(t, sb.readable, gWork+"/server.pem", false, "** spans no directory too")
		expect(t, sb.readable, gWork+"/certs/test-a.pem", true, "allowRead **/test-*.pem names the same node: it wins the tie")
		expect(t, sb.readable, gWork+"/certs/server.pem.txt", true, "not a match")
		expect(t, sb.readable, gWork+"/config/secrets.yml", false, "[jy]")
		expect(t, sb.readable, gWork+"/config/secrets.jml", false, "[jy]")
		expect(t, sb.readable, gWork+"/config/secrets.xml", true, "[jy]")
		expect(t, sb.readable, gWork+"/config/secrets.[jy]ml", false, "the pattern's own spelling, a file of that name")
		expect(t, sb.readable, gWork+"/keys/a/private", false, "keys/*/private")
		expect(t, sb.readable, gWork+"/keys/a/private/id", false, "below a match")
		expect(t, sb.readable, gWork+"/keys/a/b/private", true, "* spans one segment")
		expect(t, sb.movable, gWork+"/keys/a", false, "renaming a directory between the base and a match")
		expect(t, sb.movable, gWork+"/keys", false, "the glob's base")
		expect(t, sb.writable, "/private/tmp/build-1/out/a.o", true, "build-?/out")
		expect(t, sb.writable, "/private/tmp/build-12/out/a.o", false, "? is one character")
		expect(t, sb.writable, gWork+"/a/b/yarn.lock", false, "denyWrite **/*.lock")
		expect(t, sb.writable, gWork+"/dist/Bundle.js", true, "[!a-z] is Go's class of '!' and a-z: B is not in it")
		expect(t, sb.writable, gWork+"/dist/bundle.js", false, "b is")
	}
}

// TestPlantedWriteLink: a writable path that goes through a symlink inside
// another writable tree is refused, naming where it leads: an earlier run
// could have planted work/out -> $HOME, and --write out would have made
// the home directory (~/Library/LaunchAgents) writable. A real directory
// there is taken as it is.
func TestPlantedWriteLink(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	work := filepath.Join(home, "src/app")
	for _, d := range []string{filepath.Join(home, "Library/LaunchAgents"), filepath.Join(work, "real")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(home, filepath.Join(work, "out")); err != nil {
		t.Fatal(err)
	}
	gen := func(extra ...string) (*Profile, error) {
		pol := &policy.Policy{Cwd: work, Home: home, Violations: true}
		pol.FS.MandatoryDenySearchDepth = 1
		pol.FS.AllowWrite = []policy.PathRule{{Path: work, Source: "working directory"}}
		for _, p := range extra {
			pol.FS.AllowWrite = append(pol.FS.AllowWrite, policy.PathRule{Path: p, Source: "--write " + p})
		}
		return Generate(pol, Options{Tag: testTag, HTTPProxyPort: testHTTP})
	}
	for _, p := range []string{filepath.Join(work, "out"), filepath.Join(work, "out/Library/LaunchAgents")} {
		_, err := gen(p)
		var l *planted.Link
		if !errors.As(err, &l) {
			t.Fatalf("--write %s: %v, want a planted link", p, err)
		}
		if l.To != home || !strings.Contains(err.Error(), "symlink inside the writable tree "+MacRoot(work)) {
			t.Errorf("--write %s: %v", p, err)
		}
	}
	p, err := gen(filepath.Join(work, "real"))
	if err != nil {
		t.Fatalf("a real directory: %v", err)
	}
	for _, sb := range readBoth(t, p) {
		expect(t, sb.writable, MacRoot(filepath.Join(home, "Library/LaunchAgents/evil.plist")), false, "the home directory")
		expect(t, sb.writable, MacRoot(filepath.Join(work, "real/a")), true, "the real directory")
	}
}

// TestPlantedSocketLink: an allowUnixSockets path is resolved only outside
// the writable trees. A symlink inside one on its way (dev.sock ->
// /var/run/docker.sock, planted by an earlier run; a planted directory;
// one reached through the user's own link outside the trees) is refused,
// naming where it leads; an allowed path inside a writable tree is
// read-only and its directories pinned, so that the command cannot put a
// symlink there during the run; a glob's matches there too.
func TestPlantedSocketLink(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "app")
	run := filepath.Join(dir, "var/run")
	docker := filepath.Join(run, "docker.sock")
	for _, d := range []string{filepath.Join(work, ".run"), filepath.Join(work, "sockets"), run, filepath.Join(dir, "ro")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(docker, nil, 0o600))
	must(os.Symlink(docker, filepath.Join(work, ".run/dev.sock")))                    // planted
	must(os.Symlink(run, filepath.Join(work, "planted")))                             // planted directory
	must(os.Symlink(filepath.Join(work, "planted"), filepath.Join(dir, "ro/varrun"))) // the user's link, into the tree
	must(os.Symlink(run, filepath.Join(dir, "ro/run")))                               // the user's link, outside the trees
	gen := func(sockets ...string) (*Profile, error) {
		pol := &policy.Policy{Cwd: work, Home: dir, Violations: true}
		pol.FS.MandatoryDenySearchDepth = 1
		pol.FS.AllowWrite = []policy.PathRule{{Path: work, Source: "working directory"}}
		for i, s := range sockets {
			pol.Net.AllowUnixSockets = append(pol.Net.AllowUnixSockets, policy.PathRule{Path: s, Glob: policy.HasGlob(s), Source: "allowUnixSockets[" + strconv.Itoa(i) + "]"})
		}
		return Generate(pol, Options{Tag: testTag, HTTPProxyPort: testHTTP})
	}
	for _, s := range []string{filepath.Join(work, ".run/dev.sock"), filepath.Join(work, "planted/docker.sock"), filepath.Join(dir, "ro/varrun/docker.sock"), filepath.Join(work, "planted/*.sock")} {
		_, err := gen(s)
		var l *planted.Link
		if !errors.As(err, &l) {
			t.Errorf("%s: %v, want a planted link", s, err)
			continue
		}
		if !strings.Contains(err.Error(), "symlink inside the writable tree "+MacRoot(work)) || !strings.Contains(l.To, run) {
			t.Errorf("%s: %v", s, err)
		}
	}
	must(os.Remove(filepath.Join(work, ".run/dev.sock")))
	p, err := gen(filepath.Join(work, ".run/dev.sock"), filepath.Join(dir, "ro/run/docker.sock"), filepath.Join(work, "sockets/*.sock"))
	if err != nil {
		t.Fatal(err)
	}
	m := func(p string) string { return MacRoot(p) }
	for _, sb := range readBoth(t, p) {
		expect(t, sb.unixConnect, m(filepath.Join(work, ".run/dev.sock")), true, "the allowed path")
		expect(t, sb.unixConnect, m(docker), true, "named through the user's link outside the trees")
		expect(t, sb.unixConnect, m(filepath.Join(work, "sockets/a.sock")), true, "the glob")
		expect(t, sb.writable, m(filepath.Join(work, ".run/dev.sock")), false, "an allowed socket path in a writable tree: a symlink put there would lead elsewhere")
		expect(t, sb.movable, m(filepath.Join(work, ".run")), false, "its directory: pinned")
		expect(t, sb.writable, m(filepath.Join(work, "sockets/a.sock")), false, "a glob's match in a writable tree")
		expect(t, sb.writable, m(filepath.Join(work, "sockets/notes.txt")), true, "not a match")
		expect(t, sb.writable, m(filepath.Join(work, ".run/other")), true, "the rest of the directory")
	}
}

// caseProfile surveys and generates for a repository in a temporary
// directory, with the volume's case sensitivity given.
func caseProfile(t *testing.T, sensitive bool) (*Profile, string, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "app")
	for _, d := range []string{".git/hooks", ".git/objects", ".git/refs"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, ".git/HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := &policy.Policy{Cwd: work, Home: dir, Violations: true}
	pol.FS.MandatoryDenySearchDepth = policy.DefaultSearchDepth
	pol.FS.DenyRead = policy.DefaultDenyRead(dir)
	pol.FS.AllowWrite = []policy.PathRule{{Path: work, Source: "working directory"}}
	prot, err := Survey(pol, SurveyOptions{SystemGitConfigs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Generate(pol, Options{Tag: testTag, HTTPProxyPort: testHTTP, Protect: prot, CaseSensitive: func(string) bool { return sensitive }})
	if err != nil {
		t.Fatal(err)
	}
	return p, MacRoot(dir), MacRoot(work)
}

// TestCaseInsensitiveVolume: on a volume not known to be case-sensitive
// (macOS's default), a protected or denied path is denied in every
// spelling of its case, for git and Claude Code read .MCP.json as
// .mcp.json there, .git/COMMONDIR as .git/commondir and head as HEAD; and
// with the two non-ASCII letters Unicode folds to k and s. Every regex
// stays anchored at both ends.
func TestCaseInsensitiveVolume(t *testing.T) {
	p, home, work := caseProfile(t, false)
	for _, sb := range readBoth(t, p) {
		for _, rel := range []string{".MCP.json", ".mcp.JSON", ".git/COMMONDIR", ".git/Config", ".CLAUDE/settings.json", ".Claude/settings.json",
			".VSCode/tasks.json", ".git/HOOKS/pre-commit", ".GIT/hooks/pre-commit", "head", "Head", ".ENVRC", ".Bashrc",
			".git/hoo\u212as/pre-commit", ".mcp.j\u017fon", ".git/modules/x"} {
			expect(t, sb.writable, work+"/"+rel, false, "a protected name in another case")
		}
		expect(t, sb.writable, work+"/src/main.go", true, "the rest of the tree")
		expect(t, sb.writable, work+"/README", true, "the rest of the tree")
		expect(t, sb.readable, home+"/.SSH/id_rsa", false, "a default secret in another case")
		expect(t, sb.readable, home+"/.Aws/credentials", false, "a default secret in another case")
		expect(t, sb.movable, work+"/.GIT", false, "the directory holding protections, in another case")
	}
	for _, pa := range p.Params {
		if strings.HasPrefix(pa.Value, "^") != strings.HasSuffix(pa.Value, "$") || (strings.HasPrefix(pa.Value, "^") && strings.HasSuffix(pa.Value, `\$`)) {
			t.Errorf("a regex not anchored at both ends: %q", pa.Value)
		}
	}
}

// TestCaseSensitiveVolume: on a case-sensitive volume the profile keeps
// the plain form: no folded regex, and .MCP.json is another file.
func TestCaseSensitiveVolume(t *testing.T) {
	p, _, work := caseProfile(t, true)
	for _, pa := range p.Params {
		if strings.Contains(pa.Value, "[mM]") || strings.Contains(pa.Value, "[gG]") {
			t.Errorf("a folded regex on a case-sensitive volume: %q", pa.Value)
		}
	}
	for _, sb := range readBoth(t, p) {
		expect(t, sb.writable, work+"/.MCP.json", true, "another file on a case-sensitive volume")
		expect(t, sb.writable, work+"/.mcp.json", false, "the protected name")
	}
}

// TestFirmlinkSpelling: a denied path under a firmlinked root (/Users,
// /private, /Library, ...) is denied in the data volume's spelling too
// (/System/Volumes/Data/Users/...), and one the policy spells that way in
// the root's: which spelling Seatbelt compares a rule with, for a file
// opened by the other, is not known without a Mac.
func TestFirmlinkSpelling(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"/Users/dev/.ssh", "/System/Volumes/Data/Users/dev/.ssh"},
		{"/private/etc/sudoers", "/System/Volumes/Data/private/etc/sudoers"},
		{"/System/Volumes/Data/Users/dev", "/Users/dev"},
		{"/System/Library/Caches/x", "/System/Volumes/Data/System/Library/Caches/x"},
		{"/System/Library/Frameworks", ""},
		{"/System/Volumes/Data/other", ""},
		{"/Usersx", ""},
		{"/usr/bin/git", ""},
	} {
		got, ok := firmlinkSpelling(c.in)
		if got != c.out || ok != (c.out != "") {
			t.Errorf("firmlinkSpelling(%s) = %q, %v; want %q", c.in, got, ok, c.out)
		}
	}
	pol := goldenBase()
	pol.FS.DenyRead = append(pol.FS.DenyRead, pr("/System/Volumes/Data/Users/dev/private-notes", "s: denyRead[0]"))
	p, err := Generate(pol, goldenOptions(pol))
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, p) {
		expect(t, sb.readable, "/System/Volumes/Data/Users/dev/.ssh/id_rsa", false, "a default secret in the data volume's spelling")
		expect(t, sb.readable, "/System/Volumes/Data/Users/dev/.SSH/id_rsa", false, "and in another case")
		expect(t, sb.readable, "/System/Volumes/Data/private/etc/sudoers", false, "/etc/sudoers in the data volume's spelling")
		expect(t, sb.readable, "/Users/dev/private-notes/a", false, "a denyRead spelled through the data volume, by its root's spelling")
		expect(t, sb.readable, "/System/Volumes/Data/Users/dev/private-notes/a", false, "and as written")
		expect(t, sb.readable, "/System/Volumes/Data/Users/dev/src/app/main.go", true, "what is not denied")
	}
}

// TestMacDefaultSecrets: where a policy denies the default secrets, the
// macOS profile denies the keychains' files too (~/Library/Keychains,
// policy.MacSecretPaths); an allowRead re-allows them, as any default
// secret; a policy without the defaults does not get them.
func TestMacDefaultSecrets(t *testing.T) {
	keychain := gHome + "/Library/Keychains/login.keychain-db"
	pol := goldenBase()
	p, err := Generate(pol, goldenOptions(pol))
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, p) {
		expect(t, sb.readable, keychain, false, "the login keychain")
		expect(t, sb.readable, "/System/Volumes/Data"+keychain, false, "through the data volume")
		expect(t, sb.readable, gHome+"/Library/Preferences/x.plist", true, "the rest of ~/Library")
	}
	pol.FS.AllowRead = []policy.PathRule{pr(gHome+"/Library/Keychains", "s: allowRead[0]")}
	if p, err = Generate(pol, goldenOptions(pol)); err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, p) {
		expect(t, sb.readable, keychain, true, "re-allowed by allowRead")
	}
	pol = goldenBase()
	pol.FS.DenyRead = nil
	if p, err = Generate(pol, goldenOptions(pol)); err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, p) {
		expect(t, sb.readable, keychain, true, "a policy without the default secrets")
	}
}

// TestProxyRouteTCP4Only: the profile lets the command reach moat's proxy
// as it listens (TCP on 127.0.0.1) and nothing else on its port: not a UDP
// service of the host on the same port number, nor one on [::1] (macOS
// servers asked for "localhost" often listen there), which (remote ip
// "localhost:PORT") allowed, a route around the proxy (attack pass 76; on
// Linux the eBPF allow list is TCP only for the same reason).
func TestProxyRouteTCP4Only(t *testing.T) {
	pol := goldenBase()
	pol.Net.AllowedDomains = []policy.DomainRule{{Pattern: "example.com"}}
	for _, o := range []Options{goldenOptions(pol), {Tag: testTag, Resolve: macResolve, Readlink: macReadlink}} {
		pol := pol
		if o.HTTPProxyPort == 0 {
			cp := *pol
			cp.Net.HTTPProxyPort, cp.Net.SOCKSProxyPort = 8080, 1086 // an external proxy
			pol = &cp
		}
		p, err := Generate(pol, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, sb := range readBoth(t, p) {
			for _, port := range []int{o.HTTPProxyPort + pol.Net.HTTPProxyPort, o.SOCKSProxyPort + pol.Net.SOCKSProxyPort} {
				if ok, err := sb.decide(sbQuery{op: "network-outbound", host: "127.0.0.1", port: port, proto: "tcp"}); err != nil || !ok {
					t.Errorf("TCP to the proxy at 127.0.0.1:%d: %v %v", port, ok, err)
				}
				if ok, _ := sb.decide(sbQuery{op: "network-outbound", host: "127.0.0.1", port: port, proto: "udp"}); ok {
					t.Errorf("UDP to 127.0.0.1:%d: a host service on the proxy's port number", port)
				}
				if ok, _ := sb.decide(sbQuery{op: "network-outbound", host: "::1", port: port, proto: "tcp"}); ok {
					t.Errorf("TCP to [::1]:%d: moat listens on 127.0.0.1 only; another server may hold the port there", port)
				}
			}
		}
	}
}

// TestWritableRootPinned: a writable root that no other writable tree
// holds (an allowWrite such as ~/out, the run's TMPDIR) cannot be removed,
// renamed or made anew by the command. Seatbelt's (subpath ROOT) matches
// ROOT itself: where ~/out did not exist yet (no protection Survey
// reserves in it pinned it, as here, where the protections are the
// working directory's alone), the command could make the symlink
// ~/out -> ~/Library/LaunchAgents, and the next run's allowWrite ~/out
// resolved there and made it writable (attack pass 76). On Linux the root
// is a mount point, which cannot be removed or replaced from inside, and a
// missing one is not made writable. A root inside another writable tree
// stays removable and creatable (a symlink there is refused by the next
// run: TestPlantedWriteLink), as on Linux.
func TestWritableRootPinned(t *testing.T) {
	pol := goldenBase()
	pol.FS.AllowWrite = append(pol.FS.AllowWrite,
		policy.PathRule{Path: gHome + "/out", Source: "--write ~/out"},
		policy.PathRule{Path: gWork + "/build", Source: "--write build"})
	o := goldenOptions(pol)
	o.TmpDir = "/var/folders/xy/abc/T/moat-1"
	p, err := Generate(pol, o)
	if err != nil {
		t.Fatal(err)
	}
	create := func(sb *sbProfile) func(string) (bool, error) {
		return func(path string) (bool, error) { return sb.decide(sbQuery{op: "file-write-create", path: path}) }
	}
	for _, sb := range readBoth(t, p) {
		for _, root := range []string{gHome + "/out", "/private/var/folders/xy/abc/T/moat-1"} {
			expect(t, sb.movable, root, false, "a writable root removed, then made a symlink to the home")
			expect(t, create(sb), root, false, "a symlink made in a writable root's place")
			expect(t, sb.movable, strings.ToUpper(root), false, "the root in another case")
			expect(t, sb.writable, root+"/f", true, "what the root holds")
			expect(t, sb.movable, root+"/f", true, "what the root holds")
		}
		expect(t, sb.movable, gWork+"/build", true, "a root inside the working directory (a symlink there is refused by the next run)")
	}
}
