package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// checkSetup makes a hermetic environment: a home with no settings, a
// working directory and a settings file.
func checkSetup(t *testing.T, settingsJSON string) (cwd, file string) {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	cwd = filepath.Join(dir, "proj")
	for _, d := range []string{home, cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	file = filepath.Join(dir, "settings.json")
	if err := os.WriteFile(file, []byte(settingsJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	return cwd, file
}

func runMoat(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

const checkSettings = `{"permissions": {
  "allow": ["Bash(npm run:*)", "Bash(git status)", "Read(./src/**)"],
  "ask":   ["Bash(git commit:*)"],
  "deny":  ["Bash(git push:*)", "Bash(rm -rf:*)"]
}}`

func TestCheckJSONShape(t *testing.T) {
	cwd, file := checkSetup(t, checkSettings)
	for _, tc := range []struct {
		cmd  string
		want map[string]any
	}{
		{"npm run build", map[string]any{
			"decision": "allow", "rule": "Bash(npm run:*)", "readonly": false, "warnings": []any{},
			"suggestion": nil, "sed_edit": nil, "kind": "none"}},
		{"ls -la", map[string]any{
			"decision": "allow", "rule": nil, "readonly": true, "warnings": []any{},
			"suggestion": nil, "sed_edit": nil, "kind": "list"}},
		{"FOO=1 timeout 5 git push --force", map[string]any{
			"decision": "deny", "rule": "Bash(git push:*)", "readonly": false,
			"warnings": []any{"Note: may overwrite remote history"}, "suggestion": nil, "sed_edit": nil, "kind": "none"}},
		{"cargo test --all", map[string]any{
			"decision": "ask", "rule": nil, "readonly": false, "warnings": []any{},
			"suggestion": "Bash(cargo test:*)", "sed_edit": nil, "kind": "none"}},
		{"sed -i 's/old/new/g' src/a.go", map[string]any{
			"decision": "ask", "rule": nil, "readonly": false, "warnings": []any{},
			"suggestion": "Bash(sed -i s/old/new/g src/a.go)",
			"sed_edit":   map[string]any{"file": "src/a.go", "pattern": "old", "replacement": "new", "flags": "g", "extended": false},
			"kind":       "none"}},
		{"git reset --hard", map[string]any{ // a warning, never a suggestion
			"decision": "ask", "rule": nil, "readonly": false, "warnings": []any{"Note: may discard uncommitted changes"},
			"suggestion": nil, "sed_edit": nil, "kind": "none"}},
		{"grep -rn TODO src", map[string]any{
			"decision": "allow", "rule": nil, "readonly": true, "warnings": []any{},
			"suggestion": nil, "sed_edit": nil, "kind": "search"}},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			code, out, errOut := runMoat(t, "", "check", "--settings", file, "--cwd", cwd, "--json", "--", tc.cmd)
			if code != 0 {
				t.Fatalf("exit %d; stderr %s", code, errOut)
			}
			if strings.Count(out, "\n") != 1 {
				t.Errorf("want exactly one line, got %q", out)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output is not JSON: %v: %q", err, out)
			}
			keys := make([]string, 0, len(got))
			for k := range got {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			wantKeys := []string{"decision", "kind", "readonly", "reason", "rule", "sandbox", "sed_edit", "suggestion", "warnings"}
			if !reflect.DeepEqual(keys, wantKeys) {
				t.Errorf("keys %v; want %v", keys, wantKeys)
			}
			if r, _ := got["reason"].(string); r == "" {
				t.Errorf("empty reason")
			}
			for k, v := range tc.want {
				if !reflect.DeepEqual(got[k], v) {
					t.Errorf("%s = %#v; want %#v", k, got[k], v)
				}
			}
		})
	}
}

func TestCheckExitCodes(t *testing.T) {
	cwd, file := checkSetup(t, checkSettings)
	dir := filepath.Dir(file)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badJSON := write("bad.json", `{"permissions": {"allow": [`)
	badRule := write("badrule.json", `{"permissions": {"deny": ["bash(rm:*)"]}}`)
	badRule2 := write("badrule2.json", `{"permissions": {"allow": ["Bash(npm:* x)"]}}`)
	badMode := write("badmode.json", `{"permissions": {"defaultMode": "yolo"}}`)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string // substring
	}{
		{"allow", []string{"check", "--settings", file, "--cwd", cwd, "--", "git status"}, 0, ""},
		{"ask", []string{"check", "--settings", file, "--cwd", cwd, "--", "make"}, 0, ""},
		{"deny", []string{"check", "--settings", file, "--cwd", cwd, "--", "git push"}, 0, ""},
		{"deny json", []string{"check", "--settings", file, "--cwd", cwd, "--json", "--", "git push"}, 0, ""},
		{"no command", []string{"check", "--settings", file}, 125, "missing COMMAND"},
		{"unknown mode", []string{"check", "--settings", file, "--mode", "yolo", "--", "ls"}, 125, "yolo"},
		{"unknown flag", []string{"check", "--bogus", "--", "ls"}, 125, "bogus"},
		{"missing settings", []string{"check", "--settings", filepath.Join(dir, "nope.json"), "--", "ls"}, 125, "nope.json"},
		{"malformed settings", []string{"check", "--settings", badJSON, "--", "ls"}, 125, "bad.json"},
		{"malformed rule", []string{"check", "--settings", badRule, "--", "ls"}, 125, "bash(rm:*)"},
		{"malformed rule 2", []string{"check", "--settings", badRule2, "--", "ls"}, 125, "Bash(npm:* x)"},
		{"bad default mode", []string{"check", "--settings", badMode, "--", "ls"}, 125, "yolo"},
		{"jsonl with command", []string{"check", "--jsonl", "--", "ls"}, 125, "stdin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runMoat(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d; want %d (stdout %q, stderr %q)", code, tc.code, out, errOut)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", errOut, tc.stderr)
			}
			if tc.code != 0 && out != "" {
				t.Errorf("a failed check printed a decision: %q", out)
			}
		})
	}
}

