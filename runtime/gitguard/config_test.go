package gitguard

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string // "name=value" or "name" for a bare key
		err      bool
	}{
		{"simple", "[core]\n\tbare = false\n", []string{"core.bare=false"}, false},
		{"case", "[Core]\n\tFSMonitor = X\n", []string{"core.fsmonitor=X"}, false},
		{"subsection keeps case", "[remote \"Origin\"]\nurl = u\n", []string{"remote.Origin.url=u"}, false},
		{"legacy subsection lowercased", "[remote.Origin]\nurl = u\n", []string{"remote.origin.url=u"}, false},
		{"bare key", "[core]\nbare\n", []string{"core.bare"}, false},
		{"comment after value", "[a]\nb = c # d\n", []string{"a.b=c"}, false},
		{"quoted comment char", "[a]\nb = \"c # d\"\n", []string{"a.b=c # d"}, false},
		{"inner spaces become one per char", "[a]\nb = c \t d  \n", []string{"a.b=c   d"}, false},
		{"escapes", `[a]` + "\n" + `b = x\ty\nz\\q\"` + "\n", []string{"a.b=x\ty\nz\\q\""}, false},
		{"continuation", "[a]\nb = one\\\ntwo\n", []string{"a.b=onetwo"}, false},
		{"crlf", "[a]\r\nb = c\r\n", []string{"a.b=c"}, false},
		{"bom", "\xef\xbb\xbf[a]\nb = c\n", []string{"a.b=c"}, false},
		{"no final newline", "[a]\nb = c", []string{"a.b=c"}, false},
		{"bracket in a value", "[a] b = c [d]", []string{"a.b=c [d]"}, false},
		{"header then key on one line", "[a] b = c", []string{"a.b=c"}, false},
		{"subsection escapes", "[a \"x\\\"y\\\\z\\q\"]\nb\n", []string{"a.x\"y\\zq.b"}, false},
		{"unknown escape", "[a]\nb = \\x\n", nil, true},
		{"unterminated quote", "[a]\nb = \"x\n", nil, true},
		{"key outside a section", "b = c\n", nil, true},
		{"nul", "[a]\nb = c\x00\n", nil, true},
		{"key with junk", "[a]\nb c = d\n", nil, true},
		{"key starting with digit", "[a]\n1b = c\n", nil, true},
		{"empty header", "[]\n", nil, true},
		{"unquoted subsection", "[a b]\n", nil, true},
		{"newline in header", "[a\n\"b\"]\n", nil, true},
		{"vertical tab is not a space", "[a]\n\vb = c\n", nil, true},
		{"semicolon comment line", "; x\n[a]\nb=c\n", []string{"a.b=c"}, false},
		{"dash in key", "[a]\nb-c = d\n", []string{"a.b-c=d"}, false},
		{"empty value", "[a]\nb =\n", []string{"a.b="}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			es, err := ParseConfig([]byte(tc.in))
			if tc.err {
				if err == nil {
					t.Fatalf("want an error, got %v", render(es))
				}
				if !errors.Is(err, ErrSyntax) {
					t.Fatalf("error %v does not wrap ErrSyntax", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := render(es); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func render(es []Entry) []string {
	var out []string
	for _, e := range es {
		if e.HasValue {
			out = append(out, e.Name+"="+e.Value)
		} else {
			out = append(out, e.Name)
		}
	}
	return out
}

// gitList runs git itself over a config file: the reference.
func gitList(t testing.TB, dir string, data []byte) ([]string, bool) {
	t.Helper()
	f := filepath.Join(dir, "config")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--file", f, "--list", "--null", "--no-includes")
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	var got []string
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		name, value, ok := bytes.Cut(rec, []byte{'\n'})
		if ok {
			got = append(got, string(name)+"="+string(value))
		} else {
			got = append(got, string(name))
		}
	}
	return got, true
}

// agree checks the one property that matters: whatever git reads from a
// file, ParseConfig reads the same variables, or refuses the file.
func agree(t *testing.T, dir string, data []byte) {
	t.Helper()
	ref, gitOK := gitList(t, dir, data)
	es, err := ParseConfig(data)
	if err != nil {
		return // refusing is always safe: the caller treats it as hostile
	}
	if !gitOK {
		return // git refuses the file: it runs nothing from it
	}
	if got := render(es); strings.Join(got, "\x00") != strings.Join(ref, "\x00") {
		t.Fatalf("disagreement with git on %q:\n moat: %q\n  git: %q", data, got, ref)
	}
	// And what FormatConfig writes back, git reads as the same entries.
	back, ok := gitList(t, dir, FormatConfig(es))
	if !ok || strings.Join(back, "\x00") != strings.Join(ref, "\x00") {
		t.Fatalf("FormatConfig round trip differs for %q:\n%s\n git reads %q, want %q", data, FormatConfig(es), back, ref)
	}
}

func requireGit(t testing.TB) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("MOAT_REQUIRE_PRIVILEGED") == "1" {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed")
	}
}

func TestParseConfigAgreesWithGit(t *testing.T) {
	requireGit(t)
	dir := t.TempDir()
	n := 600
	if testing.Short() {
		n = 100
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < n; i++ {
		agree(t, dir, genConfig(r))
	}
}

// genConfig writes a config file from pieces git's parser treats
// specially: headers of every form, keys, quotes, escapes, comments,
// odd whitespace, CRLF.
func genConfig(r *rand.Rand) []byte {
	pieces := []string{
		"[core]", "[Core]", "[core \"x\"]", "[remote \"O r\\\"g\"]", "[remote.Sub]", "[a.b \"c\"]",
		"[ core]", "[core ]", "[core  \"x\"]", "[core\t\"x\"]", "[co-re]",
		"fsmonitor", "FsMonitor", "hooksPath", "bare", "url", "x-y", "k1",
		" = ", "=", " =", "= ", "\t=\t",
		"value", "\"quoted value\"", "\"a;b\"", "a#b", "a ;c", "\\t", "\\n", "\\\\", "\\\"", "\\\n", "\"", "!sh -c x",
		" ", "\t", "  ", "\n", "\r\n", "\r", "\v", "\f", "# c", "; c", "\n\n",
	}
	var b strings.Builder
	if r.Intn(8) == 0 {
		b.WriteString("\xef\xbb\xbf")
	}
	b.WriteString("[s]\n")
	for j := r.Intn(12); j >= 0; j-- {
		b.WriteString(pieces[r.Intn(len(pieces))])
	}
	return []byte(b.String())
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"[core]\n\tfsmonitor = x\n", "[a \"b\"]\nc\n", "[a]\nb = \"c\\\nd\"\n", "\xef\xbb\xbf[a]\r\nb=c"} {
		f.Add([]byte(s))
	}
	_, gitErr := exec.LookPath("git")
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := ParseConfig(data)
		if err != nil {
			return
		}
		// What FormatConfig writes parses back to the same entries.
		back, err := ParseConfig(FormatConfig(es))
		if err != nil {
			t.Fatalf("FormatConfig output does not parse: %v\n%s", err, FormatConfig(es))
		}
		if strings.Join(render(back), "\x00") != strings.Join(render(es), "\x00") {
			t.Fatalf("round trip differs: %q vs %q", render(back), render(es))
		}
		if gitErr == nil && len(data) < 512 {
			agree(t, t.TempDir(), data)
		}
	})
}
