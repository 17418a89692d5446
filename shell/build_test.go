package shell

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run go test -update and review the diff)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// stages renders a Build with one section per stage.
func stages(spec BuildSpec, b Build) string {
	var s strings.Builder
	sec := func(name, body string) {
		s.WriteString("-- " + name + " --\n" + body + "\n")
	}
	sec("command", spec.Command)
	sec("1. null redirects rewritten", b.Rewritten)
	sec("2. stdin", string(b.Stdin))
	sec("3-4. quoted for eval", b.Quoted)
	sec("5. script", b.Script)
	sec("6. final", b.Final)
	return s.String()
}

// TestBuildGolden has a golden file per case, with every stage of the
// command string.
func TestBuildGolden(t *testing.T) {
	bash, zsh := Bash("/bin/bash"), Zsh("/bin/zsh")
	cmd := func(c string) BuildSpec { return BuildSpec{Shell: bash, Command: c} }
	full := BuildSpec{Shell: bash, Command: "npm test 2>nul | tee log", Dir: "/work/my project", Snapshot: "/proc/self/fd/0",
		Env: []EnvChange{{Name: "NODE_ENV", Value: "test"}, {Name: "OLD", Unset: true}, {Name: "Q", Value: "it's"}}}
	withPrefix := func(p string, s BuildSpec) BuildSpec { s.Prefix = p; return s }
	inZsh := func(s BuildSpec) BuildSpec { s.Shell = zsh; return s }
	tests := []struct {
		name string
		spec BuildSpec
	}{
		// 1. the Windows null device
		{"nul-stderr", cmd("ls missing 2>nul")},
		{"nul-stdout-upper", cmd("echo hi >NUL && echo ok")},
		{"nul-all-append", cmd("make &>nul; make >>nul")},
		{"nul-quoted-kept", cmd(`echo "2>nul" '>nul' > "nul"`)},
		{"nul-word-kept", cmd("echo nul > nul.txt")},
		// 2. the stdin decision
		{"stdin-simple", cmd("ls -la")},
		{"stdin-list", cmd("cd src && make; echo done")},
		{"stdin-heredoc", cmd("cat <<'EOF'\nhello $HOME\nEOF")},
		{"stdin-herestring", cmd("wc -w <<< 'a b c'")},
		{"stdin-own-redirect", cmd("sort < input.txt | uniq")},
		{"stdin-fd0-redirect", cmd("read x 0<file")},
		{"stdin-fd3-redirect-is-not-stdin", cmd("cat 3<file")},
		// 3-4. quoting and the pipeline rearrangement
		{"pipe-first-segment", cmd("cat file | grep foo | wc -l")},
		{"pipe-first-has-redirect", cmd("make 2>&1 | tail -5")},
		{"pipe-stderr", cmd("make |& tee log")},
		{"pipe-background-not-moved", cmd("yes | head -1 &")},
		{"pipe-in-list-not-moved", cmd("cat a | wc -l && echo ok")},
		{"pipe-substitution-moved", cmd(`echo "$(date)" | tr a-z A-Z`)},
		{"quote-single-quotes", cmd(`echo 'it'"'"'s' "don't"`)},
		{"quote-newlines", cmd("for f in *.go; do\n  wc -l \"$f\"\ndone")},
		{"parse-error", cmd("echo 'unterminated")},
		// 5. assembly
		{"assembly-full", full},
		{"assembly-no-snapshot", BuildSpec{Shell: bash, Command: "pwd", Dir: "/srv"}},
		// 6. prefix
		{"prefix-program", withPrefix("/usr/local/bin/wrap", cmd("pwd"))},
		{"prefix-with-flags", withPrefix("/opt/my tools/run --quiet -x", cmd("pwd"))},
		// zsh
		{"zsh-full", inZsh(full)},
		{"zsh-pipe-not-moved", inZsh(cmd("cat file | grep foo"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := BuildCommand(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("build", tc.name+".golden"), stages(tc.spec, b))
		})
	}
}

// TestBuildBashReads runs every built bash script through bash -n: the
// command string must always parse.
func TestBuildBashReads(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, c := range []string{"ls", "cat a | wc -l", "echo 'x'\"'\"", "cat <<EOF\n$x\nEOF", "a &>nul"} {
		for _, spec := range []BuildSpec{
			{Shell: Bash(bash), Command: c},
			{Shell: Bash(bash), Command: c, Dir: "/it's", Snapshot: "/tmp/s'x", Env: []EnvChange{{Name: "A", Value: "'\n\\"}}, Prefix: "/bin/p -q"},
		} {
			b, err := BuildCommand(spec)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bash, "-n", "-c", b.Final).CombinedOutput(); err != nil {
				t.Errorf("bash -n rejects the build of %q: %v\n%s\n%s", c, err, out, b.Final)
			}
		}
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name string
		spec BuildSpec
		is   error
	}{
		{"no shell", BuildSpec{Command: "ls"}, nil},
		{"empty", BuildSpec{Shell: Bash("/bin/bash"), Command: "  \n"}, nil},
		{"nul byte", BuildSpec{Shell: Bash("/bin/bash"), Command: "echo a\x00b"}, nil},
		{"too long", BuildSpec{Shell: Bash("/bin/bash"), Command: "echo " + strings.Repeat("'", 40000)}, ErrTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BuildCommand(tc.spec)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
}

func TestPrefixFromEnv(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, ""},
		{map[string]string{"CLAUDE_CODE_SHELL_PREFIX": "/bin/c"}, "/bin/c"},
		{map[string]string{"CLAUDE_CODE_SHELL_PREFIX": "/bin/c", "MOAT_SHELL_PREFIX": "/bin/m"}, "/bin/m"},
	}
	for _, tc := range tests {
		if got := PrefixFromEnv(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("PrefixFromEnv(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestQuoteWord(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"/usr/bin", "/usr/bin"},
		{"a b", "'a b'"},
		{"it's", `'it'"'"'s'`},
		{"-rf", "'-rf'"},
		{"=cmd", "'=cmd'"},
		{"~/x", "'~/x'"},
		{"$HOME", "'$HOME'"},
	}
	for _, tc := range tests {
		if got := quoteWord(tc.in); got != tc.want {
			t.Errorf("quoteWord(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