func TestCheckText(t *testing.T) {
	cwd, file := checkSetup(t, checkSettings)
	code, out, _ := runMoat(t, "", "check", "--settings", file, "--cwd", cwd, "--", "git push --force")
	if code != 0 || !strings.HasPrefix(out, "deny: ") || !strings.Contains(out, "rule: Bash(git push:*)") ||
		!strings.Contains(out, "warning: Note: may overwrite remote history") {
		t.Errorf("text output (exit %d):\n%s", code, out)
	}
	code, out, _ = runMoat(t, "", "check", "--settings", file, "--cwd", cwd, "--mode", "plan", "--", "make")
	if code != 0 || !strings.HasPrefix(out, "deny: plan mode") {
		t.Errorf("plan mode (exit %d):\n%s", code, out)
	}
}

func TestCheckJSONL(t *testing.T) {
	cwd, file := checkSetup(t, checkSettings)
	in := strings.Join([]string{
		`{"id": 1, "cmd": "git status"}`,
		`{"id": "two", "cmd": "git push"}`,
		`not json at all`,
		`{"id": 4, "cmd": "make", "rules": ["Bash(make)"]}`,
		`{"id": 5, "cmd": "make"}`,
		`{"id": 6, "cmd": "npm run x", "rules": ["deny: Bash(npm run:*)"]}`,
		`{"id": 7, "cmd": "ls", "mode": "yolo"}`,
		`{"id": 8, "command": "ls"}`,
		`{"id": 9}`,
		``,
		`{"id": 11, "cmd": "ls", "rules": ["bash(ls)"]}`,
		`{"id": 12, "cmd": "mkdir x", "mode": "acceptEdits"}`,
		`{"id": 13, "cmd": "cat /etc/passwd"}`,
		`{"id": 14, "cmd": "cat /etc/passwd", "cwd": "/etc"}`,
		`{"id": {"nested": [1]}, "cmd": "npm run x && git commit -m y", "rules": ["ask: Bash(npm run:*)"]}`,
		`{"cmd": "ls"}`,
		`{"id": 17, "cmd": 42}`,
		`{"id": 18, "cmd": "ls"} {"id": 19}`,
		`[1, 2]`,
		`{"id": 20, "cmd": "echo x | sh", "rules": ["deny: Bash(curl:*)"], "mode": "bypassPermissions"}`,
	}, "\n") + "\n"
	code, out, errOut := runMoat(t, in, "check", "--settings", file, "--cwd", cwd, "--jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []struct {
		id       string // JSON of the id
		decision string // "" for an error line
		errPart  string
	}{
		{`1`, "allow", ""},
		{`"two"`, "deny", ""},
		{`null`, "", "not a valid JSON"},
		{`4`, "allow", ""},
		{`5`, "ask", ""},
		{`6`, "deny", ""},
		{`7`, "", "yolo"},
		{`8`, "", "command"},
		{`9`, "", `missing "cmd"`},
		{`null`, "", "empty request"},
		{`11`, "", "bash(ls)"},
		{`12`, "allow", ""},
		{`13`, "ask", ""},
		{`14`, "allow", ""},
		{`{"nested":[1]}`, "ask", ""},
		{``, "allow", ""},
		{`17`, "", "cmd"},
		{`18`, "", "more than one"},
		{`null`, "", "not a valid JSON"},
		{`20`, "allow", ""},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d result lines for %d requests:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		var got map[string]json.RawMessage
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Errorf("line %d is not JSON: %q", i+1, lines[i])
			continue
		}
		id := string(got["id"])
		if id != w.id {
			t.Errorf("line %d: id %s; want %s (%s)", i+1, id, w.id, lines[i])
		}
		if w.decision == "" {
			var e string
			json.Unmarshal(got["error"], &e)
			if !strings.Contains(e, w.errPart) || got["decision"] != nil {
				t.Errorf("line %d: %s; want an error containing %q", i+1, lines[i], w.errPart)
			}
			continue
		}
		var d string
		json.Unmarshal(got["decision"], &d)
		if d != w.decision || got["error"] != nil {
			t.Errorf("line %d: %s; want decision %q", i+1, lines[i], w.decision)
		}
	}
}

