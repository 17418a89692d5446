package permissions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// effectCase is a command whose effect bash hides in a word that looks
// static. cmd uses "$(id)" as the hidden command; the bash check replaces
// it with a command that creates a marker file.
type effectCase struct {
	cmd string
	// prelude is shell state the attack needs (run by bash only; moat
	// decides cmd alone, as in a session where the state already exists).
	prelude string
	// runs: bash 5.2 runs the hidden command (checked when bash exists).
	// false: moat is stricter than this bash version needs.
	runs bool
}

// effectCases must never be allowed, even by an allow rule naming the
// command, and must never be read-only.
var effectCases = []effectCase{
	// test -v and [ -v resolve an array subscript as arithmetic
	{cmd: `test -v 'a[$(id)]'`, runs: true},
	{cmd: `[ -v 'a[$(id)]' ]`, runs: true},
	{cmd: `test ! -v "a[\$(id)]"`, runs: true},
	{cmd: `test -v 'a[x]'`, prelude: `x='a[$(id)]'`, runs: true}, // a variable evaluated recursively
	{cmd: `test -v 'a[ x + 1 ]'`, prelude: `x='a[$(id)]'`, runs: true},
	{cmd: `command test -v 'a[$(id)]'`, runs: true},
	{cmd: `builtin test -v 'a[$(id)]'`, runs: true},
	{cmd: `test -R 'a[$(id)]'`},
	// [[ ]], (( )), let, $(( )), $[ ], ${x:off:len}, for (( )): arithmetic
	{cmd: `[[ -v a[$(id)] ]]`, runs: true},
	{cmd: `[[ -v 'a[$(id)]' ]]`, runs: true},
	{cmd: `[[ 'a[$(id)]' -eq 1 ]]`, runs: true},
	{cmd: `[[ x -lt y ]]`, prelude: `x='a[$(id)]'`, runs: true},
	{cmd: `(( a[$(id)] ))`, runs: true},
	{cmd: `(( x ))`, prelude: `x='a[$(id)]'`, runs: true},
	{cmd: `let 'a[$(id)]'`, runs: true},
	{cmd: `let x=1`},
	{cmd: `builtin let 'a[$(id)]'`, runs: true},
	{cmd: `echo $((a[$(id)]))`, runs: true},
	{cmd: `echo $((x))`, prelude: `x='a[$(id)]'`, runs: true},
	{cmd: `echo $[x]`, prelude: `x='a[$(id)]'`, runs: true},
	{cmd: `echo ${x:y}`, prelude: `x=1 y='a[$(id)]'`, runs: true},
	{cmd: `echo ${x:0:y}`, prelude: `x=1 y='a[$(id)]'`, runs: true},
	{cmd: `echo ${a[y]}`, prelude: `a=(1) y='a[$(id)]'`, runs: true},
	{cmd: `for ((i=x; 0; )); do :; done`, prelude: `x='a[$(id)]'`, runs: true},
	// builtins that take variable names resolve their subscripts
	{cmd: `read 'a[$(id)]' <<< 1`, runs: true},
	{cmd: `read -r 'a[$(id)]' <<< 1`, runs: true},
	{cmd: `read -a 'a[$(id)]' <<< 1`},
	{cmd: `printf -v 'a[$(id)]' x`, runs: true},
	{cmd: `printf -v'a[$(id)]' x`, runs: true},
	{cmd: `printf -v 'a[x]' %s 1`, prelude: `x='a[$(id)]'`, runs: true},
	{cmd: `unset 'a[$(id)]'`, prelude: `a=(1)`, runs: true},
	{cmd: `unset -v 'a[$(id)]'`, prelude: `a=(1)`, runs: true},
	{cmd: `mapfile 'a[$(id)]' <<< 1`},
	{cmd: `readarray -t 'a[$(id)]' <<< 1`},
	{cmd: `wait -p 'a[$(id)]'`},
	{cmd: `getopts a 'a[$(id)]'`},
	{cmd: `declare 'a[$(id)]=1'`, runs: true},
	{cmd: `declare -i x='a[$(id)]'`, runs: true},
	{cmd: `typeset -i x='a[$(id)]'`, runs: true},
	{cmd: `declare -ia x`},
	{cmd: `local -i x`},
	{cmd: `export 'a[$(id)]=1'`},
	{cmd: `readonly 'a[$(id)]=1'`},
	{cmd: `declare -n r='a[$(id)]'`},
	// variables bash evaluates as arithmetic when assigned
	{cmd: `RANDOM='a[$(id)]'`, runs: true},
	{cmd: `OPTIND='a[$(id)]'`, runs: true},
	{cmd: `HISTCMD='a[$(id)]'`, runs: true},
	{cmd: `SRANDOM='a[$(id)]'`, runs: true},
	{cmd: `OPTIND=x`, prelude: `x='a[$(id)]'`, runs: true},
	{cmd: `RANDOM='a[$(id)]' true`},
	{cmd: `read OPTIND <<< 'a[$(id)]'`, runs: true},
	// a value stored for a later arithmetic evaluation
	{cmd: `x='a[$(id)]'`},
	{cmd: "x='a[`id`]' ls"},
	{cmd: `n='a[$(id)]'`, prelude: `declare -i n`, runs: true},
	// nohup writes nohup.out when its output is a terminal
	{cmd: `nohup ls`},
	{cmd: `nohup -- cat README.md`},
	{cmd: `timeout 5 nohup ls`},
	// bash opens the connection itself
	{cmd: `cat < /dev/tcp/127.0.0.1/9`},
	{cmd: `cat < /dev/udp/127.0.0.1/9`},
	{cmd: `cat 0< /dev/tcp/localhost/9`},
	{cmd: `wc -l </dev/tcp/127.0.0.1/9`},
	{cmd: `echo x > /dev/tcp/127.0.0.1/9`},
	// backslash-newline between '$' and '(': bash joins them
	{cmd: "echo \"$\\\n(id)\"", runs: true},
	{cmd: "echo \"$\\\n\\\n(id)\"", runs: true},
	{cmd: "echo $\\\n(id)", runs: true},
	{cmd: "echo \"a$\\\n(id)b\"", runs: true},
	{cmd: "echo \"$\\\n{x}\"", prelude: `x=1`},
	{cmd: "echo $\\\n{x}", prelude: `x=1`},
}

