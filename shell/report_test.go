package shell

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func TestParseCommandReport(t *testing.T) {
	const whole = "env0=declare -x A=\"1\"\x00cwd=/a/b\n\x00env=declare -x A=\"2\"\x00end=\x00"
	tests := []struct {
		name     string
		in       string
		want     report
		complete bool
		bad      bool
	}{
		{"empty", "", report{}, false, false},
		{"whole", whole, report{recEnvBefore: "declare -x A=\"1\"", recCwd: "/a/b\n", recEnvAfter: "declare -x A=\"2\"", recEnd: ""}, true, false},
		{"with the optional records", "cwd-missing=\x00snapshot-missing=\x00" + whole,
			report{recCwdMissing: "", recSnapshotMissing: "", recEnvBefore: "declare -x A=\"1\"", recCwd: "/a/b\n", recEnvAfter: "declare -x A=\"2\"", recEnd: ""}, true, false},
		{"moved", "cwd-moved=\x00", report{recCwdMoved: ""}, true, false},
		{"cut after env0 (killed, exec)", "env0=x\x00", report{recEnvBefore: "x"}, false, false},
		{"cut before the end record", "env0=x\x00cwd=/a\n\x00env=y\x00", report{recEnvBefore: "x", recCwd: "/a\n", recEnvAfter: "y"}, false, false},
		{"a forged report and the shell's", "env0=x\x00cwd=/\n\x00env=y\x00end=\x00cwd=/a\n\x00env=y\x00end=\x00", nil, false, true},
		{"a forged cwd before the shell's", "env0=x\x00cwd=/\n\x00cwd=/a\n\x00env=y\x00end=\x00", nil, false, true},
		{"out of order", "cwd=/a\n\x00env0=x\x00env=y\x00end=\x00", nil, false, true},
		{"unknown record", "env0=x\x00evil=1\x00cwd=/a\n\x00env=y\x00end=\x00", nil, false, true},
		{"leading NUL", "\x00" + whole, nil, false, true},
		{"bytes after the end", whole + "x", nil, false, true},
		{"a record after the end", whole + "cwd=/\n\x00", nil, false, true},
		{"no key", "junk\x00", nil, false, true},
		{"a flag with a value", "cwd-missing=/etc\x00" + whole, nil, false, true},
		{"moved and more", "cwd-moved=\x00" + whole, nil, false, true},
	}
	for _, tc := range tests {
		got, complete, err := parseCommandReport([]byte(tc.in))
		if (err != nil) != tc.bad || complete != tc.complete || (!tc.bad && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("%s: %v complete=%v err=%v, want %v complete=%v bad=%v", tc.name, got, complete, err, tc.want, tc.complete, tc.bad)
		}
	}
}

func TestReportCwd(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"/home/u/p\n", "/home/u/p", true},
		{"/a b\n", "/a b", true},
		{"", "", false},
		{"relative\n", "", false},
		{"/a/../b\n", "", false},
		{"/a\nb\n", "", false},
	}
	for _, tc := range tests {
		got, ok := report{recCwd: tc.in}.cwd()
		if got != tc.want || ok != tc.ok {
			t.Errorf("cwd(%q) = %q %v, want %q %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := (report{}).cwd(); ok {
		t.Error("no record gave a cwd")
	}
}

func TestParseExports(t *testing.T) {
	tests := []struct {
		name string
		v    syntax.LangVariant
		in   string
		want map[string]string
	}{
		{"bash", syntax.LangBash, `declare -x HOME="/root"
declare -x Q="it's \"quoted\" \$HOME \\ \` + "`" + `"
declare -x NL="a
b"
declare -x EMPTY=""
declare -x NOVALUE
declare -rx RO="r"
`, map[string]string{"HOME": "/root", "Q": `it's "quoted" $HOME \ ` + "`", "NL": "a\nb", "EMPTY": "", "RO": "r"}},
		{"bash posix mode", syntax.LangBash, `export A="1"` + "\n", map[string]string{"A": "1"}},
		{"bash ansi-c", syntax.LangBash, `declare -x T=$'a\tb'` + "\n", map[string]string{"T": "a\tb"}},
		{"zsh", syntax.LangZsh, "export HOME=/root\nexport Q='it'\\''s'\ntypeset -x Z=1\n", map[string]string{"HOME": "/root", "Q": "it's", "Z": "1"}},
		{"zsh tied PATH", syntax.LangZsh, "export -T PATH path=( /usr/bin '/opt/my bin' )\nexport -T X x=( $(id) )\nexport A=1\n", map[string]string{"PATH": "/usr/bin:/opt/my bin", "A": "1"}},
		{"expansions are skipped", syntax.LangBash, `declare -x A="$(id)" B=$HOME C=~root D="ok"` + "\n", map[string]string{"D": "ok"}},
		{"other commands are skipped", syntax.LangBash, "rm -rf /\nA=1\nlocal B=2\ndeclare -x C=3 >f\ndeclare -x 'D'=4\n", map[string]string{}},
		{"arrays are skipped", syntax.LangBash, "declare -ax A=(1 2)\ndeclare -x B[1]=x\n", map[string]string{}},
	}
	for _, tc := range tests {
		got, ok := parseExports(tc.in, tc.v)
		if !ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := parseExports("declare -x A=\"unterminated", syntax.LangBash); ok {
		t.Error("a report that does not parse was accepted")
	}
}

func TestEnvDelta(t *testing.T) {
	before := map[string]string{"A": "1", "B": "2", "PWD": "/x", "SHLVL": "1", "GONE": "g"}
	after := map[string]string{"A": "1", "B": "3", "PWD": "/y", "SHLVL": "2", "NEW": "n", "LD_PRELOAD": "/evil.so", "BASH_FUNC_f%%": "() { x; }"}
	got := envDelta(before, after)
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	want := []EnvChange{{Name: "B", Value: "3"}, {Name: "GONE", Unset: true}, {Name: "NEW", Value: "n"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("envDelta = %v, want %v", got, want)
	}
}

func TestPersisted(t *testing.T) {
	for _, name := range []string{"PATH", "NODE_ENV", "GOFLAGS", "LD_LIBRARY_PATH", "VIRTUAL_ENV"} {
		if !persisted(name) {
			t.Errorf("%s is not persisted", name)
		}
	}
	for _, name := range []string{"PWD", "OLDPWD", "SHLVL", "_", "BASH_ENV", "ENV", "IFS", "CDPATH", "PROMPT_COMMAND",
		"SHELLOPTS", "PS4", "LD_PRELOAD", "DYLD_INSERT_LIBRARIES", "BASH_FUNC_x%%", "__moat_x"} {
		if persisted(name) {
			t.Errorf("%s is persisted", name)
		}
	}
}

func TestCapBuffer(t *testing.T) {
	c := &capBuffer{max: 5}
	c.Write([]byte("abc"))
	c.Write([]byte("defg"))
	b, over := c.bytes()
	if string(b) != "abcde" || !over {
		t.Errorf("%q %v", b, over)
	}
	if _, err := c.Write([]byte(strings.Repeat("x", 10))); err != nil {
		t.Error(err)
	}
}