func TestCheckJSONLLongLine(t *testing.T) {
	cwd, file := checkSetup(t, checkSettings)
	long := `{"id": 1, "cmd": "echo ` + strings.Repeat("a", maxRequestLine) + `"}`
	in := long + "\n" + `{"id": 2, "cmd": "ls"}` + "\n" + `{"id": 3, "cmd": "ls"}` // no final newline
	code, out, _ := runMoat(t, in, "check", "--settings", file, "--cwd", cwd, "--jsonl")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], "longer than") ||
		!strings.Contains(lines[1], `"id":2`) || !strings.Contains(lines[2], `"id":3`) {
		t.Errorf("exit %d, output:\n%.300s", code, out)
	}
}

func TestCheckClassifier(t *testing.T) {
	cwd, file := checkSetup(t, checkSettings)
	dir := filepath.Dir(file)
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sure := script("sure.sh", `cat > /dev/null; echo '{"behavior": "allow", "confidence": 0.97}'`)
	unsure := script("unsure.sh", `cat > /dev/null; echo '{"behavior": "allow", "confidence": 0.6}'`)
	broken := script("broken.sh", `echo 'not json'`)
	slow := script("slow.sh", `sleep 5`)
	for _, tc := range []struct {
		prog, cmd, want string
		extra           []string
	}{
		{sure, "make", "allow", nil},
		{sure, "git push", "deny", nil},       // rules win
		{sure, "git commit -m x", "ask", nil}, // rules win
		{unsure, "make", "ask", nil},
		{broken, "make", "ask", nil},
		{slow, "make", "ask", []string{"--classifier-timeout", "200ms"}},
	} {
		args := append([]string{"check", "--settings", file, "--cwd", cwd, "--json", "--classifier", tc.prog}, tc.extra...)
		code, out, errOut := runMoat(t, "", append(args, "--", tc.cmd)...)
		var got struct{ Decision, Reason string }
		json.Unmarshal([]byte(out), &got)
		if code != 0 || got.Decision != tc.want {
			t.Errorf("%s %q: exit %d, %+v; want %s (%s)", filepath.Base(tc.prog), tc.cmd, code, got, tc.want, errOut)
		}
	}
}

