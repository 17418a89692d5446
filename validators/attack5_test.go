package validators

import (
	"fmt"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Regression tests for the fifth attack pass on the decision pipeline.

// TestJqEnvironmentSpellings (M4): "$ ENV" (jq reads '$' and the name as
// two tokens), a comment that hides a '"', and jq 1.6's two-argument
// --argfile, which was read as one argument and the filter missed.
func TestJqEnvironmentSpellings(t *testing.T) {
	for name, cases := range map[string][]vcase{
		"jq_system_functions": append(
			asks(`jq -n '$ ENV.FOO_SECRET'`, "jq -n '$\tENV'", "jq -n '$\nENV.X'", "jq -n '$ # c\nENV'",
				"jq -n '1 # \"\n| env.HOME'", "jq -n '1 # env'", `jq -n --argfile x y.json env.FOO_SECRET`, `jq -n '$ __loc__'`),
			passes(`jq -n '"$ ENV"'`, `jq -n --argfile x y.json '.a'`, `jq '$x' --arg x 1`)...),
		"jq_file_arguments": asks(`jq -n --argfile x y.json .`, `jq --argfile x y.json -n .`),
	} {
		for _, tc := range cases {
			t.Run(name+"/"+tc.cmd, func(t *testing.T) {
				d := runValidator(t, name, tc.cmd)
				if got := d.Verdict == policy.Ask; got != tc.ask {
					t.Errorf("%s %q: %v; want ask=%v", name, tc.cmd, d, tc.ask)
				}
			})
		}
	}
}

// TestTimeTakesDoubleDash (L1): bash's time keyword takes one unquoted
// "--" (after -p too); the command after it is what runs.
func TestTimeTakesDoubleDash(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want string // fmt of the argv list, or "" for not Simple
	}{
		{"time -- rm x", "[[rm x]]"},
		{"time -p -- rm x", "[[rm x]]"},
		{"time -- -- rm x", "[[-- rm x]]"},
		{`time "--" rm x`, "[[-- rm x]]"},
		{"time -- ls && time -p -- rm -rf y", "[[ls] [rm -rf y]]"},
		{"time -- FOO=1 rm x", ""},
		{"time --", "[]"},
	} {
		r := ParseForSecurity(tc.src)
		if tc.want == "" {
			if r.Kind == Simple {
				t.Errorf("ParseForSecurity(%q) = Simple %v; want not Simple", tc.src, r.Commands)
			}
			continue
		}
		if r.Kind != Simple {
			t.Errorf("ParseForSecurity(%q) = %s: %s", tc.src, r.Kind, r.Reason)
			continue
		}
		got := [][]string{}
		for _, sc := range r.Commands {
			got = append(got, sc.Argv())
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("ParseForSecurity(%q) = %v; want %s", tc.src, got, tc.want)
		}
	}
}

// TestRunProgramOptions (L2): options that make a runner run a program of
// the caller's choosing: npm's --script-shell, --node-options and config
// files; go's -exec, -toolexec and -vettool; cargo's --config; git -c keys
// that name programs (runtime/gitguard's list).
func TestRunProgramOptions(t *testing.T) {
	for _, tc := range append(asks(
		`npm test --script-shell=/path/evil.sh`, `npm test --script-shell /path/evil.sh`, `npm run build --script_shell=x`,
		`npm test --node-options='--require /tmp/x.js'`, `npm test --userconfig=/tmp/npmrc`, `npm test --globalconfig=/tmp/x`,
		`npm test --shell=/tmp/x`, `npm test --script-sh=/tmp/x`, `npx --script-shell=x jest`, `pnpm test --script-shell=x`,
		`yarn test --script-shell x`, `npm exec --shell=x -- y`,
		`go test -exec /tmp/x ./...`, `go test -exec=/tmp/x ./...`, `go test --exec=/tmp/x`, `go test -toolexec=/tmp/x ./...`,
		`go build -toolexec /tmp/x`, `go vet -vettool=/tmp/x ./...`, `go run -exec x .`, `go test ./... -exec /tmp/x`,
		`cargo test --config 'target.x86_64-unknown-linux-gnu.runner="/tmp/x"'`, `cargo test --config=build.rustc-wrapper="x"`,
		`cargo build --config x.toml`,
		`git -c core.alternateRefsCommand=/tmp/x log`, `git -c sendemail.smtpServer=/tmp/x send-email`,
		`git -c interactive.diffFilter=x add -p`, `git -c gc.recentObjectsHook=x gc`, `git -c hook.x.command=y commit`,
		`git -c difftool.x.path=y difftool`, `git -c mergetool.x.path=y mergetool`, `git -c web.browser=x help -w log`,
		`git -c man.viewer=x help log`, `git -c remote.origin.uploadpack=x fetch`, `git -c remote.o.vcs=x fetch`,
		`git -c lfs.customtransfer.x.path=y pull`, `git -c submodule.x.update='!id' submodule update`,
		`git -c core.worktree=/tmp log`, `git -c core.attributesFile=/tmp/a diff`, `git -c trace2.eventTarget=/tmp/x status`,
		`git -c tar.tgz.command=x archive HEAD`, `git -c protocol.ext.allow=always fetch`, `go build -ldflags=-extld=/tmp/x .`, `git -c guitool.x.cmd=y gui`, `git -c instaweb.browser=x instaweb`,
		`git -c browser.x.cmd=y help -w log`, `git -c diff.guitool=x difftool`, `git -c merge.guitool=x mergetool`,
	), passes(
		`npm test`, `npm test -- --script-shell=x`, `npm run build --silent`, `go test ./...`, `go test -run X -v ./...`,
		`go test ./... -args -exec x`, `cargo test --release`, `cargo test -- --config x`, `git -c color.ui=never log`,
		`git -c user.name=x commit -m y`, `git -c core.quotepath=off status`, `git -c protocol.version=2 fetch`,
		`npm install --global x`, `go build -ldflags=-s ./...`,
	)...) {
		t.Run(tc.cmd, func(t *testing.T) {
			d := runValidator(t, "shell_metacharacters", tc.cmd)
			if got := d.Verdict == policy.Ask; got != tc.ask {
				t.Errorf("%q: %v; want ask=%v", tc.cmd, d, tc.ask)
			}
		})
	}
}
