package policy

import (
	"errors"
	"github.com/moat-sandbox/moat/internal/testutil"
	"strings"
	"testing"
)

func TestCanonicalHost(t *testing.T) {
	ok := func(in, want string) struct{ in, want string } { return struct{ in, want string }{in, want} }
	for _, tc := range []struct{ in, want string }{
		ok("example.com", "example.com"),
		ok("EXAMPLE.com.", "example.com"),
		ok("Bücher.Example", "xn--bcher-kva.example"),
		ok("xn--bcher-kva.example", "xn--bcher-kva.example"),
		ok("ＥＸＡＭＰＬＥ。com", "example.com"),
		ok("under_score.example", "under_score.example"),
		ok("localhost", "localhost"),
		// Every inet_aton spelling of 127.0.0.1.
		ok("127.0.0.1", "127.0.0.1"),
		ok("127.1", "127.0.0.1"),
		ok("127.0.1", "127.0.0.1"),
		ok("2130706433", "127.0.0.1"),
		ok("0x7f000001", "127.0.0.1"),
		ok("0x7f.1", "127.0.0.1"),
		ok("0X7F.0.0.1", "127.0.0.1"),
		ok("0177.0.0.1", "127.0.0.1"),
		ok("017700000001", "127.0.0.1"),
		ok("127.0.0.1.", "127.0.0.1"),
		ok("１２７.０.０.１", "127.0.0.1"),
		ok("169.254.43518", "169.254.169.254"),
		ok("0xa9fea9fe", "169.254.169.254"),
		ok("0", "0.0.0.0"),
		// IPv6.
		ok("::1", "::1"),
		ok("[::1]", "::1"),
		ok("[0:0:0:0:0:0:0:1]", "::1"),
		ok("[2001:DB8:0:0:0:0:0:1]", "2001:db8::1"),
		ok("[::ffff:127.0.0.1]", "127.0.0.1"),
		ok("[::ffff:7f00:1]", "127.0.0.1"),
		ok("[64:ff9b::7f00:1]", "64:ff9b::7f00:1"),
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := CanonicalHost(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("CanonicalHost(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestCanonicalHostRejects(t *testing.T) {
	for _, in := range []string{
		"", ".", "a..b", "exa mple.com", "evil\x00.com", "evil\r\nx.com", "evil\x7f.com",
		"1.2.3.256", "1.2.3.4.5", "256.1", "1.16777216", "4294967296", "0x100000000",
		"08.1.1.1", "1.2.3a.4", "[::1", "[1.2.3.4]", "[fe80::1%eth0]", "fe80::1%eth0",
		"example.com:80", "-a.example", "a-.example", "a.example..", "xn--zz.example",
		"a$b.example", "a%2eb.example", strings.Repeat("a", 64) + ".example",
		strings.Repeat("a.", 127) + "example", strings.Repeat("x", 2000),
		"\xff.example", "a\u0085b.example",
	} {
		t.Run(in, func(t *testing.T) {
			got, err := CanonicalHost(in)
			if err == nil {
				t.Fatalf("CanonicalHost(%q) = %q, want an error", in, got)
			}
			if !errors.Is(err, ErrDomainPattern) {
				t.Fatalf("error %v does not wrap ErrDomainPattern", err)
			}
		})
	}
}

func TestParseDomainPattern(t *testing.T) {
	type tc struct {
		in     string
		deny   bool
		want   string // canonical String(), "" = must fail
		errHas string
	}
	allow := func(in, want string) tc { return tc{in: in, want: want} }
	deny := func(in, want string) tc { return tc{in: in, deny: true, want: want} }
	bad := func(in string, inDeny bool, errHas string) tc { return tc{in: in, deny: inDeny, errHas: errHas} }
	for _, c := range []tc{
		allow("example.com", "example.com"),
		allow("Example.COM.", "example.com"),
		allow("*.example.com", "*.example.com"),
		allow("*.Bücher.example", "*.xn--bcher-kva.example"),
		allow("api.example.com:443", "api.example.com:443"),
		allow("*.example.com:8443", "*.example.com:8443"),
		allow("localhost", "localhost"),
		allow("localhost:3000", "localhost:3000"),
		allow("127.0.0.1", "127.0.0.1"),
		allow("127.0.0.1:3000", "127.0.0.1:3000"),
		allow("127.1:3000", "127.0.0.1:3000"),
		allow("[::1]", "[::1]"),
		allow("[::1]:8080", "[::1]:8080"),
		allow("[0::0001]:8080", "[::1]:8080"),
		allow("[::ffff:10.0.0.1]", "10.0.0.1"),
		allow("*.co.uk", "*.co.uk"),
		allow("a:65535", "a:65535"),
		deny("*", "*"),
		deny("*:22", "*:22"),
		deny("*.com", "*.com"),
		deny("evil.example", "evil.example"),
		deny("169.254.169.254", "169.254.169.254"),

		bad("", false, "empty"),
		bad("*", false, "only in deniedDomains"),
		bad("*:443", false, "only in deniedDomains"),
		bad("*.", false, "names no domain"),
		bad("*.", true, "names no domain"),
		bad("*.com", false, "too broad"),
		bad("*.localhost", false, "too broad"),
		bad("**.example.com", false, "first label"),
		bad("*example.com", false, "first label"),
		bad("foo.*.example.com", false, "first label"),
		bad("*.*.example.com", false, "first label"),
		bad("*.1.2.3.4", false, "IP address"),
		bad("*.[::1]", false, ""),
		bad("https://example.com", false, "not a URL"),
		bad("example.com/path", false, "path"),
		bad("example.com?q", false, "path"),
		bad("user@example.com", false, "user information"),
		bad("user:pw@example.com", false, "user information"),
		bad("::1", false, "bracketed"),
		bad("2001:db8::1:443", false, "bracketed"),
		bad("[::1]443", false, "after ]"),
		bad("[::1", false, "unclosed"),
		bad("[1.2.3.4]", false, "IPv6"),
		bad("example.com:0", false, "out of range"),
		bad("example.com:65536", false, "out of range"),
		bad("example.com:123456", false, "out of range"),
		bad("example.com:http", false, "not a number"),
		bad("example.com:+80", false, "not a number"),
		bad("example.com:", false, "empty port"),
		bad(":443", false, "empty host"),
		bad("exa mple.com", false, "white space"),
		bad("evil.com\x00.example.com", false, "NUL"),
		bad("evil.com\n", false, "control"),
		bad("1.2.3.999", false, "IPv4"),
	} {
		name := c.in
		if c.deny {
			name = "deny/" + name
		}
		t.Run(name, func(t *testing.T) {
			p, err := ParseDomainPattern(c.in, c.deny)
			if c.want == "" {
				if err == nil {
					t.Fatalf("ParseDomainPattern(%q, %v) = %v, want an error", c.in, c.deny, p)
				}
				if !errors.Is(err, ErrDomainPattern) || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("error %q: want it to wrap ErrDomainPattern and mention %q", err, c.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDomainPattern(%q, %v): %v", c.in, c.deny, err)
			}
			if got := p.String(); got != c.want {
				t.Fatalf("String() = %q, want %q", got, c.want)
			}
			if p.Raw != c.in {
				t.Fatalf("Raw = %q, want %q", p.Raw, c.in)
			}
		})
	}
}

func TestDomainPatternMatch(t *testing.T) {
	type m struct {
		pattern string
		deny    bool
		host    string
		port    int
		want    bool
	}
	yes := func(p, h string, port int) m { return m{p, true, h, port, true} }
	no := func(p, h string, port int) m { return m{p, true, h, port, false} }
	for _, c := range []m{
		yes("example.com", "example.com", 443),
		no("example.com", "www.example.com", 443),
		no("example.com", "notexample.com", 443),
		yes("*.example.com", "www.example.com", 443),
		yes("*.example.com", "a.b.example.com", 80),
		no("*.example.com", "example.com", 443),
		no("*.example.com", "badexample.com", 443),
		no("*.example.com", "example.com.evil", 443),
		yes("example.com:443", "example.com", 443),
		no("example.com:443", "example.com", 80),
		no("example.com:443", "example.com", 0),
		yes("*", "anything.example", 1),
		yes("*", "10.0.0.1", 1),
		yes("*:22", "github.com", 22),
		no("*:22", "github.com", 443),
		yes("127.0.0.1:3000", "127.0.0.1", 3000),
		no("127.0.0.1:3000", "127.0.0.1", 3001),
		yes("127.0.0.1", "::ffff:127.0.0.1", 5),
		no("127.0.0.1", "127.0.0.2", 5),
		yes("[::1]", "::1", 80),
		no("[::1]", "127.0.0.1", 80),
		// Wildcards never match IP literals.
		no("*.0.1", "127.0.0.1", 80),
		no("*.com", "1.2.3.4", 80),
		yes("*.com", "x.com", 80),
		no("localhost", "127.0.0.1", 80),
	} {
		t.Run(c.pattern+"~"+c.host, func(t *testing.T) {
			p, err := ParseDomainPattern(c.pattern, c.deny)
			if err != nil {
				if !c.want {
					return // an unparsable pattern matches nothing
				}
				t.Fatal(err)
			}
			if got := p.Match(c.host, c.port); got != c.want {
				t.Fatalf("%v.Match(%q, %d) = %v, want %v", p, c.host, c.port, got, c.want)
			}
		})
	}
	if (DomainPattern{}).Match("", 0) {
		t.Fatal("the zero pattern matched")
	}
}

// FuzzDomainPattern checks that parsing never panics, that a parsed
// pattern's canonical form parses to the same pattern, and that an accepted
// allow entry is also an accepted deny entry.
func FuzzDomainPattern(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.com:443", "[::1]:80", "127.1", "*", "*:22",
		"0x7f.1", "Bücher.example", "a..b", "[::ffff:1.2.3.4]", "xn--bcher-kva.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, deny := range []bool{false, true} {
			p, err := ParseDomainPattern(s, deny)
			if err != nil {
				continue
			}
			q, err := ParseDomainPattern(p.String(), deny)
			if err != nil {
				t.Fatalf("canonical form %q of %q does not parse: %v", p.String(), s, err)
			}
			if q.String() != p.String() || q.Port != p.Port || q.Addr != p.Addr {
				t.Fatalf("%q: canonical form is not stable: %v vs %v", s, p, q)
			}
			if !deny {
				if _, err := ParseDomainPattern(s, true); err != nil {
					t.Fatalf("%q accepted in an allow list but not in a deny list: %v", s, err)
				}
			}
		}
		if c, err := CanonicalHost(s); err == nil {
			if c2, err := CanonicalHost(c); err != nil || c2 != c {
				t.Fatalf("CanonicalHost not idempotent: %q -> %q -> %q, %v", s, c, c2, err)
			}
		}
	})
}

// TestDomainImports keeps runtime/policy on the standard library plus
// golang.org/x/net/idna (and the x/text tables idna needs).
func TestDomainImports(t *testing.T) {
	for _, p := range testutil.Deps(t, "", ".") {
		switch {
		case p == "github.com/moat-sandbox/moat/runtime/policy",
			p == "golang.org/x/net/idna",
			strings.HasPrefix(p, "golang.org/x/text/"):
		default:
			t.Errorf("runtime/policy depends on %s", p)
		}
	}
}