// The words of an unquoted command are the command: `moat check ls -la`.
func TestCheckUnquotedWords(t *testing.T) {
	cwd, file := checkSetup(t, `{"permissions":{"allow":[]}}`)
	code, out, errs := runMoat(t, "", "check", "--settings", file, "--cwd", cwd, "ls", "-la")
	if code != 0 || !strings.HasPrefix(out, "allow") {
		t.Fatalf("moat check ls -la: %d %q %q", code, out, errs)
	}
	code, out, _ = runMoat(t, "", "check", "--settings", file, "--cwd", cwd, "--json", "git", "commit", "-m", "a > b")
	var o checkOutput
	if code != 0 || json.Unmarshal([]byte(out), &o) != nil || o.Decision != "ask" {
		t.Fatalf("quoted back: %d %q", code, out)
	}
}

// The words of an unquoted command decide as the quoted command does: the
// words are quoted back as a person would quote them, so the validators
// read the same command.
func TestCheckUnquotedWordsDecideAsQuoted(t *testing.T) {
	cwd, file := checkSetup(t, checkSettings)
	for _, tc := range []struct {
		words  []string
		quoted string
	}{
		{[]string{"git", "log", "--format=%H <%ae>"}, `git log --format='%H <%ae>'`},
		{[]string{"git", "log", "-n", "5", "--pretty=format:%h %s"}, `git log -n 5 --pretty=format:'%h %s'`},
		{[]string{"echo", "it's"}, `echo "it's"`},
		{[]string{"git", "commit", "-m", "fix: it's done"}, `git commit -m "fix: it's done"`},
		{[]string{"git", "commit", "-m", "a > b"}, `git commit -m 'a > b'`},
		{[]string{"echo", `say "hi"`}, `echo 'say "hi"'`},
		{[]string{"echo", "$HOME isn't set"}, `echo '$HOME isn'"'"'t set'`},
		{[]string{"grep", "-rn", "foo bar", "src"}, `grep -rn 'foo bar' src`},
		{[]string{"find", ".", "-name", "*.go"}, `find . -name '*.go'`},
		{[]string{"sed", "-i", "s/a/b/", "x.txt"}, `sed -i s/a/b/ x.txt`},
		{[]string{"ls", "-la"}, `ls -la`},
		{[]string{"npm", "run", "build"}, `npm run build`},
		{[]string{"git", "push", "--force"}, `git push --force`},
		{[]string{"rm", "-rf", "/"}, `rm -rf /`},
		{[]string{"echo", ""}, `echo ''`},
	} {
		_, out, _ := runMoat(t, "", append([]string{"check", "--settings", file, "--cwd", cwd, "--json"}, tc.words...)...)
		_, want, _ := runMoat(t, "", "check", "--settings", file, "--cwd", cwd, "--json", "--", tc.quoted)
		var a, b checkOutput
		if json.Unmarshal([]byte(out), &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
			t.Fatalf("%q: %q / %q", tc.quoted, out, want)
		}
		if a.Decision != b.Decision || a.Reason != b.Reason || !reflect.DeepEqual(a.Rule, b.Rule) {
			t.Errorf("%q: unquoted %s (%s), quoted %s (%s)", tc.quoted, a.Decision, a.Reason, b.Decision, b.Reason)
		}
	}
}

// quoteWords' command splits back into its words (bash is the judge).
func TestQuoteWordsRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	words := []string{"git", "--format=%H <%ae>", "it's", `say "hi" it's`, "$HOME `x` it's!", "a\\b", "", "-x y", "--a=b'c", "'", "''", "~/x", "*", "a\nb", "ünï cödé", "--=x y", "-"}
	q := quoteWords(words)
	out, err := exec.Command("bash", "-c", `printf '%s\0' `+q).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !reflect.DeepEqual(got, words) {
		t.Fatalf("%s\nsplits into %q\nnot %q", q, got, words)
	}
}

// moat's flags end at the first word of the command: a flag after it is
// the command's.
func TestCheckFlagsAfterTheCommand(t *testing.T) {
	cwd, file := checkSetup(t, checkSettings)
	code, out, errs := runMoat(t, "", "check", "--settings", file, "--cwd", cwd, "ls", "-la", "--json")
	if code != 0 || json.Valid([]byte(out)) || !strings.Contains(out, "Bash(ls -la --json)") {
		t.Fatalf("moat check ls -la --json: %d %q %q", code, out, errs)
	}
	code, out, _ = runMoat(t, "", "check", "--settings", file, "--cwd", cwd, "--json", "--", "ls", "-la")
	if code != 0 || !json.Valid([]byte(out)) {
		t.Fatalf("moat check --json -- ls -la: %d %q", code, out)
	}
}