// noEffectCases look alike and bash evaluates nothing in them: they stay
// allowed and read-only (bash is run to check that too).
var noEffectCases = []string{
	`test -v x`,
	`test -v 'a[0]'`,
	`[ -v 'a[12]' ]`,
	`test -v 'a[@]'`,
	`[ -v HOME ]`,
	`test 'a[$(id)]' -eq 1`, // test's -eq parses plain numbers
	`[ 1 -lt 'a[$(id)]' ]`,
	`test -n 'a[$(id)]'`,
	`printf '%d\n' 'a[$(id)]'`,
	`echo 'a[$(id)]'`,
	`echo "\$(id)"`,
	`cat < /dev/null`,
}

// effectRules allow every command the cases name: an evaluated string must
// ask even so.
var effectRules = []string{
	"Bash(test:*)", "Bash([:*)", "Bash(let:*)", "Bash(read:*)", "Bash(printf:*)", "Bash(unset:*)",
	"Bash(mapfile:*)", "Bash(readarray:*)", "Bash(wait:*)", "Bash(getopts:*)", "Bash(declare:*)",
	"Bash(typeset:*)", "Bash(local:*)", "Bash(export:*)", "Bash(readonly:*)", "Bash(echo:*)",
	"Bash(command:*)", "Bash(builtin:*)", "Bash(cat:*)", "Bash(wc:*)", "Bash(true)",
}

func TestEvaluatedStringsAsk(t *testing.T) {
	plain := mustEngine(t, policy.Permissions{})
	ruled := mustEngine(t, rules(effectRules...))
	for _, tc := range effectCases {
		for _, mode := range []string{"default", "acceptEdits", "plan"} {
			for name, e := range map[string]*Engine{"no rules": plain, "allow rules": ruled} {
				r := e.Decide(Request{Command: tc.cmd, Cwd: testCwd, Mode: mode})
				if r.Decision.Verdict == policy.Allow {
					t.Errorf("%q (%s, %s): allowed: %v", tc.cmd, mode, name, r.Decision)
				}
				if r.ReadOnly {
					t.Errorf("%q (%s, %s): read-only", tc.cmd, mode, name)
				}
			}
		}
	}
	for _, cmd := range noEffectCases {
		r := plain.Decide(Request{Command: cmd, Cwd: testCwd})
		if r.Decision.Verdict != policy.Allow || !r.ReadOnly {
			t.Errorf("%q: %v, read-only %v; want a read-only allow", cmd, r.Decision, r.ReadOnly)
		}
	}
}

// TestEvaluatedStringsBash checks the cases against real bash: the hidden
// command runs where the table says so, and never in the look-alikes moat
// allows.
func TestEvaluatedStringsBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	run := func(prelude, cmd string) bool {
		dir := t.TempDir()
		marker := filepath.Join(dir, "ran")
		hidden := "touch " + marker
		r := strings.NewReplacer("(id)", "("+hidden+")", "`id`", "`"+hidden+"`")
		script := r.Replace(prelude) + "\n" + r.Replace(cmd)
		// Generous: on a loaded machine (CI's oracle runs beside) a bash
		// took more than 10 s; the bound is only against a hang.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, bash, "-c", script)
		c.Dir = dir
		c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "LC_ALL=C"}
		c.Run()
		_, err := os.Stat(marker)
		return err == nil
	}
	for _, tc := range effectCases {
		if !tc.runs {
			continue
		}
		if !run(tc.prelude, tc.cmd) {
			t.Errorf("bash did not run the hidden command of %q (prelude %q): the case proves nothing", tc.cmd, tc.prelude)
		}
	}
	for _, cmd := range noEffectCases {
		if run("", cmd) {
			t.Errorf("bash ran the hidden command of %q, which moat allows", cmd)
		}
	}
}
