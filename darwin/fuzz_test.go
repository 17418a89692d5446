package darwin

import (
	"strconv"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// FuzzGenerate: whatever the policy's strings, the generator refuses them
// or writes a profile the reader parses, in which no policy string is part
// of the profile's text (each is a parameter), the inline form means the
// same rules, and no rule appears that the generator did not make.
// `go test ./darwin` runs the seed corpus; `go test -fuzz FuzzGenerate
// ./darwin` explores.
func FuzzGenerate(f *testing.F) {
	f.Add("/Users/dev/src/app", "/Users/dev/**/*.pem", "/tmp/x[ab]", "/var/run/s.sock", uint8(0))
	f.Add(`/a"b\c`, `/x/(y)|z`, "/p/[^q]", "/u", uint8(0xff))
	f.Add("/w/a\") (allow default) (\"", "/w/;comment", "/w/)(", "/w/#\"raw\"", uint8(0x15))
	f.Add("/w", "/w/[z-a]", "/w/[\\]]x", "/w/**", uint8(0x0a))
	f.Add("/w/é/ü", "/w/*/[!.]?", "/w/{a,b}", "/w/$(x)", uint8(0x33))
	f.Add("/", "/**", "/*", "/w/\\*", uint8(0x0f))
	f.Add("/w/a\nb", "/w/\x00", "/w/\x7f", "relative", uint8(1))
	f.Fuzz(func(t *testing.T, a, b, c, d string, flags uint8) {
		pol := &policy.Policy{Cwd: "/w", Home: "/h"}
		pol.FS.MandatoryDenySearchDepth = 3
		pol.FS.AllowWrite = []policy.PathRule{{Path: a, Glob: flags&1 != 0 && policy.HasGlob(a), Source: a}}
		pol.FS.DenyRead = []policy.PathRule{{Path: b, Glob: flags&2 != 0 && policy.HasGlob(b), Source: "src " + b}}
		pol.FS.AllowRead = []policy.PathRule{{Path: b + "/x", Glob: flags&2 != 0 && policy.HasGlob(b)}, {Path: d}}
		pol.FS.DenyWrite = []policy.PathRule{{Path: c, Glob: flags&4 != 0 && policy.HasGlob(c)}}
		pol.FS.AllowGitConfig = flags&8 != 0
		pol.Net.AllowUnixSockets = []policy.PathRule{{Path: d, Glob: flags&16 != 0 && policy.HasGlob(d)}}
		pol.Net.AllowAllUnixSockets = flags&32 != 0
		pol.Net.AllowLocalBinding = flags&64 != 0
		pol.BestEffort = true
		pol.Sources = []string{d}
		o := Options{Tag: testTag, HTTPProxyPort: testHTTP, SOCKSProxyPort: testSOCKS,
			Resolve: func(p string) (string, error) { return MacRoot(p), nil },
			Protect: []Protection{{Path: c + "/.bashrc", Why: "fuzz " + c}, {Path: a + "/HEAD", Why: a}}}
		if flags&128 != 0 {
			o.TmpDir = d
			o.TTY = "/dev/ttys001"
		}
		p, err := Generate(pol, o)
		if err != nil {
			return // refused
		}
		sb, err := readProfile(p.Text, paramMap(p))
		if err != nil {
			t.Fatalf("the profile does not read: %v\n%s", err, p.Text)
		}
		if len(sb.rules) != len(p.entries) {
			t.Fatalf("%d rules read, %d generated: a string broke out\n%s", len(sb.rules), len(p.entries), p.Text)
		}
		// The parameter form holds no policy string.
		vocab := vocabulary(p)
		es, _ := parseSBPL(p.Text)
		for _, s := range literals(es) {
			if !vocab[s] {
				t.Fatalf("the profile text holds %q, which is not moat's own vocabulary\n%s", s, p.Text)
			}
		}
		// The inline form is the same profile.
		long := false
		for _, pa := range p.Params {
			long = long || len(pa.Value) > maxLiteral
		}
		in, err := parseSBPL(p.Inline())
		if err != nil {
			if long {
				return // sandbox-exec would refuse the inline form; the runner never uses it
			}
			t.Fatalf("the inline profile does not read: %v\n%s", err, p.Inline())
		}
		params := paramMap(p)
		if len(in) != len(es) {
			t.Fatalf("inline: %d expressions, parameter form: %d", len(in), len(es))
		}
		for i := range es {
			if x, y := substitute(es[i], params).String(), in[i].String(); x != y {
				t.Fatalf("the forms differ:\n%s\n%s", x, y)
			}
		}
		textForbidden(t, p.Text)
		forbidden(t, sb, pol, o)
	})
}

// vocabulary is every string moat itself writes into a profile.
func vocabulary(p *Profile) map[string]bool {
	v := map[string]bool{p.Tag: true, "/dev": true, "/dev/tty": true, devFD: true, "localhost:*": true, "^/.*$": true}
	for _, port := range []int{p.http, p.socks} {
		v["localhost:"+strconv.Itoa(port)] = true
	}
	for _, l := range [][]string{sysctlNames, sysctlPrefixes, sysctlWrites, devRead, devWrite, devIoctl} {
		for _, s := range l {
			v[s] = true
		}
	}
	for _, s := range machServices {
		v[s.name] = true
	}
	return v
}

// literals lists the string literals of es, parameter names excepted.
func literals(es []sx) []string {
	var out []string
	for _, e := range es {
		switch {
		case e.isLst && len(e.list) == 2 && e.list[0].atom == "param":
		case e.isLst:
			out = append(out, literals(e.list)...)
		case e.isStr:
			out = append(out, e.atom)
		}
	}
	return out
}

// substitute writes each (param "X") as the string it stands for.
func substitute(e sx, params map[string]string) sx {
	if !e.isLst {
		return e
	}
	if len(e.list) == 2 && e.list[0].atom == "param" && e.list[1].isStr {
		return sx{atom: params[e.list[1].atom], isStr: true}
	}
	out := sx{isLst: true, list: make([]sx, len(e.list))}
	for i, x := range e.list {
		out.list[i] = substitute(x, params)
	}
	return out
}

// TestReaderRefuses keeps the reader honest: what it cannot be sure of is
// an error, never a guess.
func TestReaderRefuses(t *testing.T) {
	for _, src := range []string{
		`(version 1) (deny default) (allow file-read* (subpath "/a")`,
		`(version 1) (deny default) (allow file-read* (subpath "/a\q"))`,
		`(version 1) (deny default) (allow file-read* (regex "^/a\d$"))`,
		`(version 1) (deny default) (allow file-read* (regex "/a"))`,
		`(version 1) (deny default) (allow file-read* (prefix "/a"))`,
		`(version 1) (deny default) (allow file-read* (subpath (param "NOPE")))`,
		`(version 1) (allow file-read*)`,
		`(version 1) (deny default) (allow frobnicate)`,
		`(deny default)`,
		`(version 1) (deny default) (allow file-read* (subpath "` + strings.Repeat("a", 1100) + `"))`,
	} {
		if _, err := readProfile(src, nil); err == nil {
			t.Errorf("read without an error: %s", src)
		}
	}
	// A profile whose meaning depends on Seatbelt's precedence is an error.
	sb, err := readProfile(`(version 1) (deny default)
		(allow file-write* (subpath "/a"))
		(deny file-write-unlink (literal "/a/b"))
		(allow file-write* (literal "/a/b"))`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.movable("/a/b"); err == nil {
		t.Error("a wildcard allow after a specific deny: the reader did not flag the ambiguity")
	}
	if ok, err := sb.movable("/a/c"); err != nil || !ok {
		t.Errorf("an unambiguous question: %v %v", ok, err)
	}
}