func TestPolicyNotes(t *testing.T) {
	cwd, file := checkSetup(t, `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":["/nonexistent/secret","/nonexistent/keys/*","/etc/**/*.nothing-matches"],"allowWrite":["x/../../../../../../../../etc"],"denyWrite":[]}}`)
	t.Chdir(cwd)
	code, out, errs := runMoat(t, "", "policy", "--settings", file)
	if code != 0 || !strings.Contains(out, "note: denyRead /nonexistent/secret names nothing that exists") || !strings.Contains(out, "outside") {
		t.Fatalf("moat policy: %d %q %q", code, out, errs)
	}
	// A glob from a directory that does not exist is said too (a Claude
	// Code /path, relative to the settings file, hid nothing unsaid: found
	// by an attack pass); one that matches nothing yet in a directory
	// that exists is not.
	if !strings.Contains(out, "note: denyRead /nonexistent/keys/* names nothing that exists") || strings.Contains(out, "note: denyRead /etc/**/*.nothing-matches") {
		t.Fatalf("moat policy, globs: %q", out)
	}
	code, _, errs = runMoat(t, "", "run", "--settings", file, "--write", "/nonexistent/dir", "--", "true")
	if code != 125 || !strings.Contains(errs, "--write /nonexistent/dir") {
		t.Fatalf("--write of a missing path: %d %q", code, errs)
	}
}

