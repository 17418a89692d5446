package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// seatbeltSettings has a denyRead path that SBPL must escape (a quote, a
// parenthesis) and one allowed domain (so the proxy is the route out).
func seatbeltSettings(t *testing.T, extra string) (cwd, file, secret string) {
	t.Helper()
	dir := t.TempDir()
	secret = filepath.Join(dir, `se"cret (x)`)
	q, _ := json.Marshal(secret)
	cwd, file = checkSetup(t, `{"network":{"allowedDomains":["example.com"],"deniedDomains":[]`+extra+`},"filesystem":{"denyRead":[`+string(q)+`],"allowWrite":["."],"denyWrite":[]}}`)
	t.Chdir(cwd)
	return cwd, file, secret
}

// TestPolicySeatbelt: moat policy --seatbelt prints, on any platform, the
// profile a Mac would enforce: deny by default, out only to the proxy, a
// denyRead path only as a parameter, escaped wherever it is written.
func TestPolicySeatbelt(t *testing.T) {
	_, file, secret := seatbeltSettings(t, "")
	code, out, errs := runMoat(t, "", "policy", "--seatbelt", "--settings", file)
	if code != 0 {
		t.Fatalf("moat policy --seatbelt: %d %q", code, errs)
	}
	for _, want := range []string{
		"\n(version 1)\n(deny default (with message ",
		"(allow network-outbound\n  (remote tcp4 \"localhost:3128\")",
		"(remote tcp4 \"localhost:1080\")",
		`se\"cret (x)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the profile lacks %q", want)
		}
	}
	base := filepath.Base(secret)
	// The path is a parameter: in a rule it is (param "Pn"), and its value
	// appears only in comments (after ';'), escaped. (On a volume not known
	// to be case-sensitive, a Mac's default, the rule is also a folded
	// regex: (require-any (subpath (param "Pn")) (regex (param "Pm"))).)
	param := regexp.MustCompile(`\(subpath \(param "(P\d+)"\)\)[^;\n]* ; "[^\n]*` + regexp.QuoteMeta(`se\"cret (x)`) + `"`).FindStringSubmatch(out)
	if param == nil {
		t.Fatalf("no (subpath (param ...)) rule for %q:\n%s", base, out)
	}
	for _, line := range strings.Split(out, "\n") {
		code, _, _ := strings.Cut(line, ";")
		if strings.Contains(code, "cret") {
			t.Errorf("the denyRead path is outside a comment or parameter: %q", line)
		}
	}
	if !strings.Contains(out, `;;   -D "`+param[1]+`=`) {
		t.Errorf("no -D argument for %s", param[1])
	}
	if strings.Contains(out, "(allow default") || strings.Contains(out, "(allow network-outbound)") {
		t.Error("an unrestricted allow")
	}

	code, out, errs = runMoat(t, "", "policy", "--seatbelt", "--inline", "--settings", file)
	if code != 0 || !strings.Contains(out, `(subpath "`) || !strings.Contains(out, `se\"cret (x)")`) || strings.Contains(out, "(param ") {
		t.Fatalf("--inline: %d %q\n%s", code, errs, out)
	}

	code, out, errs = runMoat(t, "", "policy", "--seatbelt", "--json", "--settings", file)
	var j struct {
		Profile string `json:"profile"`
		Params  []struct {
			Name, Value string
		} `json:"params"`
		Description struct {
			Tier       string `json:"tier"`
			Mechanisms []struct {
				Part     string `json:"part"`
				Enforced bool   `json:"enforced"`
			} `json:"mechanisms"`
		} `json:"description"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatalf("--json: %d %q %q", code, errs, out)
	}
	found := false
	for _, p := range j.Params {
		found = found || strings.HasSuffix(p.Value, "/"+base)
	}
	if !strings.Contains(j.Profile, "(deny default") || !found || !strings.HasPrefix(j.Description.Tier, "seatbelt") {
		t.Errorf("--json: profile, the denyRead parameter or the tier missing: %s", out)
	}
	unenforced := map[string]bool{}
	for _, m := range j.Description.Mechanisms {
		if !m.Enforced {
			unenforced[m.Part] = true
		}
	}
	if !unenforced["process isolation (pid namespace)"] || !unenforced["network namespace"] {
		t.Errorf("--json: the description does not say macOS has no pid or network namespace: %v", unenforced)
	}
}

// TestPolicySeatbeltErrors: a bad flag combination and a policy Seatbelt
// cannot express are clear errors (exit 125), never a weaker profile.
func TestPolicySeatbeltErrors(t *testing.T) {
	_, file, _ := seatbeltSettings(t, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--inline"}, "--inline needs --seatbelt"},
		{[]string{"--seatbelt", "--inline", "--json"}, "--inline and --json do not go together"},
		{[]string{"--seatbelt", "extra"}, "unknown command"},
	} {
		code, out, errs := runMoat(t, "", append([]string{"policy", "--settings", file}, tc.args...)...)
		if code != 125 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("moat policy %q: %d %q %q, want 125 and %q", tc.args, code, out, errs, tc.want)
		}
	}
	_, file, _ = seatbeltSettings(t, `,"allowLocalBinding":true`)
	code, out, errs := runMoat(t, "", "policy", "--seatbelt", "--settings", file)
	if code != 125 || out != "" || !strings.Contains(errs, "allowLocalBinding") || !strings.Contains(errs, "best effort") {
		t.Errorf("allowLocalBinding without best effort: %d %q %q", code, out, errs)
	}
}

// Every JSON output of moat's has the one encoder setting: "<", ">" and
// "&" as they are (moat policy --json printed p\u0026\u003cq\u003e where
// moat check --json printed p&<q>).
func TestJSONOutputKeepsHTMLCharacters(t *testing.T) {
	cwd, file := checkSetup(t, `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":["p&<q>"],"allowWrite":[],"denyWrite":[]}}`)
	t.Chdir(cwd)
	for _, args := range [][]string{
		{"policy", "--json", "--settings", file},
		{"policy", "--seatbelt", "--json", "--settings", file},
	} {
		code, out, errs := runMoat(t, "", args...)
		if code != 0 || !json.Valid([]byte(out)) {
			t.Fatalf("moat %s: %d %q %q", strings.Join(args, " "), code, out, errs)
		}
		if !strings.Contains(out, "p&<q>") || strings.Contains(out, `\u0026`) || strings.Contains(out, `\u003c`) {
			t.Errorf("moat %s: the path is not as written: %s", strings.Join(args, " "), out)
		}
	}
	// And no other encoder: every JSON output of this command goes through
	// newJSONEncoder (moat doctor --json too, which runs sandboxes).
	files, err := filepath.Glob(filepath.Join(testutil.PackageDir(t), "*.go"))
	if err != nil || len(files) < 10 {
		t.Fatalf("the command's sources: %d files, %v", len(files), err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || filepath.Base(f) == "jsonout.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("json.NewEncoder(")) || bytes.Contains(b, []byte("json.MarshalIndent(")) {
			t.Errorf("%s encodes JSON without newJSONEncoder", f)
		}
	}
}
