package darwin

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/moat-sandbox/moat/internal/policycases"
	"github.com/moat-sandbox/moat/runtime/policy"
)

const (
	testTag   = "moat_0123456789abcdef_sbx"
	testHTTP  = 3128
	testSOCKS = 1080
)

// paramMap is a profile's parameters as the reader wants them.
func paramMap(p *Profile) map[string]string {
	m := map[string]string{}
	for _, pa := range p.Params {
		m[pa.Name] = pa.Value
	}
	return m
}

// readBoth reads the parameter form and the inline form of a profile; the
// tests ask both the same questions.
func readBoth(t *testing.T, p *Profile) [2]*sbProfile {
	t.Helper()
	a, err := readProfile(p.Text, paramMap(p))
	if err != nil {
		t.Fatalf("the profile does not read: %v\n%s", err, p.Text)
	}
	b, err := readProfile(p.Inline(), nil)
	if err != nil {
		t.Fatalf("the inline profile does not read: %v\n%s", err, p.Inline())
	}
	return [2]*sbProfile{a, b}
}

// generateFor surveys and generates as the runner does, on this machine.
func generateFor(t *testing.T, pol *policy.Policy) *Profile {
	t.Helper()
	prot, err := Survey(pol, SurveyOptions{SystemGitConfigs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Generate(pol, Options{Tag: testTag, HTTPProxyPort: testHTTP, SOCKSProxyPort: testSOCKS, Protect: prot})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicyCases checks the table every platform is held to against the
// generated profile, read by the independent reader.
func TestPolicyCases(t *testing.T) {
	for _, c := range policycases.Cases {
		t.Run(c.Name, func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			e := policycases.NewEnv(root)
			if err := c.Build(e); err != nil {
				t.Fatal(err)
			}
			pol := c.Policy(e)
			if err := pol.Validate(); err != nil {
				t.Fatal(err)
			}
			p := generateFor(t, pol)
			for i, sb := range readBoth(t, p) {
				form := [2]string{"parameter form", "inline form"}[i]
				for _, ch := range c.Checks {
					got, err := ask(sb, e, ch)
					if err != nil {
						t.Errorf("%s: %s %s: %v", form, ch.Op, ch.Target, err)
						continue
					}
					if got != ch.Want {
						t.Errorf("%s: %s %s = %v, want %v (%s)", form, ch.Op, ch.Target, got, ch.Want, ch.Why)
					}
				}
			}
			if t.Failed() {
				t.Logf("profile:\n%s", p.Inline())
			}
		})
	}
}

// ask puts one check to the reader, with the path as the Mac would see it.
func ask(sb *sbProfile, e policycases.Env, ch policycases.Check) (bool, error) {
	target := e.Path(ch.Target)
	real := func() string {
		c, err := Canonical(target)
		if err != nil {
			return target
		}
		return c
	}
	switch ch.Op {
	case policycases.Read:
		return sb.readable(real())
	case policycases.Write:
		return sb.writable(real())
	case policycases.Rename:
		return sb.movable(real())
	case policycases.UnixConnect:
		return sb.unixConnect(real())
	case policycases.Connect:
		if ch.Target == policycases.Proxy {
			return sb.reachable("127.0.0.1", testHTTP)
		}
		h, p, err := net.SplitHostPort(ch.Target)
		if err != nil {
			return false, err
		}
		port, _ := strconv.Atoi(p)
		return sb.reachable(h, port)
	}
	panic("unknown op " + ch.Op)
}