// A denied file with another hard link is said to stay readable there:
// moat hides the name, and the other name (a dotfiles checkout's copy of
// ~/.npmrc, hard-linked) was read under moat (attack pass 84). The default
// secrets are looked at too; a file with one link is not named.
func TestDeniedFileHardLinksNoted(t *testing.T) {
	dir := t.TempDir()
	secret, single := filepath.Join(dir, "secret"), filepath.Join(dir, "single")
	for _, f := range []string{secret, single} {
		if err := os.WriteFile(f, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(secret, filepath.Join(dir, "other-name")); err != nil {
		t.Fatal(err)
	}
	cwd, file := checkSetup(t, `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":["`+secret+`","`+single+`"],"allowWrite":[],"denyWrite":[]}}`)
	npmrc := filepath.Join(os.Getenv("HOME"), ".npmrc")
	if err := os.WriteFile(npmrc, []byte("//registry/:_authToken=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(npmrc, filepath.Join(cwd, "npmrc")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	code, out, errs := runMoat(t, "", "policy", "--settings", file)
	if code != 0 {
		t.Fatalf("moat policy: %d %q %q", code, out, errs)
	}
	for _, want := range []string{"denyRead " + secret + " has 2 hard links", "denyRead " + npmrc + " has 2 hard links"} {
		if !strings.Contains(out, want) {
			t.Errorf("moat policy does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, single+" has") {
		t.Errorf("a file with one link is named:\n%s", out)
	}
}

// moat --version and moat version name the module and the build.
func TestVersion(t *testing.T) {
	code, out, errOut := runMoat(t, "", "--version")
	if code != 0 || !strings.HasPrefix(out, "moat ") || !strings.Contains(out, "go1.") {
		t.Errorf("moat --version: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = runMoat(t, "", "version", "--json")
	var v struct{ Module, Version string }
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Module != "github.com/moat-sandbox/moat" || v.Version == "" {
		t.Errorf("moat version --json: exit %d, %q %q", code, out, errOut)
	}
	if code, _, _ := runMoat(t, "", "version", "extra"); code != 125 {
		t.Errorf("moat version extra: exit %d, want 125", code)
	}
}

// moat check acts on Claude Code's sandbox switches and says where the
// command would run.
func TestCheckSandboxSwitches(t *testing.T) {
	cwd, file := checkSetup(t, `{"permissions": {"deny": ["Bash(rm:*)"]}, "sandbox": {"autoAllowBashIfSandboxed": true, "excludedCommands": ["docker"], "allowUnsandboxedCommands": false}}`)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"make build"}, []string{"allow: autoAllowBashIfSandboxed", "runs: in the sandbox"}},
		{[]string{"rm -rf x"}, []string{"deny:"}},
		{[]string{"docker run img"}, []string{"ask:", "runs: outside the sandbox", "excludedCommands (docker:*)"}},
		{[]string{"--dangerously-disable-sandbox", "--", "make build"}, []string{"allow:", "not honoured"}},
	} {
		code, out, errOut := runMoat(t, "", append([]string{"check", "--settings", file, "--cwd", cwd}, tc.args...)...)
		for _, w := range tc.want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("moat check %v: exit %d, output %q (stderr %q), want %q", tc.args, code, out, errOut, w)
			}
		}
	}
	code, out, _ := runMoat(t, "", "check", "--settings", file, "--cwd", cwd, "--json", "--", "docker run img")
	var got struct {
		Sandbox *struct {
			Sandboxed bool
			Reason    string
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Sandbox == nil || got.Sandbox.Sandboxed {
		t.Errorf("--json must carry the sandbox answer: %q", out)
	}
}

// From a working directory moat run refuses (/, with Claude Code's
// settings), moat check and moat policy, which run nothing, still answer,
// with a note that moat run would refuse.
func TestCheckAndPolicyWhereRunRefuses(t *testing.T) {
	_, file := checkSetup(t, `{"permissions":{"allow":["Bash(npm run:*)"]}}`)
	t.Setenv("MOAT_DAEMON", "off")
	code, out, errs := runMoat(t, "", "check", "--settings", file, "--cwd", "/", "--", "npm run build")
	if code != 0 || !strings.HasPrefix(out, "allow") || !strings.Contains(errs, "moat: note: moat run would refuse to start here: / is a system directory") {
		t.Fatalf("moat check from /: %d %q %q", code, out, errs)
	}
	code, out, errs = runMoat(t, "", "check", "--settings", file, "--cwd", "/var/lib", "--json", "--", "ls")
	if code != 0 || !json.Valid([]byte(out)) || !strings.Contains(errs, "/var/lib is a system directory") {
		t.Fatalf("moat check --json from /var/lib: %d %q %q", code, out, errs)
	}
	t.Chdir("/")
	code, out, errs = runMoat(t, "", "policy", "--settings", file)
	if code != 0 || !strings.Contains(out, "note: moat run would refuse to start here: / is a system directory") {
		t.Fatalf("moat policy from /: %d %q %q", code, out, errs)
	}
	code, out, _ = runMoat(t, "", "policy", "--json", "--settings", file)
	var p struct{ Notes []string }
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || len(p.Notes) == 0 || !strings.HasPrefix(p.Notes[0], "moat run would refuse") {
		t.Fatalf("moat policy --json from /: %d %q", code, out)
	}
	// moat run does refuse.
	code, _, errs = runMoat(t, "", "run", "--settings", file, "--", "true")
	if code != 125 || !strings.Contains(errs, "/ is a system directory") {
		t.Fatalf("moat run from /: %d %q", code, errs)
	}
}

// A project's defaultMode bypassPermissions no longer overrides the user's
// ask rules (found by an attack pass: `moat check -- curl x` answered
// allow): moat check refuses the project's file, naming the key.
func TestCheckProjectDefaultModeRefused(t *testing.T) {
	cwd, _ := checkSetup(t, `{}`)
	t.Setenv("MOAT_DAEMON", "off")
	home := os.Getenv("HOME")
	for _, f := range []struct{ path, body string }{
		{filepath.Join(home, ".claude", "settings.json"), `{"permissions":{"ask":["Bash(curl:*)"]}}`},
		{filepath.Join(cwd, ".claude", "settings.json"), `{"permissions":{"defaultMode":"bypassPermissions"}}`},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runMoat(t, "", "check", "--cwd", cwd, "--", "curl x")
	if code != 125 || strings.HasPrefix(out, "allow") || !strings.Contains(errs, "permissions.defaultMode") {
		t.Fatalf("moat check under a project's bypassPermissions: exit %d, %q, %q", code, out, errs)
	}
}
