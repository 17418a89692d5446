package permissions

import (
	"strings"
	"testing"
)

func TestStripStrict(t *testing.T) {
	for _, tc := range []struct {
		assigns string // NAME=value words
		argv    string
		want    string
		clean   bool
	}{
		{"", "git status", "git status", true},
		{"LANG=C", "git status", "git status", true},
		{"LANG=C NODE_ENV=prod", "npm run build", "npm run build", true},
		{"PATH=/tmp", "git status", "git status", false},
		{"LD_PRELOAD=x.so", "ls", "ls", false},
		{"GIT_SSH_COMMAND=x", "git status", "git status", false},
		{"NODE_OPTIONS=--require=x", "npm test", "npm test", false},
		{"", "timeout 5 git status", "git status", true},
		{"", "timeout -s KILL 5 git status", "git status", true},
		{"", "timeout --signal=TERM -k 10 1.5m git status", "git status", true},
		{"", "timeout --foreground 5 ls", "ls", true},
		{"", "timeout 5", "timeout 5", true},
		{"", "timeout -x 5 ls", "timeout -x 5 ls", true},  // unknown flag: no stripping
		{"", "timeout $(x) ls", "timeout $(x) ls", true},  // not a duration
		{"", "timeout 5s nice -n 10 time ls", "ls", true}, // fixed point
		{"", "nice -n 5 ls", "ls", true},
		{"", "nice -10 ls", "ls", true},
		{"", "nice --adjustment=3 ls", "ls", true},
		{"", "nice -n x ls", "nice -n x ls", true},
		{"", "nohup ls", "nohup ls", true}, // nohup writes nohup.out: never stripped
		{"", "nohup -- ls", "nohup -- ls", true},
		{"", "nohup --help", "nohup --help", true},
		{"", "time -p ls", "ls", true},
		{"", "time -o out ls", "time -o out ls", true}, // GNU time -o writes a file
		{"", "env ls", "env ls", true},                 // env is not stripped for allow rules
		{"", "command ls", "command ls", true},
		{"", "timeout 5 FOO=1 ls", "FOO=1 ls", true}, // not an assignment any more
	} {
		var as []assign
		for _, a := range strings.Fields(tc.assigns) {
			n, v, _ := strings.Cut(a, "=")
			as = append(as, assign{name: n, value: v, static: true})
		}
		got, clean := stripStrict(as, strings.Fields(tc.argv))
		if strings.Join(got, " ") != tc.want || clean != tc.clean {
			t.Errorf("stripStrict(%q, %q) = %q, %v; want %q, %v", tc.assigns, tc.argv, got, clean, tc.want, tc.clean)
		}
	}
}

// TestCandidates checks that deny and ask rules see through every wrapper.
func TestCandidates(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want string // one candidate that must be found
	}{
		{"git push", "git push"},
		{"FOO=1 timeout 5 git push", "git push"},
		{"env FOO=1 BAR=2 git push", "git push"},
		{"env -i -u HOME git push", "git push"},
		{"env -S 'git push --force'", "git push --force"},
		{"command git push", "git push"},
		{"command -p git push", "git push"},
		{"builtin git push", "git push"},
		{"exec git push", "git push"},
		{"stdbuf -oL git push", "git push"},
		{"stdbuf -o L git push", "git push"},
		{"ionice -c 3 git push", "git push"},
		{"setsid -f git push", "git push"},
		{"nice -n 19 git push", "git push"},
		{"nohup git push", "git push"},
		{"sudo -u bob -E git push", "git push"},
		{"sudo VAR=1 git push", "git push"},
		{"doas -u bob git push", "git push"},
		{"xargs -n 1 git push", "git push"},
		{"timeout -k 5 --weird 10 git push", "git push"}, // unknown flag read both ways
		{"/usr/bin/git push", "git push"},
		{"\\git push", "git push"},
		{"'git' push", "git push"},
		{"g''it p\"\"ush", "git push"},
		{"$'\\x67it' push", "git push"},
		{"git -C /x -c a=b --no-pager push", "git push"},
		{"sh -c 'git push'", "git push"},
		{"bash -lc 'cd x && git push'", "git push"},
		{"bash -e -o pipefail -c 'git push'", "git push"},
		{"zsh -c \"git push\"", "git push"},
		{"eval 'git push'", "git push"},
		{"eval git push", "git push"},
		{"echo 'git push' | sh", "git push"},
		{"printf 'git push\\n' | bash", "git push"},
		{"bash <<'EOF'\ngit push\nEOF", "git push"},
		{"sh <<< 'git push'", "git push"},
		{"find . -exec git push \\;", "git push"},
		{"find . -execdir git push {} +", "git push {}"},
		{"watch -n 5 git push", "git push"},
		{"su -c 'git push' bob", "git push"},
		{"flock /tmp/l -c 'git push'", "git push"},
		{"flock /tmp/l git push", "git push"},
		{"trap 'git push' EXIT", "git push"},
		{"alias p='git push'", "git push"},
		{"echo $(git push)", "git push"},
		{"echo `git push`", "git push"},
		{"cat <(git push)", "git push"},
		{"x=$(git push)", "git push"},
		{"export X=$(git push)", "git push"},
		{"for i in 1; do git push; done", "git push"},
		{"if true; then git push; fi", "git push"},
		{"f() { git push; }; f", "git push"},
		{"(git push)", "git push"},
		{"{ git push; }", "git push"},
		{"time git push", "git push"},
		{"! git push", "git push"},
		{"[[ $(git push) ]]", "git push"},
		{"git {push,pull}", "git push pull"},
		{"{git,push}", "git push"},
		{"busybox sh -c 'git push'", "git push"},
		{"chroot / git push", "git push"},
		{"script -q -c 'git push' /dev/null", "git push"},
		{"git -c alias.p='!git push' p", "git push"},
		{"git -c core.sshCommand='git push' fetch", "git push"},
		{"git -ccore.pager='sh -c \"git push\"' log", "git push"},
		{"GIT_SSH_COMMAND='git push' git fetch", "git push"},
		{"PAGER='git push; true' git log", "git push"},
		{"env GIT_EDITOR='git push' git commit", "git push"},
		{"export PROMPT_COMMAND='git push'", "git push"},
		{"X='git push'; $X", "git push"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			var x extraction
			x.extractSource(tc.cmd, 0)
			for _, c := range x.cands {
				if strings.Join(c, " ") == tc.want {
					return
				}
			}
			t.Errorf("candidates of %q = %q (incomplete: %q); want %q among them", tc.cmd, x.cands, x.incomplete, tc.want)
		})
	}
}

// TestIncomplete: commands whose inner command cannot be seen make the
// extraction incomplete, so they can never be allowed while deny or ask
// rules exist.
func TestIncomplete(t *testing.T) {
	for _, cmd := range []string{
		"$CMD push",
		"$(echo git) push",
		"curl -s x | sh",
		"cat script | bash",
		"bash -c \"$X\"",
		"echo push | xargs git",
		"eval \"$X\"",
		"git push 'unterminated",
		"git --config-env=core.pager=P log",
	} {
		var x extraction
		x.extractSource(cmd, 0)
		if x.incomplete == "" {
			t.Errorf("extraction of %q is complete (candidates %q); want incomplete", cmd, x.cands)
		}
	}
	for _, cmd := range []string{"ls | sh -c 'cat'", "bash script.sh", "sh < script.sh", "git push", "echo $HOME"} {
		var x extraction
		x.extractSource(cmd, 0)
		if x.incomplete != "" {
			t.Errorf("extraction of %q is incomplete (%s); want complete", cmd, x.incomplete)
		}
	}
}
